"""DeviceClass, ResourceSlice, DeviceTaintRule, ResourceClaim and ResourceClaimTemplate (resource.k8s.io/v1):
the fields the DynamicResources plugin reads, with upstream's rules and messages
(pkg/apis/resource/validation).

CEL selectors are compiled with the same library the allocator evaluates them with (`..cel`); a selector
that does not compile is refused here, as the API server refuses it, rather than failing at scheduling.
"""

from __future__ import annotations

import re
from typing import Any

from ..cel import CelError, compile_selector
from ..errors import FieldError, duplicate, forbidden, invalid, not_supported, required, too_long
from .common import label_name, subdomain_name
from .meta import label_value
from .names import dns1123_subdomain, is_extended_resource_name, label_key, regex_error

__all__ = ["device_class", "device_taint_rule", "resource_claim_spec", "resource_slice"]

ALLOCATION_MODES = ["All", "ExactCount"]
TAINT_EFFECTS = ["NoExecute", "NoSchedule", "None"]  # validDeviceTaintEffects, sorted as sets.List
TOLERATION_OPERATORS = ["Equal", "Exists"]
# pkg/apis/resource/types.go: DriverNameMaxLength (also an attribute name's domain), DeviceMaxIDLength,
# CELSelectorExpressionMaxLength. Lengths are in bytes, as Go's len() of a string.
DRIVER_NAME_MAX_LENGTH = 63
DEVICE_MAX_ID_LENGTH = 32
CEL_SELECTOR_EXPRESSION_MAX_LENGTH = 10 * 1024
_C_IDENTIFIER_FMT = "[A-Za-z_][A-Za-z0-9_]*"
_C_IDENTIFIER = re.compile(f"^{_C_IDENTIFIER_FMT}\\Z")
_C_IDENTIFIER_MSG = (
    "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric "
    "characters or '_'"
)
_NOT_FULLY_QUALIFIED = "a fully qualified name must be a domain and a name separated by a slash"
_ONE_REQUEST_TYPE = "exactly one of `exactly` or `firstAvailable` is required"
_ONE_DEVICE_NODE_SELECTION = (
    "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is "
    "set to true in the ResourceSlice spec"
)
_NODE_SELECTION_NOT_PER_DEVICE = (
    "`nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to true in "
    "the ResourceSlice spec"
)
_ONE_NODE_SELECTION = (
    "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
)


def _selectors(path: str, selectors: list[Any] | None) -> list[FieldError]:
    errors: list[FieldError] = []
    for i, sel in enumerate(selectors or []):
        where = f"{path}[{i}]"
        if sel.cel is None:
            errors.append(required(f"{where}.cel"))
            continue
        expression = sel.cel.expression or ""
        if not expression:
            errors.append(required(f"{where}.cel.expression"))
            continue
        if _byte_length(expression) > CEL_SELECTOR_EXPRESSION_MAX_LENGTH:
            # validateCELExpression: "Don't bother compiling too long expressions."
            errors.append(too_long(f"{where}.cel.expression", CEL_SELECTOR_EXPRESSION_MAX_LENGTH))
            continue
        try:
            compile_selector(expression)
        except CelError as e:
            errors.append(invalid(f"{where}.cel.expression", expression, f"compilation failed: {e}"))
    return errors


def device_class(dc: Any) -> list[FieldError]:
    errors = _selectors("spec.selectors", dc.spec.selectors if dc.spec else None)
    name = dc.spec.extendedResourceName if dc.spec else None
    if name is not None and not is_extended_resource_name(name):
        errors.append(invalid("spec.extendedResourceName", name, "must be a valid extended resource name"))
    return errors


def _allocation_mode(path: str, mode: str | None, count: int | None) -> list[FieldError]:
    """Objects arrive defaulted (ExactCount, count 1), as upstream's SetDefaults_ExactDeviceRequest."""
    if mode == "All":
        if count:
            return [invalid(f"{path}.count", count, "must not be specified when allocationMode is 'All'")]
        return []
    if mode == "ExactCount":
        if count is None or count <= 0:
            return [invalid(f"{path}.count", count or 0, "must be greater than zero")]
        return []
    return [not_supported(f"{path}.allocationMode", mode or "", ALLOCATION_MODES)]


