"""StorageClass, PersistentVolume, PersistentVolumeClaim and CSINode: the fields volume scheduling reads.

Rules and messages are upstream's (pkg/apis/storage/validation: ValidateStorageClass, ValidateCSINode;
pkg/apis/core/validation: ValidatePersistentVolumeSpec, ValidatePersistentVolumeClaimSpec), limited to the
fields the VolumeBinding, VolumeZone, VolumeRestrictions and NodeVolumeLimits plugins depend on.
"""

from __future__ import annotations

from typing import Any

from ..errors import NIL, FieldError, duplicate, forbidden, invalid, not_supported, required
from ..quantity import QuantityError, parse_quantity
from .names import dns1123_subdomain, label_key

__all__ = ["csi_node", "persistent_volume", "persistent_volume_claim", "storage_class"]

ACCESS_MODES = ["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"]
BINDING_MODES = ["Immediate", "WaitForFirstConsumer"]
RECLAIM_POLICIES = ["Delete", "Retain"]
PV_RECLAIM_POLICIES = ["Delete", "Recycle", "Retain"]
VOLUME_MODES = ["Block", "Filesystem"]
# PersistentVolumeSource members: a PV must name exactly one (upstream: "must specify a volume type").
VOLUME_SOURCES = (
    *("awsElasticBlockStore", "azureDisk", "azureFile", "cephfs", "cinder", "csi", "fc", "flexVolume"),
    *("flocker", "gcePersistentDisk", "glusterfs", "hostPath", "iscsi", "local", "nfs"),
    *("photonPersistentDisk", "portworxVolume", "quobyte", "rbd", "scaleIO", "storageos", "vsphereVolume"),
)


def _access_modes(path: str, modes: list[str] | None, missing_detail: str) -> list[FieldError]:
    if not modes:
        return [required(path, missing_detail)]
    errors = [not_supported(path, m, ACCESS_MODES) for m in modes if m not in ACCESS_MODES]
    if "ReadWriteOncePod" in modes and any(m != "ReadWriteOncePod" and m in ACCESS_MODES for m in modes):
        errors.append(forbidden(path, "may not use ReadWriteOncePod with other access modes"))
    return errors


def _positive_quantity(path: str, raw: Any) -> list[FieldError]:
    try:
        value = parse_quantity(raw)
    except QuantityError as e:
        return [invalid(path, raw, str(e))]
    return [] if value > 0 else [invalid(path, raw, "must be greater than zero")]


def _class_name(path: str, name: str | None) -> list[FieldError]:
    return [invalid(path, name, m) for m in dns1123_subdomain(name)] if name else []


def _node_selector(path: str, selector: Any) -> list[FieldError]:
    """ValidateNodeSelector: at least one term; every expression's key a label key."""
    terms = selector.nodeSelectorTerms or []
    if not terms:
        return [required(f"{path}.nodeSelectorTerms", "must have at least one node selector term")]
    errors: list[FieldError] = []
    for i, term in enumerate(terms):
        for j, expr in enumerate(term.matchExpressions or []):
            where = f"{path}.nodeSelectorTerms[{i}].matchExpressions[{j}].key"
            errors += [invalid(where, expr.key, m) for m in label_key(expr.key)]
    return errors


def _class_and_mode(spec: Any) -> list[FieldError]:
    """storageClassName and volumeMode, checked alike on volumes and claims."""
    errors = _class_name("spec.storageClassName", spec.storageClassName)
    if spec.volumeMode is not None and spec.volumeMode not in VOLUME_MODES:
        errors.append(not_supported("spec.volumeMode", spec.volumeMode, VOLUME_MODES))
    return errors


