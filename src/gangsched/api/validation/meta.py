"""metadata: names, namespaces, labels (upstream's ValidateObjectMeta, the parts gangsched relies on)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..errors import FieldError, forbidden, invalid, required
from .names import dns1035_label, dns1123_label, dns1123_subdomain, label_key

__all__ = ["NAME_FORMATS", "label_map", "label_value", "object_meta"]

#: How each kind's metadata.name is checked upstream (NameIsDNSLabel or NameIsDNSSubdomain).
NAME_FORMATS: dict[str, Callable[[str], list[str]]] = {
    "Namespace": dns1123_label,
    "PodGroup": dns1123_label,  # ValidatePodGroupName, format k8s-short-name
    "Node": dns1123_subdomain,
    "Pod": dns1123_subdomain,
    "PriorityClass": dns1123_subdomain,
    "PodDisruptionBudget": dns1123_subdomain,
    "Job": dns1123_subdomain,
    "Workload": dns1123_subdomain,
    "CompositePodGroup": dns1123_subdomain,
    "Service": dns1035_label,  # ValidateServiceName
}

_LABEL_VALUE_FMT = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"
_LABEL_VALUE = re.compile(f"^{_LABEL_VALUE_FMT}\\Z")
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
    f"for validation is '{_LABEL_VALUE_FMT}')"
)


def label_value(value: str) -> list[str]:
    """IsValidLabelValue: the detail strings for a label value (empty when valid)."""
    errors = []
    if len(value) > 63:
        errors.append("must be no more than 63 characters")
    if not _LABEL_VALUE.match(value):
        errors.append(_LABEL_VALUE_MSG)
    return errors


def label_map(path: str, labels: Any) -> list[FieldError]:
    """A map of label keys to label values (metadata.labels, spec.nodeSelector). YAML allows keys and
    values of any type; upstream's map[string]string does not, so anything else is refused here."""
    if not labels:
        return []
    errors: list[FieldError] = []
    for key, value in labels.items():
        if not isinstance(key, str):
            errors.append(invalid(path, key, "must be a string"))
            continue
        errors += [invalid(path, key, m) for m in label_key(key)]
        if not isinstance(value, str):
            errors.append(invalid(f"{path}[{key}]", value, "must be a string"))
            continue
        errors += [invalid(path, value, m) for m in label_value(value)]
    return errors


def object_meta(kind: str, meta: Any, namespaced: bool) -> list[FieldError]:
    """Objects arrive defaulted: namespaced ones already carry a namespace (`default` if none was given)."""
    errors: list[FieldError] = []
    if not meta.name:
        errors.append(required("metadata.name", "name or generateName is required"))
    else:
        errors += [
            invalid("metadata.name", meta.name, m)
            for m in NAME_FORMATS.get(kind, dns1123_subdomain)(meta.name)
        ]
    if namespaced:
        if meta.namespace:
            errors += [
                invalid("metadata.namespace", meta.namespace, m) for m in dns1123_label(meta.namespace)
            ]
    elif meta.namespace:
        errors.append(forbidden("metadata.namespace", "not allowed on this type"))
    errors += label_map("metadata.labels", meta.labels)
    return errors