def _taint(path: str, taint: Any) -> list[FieldError]:
    """validateDeviceTaint: a label-name key (required), a label value, an effect of the three known."""
    errors = [invalid(f"{path}.key", taint.key or "", m) for m in label_key(taint.key or "")]
    if taint.value:
        errors += [invalid(f"{path}.value", taint.value, m) for m in label_value(taint.value)]
    if not taint.effect:
        errors.append(required(f"{path}.effect"))
    elif taint.effect not in TAINT_EFFECTS:
        errors.append(not_supported(f"{path}.effect", taint.effect, TAINT_EFFECTS))
    return errors


def _toleration(path: str, toleration: Any) -> list[FieldError]:
    """validateDeviceToleration (after defaulting, which sets operator Equal)."""
    errors = []
    if toleration.key:
        errors += [invalid(f"{path}.key", toleration.key, m) for m in label_key(toleration.key)]
    value = toleration.value or ""
    if toleration.operator == "Exists":
        if value:
            errors.append(invalid(f"{path}.value", value, "must be empty for operator `Exists`"))
    elif toleration.operator == "Equal":
        errors += [invalid(f"{path}.value", value, m) for m in label_value(value)]
    elif not toleration.operator:
        errors.append(required(f"{path}.operator"))
    else:
        errors.append(not_supported(f"{path}.operator", toleration.operator, TOLERATION_OPERATORS))
    if toleration.effect and toleration.effect not in TAINT_EFFECTS:
        errors.append(not_supported(f"{path}.effect", toleration.effect, TAINT_EFFECTS))
    return errors


def _exact(path: str, req: Any) -> list[FieldError]:
    errors = subdomain_name(f"{path}.deviceClassName", req.deviceClassName)
    errors += _selectors(f"{path}.selectors", req.selectors)
    errors += _allocation_mode(path, req.allocationMode, req.count)
    for i, toleration in enumerate(req.tolerations or []):
        errors += _toleration(f"{path}.tolerations[{i}]", toleration)
    return errors


def _request(path: str, req: Any) -> list[FieldError]:
    errors = label_name(f"{path}.name", req.name)
    has_first = bool(req.firstAvailable)
    if has_first and req.exactly is not None:
        errors.append(invalid(path, None, f"{_ONE_REQUEST_TYPE}, but multiple fields are set"))
    elif req.exactly is not None:
        errors += _exact(f"{path}.exactly", req.exactly)
    elif has_first:
        seen: set[str] = set()
        for i, sub in enumerate(req.firstAvailable):
            where = f"{path}.firstAvailable[{i}]"
            errors += label_name(f"{where}.name", sub.name)
            if sub.name in seen:
                errors.append(duplicate(where, sub.name))
            seen.add(sub.name)
            errors += _exact(where, sub)
    else:
        errors.append(required(path, _ONE_REQUEST_TYPE))
    return errors


def resource_claim_spec(spec: Any, path: str = "spec") -> list[FieldError]:
    """ResourceClaimSpec (also inside a template at spec.spec), as validateDeviceClaim. The constraints'
    attribute names come last: the API server reports them with its declarative rules, after every
    handwritten error of the object (see `_fully_qualified_name`)."""
    devices = spec.devices if spec is not None else None
    if devices is None:
        return []
    errors: list[FieldError] = []
    attribute_errors: list[FieldError] = []
    names: dict[str, set[str]] = {}
    for i, req in enumerate(devices.requests or []):
        where = f"{path}.devices.requests[{i}]"
        errors += _request(where, req)
        if req.name in names:
            errors.append(duplicate(where, req.name))
        names[req.name] = {s.name for s in req.firstAvailable or []}
    for i, constraint in enumerate(devices.constraints or []):
        where = f"{path}.devices.constraints[{i}]"
        for j, ref in enumerate(constraint.requests or []):
            request, _, sub = ref.partition("/")
            if request not in names or (sub and sub not in names[request]):
                errors.append(
                    invalid(
                        f"{where}.requests[{j}]",
                        ref,
                        "must be the name of a request in the claim or the name of a request and a "
                        "subrequest separated by '/'",
                    )
                )
        if constraint.matchAttribute is not None:
            attribute_errors += _fully_qualified_name(f"{where}.matchAttribute", constraint.matchAttribute)
        elif constraint.distinctAttribute is not None:
            distinct = constraint.distinctAttribute
            attribute_errors += _fully_qualified_name(f"{where}.distinctAttribute", distinct)
        else:
            errors.append(required(f"{where}.matchAttribute"))
    return errors + attribute_errors


