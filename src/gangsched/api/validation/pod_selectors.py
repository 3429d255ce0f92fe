"""Service, ReplicationController, ReplicaSet and StatefulSet: their `spec.selector`, the one field gangsched
reads (api/pod_selectors.py).

Rules and messages are upstream's: ValidateService (pkg/apis/core/validation: the selector's labels),
ValidateReplicationControllerSpec (ValidateNonEmptySelector), ValidateReplicaSetSpec and
ValidateStatefulSetSpec (pkg/apis/apps/validation: a required, non-empty selector) and ValidateLabelSelector
(apimachinery's pkg/apis/meta/v1/validation).
"""

from __future__ import annotations

from typing import Any

from ..errors import FieldError, forbidden, invalid, required
from .meta import label_map, label_value
from .names import label_key

__all__ = ["label_selector", "label_selector_owner", "map_selector_owner"]

_SET_OPERATORS = ("In", "NotIn")
_EXISTENCE_OPERATORS = ("Exists", "DoesNotExist")


def label_selector(path: str, selector: Any) -> list[FieldError]:
    """ValidateLabelSelector: its labels, operators, keys and values."""
    errors = label_map(f"{path}.matchLabels", selector.matchLabels)
    for i, expr in enumerate(selector.matchExpressions or []):
        where = f"{path}.matchExpressions[{i}]"
        if expr.operator in _SET_OPERATORS:
            if not expr.values:
                errors.append(
                    required(f"{where}.values", "must be specified when `operator` is 'In' or 'NotIn'")
                )
        elif expr.operator in _EXISTENCE_OPERATORS:
            if expr.values:
                errors.append(
                    forbidden(
                        f"{where}.values",
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    )
                )
        else:
            errors.append(invalid(f"{where}.operator", expr.operator, "not a valid selector operator"))
        errors += [invalid(f"{where}.key", expr.key, m) for m in label_key(expr.key)]
        for j, value in enumerate(expr.values or []):
            errors += [invalid(f"{where}.values[{j}]", value, m) for m in label_value(value)]
    return errors


def map_selector_owner(kind: str, obj: Any) -> list[FieldError]:
    """A Service's or ReplicationController's label-map selector (an RC's must not be empty; a Service
    without one selects nothing)."""
    selector = obj.spec.selector if obj.spec is not None else None
    if kind == "ReplicationController" and not selector:
        return [required("spec.selector")]
    return label_map("spec.selector", selector)


# What upstream calls the kind in its "empty selector" message (ReplicaSet reuses the Deployment wording).
_EMPTY_NAMES = {"ReplicaSet": "deployment", "StatefulSet": "statefulset"}


def label_selector_owner(kind: str, obj: Any) -> list[FieldError]:
    """A ReplicaSet's or StatefulSet's selector: required, valid, and not empty."""
    selector = obj.spec.selector if obj.spec is not None else None
    if selector is None:
        return [required("spec.selector")]
    errors = label_selector("spec.selector", selector)
    if not selector.matchLabels and not selector.matchExpressions:
        errors.append(
            invalid(
                "spec.selector", selector.to_dict(), f"empty selector is invalid for {_EMPTY_NAMES[kind]}"
            )
        )
    return errors
