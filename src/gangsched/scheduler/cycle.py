"""One PodGroup scheduling cycle, in memory (spec §3; upstream's podGroupSchedulingDefaultAlgorithm).

It does not manage the queue, bind, or handle failures: it tries the group's pending pods in order, reserves
each placement tentatively in the snapshot, asks the gang feasibility check after every pod, and on failure
reverts every reservation it made. A successful result carries its `revert`, so that a caller evaluating
several placements (topology) or simulating (preemption) can undo it.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .evaluator import Evaluator, FitFailure
from .plugins import BoolArray
from .podinfo import PodInfo, PodKey

__all__ = ["Code", "GroupAttempt", "GroupResult", "feasibility", "run_group_cycle"]


class Code(enum.IntEnum):
    """Outcome codes, ordered so that the worse outcome is the larger value (combine with max)."""

    SUCCESS = 0
    WAIT = 1  # keep going; if this is the final state, the group is Unschedulable
    UNSCHEDULABLE = 2
    ERROR = 3


@dataclass(frozen=True, slots=True)
class GroupAttempt:
    """What one cycle needs to know about a group: its policy, what is already placed, what is pending."""

    min_count: int
    gang: bool
    scheduled: int
    pods: Sequence[PodInfo]


@dataclass(slots=True)
class GroupResult:
    code: Code
    message: str
    placed: list[tuple[PodInfo, int]] = field(default_factory=list)
    failures: dict[PodKey, str] = field(default_factory=dict)
    revert: Callable[[], None] = lambda: None
    domain: str | None = None  # the topology value chosen, when the group is constrained

    @property
    def any_scheduled(self) -> bool:
        return bool(self.placed)


def feasibility(attempt: GroupAttempt, scheduled: int, remaining: int) -> tuple[Code, str]:
    """The gang PlacementFeasible check after each pod. Basic groups never stop early."""
    if not attempt.gang:
        return (Code.SUCCESS if scheduled >= 1 else Code.WAIT, "no pods were schedulable")
    m = attempt.min_count
    if scheduled + remaining < m:
        return (
            Code.UNSCHEDULABLE,
            f"minCount ({m}) cannot be satisfied: {scheduled} scheduled, {remaining} remaining",
        )
    if scheduled < m:
        return Code.WAIT, f"minCount ({m}) cannot be satisfied: {scheduled} scheduled, {remaining} remaining"
    return Code.SUCCESS, ""


def run_group_cycle(ev: Evaluator, attempt: GroupAttempt, candidates: BoolArray | None = None) -> GroupResult:
    """Try every pending pod of the group on `candidates` (all nodes when None).

    Mutates the evaluator's snapshot: on success the placements stay reserved (undo with `result.revert`);
    on any other outcome the snapshot is left exactly as it was.
    """
    undo: list[Callable[[], None]] = []

    def revert() -> None:
        while undo:
            undo.pop()()

    scheduled = attempt.scheduled
    remaining = len(attempt.pods)
    code, message = feasibility(attempt, scheduled, remaining)
    result = GroupResult(code, message, revert=revert)
    if code >= Code.UNSCHEDULABLE:
        return result
    for pi in attempt.pods:
        found = ev.find_node(pi, candidates)
        remaining -= 1
        if isinstance(found, FitFailure):
            result.failures[pi.key] = found.message()
        else:
            undo.append(ev.reserve(pi, found))
            result.placed.append((pi, found))
            scheduled += 1
        result.code, result.message = feasibility(attempt, scheduled, remaining)
        if result.code >= Code.UNSCHEDULABLE:
            break
    if result.code == Code.WAIT:
        result.code = Code.UNSCHEDULABLE
    if result.code == Code.SUCCESS and not result.placed:
        result.code, result.message = Code.UNSCHEDULABLE, "no pods were schedulable"
    if result.code != Code.SUCCESS:
        revert()
        result.placed = []
    return result