def resource_slice(rs: Any) -> list[FieldError]:
    spec = rs.spec
    if spec is None:
        return [required("spec.driver")]
    errors = _driver_name("spec.driver", spec.driver or "")
    pool = spec.pool
    if pool is None or not pool.name:
        errors.append(required("spec.pool.name"))
    if pool is not None and (pool.resourceSliceCount or 0) <= 0:
        errors.append(
            invalid("spec.pool.resourceSliceCount", pool.resourceSliceCount or 0, "must be greater than zero")
        )
    if pool is not None and (pool.generation or 0) < 0:
        errors.append(
            invalid("spec.pool.generation", pool.generation, "must be greater than or equal to zero")
        )
    chosen = []
    if spec.nodeName is not None:
        if spec.nodeName:
            chosen.append("`nodeName`")
        else:
            errors.append(invalid("spec.nodeName", "", "must be either unset or set to a non-empty string"))
    if spec.nodeSelector is not None:
        chosen.append("`nodeSelector`")
        if len(spec.nodeSelector.nodeSelectorTerms or []) != 1:
            errors.append(
                invalid(
                    "spec.nodeSelector.nodeSelectorTerms",
                    [t.to_dict() for t in spec.nodeSelector.nodeSelectorTerms or []],
                    "must have exactly one node selector term",
                )
            )
    for flag in ("allNodes", "perDeviceNodeSelection"):
        value = getattr(spec, flag)
        if value is True:
            chosen.append(f"`{flag}`")
        elif value is False:
            errors.append(invalid(f"spec.{flag}", False, "must be either unset or set to true"))
    if not chosen:
        errors.append(required("spec", _ONE_NODE_SELECTION))
    elif len(chosen) > 1:
        errors.append(
            invalid(
                "spec",
                "{" + ", ".join(chosen) + "}",
                f"{_ONE_NODE_SELECTION}, but multiple fields are set",
            )
        )
    if spec.sharedCounters is not None and spec.devices is not None:
        errors.append(invalid("spec", "", "only one of `sharedCounters` or `devices` is allowed"))
    seen: set[str] = set()
    for i, device in enumerate(spec.devices or []):
        where = f"spec.devices[{i}]"
        errors += label_name(f"{where}.name", device.name)
        if device.name in seen:
            errors.append(duplicate(f"{where}.name", device.name))
        seen.add(device.name)
        for j, taint in enumerate(device.taints or []):
            errors += _taint(f"{where}.taints[{j}]", taint)
        errors += _device_node_selection(where, device, spec.perDeviceNodeSelection is True)
        for name in device.attributes or {}:
            errors += _qualified_name(f"{where}.attributes", name)
        for name in device.capacity or {}:
            errors += _qualified_name(f"{where}.capacity", name)
        if not device.allowMultipleAllocations:
            for name, capacity in sorted((device.capacity or {}).items(), key=lambda item: str(item[0])):
                policy = capacity.get("requestPolicy") if isinstance(capacity, dict) else None
                if policy is not None:
                    path = f"{where}.capacity[{name}].requestPolicy"
                    errors.append(forbidden(path, "allowMultipleAllocations must be true"))
    return errors


def _byte_length(value: str) -> int:
    return len(value.encode())


def _driver_name(path: str, name: str) -> list[FieldError]:
    """ValidateCSIDriverName (pkg/apis/core/validation), which validateDriverName reuses: required, at most
    63 bytes, and a DNS subdomain once lower-cased (so `GPU.Example.com` is accepted)."""
    if not name:
        return [required(path)]
    errors = []
    if _byte_length(name) > DRIVER_NAME_MAX_LENGTH:
        errors.append(too_long(path, DRIVER_NAME_MAX_LENGTH))
    errors += [invalid(path, name, m) for m in dns1123_subdomain(name.lower())]
    return errors


