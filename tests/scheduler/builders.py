"""Object builders for scheduler tests: small dicts loaded, defaulted and validated as manifests are."""

from __future__ import annotations

from typing import Any

from gangsched.api.gates import FeatureGates
from gangsched.scheduler import Profile, Scheduler
from gangsched.store import Store

from ..scenarios.harness import load_objects


def node(name: str, cpu: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"cpu": cpu, "memory": "64Gi", "pods": "110"}}}  # fmt: skip


def group(name: str, min_count: int, *, duration: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if duration is not None:
        meta["annotations"] = {"gangsched.io/duration": duration}
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": meta,
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}}}  # fmt: skip


def pod(
    name: str,
    group: str | None = None,
    *,
    cpu: str = "1",
    node: str | None = None,
    priority: int | None = None,
    memory: str | None = None,
) -> dict[str, Any]:
    requests = {"cpu": cpu} if memory is None else {"cpu": cpu, "memory": memory}
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "x", "resources": {"requests": requests}}],
    }
    if group is not None:
        spec["schedulingGroup"] = {"podGroupName": group}
    if node:
        spec["nodeName"] = node
    if priority is not None:
        spec["priority"] = priority
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def gang(name: str, size: int, cpu: str = "1", **kw: Any) -> list[dict[str, Any]]:
    """A PodGroup of minCount `size` and its `size` pods `<name>-<i>`."""
    return [group(name, size, **kw)] + [pod(f"{name}-{i}", name, cpu=cpu) for i in range(size)]


def build(docs: list[dict[str, Any]], profile: Profile | None = None) -> tuple[Store, Scheduler]:
    store = Store()
    store.add_all(load_objects(docs, "test", FeatureGates()))
    return store, Scheduler(store, FeatureGates(), seed=0, profile=profile or Profile())


def node_of(store: Store, name: str) -> str | None:
    got: str | None = store.get("Pod", ("default", name)).spec.nodeName
    return got


def bound(store: Store, prefix: str) -> int:
    return sum(1 for p in store.list("Pod") if p.metadata.name.startswith(prefix) and p.spec.nodeName)
