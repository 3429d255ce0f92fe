"""Another writer changes a pending pod's status.nominatedNodeName: the live cache passes the change on, the
nominator follows, and the room the old nomination held is free for pods of lower priority again.

Upstream (pkg/scheduler/eventhandlers.go, updatePodInSchedulingQueue): on such an update the nominator
takes the new node (backend/queue/nominator.go, UpdateNominatedPod), and the pod is treated as deleted from
its old nominated node, which requeues the pods of equal or lower priority that the room may help. The echo
of the scheduler's own nomination write changes nothing.

The case, by hand: node-1 has 4 free CPUs; node-2's 4 are taken by a running pod. Pods p1, p2, p3 (priority
100, 3 CPUs each, preemptionPolicy Never) are nominated to node-1 by their status (written by an earlier
scheduler instance). Each fails: the other two hold 6 CPUs there for pods of priority <= 100. Being
ineligible to preempt, they keep their nominations (upstream's PostFilter returns no nominating info then).
Pod `late` (priority 10, 1 CPU) fails as well: `Insufficient cpu` on both nodes. Clearing p1's nomination
leaves 6 CPUs held by p2 and p3: every cycle still fails. Clearing p2's as well, or moving it to node-2,
leaves p3 alone on node-1: p3 fits (3 CPUs) and binds first (higher priority), then `late` takes the last
CPU.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from gangsched.api.gates import FeatureGates
from gangsched.live.cache import LiveCache
from gangsched.scheduler import Scheduler
from gangsched.store import Change, Store

from .test_nominations import Clock, objects, step

CLUSTER = """
- {apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: low}, value: 10}
- {apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: high}, value: 100}
- {apiVersion: v1, kind: Node, metadata: {name: node-1}, status: {allocatable: {cpu: "4", memory: 16Gi}}}
- {apiVersion: v1, kind: Node, metadata: {name: node-2}, status: {allocatable: {cpu: "4", memory: 16Gi}}}
- {apiVersion: v1, kind: Pod, metadata: {name: big}, spec: {priorityClassName: high, nodeName: node-2,
   containers: [{name: c, image: i, resources: {requests: {cpu: "4"}}}]}}
- {apiVersion: v1, kind: Pod, metadata: {name: p1}, spec: {priorityClassName: high, preemptionPolicy: Never,
   containers: [{name: c, image: i, resources: {requests: {cpu: "3"}}}]}, status: {nominatedNodeName: node-1}}
- {apiVersion: v1, kind: Pod, metadata: {name: p2}, spec: {priorityClassName: high, preemptionPolicy: Never,
   containers: [{name: c, image: i, resources: {requests: {cpu: "3"}}}]}, status: {nominatedNodeName: node-1}}
- {apiVersion: v1, kind: Pod, metadata: {name: p3}, spec: {priorityClassName: high, preemptionPolicy: Never,
   containers: [{name: c, image: i, resources: {requests: {cpu: "3"}}}]}, status: {nominatedNodeName: node-1}}
- {apiVersion: v1, kind: Pod, metadata: {name: late}, spec: {priorityClassName: low,
   containers: [{name: c, image: i, resources: {requests: {cpu: "1"}}}]}}
"""


def _setup() -> tuple[Store, Scheduler, LiveCache, Clock, list[Change]]:
    clock = Clock()
    store = Store(clock)
    for i, obj in enumerate(objects(CLUSTER)):
        obj.metadata.resourceVersion = str(i + 1)
        store.add(obj)
    scheduler = Scheduler(store, FeatureGates(), seed=0)
    cache = LiveCache(store, nominated=scheduler.nominated_node)
    changes: list[Change] = []
    store.subscribe(changes.append)
    return store, scheduler, cache, clock, changes


def _settle(store: Store, scheduler: Scheduler, clock: Clock) -> list[str]:
    """Run every cycle that is due (backoffs waited); the pods bound meanwhile."""
    bound: list[str] = []
    for _ in range(50):
        decision = step(store, scheduler, clock)
        if decision is None:
            ready = scheduler.queue.next_ready_at()
            if ready is None:
                break
            clock.now = max(clock.now, ready)
            continue
        bound += [f"{b.pod[1]}@{b.node}" for b in decision.bindings]
    return bound


def _write(cache: LiveCache, store: Store, name: str, node: str | None, version: int) -> None:
    """Another writer's status patch on pod `name`, as the watch delivers it (a new resourceVersion)."""
    old = store.get("Pod", ("default", name))
    meta = msgspec.structs.replace(old.metadata, resourceVersion=f"w{version}")
    status = msgspec.structs.replace(old.status, nominatedNodeName=node)
    cache.event("Pod", "MODIFIED", msgspec.structs.replace(old, metadata=meta, status=status))


def _late(store: Store) -> Any:
    return store.get("Pod", ("default", "late"))


def test_the_held_room_stays_held_while_the_nominations_stand() -> None:
    store, scheduler, cache, clock, changes = _setup()
    assert _settle(store, scheduler, clock) == []
    message = next(c for c in _late(store).status.conditions if c.type == "PodScheduled").message
    assert message.startswith("0/2 nodes are available: 2 Insufficient cpu.")
    # The echo of a status write that agrees with the nominator (here: a condition written, node-1 kept)
    # is quiet: no change event, nothing requeued.
    _write(cache, store, "p1", "node-1", 1)
    assert changes == [] and _settle(store, scheduler, clock) == []


@pytest.mark.parametrize("second", [None, "node-2"], ids=["cleared", "moved-to-node-2"])
def test_another_writer_changing_nominations_frees_the_room_they_held(second: str | None) -> None:
    store, scheduler, cache, clock, changes = _setup()
    _settle(store, scheduler, clock)
    _write(cache, store, "p1", None, 1)  # 6 CPUs still held on node-1 by p2 and p3
    assert [c.action for c in changes] == ["update"], "the cache dropped the other writer's change"
    assert scheduler.nominated_node(("default", "p1")) is None
    assert _settle(store, scheduler, clock) == []
    _write(cache, store, "p2", second, 2)  # p3 alone holds node-1 now
    assert scheduler.nominated_node(("default", "p2")) == second
    assert _settle(store, scheduler, clock) == ["p3@node-1", "late@node-1"]
