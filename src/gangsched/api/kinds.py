"""The Kubernetes kinds gangsched reads, and the lightkube-models types that carry them.

A kind's model is imported when it is first asked for (`KindInfo.model`: the loader decoding an object of
that kind; `kind_info` on an object whose module some code imported to make it). lightkube's modules of the
kinds a gang's input does not hold (devices, storage, Jobs, disruption budgets, priority classes) took about
21M instructions to import, 4-5 ms of CPU at every start of every command; gangsched's own modules import
them where they use them (a claim's status, a CompositePodGroup's, a Job's expansion), not at the top.
"""

from __future__ import annotations

import sys
from importlib import import_module
from typing import Any

from msgspec import Struct

from .jobset import JOBSET_API_VERSION

__all__ = ["KINDS", "KindInfo", "kind_info"]


class KindInfo(Struct, frozen=True):
    kind: str
    api_version: str
    model_path: str  # "module:Class" of the model: imported on the first call of `model`
    namespaced: bool

    @property
    def model(self) -> Any:
        """The model class, imported now if no one asked for it before."""
        model = _MODELS.get(self.kind)
        if model is None:
            module, _, name = self.model_path.partition(":")
            model = _MODELS[self.kind] = getattr(import_module(module), name)
            _BY_TYPE[model] = self
        return model


_CORE, _STORAGE, _RESOURCE = (
    "lightkube.models.core_v1",
    "lightkube.models.storage_v1",
    "lightkube.models.resource_v1",
)
_SCHEDULING, _SELECTORS = (
    "lightkube.models.scheduling_v1beta1",
    "gangsched.api.pod_selectors",
)
_ALL = [
    KindInfo("Namespace", "v1", f"{_CORE}:Namespace", False),
    KindInfo("Node", "v1", f"{_CORE}:Node", False),
    KindInfo("Pod", "v1", f"{_CORE}:Pod", True),
    KindInfo(
        "PriorityClass",
        "scheduling.k8s.io/v1",
        "lightkube.models.scheduling_v1:PriorityClass",
        False,
    ),
    # Volumes and devices, read before the pods that use them.
    KindInfo("StorageClass", "storage.k8s.io/v1", f"{_STORAGE}:StorageClass", False),
    KindInfo("CSINode", "storage.k8s.io/v1", f"{_STORAGE}:CSINode", False),
    KindInfo("CSIDriver", "storage.k8s.io/v1", f"{_STORAGE}:CSIDriver", False),
    KindInfo(
        "CSIStorageCapacity",
        "storage.k8s.io/v1",
        f"{_STORAGE}:CSIStorageCapacity",
        True,
    ),
    KindInfo("VolumeAttachment", "storage.k8s.io/v1", f"{_STORAGE}:VolumeAttachment", False),
    KindInfo("PersistentVolume", "v1", f"{_CORE}:PersistentVolume", False),
    KindInfo("PersistentVolumeClaim", "v1", f"{_CORE}:PersistentVolumeClaim", True),
    KindInfo("DeviceClass", "resource.k8s.io/v1", f"{_RESOURCE}:DeviceClass", False),
    KindInfo("ResourceSlice", "resource.k8s.io/v1", f"{_RESOURCE}:ResourceSlice", False),
    KindInfo("DeviceTaintRule", "resource.k8s.io/v1", f"{_RESOURCE}:DeviceTaintRule", False),
    KindInfo(
        "ResourceClaimTemplate",
        "resource.k8s.io/v1",
        f"{_RESOURCE}:ResourceClaimTemplate",
        True,
    ),
    KindInfo("ResourceClaim", "resource.k8s.io/v1", f"{_RESOURCE}:ResourceClaim", True),
    KindInfo(
        "PodDisruptionBudget",
        "policy/v1",
        "lightkube.models.policy_v1:PodDisruptionBudget",
        True,
    ),
    # Read for their pod selectors only: PodTopologySpread's system default constraints (pod_selectors.py).
    KindInfo("Service", "v1", f"{_SELECTORS}:Service", True),
    KindInfo("ReplicationController", "v1", f"{_SELECTORS}:ReplicationController", True),
    KindInfo("ReplicaSet", "apps/v1", f"{_SELECTORS}:ReplicaSet", True),
    KindInfo("StatefulSet", "apps/v1", f"{_SELECTORS}:StatefulSet", True),
    KindInfo("Job", "batch/v1", "lightkube.models.batch_v1:Job", True),
    KindInfo("Workload", "scheduling.k8s.io/v1beta1", f"{_SCHEDULING}:Workload", True),
    KindInfo("PodGroup", "scheduling.k8s.io/v1beta1", f"{_SCHEDULING}:PodGroup", True),
    KindInfo(
        "CompositePodGroup",
        "scheduling.k8s.io/v1alpha3",
        "lightkube.models.scheduling_v1alpha3:CompositePodGroup",
        True,
    ),
    # A CRD without a lightkube model: read so that the builder can expand multi-role jobs.
    KindInfo("JobSet", JOBSET_API_VERSION, "gangsched.api.jobset:JobSet", True),
]

#: kind -> KindInfo, in the order objects of a kind are best applied (namespaces and nodes first).
KINDS: dict[str, KindInfo] = {k.kind: k for k in _ALL}

_MODELS: dict[str, Any] = {}  # kind -> its model, once imported
# Exact type -> KindInfo, for every model imported so far: the store asks for every object it holds.
_BY_TYPE: dict[type, KindInfo] = {}


def kind_info(obj: Any) -> KindInfo:
    """The KindInfo for a decoded model object."""
    info = _BY_TYPE.get(type(obj))
    if info is not None:
        return info
    # A model not asked for yet (an object made by code that imported its module), or a subclass of one. A
    # model whose module is not imported has no object.
    for info in _ALL:
        if info.model_path.partition(":")[0] in sys.modules and isinstance(obj, info.model):
            return info
    raise KeyError(type(obj).__name__)
