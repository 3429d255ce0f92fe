"""Hypothesis strategies for random clusters and workloads, as plain Kubernetes manifests (dicts).

Quantities are whole numbers of small units (cpu in millicores, memory in MiB, GPUs), so that tests can add
requests up on their own, independently of the engine's quantity and request code.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

ZONES = ("a", "b", "c")
TAINT = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}
RESOURCES = ("cpu", "memory", "nvidia.com/gpu")
UNITS = {"cpu": "m", "memory": "Mi", "nvidia.com/gpu": ""}


@dataclass
class World:
    """A generated input: the manifests plus what the tests need to check invariants."""

    docs: list[dict[str, Any]]
    node_alloc: dict[str, dict[str, int]]  # node -> resource -> amount (plus "pods")
    pod_requests: dict[str, dict[str, int]] = field(default_factory=dict)  # effective requests
    min_counts: dict[str, int] = field(default_factory=dict)  # gang PodGroup -> minCount


def _quantities(amounts: dict[str, int]) -> dict[str, str]:
    return {r: f"{v}{UNITS[r]}" for r, v in amounts.items() if v or r != "nvidia.com/gpu"}


@st.composite
def requests(draw: st.DrawFn, gpu: bool) -> dict[str, int]:
    return {
        "cpu": draw(st.sampled_from([0, 100, 250, 500, 1000, 2000])),
        "memory": draw(st.sampled_from([0, 128, 512, 1024, 4096])),
        "nvidia.com/gpu": draw(st.integers(0, 2)) if gpu else 0,
    }


@st.composite
def nodes(draw: st.DrawFn) -> list[tuple[dict[str, Any], dict[str, int]]]:
    out = []
    uniform = draw(st.booleans())  # identical nodes make score ties, which the seeded generator breaks
    for i in range(draw(st.integers(1, 5))):
        if uniform and out:
            out.append(
                (
                    {**copy.deepcopy(out[0][0]), "metadata": {**out[0][0]["metadata"], "name": f"node-{i}"}},
                    out[0][1],
                )
            )
            continue
        alloc = {
            "cpu": draw(st.integers(1, 8)) * 500,
            "memory": draw(st.integers(1, 16)) * 1024,
            "nvidia.com/gpu": draw(st.sampled_from([0, 0, 2, 4])),
            "pods": draw(st.sampled_from([3, 5, 110])),
        }
        status = {
            "allocatable": {**_quantities({r: alloc[r] for r in RESOURCES}), "pods": str(alloc["pods"])}
        }
        spec: dict[str, Any] = {"taints": [TAINT]} if draw(st.integers(0, 4)) == 0 else {}
        if draw(st.integers(0, 9)) == 0:
            spec["unschedulable"] = True
        meta = {"name": f"node-{i}", "labels": {"zone": draw(st.sampled_from(ZONES))}}
        out.append(
            ({"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec, "status": status}, alloc)
        )
    return out


def _pod(
    name: str, req: dict[str, int], init: dict[str, int] | None, extra: dict[str, Any]
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "i", "resources": {"requests": _quantities(req)}}]
    }
    if init is not None:
        spec["initContainers"] = [
            {"name": "init", "image": "i", "resources": {"requests": _quantities(init)}}
        ]
    spec.update(extra)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def effective(req: dict[str, int], init: dict[str, int] | None) -> dict[str, int]:
    """Upstream's PodRequests for one container and at most one (non-sidecar) init container."""
    return {r: max(req[r], init[r] if init else 0) for r in RESOURCES}


