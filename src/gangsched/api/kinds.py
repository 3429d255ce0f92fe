"""The Kubernetes kinds gangsched reads, and the lightkube-models types that carry them."""

from __future__ import annotations

from typing import Any

from lightkube.models import (
    batch_v1,
    core_v1,
    policy_v1,
    resource_v1,
    scheduling_v1,
    scheduling_v1alpha3,
    scheduling_v1beta1,
    storage_v1,
)
from msgspec import Struct

from .jobset import JOBSET_API_VERSION, JobSet
from .pod_selectors import ReplicaSet, ReplicationController, Service, StatefulSet

__all__ = ["KINDS", "KindInfo", "kind_info"]


class KindInfo(Struct, frozen=True):
    kind: str
    api_version: str
    model: Any
    namespaced: bool


_ALL = [
    KindInfo("Namespace", "v1", core_v1.Namespace, False),
    KindInfo("Node", "v1", core_v1.Node, False),
    KindInfo("Pod", "v1", core_v1.Pod, True),
    KindInfo("PriorityClass", "scheduling.k8s.io/v1", scheduling_v1.PriorityClass, False),
    # Volumes and devices, read before the pods that use them.
    KindInfo("StorageClass", "storage.k8s.io/v1", storage_v1.StorageClass, False),
    KindInfo("CSINode", "storage.k8s.io/v1", storage_v1.CSINode, False),
    KindInfo("CSIDriver", "storage.k8s.io/v1", storage_v1.CSIDriver, False),
    KindInfo("CSIStorageCapacity", "storage.k8s.io/v1", storage_v1.CSIStorageCapacity, True),
    KindInfo("VolumeAttachment", "storage.k8s.io/v1", storage_v1.VolumeAttachment, False),
    KindInfo("PersistentVolume", "v1", core_v1.PersistentVolume, False),
    KindInfo("PersistentVolumeClaim", "v1", core_v1.PersistentVolumeClaim, True),
    KindInfo("DeviceClass", "resource.k8s.io/v1", resource_v1.DeviceClass, False),
    KindInfo("ResourceSlice", "resource.k8s.io/v1", resource_v1.ResourceSlice, False),
    KindInfo("DeviceTaintRule", "resource.k8s.io/v1", resource_v1.DeviceTaintRule, False),
    KindInfo("ResourceClaimTemplate", "resource.k8s.io/v1", resource_v1.ResourceClaimTemplate, True),
    KindInfo("ResourceClaim", "resource.k8s.io/v1", resource_v1.ResourceClaim, True),
    KindInfo("PodDisruptionBudget", "policy/v1", policy_v1.PodDisruptionBudget, True),
    # Read for their pod selectors only: PodTopologySpread's system default constraints (pod_selectors.py).
    KindInfo("Service", "v1", Service, True),
    KindInfo("ReplicationController", "v1", ReplicationController, True),
    KindInfo("ReplicaSet", "apps/v1", ReplicaSet, True),
    KindInfo("StatefulSet", "apps/v1", StatefulSet, True),
    KindInfo("Job", "batch/v1", batch_v1.Job, True),
    KindInfo("Workload", "scheduling.k8s.io/v1beta1", scheduling_v1beta1.Workload, True),
    KindInfo("PodGroup", "scheduling.k8s.io/v1beta1", scheduling_v1beta1.PodGroup, True),
    KindInfo("CompositePodGroup", "scheduling.k8s.io/v1alpha3", scheduling_v1alpha3.CompositePodGroup, True),
    # A CRD without a lightkube model: read so that the builder can expand multi-role jobs.
    KindInfo("JobSet", JOBSET_API_VERSION, JobSet, True),
]

#: kind -> KindInfo, in the order objects of a kind are best applied (namespaces and nodes first).
KINDS: dict[str, KindInfo] = {k.kind: k for k in _ALL}


# Exact type -> KindInfo: the store asks for every object it holds.
_BY_TYPE: dict[type, KindInfo] = {info.model: info for info in _ALL}


def kind_info(obj: Any) -> KindInfo:
    """The KindInfo for a decoded model object."""
    info = _BY_TYPE.get(type(obj))
    if info is not None:
        return info
    for info in _ALL:
        if isinstance(obj, info.model):
            return info
    raise KeyError(type(obj).__name__)
