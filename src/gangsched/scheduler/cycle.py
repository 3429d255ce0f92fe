"""One PodGroup scheduling cycle, in memory (upstream's podGroupSchedulingDefaultAlgorithm,
pkg/scheduler/schedule_one_podgroup.go).

It does not manage the queue, bind, or handle failures: it tries the group's pending pods in order, reserves
each placement tentatively in the snapshot, asks the gang feasibility check after every pod, and on failure
reverts every reservation it made. A successful result carries its `revert`, so that a caller evaluating
several placements (topology) or simulating (preemption) can undo it.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence

from msgspec import Struct, field

from .evaluator import Evaluator, FitFailure
from .plugins import BoolArray
from .podinfo import PodInfo, PodKey

__all__ = [
    "ERROR",
    "GROUP_UNSCHEDULABLE",
    "SUCCESS",
    "UNSCHEDULABLE",
    "WAIT",
    "Code",
    "GroupAttempt",
    "GroupResult",
    "group_unschedulable",
    "min_count_code",
    "min_count_feasibility",
    "run_group_cycle",
]

# upstream's errPodGroupUnschedulable: a status carrying it prints this first, then its reasons
GROUP_UNSCHEDULABLE = "pod group is unschedulable"


def group_unschedulable(reasons: str) -> str:
    """The message of upstream's `NewStatus(Unschedulable, reasons).WithError(errPodGroupUnschedulable)`:
    Status.Message() joins the error and the reasons with ", "."""
    return f"{GROUP_UNSCHEDULABLE}, {reasons}" if reasons else GROUP_UNSCHEDULABLE


class Code(enum.IntEnum):
    """Outcome codes, ordered so that the worse outcome is the larger value (combine with max)."""

    SUCCESS = 0
    WAIT = 1  # keep going; if this is the final state, the group is Unschedulable
    UNSCHEDULABLE = 2
    ERROR = 3


# Code's members by plain name, for the code a cycle runs for every pod: on Python 3.11 reading
# `Code.SUCCESS` costs about 0.3 us, ten times a global's (EnumType defines __getattr__, which takes every
# attribute lookup on an enum class off CPython's fast path; 3.12 no longer does), and a lone pod's cycle
# read them a dozen times.
SUCCESS, WAIT, UNSCHEDULABLE, ERROR = Code.SUCCESS, Code.WAIT, Code.UNSCHEDULABLE, Code.ERROR


class GroupAttempt(Struct, gc=False):
    """What one cycle needs to know about a group: its policy, what is already placed, what is pending.
    Not frozen: every cycle makes one, and a frozen dataclass costs twice as much to make; never changed.
    Not tracked by the garbage collector either (half the cost again): its pods never refer back to it."""

    min_count: int
    gang: bool
    scheduled: int
    pods: Sequence[PodInfo]


class GroupResult(Struct):
    """The outcome of one cycle. `message` is the group's status message (PostFilter may append to it);
    `failures` holds the FitError of each pod that fit nowhere, `fit` the pods that did fit on their own in a
    cycle that then failed, and `cycle_message` the status as the cycle left it (upstream hands a copy of it
    to the pods the cycle never tried, before PostFilter runs). `wrapped` marks a status that carries
    upstream's errPodGroupUnschedulable (its AsError() is then that error alone)."""

    code: Code
    message: str
    placed: list[tuple[PodInfo, int]] = field(default_factory=list)
    failures: dict[PodKey, str] = field(default_factory=dict)
    revert: Callable[[], None] = lambda: None
    domain: str | None = None  # the topology value chosen, when the group is constrained
    fit: set[PodKey] = field(default_factory=set)
    cycle_message: str = ""
    wrapped: bool = False
    # Succeeded without placing a pod (the members already bound meet minCount), which this cycle reports
    # as a root's (runRootSchedulingAlgorithm): upstream's placement algorithm counts such a placement as
    # feasible, so no `0/N placements` wrapping applies, and inside a tree it is a success for the parent.
    none_placed: bool = False

    def pod_message(self, key: PodKey, *, waiting: bool = False) -> str:
        """What a pod of this failed cycle is told (upstream's submitPodGroupAlgorithmResult): its own
        FitError; when it fit but the group did not, the group's status with PostFilter's reasons, as it is
        while the group waits on its preemption (`waiting`), else wrapped as `pod group is unschedulable,
        <group message>`; a pod the cycle never tried, the status the cycle ended with (copied before
        PostFilter ran)."""
        if key in self.failures:
            return self.failures[key]
        if key in self.fit and self.code == UNSCHEDULABLE:
            return self.message if waiting else group_unschedulable(self.message)
        return self.cycle_message or self.message

    @property
    def any_scheduled(self) -> bool:
        return bool(self.placed)


