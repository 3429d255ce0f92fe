"""A lone pod's failed cycle kept for the next pod of its class (lone_failures.py): the kept answer is given
only while the snapshot, the class and the other objects are as they were. Messages by hand from upstream's
FitError (each node counts every reason NodeResourcesFit gives it; the `count reason` strings sorted:
framework/types.go FitError.Error) and preemption's (`preemption: ` then its own FitError: preemption.go
findCandidates; a node where nothing of lower priority runs says `No preemption victims found for incoming
pod`, one where the pod asks more than the allocatable `Preemption is not helpful for scheduling`)."""

from __future__ import annotations

from typing import Any

from gangsched.api.gates import FeatureGates
from gangsched.scheduler import Scheduler
from gangsched.store import Store

from ..scenarios.harness import load_objects
from .builders import build, group, node, pod

NO_VICTIMS = "No preemption victims found for incoming pod"


def _pod(name: str, cpu: str, memory: str, node_name: str | None = None) -> dict[str, Any]:
    return pod(name, cpu=cpu, memory=memory, node=node_name)


def _message(store: Store, name: str) -> str | None:
    status = store.get("Pod", ("default", name)).status
    for c in (status.conditions if status is not None else None) or []:
        if c.type == "PodScheduled":
            assert (c.status, c.reason) == ("False", "Unschedulable")
            return str(c.message)
    return None


def _cycles_until_told(store: Store, scheduler: Scheduler, name: str) -> None:
    """Run cycles at time 0 until pod `name` has a PodScheduled condition (its first cycle ran)."""
    for _ in range(6):
        decision = scheduler.schedule_one(0.0)
        assert decision is None or not decision.bindings
        if decision:
            store.apply(decision)
        if _message(store, name) is not None:
            return
    raise AssertionError(f"{name} never tried")


def _full_cluster(*pending: dict[str, Any]) -> tuple[Store, Scheduler]:
    """Nodes a and b, 4 cpu and 64Gi each, both full of cpu."""
    return build(
        [node("a", "4"), node("b", "4"), _pod("ra", "4", "1Gi", "a"), _pod("rb", "4", "1Gi", "b"), *pending]
    )


def test_the_next_pod_of_the_class_is_told_the_same_without_its_cycle() -> None:
    store, scheduler = _full_cluster(_pod("p", "2", "1Gi"), _pod("q", "2", "1Gi"))
    expected = (
        f"0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: 2 {NO_VICTIMS}."
    )
    _cycles_until_told(store, scheduler, "p")
    _cycles_until_told(store, scheduler, "q")
    assert (_message(store, "p"), _message(store, "q")) == (expected, expected)
    assert scheduler.lone_failures.hits == 1  # q's answer was p's, kept


def test_a_pod_of_another_class_gets_its_own_answer_on_the_same_snapshot() -> None:
    """`big` asks more memory than any node has: its own reasons, and no eviction could help anywhere."""
    store, scheduler = _full_cluster(_pod("p", "2", "1Gi"), _pod("big", "1", "128Gi"))
    _cycles_until_told(store, scheduler, "p")
    _cycles_until_told(store, scheduler, "big")
    assert _message(store, "big") == (
        "0/2 nodes are available: 2 Insufficient cpu, 2 Insufficient memory. preemption: "
        "0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )
    assert scheduler.lone_failures.hits == 0


def test_a_change_to_the_snapshot_gives_the_class_a_new_answer() -> None:
    """After p failed, rb ends and rc takes 3 cpu and all the memory of b: q, of p's class, still fits
    nowhere, but b now lacks memory as well as cpu."""
    store, scheduler = _full_cluster(_pod("p", "2", "1Gi"), _pod("q", "2", "1Gi"))
    _cycles_until_told(store, scheduler, "p")
    store.delete("Pod", ("default", "rb"))
    store.add_all(load_objects([_pod("rc", "3", "64Gi", "b")], "test", FeatureGates()))
    _cycles_until_told(store, scheduler, "q")
    assert _message(store, "q") == (
        "0/2 nodes are available: 1 Insufficient memory, 2 Insufficient cpu. "
        f"preemption: 0/2 nodes are available: 2 {NO_VICTIMS}."
    )


def test_a_change_to_another_kind_of_object_gives_the_class_a_new_answer() -> None:
    """m runs on a as a member of PodGroup g of priority 10 (its own priority 0): for p and q, of priority
    5, nothing of lower priority runs. Once g is deleted, m is a unit of its own at its own priority
    (victims.group_priority: a member whose PodGroup is gone), below q's: q's PostFilter evicts it, on a
    snapshot that did not change."""
    g = group("g", 1)
    g["spec"]["priority"] = 10
    store, scheduler = build(
        [
            node("a", "4"),
            g,
            pod("m", "g", cpu="4", node="a", priority=0),
            pod("p", cpu="2", priority=5),
            pod("q", cpu="2", priority=5),
        ]
    )
    _cycles_until_told(store, scheduler, "p")
    assert _message(store, "p") == (
        f"0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 {NO_VICTIMS}."
    )
    store.delete("PodGroup", ("default", "g"))
    evicted = []
    for _ in range(6):
        decision = scheduler.schedule_one(0.0)
        if decision:
            evicted += [e.pod for e in decision.evictions]
            store.apply(decision)
        if evicted:
            break
    assert evicted == [("default", "m")]
