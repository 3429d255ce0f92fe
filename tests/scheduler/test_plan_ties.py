"""A plan breaks ties between equally good nodes with a generator of its own (plan.tie_breaker), so that the
same root on the same snapshot gets the same reservation whenever the plan is made.

Four nodes of 4 GPUs, each running a 4-GPU pod that ends at 100 s; gang G (2 x 4 GPUs) waits. At 120 s (100
on the 60 s grid) every node is free and scores the same, so G's reservation is the two nodes its tie-breaker
draws: the first pod takes node number `a` = draw over the 4 tied nodes, the second node number `c` of the 3
left (in node order), with the generator started from the scheduler's seed and G alone.
"""

from __future__ import annotations

from gangsched.scheduler import Profile
from gangsched.scheduler.backfill import BackfillSettings
from gangsched.scheduler.plan import tie_breaker
from gangsched.scheduler.scheduler import Scheduler
from tests.scheduler.plan_objects import gang, node, pod, scheduler_for

G = ("PodGroup", "default", "g")


def _waiting_gang(seed: int) -> Scheduler:
    objects = [node(f"n{i}") for i in range(4)]
    objects += [pod(f"r{i}", 4, on=f"n{i}", duration="100") for i in range(4)]
    objects += gang("g", 2, 4, duration="500")
    store, scheduler = scheduler_for(objects, Profile(backfill=BackfillSettings(depth=1)))
    scheduler.seed = seed
    store.clock = lambda: 0.0
    while (decision := scheduler.schedule_one(0.0)) is not None:  # G fails its cycle and gets a plan
        store.apply(decision)
    return scheduler


def _drawn_nodes(seed: int) -> frozenset[int]:
    ties = tie_breaker(seed, G)
    free = [0, 1, 2, 3]
    first = free.pop(int(ties.integers(4)))
    return frozenset({first, free[int(ties.integers(3))]})


def test_the_reservation_is_the_nodes_the_roots_own_tie_breaker_draws() -> None:
    for seed in range(4):
        scheduler = _waiting_gang(seed)
        assert scheduler.backfill is not None
        r = scheduler.backfill.reservations[G]
        assert (r.start, r.nodes) == (120.0, _drawn_nodes(seed)), seed


def test_a_plan_made_later_reserves_the_same_nodes_and_draws_nothing_from_the_scheduler() -> None:
    scheduler = _waiting_gang(0)
    assert scheduler.backfill is not None
    first = scheduler.backfill.reservations[G]
    for draws in (1, 2, 5):
        scheduler.rng.integers(4, size=draws)  # cycles drew in between: the plan must not care
        position = scheduler.rng.position()
        scheduler.backfill.replan(0.0)
        assert scheduler.backfill.reservations[G] == first
        assert scheduler.rng.position() == position


def test_a_plan_after_a_nomination_reserves_around_it_rather_than_reuse_the_last_answer() -> None:
    """A nomination changes what the snapshot counts but no running work: G's earliest start must be found
    again (EarliestStarts compares the snapshot's version), not taken over from the plan before it. A pod
    of G's priority nominated to a node of G's reservation holds its 4 GPUs there, so at 120 s G fits only
    on two of the three other nodes."""
    scheduler = _waiting_gang(0)
    assert scheduler.backfill is not None
    first = scheduler.backfill.reservations[G]
    held = min(first.nodes)
    snap = scheduler.snapshot()
    snap.nominate(("default", "x"), held, snap.vector({"nvidia.com/gpu": 4000}, (100, 200)), 0)
    scheduler.backfill.replan(0.0)
    again = scheduler.backfill.reservations[G]
    assert again.start == 120.0
    assert len(again.nodes) == 2 and held not in again.nodes, (first.nodes, again.nodes)