def min_count_code(m: int, scheduled: int, remaining: int) -> Code:
    """`min_count_feasibility`'s code alone (a cycle asks it after every pod; only the last check's message
    is reported)."""
    if scheduled + remaining < m:
        return UNSCHEDULABLE
    if scheduled < m:
        return WAIT
    return SUCCESS


def min_count_feasibility(m: int, scheduled: int, remaining: int) -> tuple[Code, str]:
    """Upstream's GangScheduling PlacementFeasible, for a PodGroup (m = minCount) or a CompositePodGroup
    (m = minGroupCount); a group without a gang policy counts as m = 1 (its getMinCount)."""
    code = min_count_code(m, scheduled, remaining)
    if code == UNSCHEDULABLE:
        return code, f"minCount ({m}) cannot be satisfied: {scheduled} scheduled, {remaining} remaining"
    if code == WAIT:
        return code, f"minCount ({m}) is not yet satisfied: {scheduled} scheduled, {remaining} remaining"
    return code, ""


def _min_count(attempt: GroupAttempt) -> int:
    return attempt.min_count if attempt.gang else 1


def run_group_cycle(
    ev: Evaluator,
    attempt: GroupAttempt,
    candidates: BoolArray | None = None,
    domain: tuple[str, int] | None = None,
) -> GroupResult:
    """Try every pending pod of the group on `candidates` (all nodes when None; `domain`: see find_node).

    Mutates the evaluator's snapshot: on success the placements stay reserved (undo with `result.revert`);
    on any other outcome the snapshot is left exactly as it was.
    """
    undo: list[Callable[[], None]] = []

    def revert() -> None:
        while undo:
            undo.pop()()

    scheduled = attempt.scheduled
    remaining = len(attempt.pods)
    m = _min_count(attempt)
    result = GroupResult(min_count_code(m, scheduled, remaining), "", revert=revert)
    if result.code >= UNSCHEDULABLE:
        # infeasible before any pod is tried: upstream wraps the status in errPodGroupUnschedulable
        _, message = min_count_feasibility(m, scheduled, remaining)
        result.message = result.cycle_message = group_unschedulable(message)
        result.wrapped = True
        return result
    pods = attempt.pods
    i = 0
    while i < len(pods):
        pi = pods[i]
        i += 1
        found = ev.find_node(pi, candidates, domain)
        remaining -= 1
        if isinstance(found, FitFailure):
            result.failures[pi.key] = found.message()
            if min_count_code(m, scheduled, remaining) >= UNSCHEDULABLE:
                break
            continue
        undo.append(ev.reserve(pi, found))
        result.placed.append((pi, found))
        scheduled += 1
        # A pod placed leaves scheduled + remaining as it was, so the check after it never stops the cycle.
        # The members after it that are alike are placed as find_node would place them, without asking it
        # for each (Evaluator.reserve_alike).
        if i < len(pods):
            alike = ev.reserve_alike(pods, i, candidates, domain, result.placed, undo)
            i += alike
            remaining -= alike
            scheduled += alike
    # The check after the last pod tried is the one the cycle reports.
    result.code, result.message = min_count_feasibility(m, scheduled, remaining)
    if result.code == WAIT:
        result.code, result.message, result.wrapped = (
            UNSCHEDULABLE,
            group_unschedulable(result.message),
            True,
        )
    if result.code == SUCCESS and not result.placed:
        # upstream requires one pod scheduled in the cycle for a success (runRootSchedulingAlgorithm)
        result.code, result.message, result.wrapped = UNSCHEDULABLE, GROUP_UNSCHEDULABLE, True
        result.none_placed = True
    if result.code != SUCCESS:
        revert()
        result.fit = {pi.key for pi, _ in result.placed}
        result.placed = []
    result.cycle_message = result.message
    return result
