"""Semantic validation of loaded objects with upstream's rules and messages.

Entry point: `validate(loaded, gates) -> list[Problem]`. Objects must already be defaulted (namespace,
disruptionMode, priority, preemptionPolicy), as the API server validates after admission has defaulted them.

One module per kind family: meta (names, labels), groups (PodGroup, CompositePodGroup), workload (the
template tree), core (Pod, Node, PriorityClass, PodDisruptionBudget, Job), references (rules between
objects). Feature gates: with GenericWorkload off the workload objects are still read (the scheduler ignores
them, giving classic pod-by-pod behaviour on the same inputs), so the finer gates are only enforced while
GenericWorkload is on.

>>> from gangsched.api import FeatureGates, load_documents
>>> docs = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "Bad_NS"}}]
>>> [str(p.error)[:40] for p in validate(load_documents(docs, "in.yaml").objects, FeatureGates())]
['metadata.name: Invalid value: "Bad_NS": ']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..errors import FieldError, Problem, duplicate
from ..gates import FeatureGates
from ..loader import Loaded
from .annotations import gangsched_annotations
from .common import gate_forbidden
from .core import job_spec, node, pod_disruption_budget, pod_spec, priority_class
from .groups import composite_pod_group_spec, pod_group_spec
from .meta import object_meta
from .pod_selectors import label_selector_owner, map_selector_owner
from .references import admin_access_errors, reference_errors
from .resource import device_class, device_taint_rule, resource_claim_spec, resource_slice
from .storage import csi_node, persistent_volume, persistent_volume_claim, storage_class
from .workload import workload_spec

__all__ = ["object_errors", "validate"]


def object_errors(item: Loaded, gates: FeatureGates) -> list[FieldError]:
    """Errors of one object on its own (no other object consulted)."""
    obj, kind = item.obj, item.info.kind
    errors = object_meta(kind, obj.metadata, item.info.namespaced) + gangsched_annotations(obj.metadata)
    workload_api = gates.enabled("GenericWorkload")
    if kind == "Pod":
        errors += pod_spec(obj.spec)
    elif kind == "Node":
        errors += node(obj)
    elif kind == "PriorityClass":
        errors += priority_class(obj)
    elif kind == "PodDisruptionBudget":
        errors += pod_disruption_budget(obj)
    elif kind == "Job":
        errors += job_spec(obj, gates)  # the loader gave an absent spec its empty struct
    elif kind == "PodGroup" and workload_api:
        errors += pod_group_spec(obj.spec, gates)
    elif kind == "CompositePodGroup" and workload_api:
        if not gates.enabled("CompositePodGroup"):
            # The kind is not served at all without its gate [the wording is ours].
            errors.append(gate_forbidden("kind", "CompositePodGroup"))
        else:
            errors += composite_pod_group_spec(obj.spec, gates)
    elif kind == "Workload" and workload_api:
        errors += workload_spec(obj.spec, gates)
    elif kind in _STORAGE_AND_DEVICES:
        errors += _STORAGE_AND_DEVICES[kind](obj)
    return errors


# Kinds checked on their own object alone, the same under every gate (storage, devices, pod selectors).
_STORAGE_AND_DEVICES: dict[str, Callable[[Any], list[FieldError]]] = {
    "StorageClass": storage_class,
    "PersistentVolume": persistent_volume,
    "PersistentVolumeClaim": persistent_volume_claim,
    "CSINode": csi_node,
    "DeviceClass": device_class,
    "ResourceSlice": resource_slice,
    "DeviceTaintRule": device_taint_rule,
    "ResourceClaim": lambda obj: resource_claim_spec(obj.spec),
    "ResourceClaimTemplate": lambda obj: resource_claim_spec(obj.spec and obj.spec.spec, "spec.spec"),
    "Service": lambda obj: map_selector_owner("Service", obj),
    "ReplicationController": lambda obj: map_selector_owner("ReplicationController", obj),
    "ReplicaSet": lambda obj: label_selector_owner("ReplicaSet", obj),
    "StatefulSet": lambda obj: label_selector_owner("StatefulSet", obj),
}


def _problem(item: Loaded, error: FieldError) -> Problem:
    meta = item.obj.metadata
    return Problem(item.file, item.info.kind, meta.namespace or "", meta.name or "", error)


def validate(loaded: Sequence[Loaded], gates: FeatureGates) -> list[Problem]:
    """Every problem in `loaded`, one Problem per field error, in input order (object by object, then
    the rules between objects, which only consider objects that are valid on their own)."""
    problems: list[Problem] = []
    seen: set[tuple[str, str, str]] = set()
    valid: list[Loaded] = []
    for item in loaded:
        meta = item.obj.metadata
        errors = object_errors(item, gates)
        key = (item.info.kind, meta.namespace or "", meta.name or "")
        if meta.name and key in seen:
            errors.append(duplicate("metadata.name", meta.name))
        seen.add(key)
        problems.extend(_problem(item, e) for e in errors)
        if not errors:
            valid.append(item)
    if gates.enabled("GenericWorkload"):
        problems.extend(_problem(item, e) for item, e in reference_errors(loaded, valid))
    problems.extend(_problem(item, e) for item, e in admin_access_errors(loaded, valid))
    return problems
