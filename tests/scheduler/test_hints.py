"""Selective requeueing: a completion wakes exactly the roots whose failure it can fix (hints.py), and a root
woken for nothing gets no full cycle (the room bound)."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

from gangsched.scheduler import Scheduler, Timeline, hints, run_until_stable
from gangsched.store import Store

from .builders import bound, build, gang, group, node, pod


def _settled(docs: list[dict[str, Any]]) -> tuple[Store, Scheduler, Timeline]:
    """Scheduled, then 100 s later (every backoff over), ready for a release."""
    store, scheduler = build(docs)
    timeline = Timeline(store, scheduler)
    timeline.run(until=100.0)
    return store, scheduler, timeline


def _state(scheduler: Scheduler, name: str) -> str | None:
    root = scheduler.queue.get(("PodGroup", "default", name))
    return root.state if root is not None else None


def test_a_completion_wakes_exactly_the_gangs_it_can_help() -> None:
    """8 CPU node: x (3 CPU) and y (5 CPU) run. Gangs a (3 x 1 CPU), b (4 x 1) and c (6 x 1) wait. x ends:
    3 CPU free, room for a only. y ends too: 8 free, room for b and c (a is bound by then, with 5 left)."""
    docs = [node("n", "8"), pod("x", cpu="3", node="n"), pod("y", cpu="5", node="n")]
    store, scheduler = build(docs + gang("a", 3) + gang("b", 4) + gang("c", 6))
    run_until_stable(store, scheduler)
    assert {g: _state(scheduler, g) for g in "abc"} == dict.fromkeys("abc", "unschedulable")
    store.delete("Pod", ("default", "x"))
    assert {g: _state(scheduler, g) for g in "abc"} == {
        "a": "backoff",
        "b": "unschedulable",
        "c": "unschedulable",
    }
    run_until_stable(store, scheduler)
    assert (bound(store, "a-"), bound(store, "b-"), bound(store, "c-")) == (3, 0, 0)
    store.delete("Pod", ("default", "y"))  # 5 CPU free: b (4) fits, c (6) does not
    assert {g: _state(scheduler, g) for g in "bc"} == {"b": "backoff", "c": "unschedulable"}


def test_a_released_pending_pod_wakes_nobody() -> None:
    """Deleting a pod that was never bound frees nothing (NodeResourcesFit's hint skips it)."""
    store, scheduler = build(
        [node("n", "1"), pod("x", cpu="1", node="n"), *gang("a", 1), pod("lone", cpu="2")]
    )
    run_until_stable(store, scheduler)
    store.delete("Pod", ("default", "lone"))
    assert _state(scheduler, "a") == "unschedulable"


def test_a_root_that_might_preempt_is_woken_by_any_release() -> None:
    """A gang above a running pod's priority may preempt: no bound applies, any release wakes it."""
    docs = [
        node("n", "4"),
        pod("low", cpu="1", node="n", priority=0),
        pod("x", cpu="3", node="n", priority=100),
    ]
    docs += [group("hi", 4)] + [pod(f"hi-{i}", "hi", cpu="2", priority=50) for i in range(4)]
    store, scheduler = build(docs)
    run_until_stable(store, scheduler)
    assert bound(store, "hi-") == 0
    store.delete("Pod", ("default", "x"))
    assert _state(scheduler, "hi") in ("backoff", "active")


def test_the_walk_wakes_only_what_the_room_can_hold_in_queue_order() -> None:
    """Two 4 x 1 CPU gangs wait on a 4 CPU node; the blocker ends: room for one, the first is woken."""
    docs = [node("n", "4"), pod("blocker", cpu="4", node="n"), *gang("a", 4), *gang("b", 4)]
    store, scheduler, _ = _settled(docs)
    store.delete("Pod", ("default", "blocker"))
    assert (_state(scheduler, "a"), _state(scheduler, "b")) == ("backoff", "unschedulable")


def test_a_root_still_backing_off_does_not_hold_the_room_for_the_roots_behind_it() -> None:
    """The same two gangs, the blocker ending at once (both still in their 1 s backoff): both are woken, as
    upstream lets the second take the room if the first is not ready."""
    docs = [node("n", "4"), pod("blocker", cpu="4", node="n"), *gang("a", 4), *gang("b", 4)]
    store, scheduler = build(docs)
    run_until_stable(store, scheduler)
    store.delete("Pod", ("default", "blocker"))
    assert (_state(scheduler, "a"), _state(scheduler, "b")) == ("backoff", "backoff")


def test_woken_roots_that_the_room_bound_rules_out_get_no_full_cycle() -> None:
    """Gang a (4 x 1 CPU) and gang b (2 x 2 CPU) wait on a 4 CPU node; the blocker ends. Each class has room,
    so both are woken; a binds first, and b is put back by the bound instead of a cycle that must fail."""
    docs = [node("n", "4"), pod("blocker", cpu="4", node="n"), *gang("a", 4), *gang("b", 2, cpu="2")]
    store, scheduler, timeline = _settled(docs)
    cycles = scheduler.cycles
    store.delete("Pod", ("default", "blocker"))
    assert (_state(scheduler, "a"), _state(scheduler, "b")) == ("backoff", "backoff")
    timeline.run(until=200.0)
    assert (bound(store, "a-"), bound(store, "b-")) == (4, 0)
    assert (scheduler.cycles - cycles, scheduler.skipped) == (1, 1)
    b0 = store.get("Pod", ("default", "b-0"))
    assert next(c for c in b0.status.conditions if c.type == "PodScheduled").reason == "Unschedulable"


# --- the walk bounded by estimates, on the index alone (hints.RoomWaiters) ---


def _index(estimates: dict[str, float], needs: dict[str, int] | None = None) -> tuple[hints.RoomWaiters, Any]:
    """Roots named by `estimates` (seconds), each needing `needs` pods of one class (1 when not given),
    waiting in name order."""
    waiters = hints.RoomWaiters(estimate=lambda root: estimates[root[2]])
    like = SimpleNamespace(signature="one-gpu")
    for name in sorted(estimates):
        waiters.wait(("Pod", "default", name), (name,), hints.RoomNeed(like, (needs or {}).get(name, 1)))
    return waiters, like


def _bounded_walk(
    waiters: hints.RoomWaiters, room: int, longest: float, own: frozenset[Any] = frozenset()
) -> list[str]:
    """A release with `room` pods' room, under a planner that refuses every root expected to run longer than
    `longest` but those of `own` (every root is ready)."""
    fits = hints.Fits(lambda root, like, need: True, lambda like, need: longest, own)
    return [root[2] for root in waiters.wake(lambda like: room, lambda root: True, fits)]


def test_a_bounded_walk_wakes_the_roots_of_one_band_one_after_another() -> None:
    """a to e run 100 s (one band), f runs a day. Room for 3 and a bound of 1000 s: a, b and c, in queue
    order. Each woken root leaves its band at once, so the walk must read the next root where it stands (a
    walk that moved on by one there would wake a, c and e)."""
    waiters, _ = _index({"a": 100.0, "b": 100.0, "c": 100.0, "d": 100.0, "e": 100.0, "f": 86400.0})
    assert _bounded_walk(waiters, 3, 1000.0) == ["a", "b", "c"]
    assert _bounded_walk(waiters, 3, 1000.0) == ["d", "e"]  # f is refused: it runs longer


def test_a_bounded_walk_merges_its_bands_and_the_reserved_roots_in_queue_order() -> None:
    """a and d run 100 s, b and e 500 s (another band), c a day but holds a reservation of its own: room for
    4 wakes a, b, c and d in queue order; e waits (the room is used up)."""
    waiters, _ = _index({"a": 100.0, "b": 500.0, "c": 86400.0, "d": 100.0, "e": 500.0})
    own = frozenset({("Pod", "default", "c")})
    assert _bounded_walk(waiters, 4, 1000.0, own) == ["a", "b", "c", "d"]


def test_a_bounded_walk_reads_the_band_that_starts_at_the_bound() -> None:
    """A root expected to run exactly as long as the bound is let through by the planner, so its band, which
    starts at its estimate (2 s: band 4 starts at 2^(4/4) s), must be read; one a hair longer is refused."""
    waiters, _ = _index({"a": 2.0, "b": 2.0 * (1 + 1e-9)})
    assert hints._band_start(hints._band(2.0)) == 2.0
    assert _bounded_walk(waiters, 2, 2.0) == ["a"]
    assert _bounded_walk(waiters, 2, 2.0 * (1 + 1e-9)) == ["b"]


def test_the_last_band_within_a_bound_is_the_highest_band_starting_within_it() -> None:
    """A walk reads the bands up to `_last_band_within(longest)`: exactly those whose start is within it."""
    bounds = [-1.0, 0.0, 0.5, 1.0, 2**0.25, 2**0.25 - 1e-12, 2.0, 3.0, 60.0, 3600.0, 86400.0 * 7, 1e12]
    bounds += [hints._band_start(b) * f for b in range(1, 200) for f in (1.0, 1 - 1e-15, 1 + 1e-15)]
    for longest in bounds:
        expected = max((b for b in range(-2, 400) if hints._band_start(b) <= longest), default=-math.inf)
        last = hints._last_band_within(longest)
        assert last == expected, (longest, last, expected)
    assert hints._last_band_within(math.inf) == math.inf


def test_a_bounded_walk_reads_every_need_up_to_the_bound_of_the_least() -> None:
    """The planner lets a root needing 1 pod through when it runs at most 1000 s, one needing 2 pods at most
    100 s (there is less room for 2 outside the reservations). a needs 2 and runs 50 s, b needs 1 and runs
    500 s: room for 3 wakes both (a walk bounded by the larger need's 100 s would leave b asleep)."""
    estimates = {"a": 50.0, "b": 500.0, "c": 2000.0}
    waiters, _ = _index(estimates, {"a": 2})
    bound = {1: 1000.0, 2: 100.0}

    def check(root: Any, like: Any, need: int) -> bool:
        return estimates[root[2]] <= bound[need]

    fits = hints.Fits(check, lambda like, need: bound[need])
    assert [root[2] for root in waiters.wake(lambda like: 3, lambda root: True, fits)] == ["a", "b"]
