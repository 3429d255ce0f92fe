"""Queue policies as Profile settings: who may overtake whom, and in which order roots are tried."""

from __future__ import annotations

import pytest

from gangsched.scheduler import Profile, run_until_stable
from gangsched.scheduler.policy import QUEUE_POLICIES, queue_policy

from .builders import bound, build, gang, node, pod


def _profile(name: str) -> Profile:
    return Profile(queue_policy=queue_policy(name))


@pytest.mark.parametrize(("policy", "small_bound"), [("gang", 2), ("gang-strict-fifo", 0), ("gang-sjf", 2)])
def test_a_later_gang_that_fits_overtakes_unless_strict_fifo(policy: str, small_bound: int) -> None:
    """4 CPU node, 2 CPU taken. `big` (4 x 1 CPU) arrives first and cannot fit; `small` (2 x 1 CPU) can."""
    docs = [node("n", "4"), pod("blocker", cpu="2", node="n"), *gang("big", 4), *gang("small", 2)]
    store, scheduler = build(docs, _profile(policy))
    run_until_stable(store, scheduler)
    assert (bound(store, "big-"), bound(store, "small-")) == (0, small_bound)


def test_strict_fifo_admits_the_head_when_room_comes_and_the_next_waits() -> None:
    docs = [node("n", "4"), pod("blocker", cpu="2", node="n"), *gang("big", 4), *gang("small", 2)]
    store, scheduler = build(docs, _profile("gang-strict-fifo"))
    run_until_stable(store, scheduler)
    store.delete("Pod", ("default", "blocker"))
    run_until_stable(store, scheduler)
    assert (bound(store, "big-"), bound(store, "small-")) == (4, 0)


@pytest.mark.parametrize(
    ("policy", "first"), [("gang", "long"), ("gang-sjf", "short"), ("pod-by-pod", "long")]
)
def test_shortest_known_run_time_first_under_sjf(policy: str, first: str) -> None:
    """Two gangs that each need the whole 4 CPU node: `long` (2 h) is created before `short` (10m)."""
    docs = [node("n", "4"), *gang("long", 4, duration="2h"), *gang("short", 4, duration="10m")]
    store, scheduler = build(docs, _profile(policy))
    run_until_stable(store, scheduler)
    assert bound(store, f"{first}-") == 4


def test_pod_by_pod_splits_the_eight_gpu_story_and_gang_does_not() -> None:
    """Two 6 x 1 CPU trainings on 8 CPU, members arriving interleaved: pod by pod each gets 4, gang 6 + 0."""
    docs = [node("n", "8"), *gang("a", 6)[:1], *gang("b", 6)[:1]]
    docs += [p for i in range(6) for p in (gang("a", 6)[1 + i], gang("b", 6)[1 + i])]
    results = {}
    for policy in ("pod-by-pod", "gang"):
        store, scheduler = build(docs, _profile(policy))
        run_until_stable(store, scheduler)
        results[policy] = (bound(store, "a-"), bound(store, "b-"))
    assert results == {"pod-by-pod": (4, 4), "gang": (6, 0)}


def test_unknown_policy_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown queue policy 'fifo' \\(known: gang, gang-strict-fifo"):
        queue_policy("fifo")
    assert set(QUEUE_POLICIES) == {"gang", "gang-strict-fifo", "gang-sjf", "pod-by-pod", "gang-backfill"}
