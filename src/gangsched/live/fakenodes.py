"""Nodes as API objects, the way KWOK makes them: no kubelet, a Ready condition written through the status
subresource, and the `node.kubernetes.io/not-ready` taint (added at creation by the TaintNodesByCondition
admission plugin) removed as the node-lifecycle controller would once the node is Ready.

Usage::

    node = create_node(client, "n1", {"cpu": "4", "memory": "16Gi"}, labels={"rack": "r1"})

Contract: synchronous, one object per call; raises lightkube.ApiError as the server answers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from lightkube import Client
from lightkube.models.core_v1 import NodeSpec, Taint
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Node
from lightkube.types import PatchType

__all__ = ["NOT_READY_TAINT", "create_node", "node_status"]

NOT_READY_TAINT = "node.kubernetes.io/not-ready"
DEFAULT_CAPACITY: Mapping[str, str] = {"cpu": "4", "memory": "16Gi", "pods": "110"}


def node_status(capacity: Mapping[str, str]) -> dict[str, Any]:
    """The status a healthy kubelet would report: capacity = allocatable, Ready and no pressure."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    resources = {**DEFAULT_CAPACITY, **capacity}

    def condition(kind: str, status: str, reason: str) -> dict[str, str]:
        return {
            "type": kind,
            "status": status,
            "reason": reason,
            "message": f"fake node: {reason}",
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
        }

    return {
        "capacity": resources,
        "allocatable": resources,
        "phase": "Running",
        "conditions": [
            condition("Ready", "True", "KubeletReady"),
            condition("MemoryPressure", "False", "KubeletHasSufficientMemory"),
            condition("DiskPressure", "False", "KubeletHasNoDiskPressure"),
            condition("PIDPressure", "False", "KubeletHasSufficientPID"),
        ],
        "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
        "nodeInfo": {
            "architecture": "amd64",
            "operatingSystem": "linux",
            "kubeletVersion": "fake",
            "kubeProxyVersion": "",
            "bootID": "",
            "containerRuntimeVersion": "fake://0",
            "kernelVersion": "",
            "machineID": "",
            "osImage": "fake",
            "systemUUID": "",
        },
    }


def create_node(
    client: Client,
    name: str,
    capacity: Mapping[str, str] = DEFAULT_CAPACITY,
    *,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Taint] = (),
) -> Any:
    """Create a Ready node with this capacity (also its allocatable), labels and exactly these taints.
    Returns the Node as the server has it at the end."""
    all_labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}
    all_labels.update(labels or {})
    client.create(Node(metadata=ObjectMeta(name=name, labels=all_labels), spec=NodeSpec(taints=list(taints))))
    client.patch(Node.Status, name, {"status": node_status(capacity)}, patch_type=PatchType.MERGE)
    # The node-lifecycle controller's part: once Ready, only the taints the caller asked for remain.
    wanted = [{"key": t.key, "value": t.value, "effect": t.effect} for t in taints]
    return client.patch(Node, name, {"spec": {"taints": wanted or None}}, patch_type=PatchType.MERGE)
