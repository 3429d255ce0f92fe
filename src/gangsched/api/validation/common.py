"""Building blocks shared by PodGroup, CompositePodGroup, Workload templates and Job.spec.scheduling.

Messages follow upstream's declarative validation (`+k8s:unionMember`, `+k8s:required`, `+k8s:minimum=1`,
`+k8s:maxItems`, `+k8s:format=...`) as exercised by pkg/registry/scheduling/workload's declarative
validation tests in v1.37: a zero minCount is `Required value` (0 counts as "missing"), a negative one is
`must be greater than or equal to 1`.

Every function takes the field path of the block and returns its errors; none mutates anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import FieldError, duplicate, forbidden, invalid, not_supported, required, too_many
from ..gates import FeatureGates
from .names import dns1123_label, dns1123_subdomain, label_key

__all__ = [
    "HIGHEST_USER_PRIORITY",
    "INT32_MAX",
    "MAX_RESOURCE_CLAIMS",
    "MAX_TEMPLATES",
    "MAX_TOPOLOGY",
    "PREEMPTION_POLICIES",
    "count",
    "disruption_mode",
    "gate_forbidden",
    "label_name",
    "priority_fields",
    "resource_claims",
    "scheduling_constraints",
    "scheduling_policy",
    "subdomain_name",
    "union",
]

HIGHEST_USER_PRIORITY = 1_000_000_000
INT32_MAX = 2**31 - 1
MAX_TEMPLATES = 8
MAX_TOPOLOGY = 1
MAX_RESOURCE_CLAIMS = 4
PREEMPTION_POLICIES = ["Never", "PreemptLowerPriority"]


def gate_forbidden(path: str, gate: str) -> FieldError:
    """A field set while its feature gate is off. Upstream says only `Forbidden`; we name the gate."""
    return forbidden(path, f"feature gate {gate} is disabled")


def union(path: str, members: dict[str, Any]) -> list[FieldError]:
    """Exactly one member set (not None: `basic: {}` decodes to a falsy empty dict)."""
    names = list(members)
    listed = ", ".join(f"`{n}`" for n in names)
    chosen = [n for n, v in members.items() if v is not None]
    if not chosen:
        return [invalid(path, "", f"must specify one of: {listed}")]
    if len(chosen) > 1:
        return [invalid(path, "{" + ", ".join(chosen) + "}", f"must specify exactly one of: {listed}")]
    return []


def count(path: str, value: int | None, *, zero_is_missing: bool) -> list[FieldError]:
    """minCount / minGroupCount: required, >= 1, and an int32 as the Go type is."""
    if value is None or (value == 0 and zero_is_missing):
        return [required(path)]
    if value < 1:
        return [invalid(path, value, "must be greater than or equal to 1")]
    if value > INT32_MAX:
        # Upstream fails earlier, decoding JSON into an int32; this says the same in field-error form.
        return [invalid(path, value, f"must be less than or equal to {INT32_MAX}")]
    return []


def label_name(path: str, value: str | None) -> list[FieldError]:
    """A DNS-1123 label that must be present (template names, claim names, PodGroup names)."""
    if not value:
        return [required(path)]
    return [invalid(path, value, m) for m in dns1123_label(value)]


def subdomain_name(path: str, value: str | None) -> list[FieldError]:
    if not value:
        return [required(path)]
    return [invalid(path, value, m) for m in dns1123_subdomain(value)]


def scheduling_policy(path: str, policy: Any, *, composite: bool) -> list[FieldError]:
    """`basic: {}` | `gang: {minCount}` (or `{minGroupCount}` for composite groups)."""
    if policy is None:
        return [required(path)]
    errors = union(path, {"basic": policy.basic, "gang": policy.gang})
    if not errors and policy.gang is not None:
        field = "minGroupCount" if composite else "minCount"
        errors += count(f"{path}.gang.{field}", getattr(policy.gang, field), zero_is_missing=True)
    return errors


def disruption_mode(path: str, mode: Any) -> list[FieldError]:
    if mode is None:
        return []
    return union(path, {"single": mode.single, "all": mode.all})


def scheduling_constraints(path: str, constraints: Any, gates: FeatureGates) -> list[FieldError]:
    if constraints is None:
        return []
    if not gates.enabled("TopologyAwareWorkloadScheduling"):
        return [gate_forbidden(path, "TopologyAwareWorkloadScheduling")]
    topology: Sequence[Any] = constraints.topology or []
    if len(topology) > MAX_TOPOLOGY:
        return [too_many(f"{path}.topology", len(topology), MAX_TOPOLOGY)]
    errors: list[FieldError] = []
    for i, item in enumerate(topology):
        key_path = f"{path}.topology[{i}].key"
        if not item.key:
            errors.append(required(key_path))
        else:
            errors += [invalid(key_path, item.key, m) for m in label_key(item.key)]
    return errors


def resource_claims(path: str, claims: Sequence[Any] | None, gates: FeatureGates) -> list[FieldError]:
    """At most 4 claims, unique DNS-label names, each naming exactly one claim or claim template."""
    if claims is None:
        return []
    if not gates.enabled("DRAWorkloadResourceClaims"):
        return [gate_forbidden(path, "DRAWorkloadResourceClaims")]
    if len(claims) > MAX_RESOURCE_CLAIMS:
        return [too_many(path, len(claims), MAX_RESOURCE_CLAIMS)]
    errors: list[FieldError] = []
    seen: set[str] = set()
    for i, claim in enumerate(claims):
        item = f"{path}[{i}]"
        errors += label_name(f"{item}.name", claim.name)
        if claim.name in seen:
            errors.append(duplicate(item, claim.name))
        seen.add(claim.name)
        errors += union(
            item,
            {
                "resourceClaimName": claim.resourceClaimName,
                "resourceClaimTemplateName": claim.resourceClaimTemplateName,
            },
        )
        for field in ("resourceClaimName", "resourceClaimTemplateName"):
            value = getattr(claim, field)
            if value:
                errors += [invalid(f"{item}.{field}", value, m) for m in dns1123_subdomain(value)]
    return errors


def priority_fields(path: str, spec: Any, gates: FeatureGates) -> list[FieldError]:
    """priorityClassName (DNS subdomain), priority (<= 1e9), preemptionPolicy (gated value).

    Objects arrive defaulted, so preemptionPolicy is always set; only `Never` (the one value that changes
    behaviour) is refused when PodGroupPreemptionPolicy is off.
    """
    errors: list[FieldError] = []
    if spec.priorityClassName:
        errors += [
            invalid(f"{path}.priorityClassName", spec.priorityClassName, m)
            for m in dns1123_subdomain(spec.priorityClassName)
        ]
    if spec.priority is not None and spec.priority > HIGHEST_USER_PRIORITY:
        errors.append(
            invalid(
                f"{path}.priority", spec.priority, f"must be less than or equal to {HIGHEST_USER_PRIORITY}"
            )
        )
    policy = spec.preemptionPolicy
    if policy is not None and policy not in PREEMPTION_POLICIES:
        errors.append(not_supported(f"{path}.preemptionPolicy", policy, PREEMPTION_POLICIES))
    elif policy == "Never" and not gates.enabled("PodGroupPreemptionPolicy"):
        errors.append(gate_forbidden(f"{path}.preemptionPolicy", "PodGroupPreemptionPolicy"))
    return errors
