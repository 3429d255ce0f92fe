"""A plan's earliest start taken over from the last plan when the reservations before the root changed
(earliest_starts.EarliestStarts): only the candidate times up to the latest end of the reservations that
differ are tried again, and the old answer stands when none of them fits and it lay later. The answers here
are computed by hand, and each must also be what `earliest_start` finds afresh.

Four nodes of 4 GPUs running work from t = 0 (ends on the 60 s grid): n0 4 GPUs until 100 (120); n1 2 GPUs
until 200 (240) and 2 until 300 (300); n2 4 GPUs until 400 (420); n3 1 GPU until 500 (540). A gang of
2 x 4 GPUs running 200 s needs two whole nodes: free on n0 from 120, n1 from 300, n2 from 420, so without
reservations its earliest start is 300 on n0 and n1.
- X holds n0 over [0, 100): it holds nothing at 120 or later, so the gang starts at 300 on n0 and n1 with X
  or without it; when X comes or goes, only the candidates up to 120 (X's end on the grid) are tried again
  (0 and 120: the gang fits at neither, no trial placement is made), and 300 stands.
- X holds n0 over [0, 600): the gang would run into it on n0 anywhere before 600, so with X it starts at 420
  on n1 and n2. When X goes (the root ahead started), the candidates up to 600 are tried again, and it
  starts at 300 on n0 and n1: reusing 420 would be wrong.
- X holds n0 for ever (no estimate): nothing is reused; the gang is planned afresh (300).
"""

from __future__ import annotations

from typing import Any

from msgspec.structs import replace

from gangsched.scheduler.backfill_settings import INFINITE, PlanSettings
from gangsched.scheduler.earliest_starts import EarliestStarts
from gangsched.scheduler.estimates import Estimate
from gangsched.scheduler.plan import Reservation, RunningIndex, earliest_start, root_estimate
from tests.scheduler.plan_objects import gang, node, pod, scheduler_for

G = ("PodGroup", "default", "g")
X = ("PodGroup", "default", "x")


def _objects() -> list[dict[str, Any]]:
    return [
        node("n0"),
        node("n1"),
        node("n2"),
        node("n3"),
        pod("r0", 4, on="n0", duration="100"),
        pod("r1", 2, on="n1", duration="200"),
        pod("r2", 2, on="n1", duration="300"),
        pod("r3", 4, on="n2", duration="400"),
        pod("r4", 1, on="n3", duration="500"),
        *gang("g", 2, 4, duration="200"),
    ]


def _plans(before: float | None, after: float | None) -> tuple[Reservation | None, Reservation | None, Any]:
    """The gang's earliest start with X over [0, before) ahead of it (None: no X), then, in the next plan
    at the same time with nothing else changed, with X over [0, after); and what the second plan did
    (trial placements, answers reused partly, and its answer computed afresh)."""
    _, scheduler = scheduler_for(_objects())
    snap = scheduler.snapshot()
    assert snap.node_names == ["n0", "n1", "n2", "n3"]
    settings = PlanSettings()
    index = RunningIndex(scheduler, settings)
    running = index.get(0.0)
    place = scheduler.placer(G)
    assert place is not None
    trials = [0]

    def counted(nodes: Any) -> Any:
        trials[0] += 1
        return place(nodes)

    counting = replace(place, place=counted)  # the same pods: what a reuse compares
    estimate = root_estimate(scheduler, G)
    assert estimate.seconds == 200.0

    def held(end: float | None) -> list[Reservation]:
        if end is None:
            return []
        return [Reservation(X, 0.0, end, frozenset({snap.index["n0"]}), None, Estimate(None))]

    starts = EarliestStarts()
    first = starts.get(scheduler, G, counting, estimate, running, held(before), 0.0, settings, index)
    trials[0] = 0
    second = starts.get(scheduler, G, counting, estimate, running, held(after), 0.0, settings, index)
    afresh = earliest_start(scheduler, G, place, estimate, running, held(after), 0.0, settings).found
    return first, second, (trials[0], starts.partly, afresh)


def _at(r: Reservation | None) -> tuple[float, list[str]] | None:
    names = ["n0", "n1", "n2", "n3"]  # the snapshot numbers the nodes in the order they came
    return None if r is None else (r.start, sorted(names[n] for n in r.nodes))


def test_a_reservation_ahead_that_ended_before_leaves_the_answer_after_its_end() -> None:
    for before, after in [(100.0, None), (None, 100.0)]:
        first, second, (trials, partly, afresh) = _plans(before, after)
        assert _at(first) == (300.0, ["n0", "n1"])
        assert _at(second) == (300.0, ["n0", "n1"])
        assert second == afresh
        assert partly == 1 and trials == 0  # 0 and 120 tried by capacity alone; 300 taken over


def test_a_root_ahead_gone_brings_the_answer_forward() -> None:
    first, second, (trials, partly, afresh) = _plans(600.0, None)
    assert _at(first) == (420.0, ["n1", "n2"])
    assert _at(second) == (300.0, ["n0", "n1"])
    assert second == afresh
    assert partly == 1 and trials == 1


def test_a_reservation_ahead_without_end_is_planned_afresh() -> None:
    first, second, (trials, partly, afresh) = _plans(INFINITE, None)
    assert _at(first) == (420.0, ["n1", "n2"])  # n0 held for ever
    assert _at(second) == (300.0, ["n0", "n1"])
    assert second == afresh
    assert partly == 0 and trials == 1
