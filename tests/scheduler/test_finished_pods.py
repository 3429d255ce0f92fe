"""A pod that turns Succeeded or Failed leaves the scheduler's cache as a delete does (upstream's informer
lists only non-terminal pods): its node's room is free and the roots it blocked are retried. A root left
in the unschedulable pool is retried after podMaxInUnschedulablePodsDuration (5 min) even without an event."""

from __future__ import annotations

import copy

import pytest
from lightkube.models.core_v1 import PodStatus

from gangsched.scheduler import Scheduler, run_until_stable
from gangsched.scheduler.queue import SchedulingQueue
from gangsched.store import Store

from .builders import build, group, node, pod


def _two_gangs_one_node() -> tuple[Store, Scheduler]:
    """Node of 3 CPU; gang `a` (3 x 1 CPU) runs on it; gang `b` (3 x 1 CPU) waits."""
    docs = [node("n", "3"), group("a", 3), group("b", 3)]
    docs += [pod(f"a-{i}", "a", node="n") for i in range(3)] + [pod(f"b-{i}", "b") for i in range(3)]
    store, scheduler = build(docs)
    run_until_stable(store, scheduler)
    assert not any(store.get("Pod", ("default", f"b-{i}")).spec.nodeName for i in range(3))
    return store, scheduler


def _finish(store: Store, name: str, phase: str) -> None:
    pod = copy.deepcopy(store.get("Pod", ("default", name)))
    pod.status = pod.status or PodStatus()
    pod.status.phase = phase
    store.add(pod)  # an update, as the informer delivers it


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_finished_gang_lets_the_waiting_gang_bind(phase: str) -> None:
    store, scheduler = _two_gangs_one_node()
    for i in range(3):
        _finish(store, f"a-{i}", phase)
    run_until_stable(store, scheduler)
    assert [store.get("Pod", ("default", f"b-{i}")).spec.nodeName for i in range(3)] == ["n"] * 3


def test_one_finished_member_is_not_enough_and_the_gang_keeps_waiting() -> None:
    store, scheduler = _two_gangs_one_node()
    _finish(store, "a-0", "Succeeded")
    run_until_stable(store, scheduler)
    assert not any(store.get("Pod", ("default", f"b-{i}")).spec.nodeName for i in range(3))
    cond = next(c for c in store.get("Pod", ("default", "b-0")).status.conditions if c.type == "PodScheduled")
    assert cond.reason == "Unschedulable"


def test_updates_of_a_finished_pod_change_nothing_more() -> None:
    store, scheduler = _two_gangs_one_node()
    for i in range(3):
        _finish(store, f"a-{i}", "Succeeded")
    _finish(store, "a-0", "Succeeded")  # a later status write on a pod already gone from the cache
    run_until_stable(store, scheduler)
    assert [store.get("Pod", ("default", f"b-{i}")).spec.nodeName for i in range(3)] == ["n"] * 3


def test_unschedulable_root_is_flushed_after_five_minutes() -> None:
    queue = SchedulingQueue()
    queue.add(("Pod", "default", "p"), 0, (0.0, 1))
    root = queue.pop(0.0)
    assert root is not None
    queue.requeue_failed(root.key, 10.0, 1)
    assert queue.pop(310.0) is None  # exactly 5 minutes: upstream flushes only when longer
    again = queue.pop(310.5)
    assert again is not None and again.key == ("Pod", "default", "p")


def test_no_flush_when_disabled() -> None:
    queue = SchedulingQueue(max_unschedulable_s=None)
    queue.add(("Pod", "default", "p"), 0, (0.0, 1))
    root = queue.pop(0.0)
    assert root is not None
    queue.requeue_failed(root.key, 0.0, 1)
    assert queue.pop(1e9) is None
