"""Selective requeueing: a completion wakes exactly the roots whose failure it can fix (hints.py), and a root
woken for nothing gets no full cycle (the room bound)."""

from __future__ import annotations

from typing import Any

from gangsched.scheduler import Scheduler, Timeline, run_until_stable
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
