"""Small object builders for planner, explain and backfill tests: GPU nodes in racks, pods and gangs with
run-time estimates, already-running pods with a start time."""

from __future__ import annotations

from typing import Any

from gangsched.api.gates import FeatureGates
from gangsched.scheduler import Profile, Scheduler
from gangsched.store import Store
from tests.scenarios.harness import load_objects

START = "2026-01-01T00:00:00Z"  # the store's time 0


def node(name: str, gpus: int = 4, rack: str | None = None) -> dict[str, Any]:
    labels = {"rack": rack} if rack else {}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {
            "allocatable": {"cpu": "32", "memory": "128Gi", "nvidia.com/gpu": str(gpus), "pods": "110"}
        },
    }


def pod(
    name: str,
    gpus: int,
    *,
    group: str | None = None,
    on: str | None = None,
    duration: str | None = None,
    deadline: int | None = None,
    priority: int | None = None,
    created: str | None = None,
    namespace: str = "default",
) -> dict[str, Any]:
    """A pod asking for `gpus`; `on` a node: running since time 0; `duration`: expected-duration."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if duration is not None:
        meta["annotations"] = {"gangsched.io/expected-duration": duration}
    if created is not None:
        meta["creationTimestamp"] = created
    requests = {"cpu": "1", "nvidia.com/gpu": str(gpus)}
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i", "resources": {"requests": requests}}]}
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    if deadline is not None:
        spec["activeDeadlineSeconds"] = deadline
    if priority is not None:
        spec["priority"] = priority
    out: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
    if on:
        spec["nodeName"] = on
        out["status"] = {"phase": "Running", "startTime": START}
    return out


def gang(
    name: str,
    size: int,
    gpus: int,
    *,
    duration: str | None = None,
    rack: bool = False,
    priority: int | None = None,
    created: str | None = None,
    preempts: bool = True,
    namespace: str = "default",
) -> list[dict[str, Any]]:
    """A PodGroup of `size` pods of `gpus` each, minCount = size; `rack`: all in one rack."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if duration is not None:
        meta["annotations"] = {"gangsched.io/expected-duration": duration}
    if created is not None:
        meta["creationTimestamp"] = created
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": size}}}
    if rack:
        spec["schedulingConstraints"] = {"topology": [{"key": "rack"}]}
    if priority is not None:
        spec["priority"] = priority
    if not preempts:
        spec["preemptionPolicy"] = "Never"
    pg = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": meta, "spec": spec}
    pods = [
        pod(f"{name}-{i}", gpus, group=name, priority=priority, created=created, namespace=namespace)
        for i in range(size)
    ]
    for p in pods if not preempts else []:
        p["spec"]["preemptionPolicy"] = "Never"
    return [pg, *pods]


def scheduler_for(objects: list[dict[str, Any]], profile: Profile | None = None) -> tuple[Store, Scheduler]:
    gates = FeatureGates()
    store = Store()
    store.add_all(load_objects(objects, "test", gates))
    return store, Scheduler(store, gates, profile=profile or Profile())
