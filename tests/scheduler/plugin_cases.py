"""Small builders for the plugin tests: nodes, pods and per-node verdicts on a fresh evaluator.

`verdicts` answers what upstream's plugin unit tests check: for each node, None when the pod fits there, or
the reason of the first filter that rejects it; `scores` gives each node's total score for the pod.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from lightkube.models import core_v1

from gangsched.api.defaults import apply_defaults
from gangsched.scheduler.evaluator import Evaluator, FitFailure
from gangsched.scheduler.podinfo import pod_info
from gangsched.scheduler.snapshot import Snapshot

ALLOCATABLE = {"cpu": "64", "memory": "256Gi", "pods": "110"}


def node(
    name: str,
    labels: dict[str, str] | None = None,
    *,
    taints: list[dict[str, str]] | None = None,
    **status: Any,
) -> Any:
    return core_v1.Node.from_dict(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": labels or {}},
            "spec": {"taints": taints or []},
            "status": {"allocatable": ALLOCATABLE, **status},
        }
    )


def term(key: str, op: str, values: list[str] | None, topology_key: str, **more: Any) -> dict[str, Any]:
    expr: dict[str, Any] = {"key": key, "operator": op}
    if values is not None:
        expr["values"] = values
    return {"labelSelector": {"matchExpressions": [expr]}, "topologyKey": topology_key, **more}


def pod(
    name: str = "p",
    labels: dict[str, str] | None = None,
    *,
    namespace: str = "default",
    node_name: str | None = None,
    affinity: list[dict[str, Any]] | None = None,
    anti: list[dict[str, Any]] | None = None,
    preferred_affinity: list[tuple[int, dict[str, Any]]] | None = None,
    preferred_anti: list[tuple[int, dict[str, Any]]] | None = None,
    spread: list[dict[str, Any]] | None = None,
    ports: list[dict[str, Any]] | None = None,
    node_selector: dict[str, str] | None = None,
    node_affinity: list[dict[str, Any]] | None = None,
    images: list[str] | None = None,
    cpu: str = "100m",
) -> Any:
    spec: dict[str, Any] = {
        "containers": [
            {"name": f"c{i}", "image": image, "resources": {"requests": {"cpu": cpu}}, "ports": ports or []}
            for i, image in enumerate(images or ["pause"])
        ]
    }
    aff: dict[str, Any] = {}
    if affinity or preferred_affinity:
        aff["podAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": affinity or [],
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "podAffinityTerm": t} for w, t in preferred_affinity or []
            ],
        }
    if anti or preferred_anti:
        aff["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": anti or [],
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": w, "podAffinityTerm": t} for w, t in preferred_anti or []
            ],
        }
    if node_affinity:
        aff["nodeAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": node_affinity}
        }
    if aff:
        spec["affinity"] = aff
    if spread:
        spec["topologySpreadConstraints"] = spread
    if node_selector:
        spec["nodeSelector"] = node_selector
    if node_name:
        spec["nodeName"] = node_name
    obj = core_v1.Pod.from_dict(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
            "spec": spec,
        }
    )
    apply_defaults([obj])
    return obj


def evaluator(
    nodes: list[Any], existing: list[Any], namespaces: dict[str, dict[str, str]] | None = None
) -> Evaluator:
    """An evaluator on `nodes` with the `existing` pods (each with nodeName) placed; existing pods on a
    node that is not in `nodes` are left out, as upstream's snapshot holds only known nodes' pods."""
    snap = Snapshot(nodes)
    labels = namespaces or {}

    def namespace_labels(ns: str) -> dict[str, str]:
        return {**labels.get(ns, {}), "kubernetes.io/metadata.name": ns}

    ev = Evaluator(snap, np.random.default_rng(0), namespace_labels=namespace_labels)
    for i, p in enumerate(existing):
        pi = pod_info(p, i)
        if p.spec.nodeName in snap.index:
            snap.place(pi.key, snap.index[p.spec.nodeName], ev.vector(pi), pi.traits)
    return ev


def verdicts(ev: Evaluator, incoming: Any) -> dict[str, str | None]:
    """Per node: None if `incoming` fits, else the single reason the node reports."""
    pi = pod_info(incoming, 10_000)
    out: dict[str, str | None] = {}
    for name, index in ev.snap.index.items():
        only = np.zeros(len(ev.snap), dtype=bool)
        only[index] = True
        found = ev.find_node(pi, only)
        if isinstance(found, FitFailure):
            (reason,) = found.histogram
            out[name] = reason
        else:
            out[name] = None
    return out
