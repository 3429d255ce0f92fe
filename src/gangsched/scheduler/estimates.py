"""How long a group is expected to run: what reservations, backfill and `explain` plan with.

The estimate of a root (a lone pod, a PodGroup, a CompositePodGroup tree) comes from, in order:

1. `activeDeadlineSeconds` of its pods or of the Job that owns them: an upper bound, since the kubelet or the
   Job controller ends the work then, as Slurm's time limit does;
2. else the annotation `gangsched.io/expected-duration` (seconds, or a Go duration such as `1h30m`) on the
   PodGroup, the Job or the pod;
3. else, where the caller keeps one (live mode), a `History` of past run times: the mean of the same owner's
   last two runs, after Tsafrir, Etsion and Feitelson, "Backfilling Using System-Generated Predictions Rather
   than User Runtime Estimates" (IEEE TPDS 18(6), 2007);
4. else the simulator's true run time, `gangsched.io/duration` (the oracle estimate of a replay).

No estimate means "runs until it ends": the planner then treats the work as never ending.
Pure functions over objects; nothing here reads a clock.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..api.duration import EXPECTED_DURATION_ANNOTATION, DurationError, duration_of, parse_duration

__all__ = [
    "EXPECTED_DURATION",
    "DurationError",
    "Estimate",
    "History",
    "estimate_of",
    "owner_of",
    "parse_duration",
]

EXPECTED_DURATION = EXPECTED_DURATION_ANNOTATION


@dataclass(frozen=True, slots=True)
class Estimate:
    """Expected run time in seconds and where it came from (`activeDeadlineSeconds`, `annotation`,
    `history`); `seconds is None` when nothing says."""

    seconds: float | None
    source: str | None = None

    @property
    def known(self) -> bool:
        return self.seconds is not None


UNKNOWN = Estimate(None)


def owner_of(pod: Any) -> tuple[str, str, str] | None:
    """(kind, namespace, name) of the pod's controller (a Job when the Job controller made it), else None."""
    refs = (pod.metadata.ownerReferences or []) if pod.metadata else []
    for ref in refs:
        if ref.controller:
            return (ref.kind, pod.metadata.namespace or "", ref.name)
    return (refs[0].kind, pod.metadata.namespace or "", refs[0].name) if refs else None


@dataclass(slots=True)
class History:
    """Run times of finished work per owner (a Job's name, or a PodGroup's), the last two kept.

    Tsafrir et al. found the mean of a user's last two run times a better backfill estimate than the user's
    own; gangsched keys it by owner (the Job or PodGroup name), which is what a re-submitted job keeps."""

    runs: dict[tuple[str, str, str], deque[float]] = field(default_factory=dict)

    def record(self, owner: tuple[str, str, str], seconds: float) -> None:
        self.runs.setdefault(owner, deque(maxlen=2)).append(max(0.0, seconds))

    def estimate(self, owner: tuple[str, str, str]) -> float | None:
        last = self.runs.get(owner)
        return sum(last) / len(last) if last else None


def _annotation(obj: Any) -> float | None:
    annotations = (obj.metadata.annotations or {}) if obj is not None and obj.metadata else {}
    text = annotations.get(EXPECTED_DURATION)
    if text is None:
        return None
    try:
        return parse_duration(text)
    except DurationError:
        return None  # `validate` reports it; the work is then planned as of unknown length


def estimate_of(
    pods: Iterable[Any],
    objects: Any,
    group: Any = None,
    history: History | None = None,
) -> Estimate:
    """The run-time estimate of the work made of `pods` (members of `group`, a PodGroup, when given).

    `objects` is anything with `get(kind, (namespace, name))` (the store) to find the pods' Job. The
    longest bound among the members counts: the group runs until its last member ends."""
    pods = list(pods)
    jobs: list[Any] = []
    for pod in pods:
        owner = owner_of(pod)
        if owner is not None and owner[0] == "Job":
            job = objects.get("Job", owner[1:])
            if job is not None and all(job is not j for j in jobs):
                jobs.append(job)
    limits = [p.spec.activeDeadlineSeconds for p in pods] + [j.spec.activeDeadlineSeconds for j in jobs]
    deadlines = [float(s) for s in limits if s is not None]
    if deadlines:
        return Estimate(max(deadlines), "activeDeadlineSeconds")
    for holder in [group, *jobs, *pods]:
        seconds = _annotation(holder)
        if seconds is not None:
            return Estimate(seconds, "annotation")
    if history is not None:
        owners = {owner_of(p) for p in pods} - {None}
        if group is not None and not owners:
            owners = {("PodGroup", group.metadata.namespace or "", group.metadata.name)}
        known = [s for o in owners if o is not None and (s := history.estimate(o)) is not None]
        if known:
            return Estimate(max(known), "history")
    for holder in [group, *jobs, *pods]:
        # The simulator's true run time (gangsched.io/duration): the oracle estimate, used last.
        try:
            seconds = duration_of(holder) if holder is not None else None
        except DurationError:
            seconds = None
        if seconds is not None:
            return Estimate(seconds, "duration")
    return UNKNOWN
