"""A partial search taking the last plan's trial over (plan.KnownTrial): when work started since on nodes
that could take no pod of the root at its start, in the last plan or now, the trial there is not made again
and its nodes stand; when such a node could take one, in either plan, the trial is made. The answers are
computed by hand, and each must also be what `earliest_start` finds afresh.

Four nodes of 4 GPUs running work from t = 0 (ends on the 60 s grid): n0, n1 and n2 4 GPUs each until 100
(120), n3 1 GPU until 500 (540). A gang of 2 x 4 GPUs running 200 s needs two whole nodes: at 120 three are
free (n0, n1, n2, all alike: a tie), so it starts at 120 on two of them, whichever the plan's tie-breaker
draws. Then a pod of 1 GPU starts (at 0, expected to run 600 s: it holds its GPU past 120) on:
- n3, which could take no 4-GPU pod at 120 before (3 GPUs free) nor now (2): the trial at 120 is taken
  over, the gang starts at 120 on the same nodes, no trial is made;
- the free node the gang did not take, which could take one before: the trial is made; the gang starts at
  120 on the same two nodes, the only whole ones left then;
- a node the gang took: the trial is made, and the gang starts at 120 on the other two free nodes.
Or the pod on n3 ends at once, 500 s early: n3 could take no 4-GPU pod at 120 before, but can now, so the
trial is made: the gang starts at 120 on two of the four free nodes (the tie-breaker's draw among four).

And with other reservations before the root in the second search (at depth N, the roots behind a root that
started): the nodes of a reservation held in one search and not the other count as changed, since the
trial's node mask may differ there (see `_behind` below).
"""

from __future__ import annotations

from typing import Any

from msgspec.structs import replace

from gangsched.api.gates import FeatureGates
from gangsched.scheduler.backfill_settings import PlanSettings
from gangsched.scheduler.earliest_starts import EarliestStarts
from gangsched.scheduler.estimates import Estimate
from gangsched.scheduler.plan import Reservation, RunningIndex, earliest_start, root_estimate
from tests.scenarios.harness import load_objects
from tests.scheduler.plan_objects import gang, node, pod, scheduler_for

G = ("PodGroup", "default", "g")
NAMES = ["n0", "n1", "n2", "n3"]  # the snapshot numbers the nodes in the order they came


def _objects() -> list[dict[str, Any]]:
    return [
        *(node(n) for n in NAMES),
        pod("r0", 4, on="n0", duration="100"),
        pod("r1", 4, on="n1", duration="100"),
        pod("r2", 4, on="n2", duration="100"),
        pod("r3", 1, on="n3", duration="500"),
        *gang("g", 2, 4, duration="200"),
    ]


def _plans(late_on: Any) -> tuple[Reservation | None, Reservation | None, Any]:
    """The gang's earliest start at 0, then in the next plan (at 0) after a 1-GPU pod started on the node
    `late_on(first answer)` names (None: r3 ended instead); and what the second plan did (trial
    placements, partial searches, trials taken over, and its answer computed afresh)."""
    store, scheduler = scheduler_for(_objects())
    snap = scheduler.snapshot()
    assert snap.node_names == NAMES
    settings = PlanSettings()
    index = RunningIndex(scheduler, settings)
    estimate = root_estimate(scheduler, G)
    assert estimate.seconds == 200.0
    trials = [0]

    def counting() -> Any:
        place = scheduler.placer(G)
        assert place is not None

        def counted(nodes: Any) -> Any:
            trials[0] += 1
            return place(nodes)

        return replace(place, place=counted)  # the same pods: what a reuse compares

    starts = EarliestStarts()
    first = starts.get(scheduler, G, counting(), estimate, index.get(0.0), [], 0.0, settings, index)
    assert first is not None
    on = late_on(first)
    if on is None:
        store.delete("Pod", ("default", "r3"))
        index.pod_changed(("default", "r3"))
    else:
        for obj in load_objects([pod("late", 1, on=on, duration="600")], "test", FeatureGates()):
            store.add(obj)
        index.pod_changed(("default", "late"))
    assert scheduler.snapshot() is snap  # the same snapshot, counting one more pod
    running = index.get(0.0)
    trials[0] = 0
    second = starts.get(scheduler, G, counting(), estimate, running, [], 0.0, settings, index)
    afresh = earliest_start(scheduler, G, scheduler.placer(G), estimate, running, [], 0.0, settings).found  # type: ignore[arg-type]
    return first, second, (trials[0], starts.partly, starts.taken_over, afresh)


def _at(r: Reservation | None) -> tuple[float, list[str]] | None:
    return None if r is None else (r.start, sorted(NAMES[n] for n in r.nodes))


def _took(r: Reservation) -> list[str]:
    at = _at(r)
    assert at is not None and at[0] == 120.0
    assert len(at[1]) == 2 and set(at[1]) <= {"n0", "n1", "n2"}  # two of the three free at 120
    return at[1]


def test_work_on_a_node_that_fits_no_pod_either_way_leaves_the_trial_as_it_was() -> None:
    first, second, (trials, partly, taken_over, afresh) = _plans(lambda _: "n3")
    assert first is not None and second is not None
    assert _at(second) == (120.0, _took(first))
    assert second == afresh
    assert (trials, partly, taken_over) == (0, 1, 1)


