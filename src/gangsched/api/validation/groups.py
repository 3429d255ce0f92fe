"""PodGroup (scheduling.k8s.io/v1beta1) and CompositePodGroup (v1alpha3) specs, each on its own.

Rules that need other objects (parents, workloads, the tree) live in references.py.
"""

from __future__ import annotations

from typing import Any

from ..errors import FieldError, required
from ..gates import FeatureGates
from .common import (
    disruption_mode,
    gate_forbidden,
    label_name,
    priority_fields,
    resource_claims,
    scheduling_constraints,
    scheduling_policy,
    subdomain_name,
)

__all__ = ["composite_pod_group_spec", "pod_group_spec", "workload_ref"]


def workload_ref(path: str, ref: Any) -> list[FieldError]:
    """{workloadName (a Workload's name: DNS subdomain), templateName (a template name: DNS label)}."""
    return subdomain_name(f"{path}.workloadName", ref.workloadName) + label_name(
        f"{path}.templateName", ref.templateName
    )


def pod_group_spec(spec: Any, gates: FeatureGates) -> list[FieldError]:
    errors: list[FieldError] = []
    if spec.workloadRef is not None:
        errors += workload_ref("spec.workloadRef", spec.workloadRef)
    parent = spec.parentCompositePodGroupName
    if parent is not None:
        if not gates.enabled("CompositePodGroup"):
            errors.append(gate_forbidden("spec.parentCompositePodGroupName", "CompositePodGroup"))
        else:
            errors += subdomain_name("spec.parentCompositePodGroupName", parent)
            if spec.workloadRef is None:
                # [unconfirmed wording] upstream requires workloadRef for a PodGroup inside a tree.
                errors.append(
                    required("spec.workloadRef", "must be set when parentCompositePodGroupName is set")
                )
    errors += scheduling_policy("spec.schedulingPolicy", spec.schedulingPolicy, composite=False)
    errors += scheduling_constraints("spec.schedulingConstraints", spec.schedulingConstraints, gates)
    errors += resource_claims("spec.resourceClaims", spec.resourceClaims, gates)
    errors += disruption_mode("spec.disruptionMode", spec.disruptionMode)
    errors += priority_fields("spec", spec, gates)
    return errors


def composite_pod_group_spec(spec: Any, gates: FeatureGates) -> list[FieldError]:
    errors = workload_ref("spec.workloadRef", spec.workloadRef)
    if spec.parentCompositePodGroupName is not None:
        errors += subdomain_name("spec.parentCompositePodGroupName", spec.parentCompositePodGroupName)
    errors += scheduling_policy("spec.schedulingPolicy", spec.schedulingPolicy, composite=True)
    errors += scheduling_constraints("spec.schedulingConstraints", spec.schedulingConstraints, gates)
    errors += disruption_mode("spec.disruptionMode", spec.disruptionMode)
    errors += priority_fields("spec", spec, gates)
    return errors
