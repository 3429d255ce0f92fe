"""The recovery policies as `gangsched run` applies them (live/recovery.py), on a Store and a hand-held clock.

One gang g (minCount 2) of three 1-GPU members on nodes n0, n1, n2; n3 is spare. The expectations follow
the policies' rules (scheduler/recovery.py, docs/deploy.md), computed by hand: a stalled gang holds the GPUs
of its members in place, so 2 members stalled for 10 s are 20 GPU-seconds."""

from __future__ import annotations

from typing import Any

import msgspec

from gangsched.api.gates import FeatureGates
from gangsched.live.recovery import GangRecovery
from gangsched.scheduler.recovery import Recovery
from gangsched.store import Store

from .scenarios.harness import load_objects

GPU = "example.com/gpu"


def _node(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {
            "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110", GPU: "1"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _pod(name: str, node: str | None, scheduler: str = "gangsched") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "schedulingGroup": {"podGroupName": "g"},
        "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1", GPU: "1"},
                                                                 "limits": {GPU: "1"}}}],
    }  # fmt: skip
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def _objects(docs: list[dict[str, Any]]) -> list[Any]:
    return list(load_objects(docs, "test", FeatureGates()))


def _cluster(policy: str) -> tuple[Store, GangRecovery]:
    group = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
             "metadata": {"name": "g", "namespace": "default"},
             "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}  # fmt: skip
    store = Store()
    store.add_all(_objects([*(_node(f"n{i}") for i in range(4)), group,
                            *(_pod(f"g-{i}", f"n{i}") for i in range(3))]))  # fmt: skip
    tracker = GangRecovery(store, Recovery.parse(policy), scheduler_name="gangsched")
    assert tracker.observe(0.0) == []
    assert set(tracker.gangs) == {("default", "g")}  # admitted: 3 in place >= minCount 2
    return store, tracker


def _held(tracker: GangRecovery, now: float) -> float:
    return dict(tracker.held_below_min_count(now)).get(("default", "g"), 0.0)


def _set_phase(store: Store, name: str, phase: str) -> None:
    pod = store.get("Pod", ("default", name))
    status = msgspec.structs.replace(pod.status, phase=phase) if pod.status else None
    store.add(msgspec.structs.replace(pod, status=status) if status else _with_phase(pod, phase))


def _with_phase(pod: Any, phase: str) -> Any:
    doc = msgspec.to_builtins(pod)
    doc["status"] = {"phase": phase}
    return _objects([doc])[0]


def _not_ready(store: Store, name: str) -> None:
    doc = _node(name)
    doc["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    store.add(_objects([doc])[0])


def test_wait_holds_the_rest_until_the_replacement_is_in_place() -> None:
    store, tracker = _cluster("wait")
    _set_phase(store, "g-0", "Failed")
    assert tracker.observe(10.0) == []  # wait never deletes
    assert tracker.stalled_since(("default", "g")) == 10.0
    assert _held(tracker, 15.0) == 2 * 5.0  # read while it lasts: g-1, g-2 for 5 s
    store.add(_objects([_pod("g-0-r1", "n3")])[0])  # the owner's replacement, bound
    assert tracker.observe(20.0) == []
    assert tracker.stalled_since(("default", "g")) is None
    assert _held(tracker, 30.0) == 2 * 10.0


def test_continue_goes_on_above_min_count_and_stalls_below() -> None:
    store, tracker = _cluster("continue")
    _not_ready(store, "n0")  # g-0 lost: 2 in place = minCount, it goes on
    assert tracker.observe(10.0) == []
    assert tracker.stalled_since(("default", "g")) is None
    store.delete("Pod", ("default", "g-1"))  # 1 in place < minCount: held until 2 are in place again
    assert tracker.observe(40.0) == []
    assert _held(tracker, 50.0) == 1 * 10.0
    store.add(_objects([_pod("g-1-r1", "n3")])[0])
    tracker.observe(55.0)
    assert _held(tracker, 100.0) == 1 * 15.0


def test_wait_counts_a_member_on_a_not_ready_node_as_lost_until_replaced() -> None:
    store, tracker = _cluster("wait")
    _not_ready(store, "n0")
    assert tracker.observe(10.0) == []
    # g-0 stays bound (the taint-eviction controller's business); 3 must be in place again
    store.add(_objects([_pod("g-0-r1", "n3")])[0])
    tracker.observe(13.0)
    assert _held(tracker, 20.0) == 2 * 3.0


def test_restart_deletes_every_member_still_bound_once() -> None:
    store, tracker = _cluster("restart")
    store.delete("Node", ("", "n1"))
    (action,) = tracker.observe(10.0)
    # g-1 is bound to the deleted node: deleted too, as the pod garbage collector would
    assert (action.kind, action.delete) == (
        "restart",
        (("default", "g-0"), ("default", "g-1"), ("default", "g-2")),
    )
    assert action.notice.reason == "GangRestart" and action.notice.object == "PodGroup default/g"
    store.add(_objects([_pod("g-1-r1", None)])[0])  # the owner's replacement, pending
    assert tracker.observe(11.0) == []  # the deletions not seen yet: not admitted again, not restarted again
    store.delete("Pod", ("default", "g-0"))  # ... nor when the first of them is gone
    assert tracker.observe(12.0) == []
    assert tracker.actions == {"restart": 1, "release": 0}
    assert _held(tracker, 20.0) == 0.0


def test_release_after_t_stalled() -> None:
    store, tracker = _cluster("release-after:30")
    store.delete("Pod", ("default", "g-2"))
    assert tracker.observe(10.0) == []
    assert tracker.next_release_at() == 40.0
    assert tracker.observe(39.0) == []
    (action,) = tracker.observe(40.0)
    assert (action.kind, action.delete) == ("release", (("default", "g-0"), ("default", "g-1")))
    assert action.notice.reason == "GangReleased"
    assert _held(tracker, 100.0) == 2 * 30.0
    assert tracker.next_release_at() is None


def test_a_replacement_before_t_stops_the_release_clock() -> None:
    store, tracker = _cluster("release-after:30")
    store.delete("Pod", ("default", "g-2"))
    tracker.observe(10.0)
    store.add(_objects([_pod("g-2-r1", "n3")])[0])
    assert tracker.observe(20.0) == []
    assert tracker.next_release_at() is None
    assert tracker.observe(45.0) == []
    assert _held(tracker, 45.0) == 2 * 10.0


def test_a_finishing_gang_is_not_recovered() -> None:
    store, tracker = _cluster("restart")
    _set_phase(store, "g-0", "Succeeded")
    assert tracker.observe(10.0) == []
    assert tracker.gangs == {}


def test_other_schedulers_gangs_are_not_watched() -> None:
    store = Store()
    group = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
             "metadata": {"name": "g", "namespace": "default"},
             "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}  # fmt: skip
    store.add_all(_objects([_node("n0"), _node("n1"), group,
                            *(_pod(f"g-{i}", f"n{i}", "default-scheduler") for i in range(2))]))  # fmt: skip
    tracker = GangRecovery(store, Recovery.parse("restart"), scheduler_name="gangsched")
    tracker.observe(0.0)
    store.delete("Pod", ("default", "g-0"))
    assert tracker.observe(1.0) == [] and tracker.gangs == {}