def test_work_on_a_node_that_fit_a_pod_before_makes_the_trial_again() -> None:
    def other(first: Reservation) -> str:
        return ({"n0", "n1", "n2"} - set(_took(first))).pop()

    first, second, (trials, partly, taken_over, afresh) = _plans(other)
    assert first is not None
    assert _at(second) == (120.0, _took(first))  # the only whole nodes at 120
    assert second == afresh
    assert (trials, partly, taken_over) == (1, 1, 0)


def test_work_on_a_node_the_trial_took_moves_the_root_to_the_others() -> None:
    def taken(first: Reservation) -> str:
        return _took(first)[0]

    first, second, (trials, partly, taken_over, afresh) = _plans(taken)
    assert first is not None
    moved = sorted({"n0", "n1", "n2"} - {_took(first)[0]})
    assert _at(second) == (120.0, moved)
    assert second == afresh
    assert (trials, partly, taken_over) == (1, 1, 0)


def test_work_ended_on_a_node_that_fits_a_pod_now_makes_the_trial_again() -> None:
    first, second, (trials, partly, taken_over, afresh) = _plans(lambda _: None)
    assert first is not None
    _took(first)
    at = _at(second)
    assert at is not None and at[0] == 120.0 and len(at[1]) == 2  # two of n0 to n3, all free then
    assert second == afresh
    assert (trials, partly, taken_over) == (1, 1, 0)


# The reservations before the root differ between the two searches (at depth N, the roots behind a root that
# started). Three nodes of 4 GPUs: n0 and n1 4 GPUs each until 100 (120), n2 2 GPUs until 100 (120) and 2
# until 500 (540), so from 120 n0 and n1 have 4 GPUs free and n2 2. A reservation H holds n0 and n1 over
# [120, 1000). Pod p (2 GPUs, 200 s) fits nowhere at 0; at 120, with n0 and n1 held, only on n2.
P = ("Pod", "default", "p")
H = ("PodGroup", "default", "h")


def _behind(held_after: list[Reservation]) -> tuple[Reservation | None, Reservation | None, Any]:
    """p's earliest start behind H at 0, then again behind `held_after` in the next plan (nothing else
    changed); and (trials made in the second, searches taken over, its answer computed afresh)."""
    objects = [
        *(node(n) for n in ("n0", "n1", "n2")),
        pod("r0", 4, on="n0", duration="100"),
        pod("r1", 4, on="n1", duration="100"),
        pod("r2", 2, on="n2", duration="100"),
        pod("r3", 2, on="n2", duration="500"),
        pod("p", 2, duration="200"),
    ]
    _, scheduler = scheduler_for(objects)
    settings = PlanSettings()
    index = RunningIndex(scheduler, settings)
    estimate = root_estimate(scheduler, P)
    place = scheduler.placer(P)
    assert place is not None and estimate.seconds == 200.0
    trials = [0]

    def counted(nodes: Any) -> Any:
        trials[0] += 1
        return place(nodes)

    counting = replace(place, place=counted)
    starts = EarliestStarts()
    first = starts.get(
        scheduler, P, counting, estimate, index.get(0.0), [_held(120.0, 1000.0)], 0.0, settings, index
    )
    trials[0] = 0
    running = index.get(0.0)
    second = starts.get(scheduler, P, counting, estimate, running, held_after, 0.0, settings, index)
    afresh = earliest_start(scheduler, P, place, estimate, running, held_after, 0.0, settings).found
    return first, second, (trials[0], starts.taken_over, afresh)


def _held(start: float, end: float) -> Reservation:
    """H over [start, end) on n0 and n1 (the snapshot numbers the nodes in the order they came)."""
    return Reservation(H, start, end, frozenset({0, 1}), None, Estimate(end - start))


def _on(r: Reservation | None) -> tuple[float, list[str]] | None:
    return None if r is None else (r.start, sorted(["n0", "n1", "n2"][n] for n in r.nodes))


def test_a_reservation_ahead_moved_on_nodes_that_fit_no_pod_either_way_leaves_the_trial() -> None:
    """H moves later ([120, 1500)) on the same nodes: at 120 n0 and n1 are held in both searches, so they
    fit no pod of p either way, and the trial on n2 is taken over."""
    first, second, (trials, taken_over, afresh) = _behind([_held(120.0, 1500.0)])
    assert _on(first) == (120.0, ["n2"])
    assert _on(second) == (120.0, ["n2"])
    assert second == afresh
    assert (trials, taken_over) == (0, 1)


def test_a_reservation_ahead_gone_makes_the_trial_again() -> None:
    """H is gone (it left the queue): at 120 n0 and n1 are free and unheld, and LeastAllocated prefers
    either (4 GPUs free) to n2 (2): the trial is made, and p moves to n0 or n1. Taking the old trial over
    (n2) would be wrong: the nodes H held, masked in the first search only, could take p's pod now."""
    first, second, (trials, taken_over, afresh) = _behind([])
    assert _on(first) == (120.0, ["n2"])
    at = _on(second)
    assert at is not None and at[0] == 120.0 and at[1] in (["n0"], ["n1"])
    assert second == afresh
    assert (trials, taken_over) == (1, 0)