@st.composite
def pod_spec_extras(draw: st.DrawFn) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    if draw(st.integers(0, 3)) == 0:
        extra["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]
    if draw(st.integers(0, 4)) == 0:
        extra["nodeSelector"] = {"zone": draw(st.sampled_from(ZONES))}
    return extra


@st.composite
def worlds(draw: st.DrawFn) -> World:
    """Nodes, gangs and basic groups (some members already bound where they fit), and standalone pods."""
    generated = draw(nodes())
    world = World([n for n, _ in generated], {n["metadata"]["name"]: a for n, a in generated})
    free = {name: dict(a) for name, a in world.node_alloc.items()}
    gpu = any(a["nvidia.com/gpu"] for a in world.node_alloc.values())

    def add_pod(name: str, extra: dict[str, Any], may_bind: bool) -> None:
        req = draw(requests(gpu))
        init = draw(requests(gpu)) if draw(st.integers(0, 4)) == 0 else None
        eff = effective(req, init)
        if may_bind and draw(st.integers(0, 3)) == 0:
            for node, room in free.items():
                if room["pods"] >= 1 and all(room[r] >= eff[r] for r in RESOURCES):
                    for r in RESOURCES:
                        room[r] -= eff[r]
                    room["pods"] -= 1
                    extra = {**extra, "nodeName": node}
                    break
        world.docs.append(_pod(name, req, init, {**draw(pod_spec_extras()), **extra}))
        world.pod_requests[name] = eff

    for g in range(draw(st.integers(0, 4))):
        group = f"pg-{g}"
        gang = draw(st.integers(0, 3)) > 0
        min_count = draw(st.integers(1, 4))
        policy = {"gang": {"minCount": min_count}} if gang else {"basic": {}}
        priority = draw(st.sampled_from([0, 0, 10]))
        world.docs.append(
            {
                "apiVersion": "scheduling.k8s.io/v1beta1",
                "kind": "PodGroup",
                "metadata": {"name": group},
                "spec": {"schedulingPolicy": policy, "priority": priority},
            }
        )
        if gang:
            world.min_counts[group] = min_count
        for i in range(draw(st.integers(max(min_count - 1, 1), min_count + 2))):
            extra = {"schedulingGroup": {"podGroupName": group}, "priority": priority}
            add_pod(f"{group}-{i}", extra, may_bind=True)
    for i in range(draw(st.integers(0, 5))):
        add_pod(f"solo-{i}", {}, may_bind=True)
    return world


@dataclass
class LoneGang:
    """One group of identical pods on empty nodes, and how many of those pods the nodes hold at most."""

    docs: list[dict[str, Any]]
    pods: int
    min_count: int  # 1 for a basic group: upstream checks it as a gang of minCount 1
    capacity: int


def _eligible(node: dict[str, Any], extra: dict[str, Any]) -> bool:
    """The node filters other than resources, for a pod with `extra` (tolerations, nodeSelector)."""
    spec = node.get("spec") or {}
    if spec.get("unschedulable"):
        return False
    if spec.get("taints") and not extra.get("tolerations"):
        return False
    selector = extra.get("nodeSelector") or {}
    return all(node["metadata"]["labels"].get(k) == v for k, v in selector.items())


def holds(alloc: dict[str, int], eff: dict[str, int]) -> int:
    """How many pods of effective requests `eff` a node with room `alloc` takes (a resource a pod does not
    request never limits it; the node's pod count always does)."""
    return min([alloc["pods"]] + [alloc[r] // eff[r] for r in RESOURCES if eff[r] > 0])


@st.composite
def lone_gangs(draw: st.DrawFn) -> LoneGang:
    """Identical pods: any greedy placement then places exactly min(pods, capacity) of them, whatever the
    order and the scores (each placement lowers one node's count by exactly one), so the expected outcome
    is plain arithmetic."""
    generated = draw(nodes())
    gpu = any(a["nvidia.com/gpu"] for _, a in generated)
    req = draw(requests(gpu))
    init = draw(requests(gpu)) if draw(st.integers(0, 4)) == 0 else None
    extra = draw(pod_spec_extras())
    eff = effective(req, init)
    capacity = sum(holds(a, eff) for n, a in generated if _eligible(n, extra))
    gang = draw(st.integers(0, 3)) > 0
    min_count = draw(st.integers(1, 6)) if gang else 1
    size = draw(st.integers(min_count, min_count + 3))
    policy = {"gang": {"minCount": min_count}} if gang else {"basic": {}}
    docs = [n for n, _ in generated]
    docs.append(
        {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "pg"},
            "spec": {"schedulingPolicy": policy},
        }
    )
    extra = {**extra, "schedulingGroup": {"podGroupName": "pg"}}
    docs += [_pod(f"pg-{i}", req, init, extra) for i in range(size)]
    return LoneGang(docs, size, min_count, capacity)