def storage_class(sc: Any) -> list[FieldError]:
    errors: list[FieldError] = []
    if not sc.provisioner:
        errors.append(required("provisioner"))
    if sc.reclaimPolicy and sc.reclaimPolicy not in RECLAIM_POLICIES:
        errors.append(not_supported("reclaimPolicy", sc.reclaimPolicy, RECLAIM_POLICIES))
    if sc.volumeBindingMode not in BINDING_MODES:  # defaulted to Immediate before validation
        errors.append(not_supported("volumeBindingMode", sc.volumeBindingMode, BINDING_MODES))
    for i, term in enumerate(sc.allowedTopologies or []):
        seen: set[str] = set()
        for j, expr in enumerate(term.matchLabelExpressions or []):
            where = f"allowedTopologies[{i}].matchLabelExpressions[{j}]"
            errors += [invalid(f"{where}.key", expr.key, m) for m in label_key(expr.key)]
            if not expr.values:
                errors.append(required(f"{where}.values", "must specify as least one value"))
            if expr.key in seen:
                errors.append(duplicate(f"{where}.key", expr.key))
            seen.add(expr.key)
    return errors


def persistent_volume(pv: Any) -> list[FieldError]:
    spec = pv.spec
    if spec is None:
        return [required("spec", "must specify a volume type")]
    errors = _access_modes("spec.accessModes", spec.accessModes, "")
    if not spec.capacity:
        errors.append(required("spec.capacity"))
    if "storage" not in (spec.capacity or {}) or len(spec.capacity or {}) > 1:
        shown = spec.capacity if spec.capacity is not None else NIL  # a nil map prints null
        errors.append(not_supported("spec.capacity", shown, ["storage"]))
    for name, raw in (spec.capacity or {}).items():
        errors += _positive_quantity(f"spec.capacity[{name}]", raw)
    policy = spec.persistentVolumeReclaimPolicy  # reclaim, source and affinity: where a PV differs
    if policy and policy not in PV_RECLAIM_POLICIES:
        errors.append(not_supported("spec.persistentVolumeReclaimPolicy", policy, PV_RECLAIM_POLICIES))
    if spec.nodeAffinity is not None:
        if spec.nodeAffinity.required is None:
            errors.append(required("spec.nodeAffinity.required", "must specify required node constraints"))
        else:
            errors += _node_selector("spec.nodeAffinity.required", spec.nodeAffinity.required)
    sources = [s for s in VOLUME_SOURCES if getattr(spec, s, None) is not None]
    if not sources:
        errors.append(required("spec", "must specify a volume type"))
    for extra in sources[1:]:
        errors.append(forbidden(f"spec.{extra}", "may not specify more than 1 volume type"))
    if spec.local is not None and spec.nodeAffinity is None:
        errors.append(required("spec.nodeAffinity", "Local volume requires node affinity"))
    return errors + _class_and_mode(spec)


def persistent_volume_claim(pvc: Any) -> list[FieldError]:
    spec = pvc.spec
    if spec is None:
        return [required("spec.accessModes", "at least 1 access mode is required")]
    errors = _access_modes("spec.accessModes", spec.accessModes, "at least 1 access mode is required")
    requests = (spec.resources.requests if spec.resources else None) or {}
    if "storage" not in requests:
        errors.append(required("spec.resources[storage]"))
    else:
        errors += _positive_quantity("spec.resources[storage]", requests["storage"])
    return errors + _class_and_mode(spec)


def csi_node(node: Any) -> list[FieldError]:
    errors: list[FieldError] = []
    seen: set[str] = set()
    for i, driver in enumerate((node.spec.drivers if node.spec else None) or []):
        where = f"spec.drivers[{i}]"
        if not driver.name:
            errors.append(required(f"{where}.name"))
        elif driver.name in seen:
            errors.append(duplicate(f"{where}.name", driver.name))
        seen.add(driver.name)
        if not driver.nodeID:
            errors.append(required(f"{where}.nodeID"))
        count = driver.allocatable.count if driver.allocatable is not None else None
        if count is not None and count < 0:
            errors.append(invalid(f"{where}.allocatable.count", count, "must be greater than or equal to 0"))
    return errors
