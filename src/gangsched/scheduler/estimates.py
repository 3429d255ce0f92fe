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

A replay may choose what the scheduler is told (`simulate --estimate`, `SOURCES`): `oracle` (default) puts
the true run time first, `limit` uses only what the user declared (1 and 2), `history` puts the owner's past
runs first and falls back to what the user declared, as Tsafrir et al. fall back to the user's estimate while
a user has no history.
Pure functions over objects; nothing here reads a clock.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

from msgspec import Struct, field

from ..api.duration import EXPECTED_DURATION_ANNOTATION, DurationError, duration_of, parse_duration
from ..api.owners import controller_of

__all__ = [
    "EXPECTED_DURATION",
    "LIVE",
    "SOURCES",
    "DurationError",
    "Estimate",
    "History",
    "estimate_of",
    "owner_of",
    "parse_duration",
]

EXPECTED_DURATION = EXPECTED_DURATION_ANNOTATION

# Where an estimate may come from, in the order tried. LIVE: `schedule`, `explain` and `run`.
LIVE = ("activeDeadlineSeconds", "annotation", "history", "duration")
SOURCES: dict[str, tuple[str, ...]] = {
    "oracle": ("duration", "activeDeadlineSeconds", "annotation", "history"),
    "limit": ("activeDeadlineSeconds", "annotation"),
    "history": ("history", "activeDeadlineSeconds", "annotation"),
}


class Estimate(Struct, frozen=True):
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
    ref = controller_of(pod)
    if ref is not None:
        return (ref.kind, pod.metadata.namespace or "", ref.name)
    refs = (pod.metadata.ownerReferences or []) if pod.metadata else []
    return (refs[0].kind, pod.metadata.namespace or "", refs[0].name) if refs else None


class History(Struct):
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
    sources: tuple[str, ...] = LIVE,
) -> Estimate:
    """The run-time estimate of the work made of `pods` (members of `group`, a PodGroup, when given), from
    the first of `sources` that says (LIVE, or one of SOURCES).

    `objects` is anything with `get(kind, (namespace, name))` (the store) to find the pods' Job. The
    longest bound among the members counts: the group runs until its last member ends."""
    pods = list(pods)
    for source in sources:
        estimate = _FROM[source](pods, objects, group, history)
        if estimate is not None:
            return estimate
    return UNKNOWN


def _jobs_of(pods: list[Any], objects: Any) -> list[Any]:
    jobs: list[Any] = []
    for pod in pods:
        owner = owner_of(pod)
        if owner is not None and owner[0] == "Job":
            job = objects.get("Job", owner[1:])
            if job is not None and all(job is not j for j in jobs):
                jobs.append(job)
    return jobs


def _deadline(pods: list[Any], objects: Any, group: Any, history: History | None) -> Estimate | None:
    jobs = _jobs_of(pods, objects)
    limits = [p.spec.activeDeadlineSeconds for p in pods] + [j.spec.activeDeadlineSeconds for j in jobs]
    deadlines = [float(s) for s in limits if s is not None]
    return Estimate(max(deadlines), "activeDeadlineSeconds") if deadlines else None


def _annotated(pods: list[Any], objects: Any, group: Any, history: History | None) -> Estimate | None:
    for holder in [group, *_jobs_of(pods, objects), *pods]:
        seconds = _annotation(holder)
        if seconds is not None:
            return Estimate(seconds, "annotation")
    return None


def _history(pods: list[Any], objects: Any, group: Any, history: History | None) -> Estimate | None:
    if history is None:
        return None
    owners = {owner_of(p) for p in pods} - {None}
    if group is not None and not owners:
        owners = {("PodGroup", group.metadata.namespace or "", group.metadata.name)}
    known = [s for o in owners if o is not None and (s := history.estimate(o)) is not None]
    return Estimate(max(known), "history") if known else None


def _duration(pods: list[Any], objects: Any, group: Any, history: History | None) -> Estimate | None:
    """The simulator's true run time (gangsched.io/duration): the oracle estimate."""
    for holder in [group, *_jobs_of(pods, objects), *pods]:
        try:
            seconds = duration_of(holder) if holder is not None else None
        except DurationError:
            seconds = None
        if seconds is not None:
            return Estimate(seconds, "duration")
    return None


_FROM = {
    "activeDeadlineSeconds": _deadline,
    "annotation": _annotated,
    "history": _history,
    "duration": _duration,
}