def _qualified_name(path: str, name: Any) -> list[FieldError]:
    """validateQualifiedName, for the names of a device's attributes and capacities (validateMap reports a
    key's errors at the map's path): a C identifier of at most 32 bytes, or a domain (a driver name, see
    `_driver_name`) and such an identifier separated by a slash. More than one slash is let through, as
    upstream still does (its TODO). A YAML key such as `1:` reaches the API server as the string "1"
    (JSON keys are strings), which is not a C identifier."""
    name = str(name)
    parts = name.split("/")
    if len(parts) == 1:
        return _c_identifier(path, parts[0])
    if len(parts) != 2:
        return []
    domain, identifier = parts
    errors: list[FieldError] = []
    if not domain:
        errors.append(invalid(path, "", "the domain must not be empty"))
    else:
        errors += _driver_name(path, domain)
    if not identifier:
        errors.append(invalid(path, "", "the name must not be empty"))
    else:
        errors += _c_identifier(path, identifier)
    return errors


def _fully_qualified_name(path: str, name: str) -> list[FieldError]:
    """A constraint's `matchAttribute` / `distinctAttribute`, as the API server reports it in v1.37: the
    declarative rule ResourceFullyQualifiedName (k8s.io/apimachinery/pkg/api/validate/strfmt.go), beta and
    enforced by default (DeclarativeValidationBeta), replaces the handwritten validateFullyQualifiedName's
    errors and is appended after all handwritten ones (k8s.io/apiserver/pkg/registry/rest/validate.go). Its
    messages differ from `_qualified_name`'s: "prefix must not be empty", and the domain is checked as
    written (not lower-cased) with "prefix: " before the subdomain message."""
    parts = name.split("/")
    errors: list[FieldError] = []
    if len(parts) == 1:
        errors += _c_identifier(path, parts[0])
    elif len(parts) == 2:
        domain, identifier = parts
        if not domain:
            errors.append(invalid(path, "", "prefix must not be empty"))
        else:
            if _byte_length(domain) > DRIVER_NAME_MAX_LENGTH:
                errors.append(too_long(path, DRIVER_NAME_MAX_LENGTH))
            errors += [invalid(path, domain, f"prefix: {m}") for m in dns1123_subdomain(domain)]
        if not identifier:
            errors.append(invalid(path, "", "name must not be empty"))
        else:
            errors += _c_identifier(path, identifier)
    if "/" not in name:
        errors.append(invalid(path, name, _NOT_FULLY_QUALIFIED))
    return errors


def _c_identifier(path: str, value: str) -> list[FieldError]:
    """validateCIdentifier: at most 32 bytes (DeviceMaxIDLength), then content.IsCIdentifier's message."""
    errors = []
    if _byte_length(value) > DEVICE_MAX_ID_LENGTH:
        errors.append(too_long(path, DEVICE_MAX_ID_LENGTH))
    if not _C_IDENTIFIER.match(value):
        message = regex_error(_C_IDENTIFIER_MSG, _C_IDENTIFIER_FMT, "my_name", "MY_NAME", "MyName")
        errors.append(invalid(path, value, message))
    return errors


def _device_node_selection(where: str, device: Any, per_device: bool) -> list[FieldError]:
    """validateDevice: with the slice's perDeviceNodeSelection, exactly one of the device's `nodeName`,
    `nodeSelector`, `allNodes`; without it, none of them."""
    if not per_device:
        if device.nodeName is not None or device.nodeSelector is not None or device.allNodes is not None:
            return [invalid(where, None, _NODE_SELECTION_NOT_PER_DEVICE)]
        return []
    errors: list[FieldError] = []
    chosen = []
    if device.nodeName is not None:
        if device.nodeName:
            chosen.append("`nodeName`")
        else:
            errors.append(invalid(f"{where}.nodeName", "", "must not be empty"))
    if device.nodeSelector is not None:
        chosen.append("`nodeSelector`")
    if device.allNodes is True:
        chosen.append("`allNodes`")
    elif device.allNodes is False:
        errors.append(invalid(f"{where}.allNodes", False, "must be either unset or set to true"))
    if not chosen:
        errors.append(required(where, _ONE_DEVICE_NODE_SELECTION))
    elif len(chosen) > 1:
        errors.append(invalid(where, "{" + ", ".join(chosen) + "}", _ONE_DEVICE_NODE_SELECTION))
    return errors


def device_taint_rule(rule: Any) -> list[FieldError]:
    """validateDeviceTaintRuleSpec: its taint (required) as a device's own."""
    spec = rule.spec
    if spec is None or spec.taint is None:
        return [required("spec.taint.key"), required("spec.taint.effect")]
    return _taint("spec.taint", spec.taint)
