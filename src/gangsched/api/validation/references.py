"""Rules between loaded objects: references that must resolve, a group agreeing with its parent, and admin
access to devices only in namespaces labelled for it.

A reference is checked against the objects of the same input, in the same namespace: a PodGroup's or
CompositePodGroup's workloadRef (the Workload and a template of the right kind in it) and its
parentCompositePodGroupName. A Pod whose PodGroup is missing is NOT an error: upstream keeps such a pod
Pending until the group appears, and so does gangsched's scheduler.

The parent rules (same priority and preemptionPolicy as the parent; `all` parents only with `all`
children; no basic child under a gang parent) are upstream's tree rules, which kube-scheduler enforces
by marking the tree Invalid; here they are reported at the child with wording of ours [unconfirmed].
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ..errors import FieldError, forbidden, invalid, not_found
from ..loader import Loaded

__all__ = ["ADMIN_ACCESS_LABEL", "admin_access_errors", "reference_errors"]

ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"
ADMIN_ACCESS_FORBIDDEN = (
    f"admin access to devices requires the `{ADMIN_ACCESS_LABEL}: true` label on the containing namespace"
)

_Key = tuple[str, str]  # (namespace, name)


def _templates(templates: Sequence[Any] | None, composite: bool) -> Iterator[tuple[str, bool]]:
    """(name, is composite) for every template of a Workload tree."""
    for t in templates or []:
        yield t.name, composite
        if composite:
            yield from _templates(t.compositePodGroupTemplates, True)
            yield from _templates(t.podGroupTemplates, False)


def _key(obj: Any, name: str | None = None) -> _Key:
    return (obj.metadata.namespace or "", name if name is not None else obj.metadata.name or "")


def _workload_ref(
    obj: Any, composite: bool, workloads: dict[_Key, set[tuple[str, bool]]]
) -> list[FieldError]:
    ref = obj.spec.workloadRef
    if ref is None or not ref.workloadName:
        return []
    templates = workloads.get(_key(obj, ref.workloadName))
    if templates is None:
        return [not_found("spec.workloadRef.workloadName", ref.workloadName)]
    if ref.templateName and (ref.templateName, composite) not in templates:
        return [not_found("spec.workloadRef.templateName", ref.templateName)]
    return []


def _kind_of(value: Any, *members: str) -> str | None:
    if value is None:
        return None
    return next((m for m in members if getattr(value, m) is not None), None)


def _against_parent(spec: Any, parent: Any) -> list[FieldError]:
    errors: list[FieldError] = []
    if spec.priority != parent.priority:
        errors.append(
            invalid("spec.priority", spec.priority, f"must equal the parent's priority {parent.priority}")
        )
    if spec.preemptionPolicy != parent.preemptionPolicy:
        errors.append(
            invalid(
                "spec.preemptionPolicy",
                spec.preemptionPolicy,
                f"must equal the parent's preemptionPolicy {parent.preemptionPolicy}",
            )
        )
    if _kind_of(parent.disruptionMode, "all", "single") == "all" and (
        _kind_of(spec.disruptionMode, "all", "single") == "single"
    ):
        errors.append(
            invalid(
                "spec.disruptionMode", "single", "must be `all` when the parent's disruptionMode is `all`"
            )
        )
    if _kind_of(parent.schedulingPolicy, "gang", "basic") == "gang" and (
        _kind_of(spec.schedulingPolicy, "gang", "basic") == "basic"
    ):
        errors.append(
            invalid(
                "spec.schedulingPolicy",
                "basic",
                "must be `gang` when the parent's schedulingPolicy is `gang`",
            )
        )
    return errors


def reference_errors(
    loaded: Sequence[Loaded], checked: Sequence[Loaded]
) -> Iterator[tuple[Loaded, FieldError]]:
    """(object, error) for every reference of `checked` (objects valid on their own) that does not resolve
    among `loaded` (all objects, so that a parent with its own problems is not also "not found"), or a
    child that disagrees with its parent. The first object of a name wins."""
    workloads: dict[_Key, set[tuple[str, bool]]] = {}
    composites: dict[_Key, Any] = {}
    for item in loaded:
        obj = item.obj
        if item.info.kind == "Workload" and obj.spec is not None:
            names = set(_templates(obj.spec.podGroupTemplates, False))
            names |= set(_templates(obj.spec.compositePodGroupTemplates, True))
            workloads.setdefault(_key(obj), names)
        elif item.info.kind == "CompositePodGroup":
            composites.setdefault(_key(obj), obj)
    for item in checked:
        if item.info.kind not in ("PodGroup", "CompositePodGroup") or item.obj.spec is None:
            continue
        obj = item.obj
        for error in _workload_ref(obj, item.info.kind == "CompositePodGroup", workloads):
            yield item, error
        parent_name = obj.spec.parentCompositePodGroupName
        if not parent_name:
            continue
        parent = composites.get(_key(obj, parent_name))
        if parent is None:
            yield item, not_found("spec.parentCompositePodGroupName", parent_name)
            continue
        for error in _against_parent(obj.spec, parent.spec):
            yield item, error


def _admin_access_path(item: Loaded) -> str | None:
    """The field upstream names when a claim or claim template asks for admin access (the first `exactly`
    request with adminAccess true; a template's requests are named as a claim's, as upstream does), or, for a
    claim, a status result granting it; None when neither does."""
    spec = item.obj.spec
    devices = None
    if item.info.kind == "ResourceClaim":
        devices = spec.devices if spec is not None else None
    elif item.info.kind == "ResourceClaimTemplate":
        devices = spec.spec.devices if spec is not None and spec.spec is not None else None
    for i, request in enumerate((devices.requests if devices is not None else None) or []):
        if request.exactly is not None and request.exactly.adminAccess:
            return f"spec.devices.requests[{i}].adminAccess"
    if item.info.kind != "ResourceClaim" or item.obj.status is None or item.obj.status.allocation is None:
        return None
    allocated = item.obj.status.allocation.devices
    for i, result in enumerate((allocated.results if allocated is not None else None) or []):
        if result.adminAccess:
            return f"status.allocation.devices.results[{i}].adminAccess"
    return None


def admin_access_errors(
    loaded: Sequence[Loaded], checked: Sequence[Loaded]
) -> Iterator[tuple[Loaded, FieldError]]:
    """(object, error) for every ResourceClaim or ResourceClaimTemplate of `checked` that asks for admin
    access to devices (or, for a claim, whose status grants it) in a namespace without the label
    `resource.kubernetes.io/admin-access: "true"`: the API server refuses it (pkg/registry/resource
    AuthorizedForAdmin, AuthorizedForAdminStatus). A namespace not in the input has no labels, as `default`
    has none on a fresh cluster."""
    labelled = {
        item.obj.metadata.name
        for item in loaded
        if item.info.kind == "Namespace"
        and (item.obj.metadata.labels or {}).get(ADMIN_ACCESS_LABEL) == "true"
    }
    for item in checked:
        if item.info.kind not in ("ResourceClaim", "ResourceClaimTemplate"):
            continue
        path = _admin_access_path(item)
        if path is not None and (item.obj.metadata.namespace or "default") not in labelled:
            yield item, forbidden(path, ADMIN_ACCESS_FORBIDDEN)
