"""Pod, Node, PriorityClass, PodDisruptionBudget and Job: the fields gangsched reads.

Quantities are checked as the API server decodes them (a malformed one is refused with resource.Quantity's
parse message) and then as ValidateResourceRequirements does (not negative; requests within limits).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import NIL, OMIT, FieldError, Marshalled, forbidden, invalid, not_supported, required
from ..gates import FeatureGates
from ..quantity import QuantityError, parse_quantity
from .common import (
    HIGHEST_USER_PRIORITY,
    PREEMPTION_POLICIES,
    count,
    disruption_mode,
    gate_forbidden,
    label_name,
    resource_claims,
    scheduling_constraints,
    union,
)
from .meta import label_map
from .pod_selectors import label_selector

__all__ = ["job_spec", "node", "pod_disruption_budget", "pod_spec", "priority_class"]

# validateRestartPolicy (pkg/apis/core/validation), in its order; a Job's pods may not restart in place.
RESTART_POLICIES = ["Always", "OnFailure", "Never"]
JOB_RESTART_POLICIES = ["OnFailure", "Never"]
_SYSTEM_PREFIX = "system-"
_SYSTEM_CLASSES = {"system-cluster-critical": 2000000000, "system-node-critical": 2000001000}


def _quantity_map(path: str, values: Any) -> list[FieldError]:
    """Every value of a resource map parses and is not negative."""
    if not values:
        return []
    errors: list[FieldError] = []
    for name, raw in values.items():
        where = f"{path}[{name}]"
        if not isinstance(name, str):
            errors.append(invalid(path, name, "resource names must be strings"))
            continue
        try:
            value = parse_quantity(raw)
        except QuantityError as e:
            errors.append(invalid(where, raw, str(e)))
            continue
        if value < 0:
            errors.append(invalid(where, raw, "must be greater than or equal to 0"))
    return errors


def _containers(path: str, containers: Sequence[Any] | None) -> list[FieldError]:
    errors: list[FieldError] = []
    for i, c in enumerate(containers or []):
        res = c.resources
        if res is None:
            continue
        where = f"{path}[{i}].resources"
        req_errors = _quantity_map(f"{where}.requests", res.requests)
        lim_errors = _quantity_map(f"{where}.limits", res.limits)
        errors += req_errors + lim_errors
        if req_errors or lim_errors or not res.requests or not res.limits:
            continue
        for name, raw in res.requests.items():
            if name in res.limits and parse_quantity(raw) > parse_quantity(res.limits[name]):
                errors.append(
                    invalid(
                        f"{where}.requests",
                        raw,
                        f"must be less than or equal to {name} limit of {res.limits[name]}",
                    )
                )
    return errors


def pod_spec(spec: Any, path: str = "spec") -> list[FieldError]:
    if spec is None or not spec.containers:
        # The API server refuses a pod without containers (validateContainers); the scheduler reads the
        # spec of every pod, so an absent one must be refused here rather than fail later.
        return [required(f"{path}.containers")]
    errors = _containers(f"{path}.containers", spec.containers)
    errors += _containers(f"{path}.initContainers", spec.initContainers)
    # Defaulted to Always by the API server when absent (SetDefaults_PodSpec), so only a wrong value fails.
    if spec.restartPolicy and spec.restartPolicy not in RESTART_POLICIES:
        errors.append(not_supported(f"{path}.restartPolicy", spec.restartPolicy, RESTART_POLICIES))
    errors += _quantity_map(f"{path}.overhead", spec.overhead)
    errors += label_map(f"{path}.nodeSelector", spec.nodeSelector)
    if spec.preemptionPolicy is not None and spec.preemptionPolicy not in PREEMPTION_POLICIES:
        errors.append(not_supported(f"{path}.preemptionPolicy", spec.preemptionPolicy, PREEMPTION_POLICIES))
    group = spec.schedulingGroup
    if group is not None:
        errors += union(f"{path}.schedulingGroup", {"podGroupName": group.podGroupName})
        if group.podGroupName:
            errors += label_name(f"{path}.schedulingGroup.podGroupName", group.podGroupName)
    return errors


def node(obj: Any) -> list[FieldError]:
    status = obj.status
    if status is None:
        return []
    return _quantity_map("status.capacity", status.capacity) + _quantity_map(
        "status.allocatable", status.allocatable
    )


def priority_class(pc: Any) -> list[FieldError]:
    """As upstream's ValidatePriorityClass."""
    name = pc.metadata.name or ""
    value = pc.value or 0  # an int32 upstream: omitted means 0
    errors: list[FieldError] = []
    if name.startswith(_SYSTEM_PREFIX):
        if _SYSTEM_CLASSES.get(name) != value:
            errors.append(
                forbidden(
                    "metadata.name",
                    f"priority class names with '{_SYSTEM_PREFIX}' prefix are reserved for system use only. "
                    f"error: {name} is not a known system priority class",
                )
            )
    elif value > HIGHEST_USER_PRIORITY:
        errors.append(
            forbidden("value", f"maximum allowed value of a user defined priority is {HIGHEST_USER_PRIORITY}")
        )
    if pc.preemptionPolicy is not None and pc.preemptionPolicy not in PREEMPTION_POLICIES:
        errors.append(not_supported("preemptionPolicy", pc.preemptionPolicy, PREEMPTION_POLICIES))
    return errors


def pod_disruption_budget(pdb: Any) -> list[FieldError]:
    spec = pdb.spec
    if spec is not None and spec.minAvailable is not None and spec.maxUnavailable is not None:
        return [invalid("spec", OMIT, "minAvailable and maxUnavailable cannot be both set")]
    return []


def _job_scheduling(sched: Any, gates: FeatureGates) -> list[FieldError]:
    path = "spec.scheduling"
    if not gates.enabled("WorkloadWithJob"):
        return [gate_forbidden(path, "WorkloadWithJob")]
    errors: list[FieldError] = []
    policy = sched.schedulingPolicy
    basic = policy is None  # an omitted policy means Basic (the Job controller's default configuration)
    if policy is not None:
        policy_errors = union(f"{path}.schedulingPolicy", {"basic": policy.basic, "gang": policy.gang})
        errors += policy_errors
        basic = policy.basic is not None and not policy_errors
        if not policy_errors and policy.gang is not None and policy.gang.minCount is not None:
            # Optional here (defaults to parallelism), so 0 is a value, not "missing".
            errors += count(
                f"{path}.schedulingPolicy.gang.minCount", policy.gang.minCount, zero_is_missing=False
            )
    mode_errors = disruption_mode(f"{path}.disruptionMode", sched.disruptionMode)
    errors += mode_errors
    if (
        basic
        and not mode_errors
        and sched.disruptionMode is not None
        and sched.disruptionMode.all is not None
    ):
        errors.append(
            invalid(
                f"{path}.disruptionMode",
                "",
                "the disruptionMode `all` is not supported with the Basic scheduling policy",
            )
        )
    errors += scheduling_constraints(f"{path}.schedulingConstraints", sched.schedulingConstraints, gates)
    errors += resource_claims(f"{path}.resourceClaims", sched.resourceClaims, gates)
    return errors


def job_spec(job: Any, gates: FeatureGates) -> list[FieldError]:
    """ValidateJobCreate's checks (pkg/apis/batch/validation) of the fields gangsched reads: without
    manualSelector, validateGeneratedSelector on the Job as the API server generated its selector and
    labels; validateJobSpec; then ValidateJobSpec's selector rules. The loader gives a Job without spec or
    template an empty one, as the API server's struct fields are; so the template's pod spec may be None
    (no containers)."""
    spec = job.spec
    template = spec.template
    template_meta = template.metadata if template is not None else None
    errors: list[FieldError] = []
    if spec.manualSelector:
        selector, labels = spec.selector, template_meta.labels if template_meta is not None else None
    else:
        selector, labels = _generated(job)
        errors += _generated_selector(job, selector, labels)
    for field in ("parallelism", "completions", "backoffLimit"):
        value = getattr(spec, field)
        if value is not None and value < 0:
            errors.append(invalid(f"spec.{field}", value, "must be greater than or equal to 0"))
    if spec.scheduling is not None and gates.enabled("GenericWorkload"):
        errors += _job_scheduling(spec.scheduling, gates)
    pod = template.spec if template is not None else None
    errors += pod_spec(pod, "spec.template.spec")
    errors += _job_restart_policy(pod.restartPolicy if pod is not None else None)
    return errors + _selector_rules(selector, labels)


def _job_restart_policy(policy: str | None) -> list[FieldError]:
    """Absent means Always once defaulted: the Job asks for one of its two policies in both cases."""
    path = "spec.template.spec.restartPolicy"
    if not policy or policy == "Always":
        valid = ", ".join(f'"{p}"' for p in JOB_RESTART_POLICIES)
        return [required(path, f"valid values: {valid}")]
    if policy not in JOB_RESTART_POLICIES:
        return [not_supported(path, policy, JOB_RESTART_POLICIES)]
    return []


def _selects(selector: Any, labels: dict[str, str]) -> bool:
    """LabelSelectorAsSelector(selector).Matches(labels) for a valid selector; None selects nothing. (The
    scheduler's labelselector module does the same, but importing the scheduler package here would cost
    `validate` its start-up.)"""
    if selector is None:
        return False
    if any(labels.get(k) != v for k, v in (selector.matchLabels or {}).items()):
        return False
    for e in selector.matchExpressions or []:
        present, values = e.key in labels, e.values or []
        if e.operator == "In" and not (present and labels[e.key] in values):
            return False
        if e.operator == "NotIn" and present and labels[e.key] in values:
            return False
        if (e.operator == "Exists") != present and e.operator in ("Exists", "DoesNotExist"):
            return False
    return True


def _generated(job: Any) -> tuple[Any, dict[str, str]]:
    """The selector and template labels PrepareForCreate leaves a Job without manualSelector
    (builder.pods.generated_selector)."""
    from ...builder.pods import generated_selector  # here: only Jobs pay for loading the builder

    return generated_selector(job)


def _generated_selector(job: Any, selector: Any, labels: dict[str, str]) -> list[FieldError]:
    """validateGeneratedSelector with RequirePrefixedLabels (as on create): each of the job-name and
    controller-uid labels, legacy then prefixed, that the user set on the template must have the generated
    value; and the selector must select exactly such labels, so that a selector of the user's own (`app:
    x`) is refused unless manualSelector is true. The UID is the one gangsched gives the Job (its own, else
    one derived from its namespace and name), where the API server makes one."""
    from ...builder.pods import job_labels

    expected = job_labels(job)
    errors = [
        invalid(f"spec.template.metadata.labels[{key}]", labels, f"must be '{value}'")
        for key, value in expected.items()
        if labels[key] != value
    ]
    if not label_selector("spec.selector", selector) and not _selects(selector, expected):
        errors.append(invalid("spec.selector", _marshalled(selector), "`selector` not auto-generated"))
    return errors


def _marshalled(selector: Any) -> Marshalled:
    """json.Marshal of a metav1.LabelSelector: matchLabels (keys sorted), then matchExpressions (key,
    operator, values), empty fields left out (omitempty)."""
    import json  # here: only a problem's message marshals a selector

    out: dict[str, Any] = {}
    if selector.matchLabels:
        out["matchLabels"] = dict(sorted(selector.matchLabels.items()))
    if selector.matchExpressions:
        out["matchExpressions"] = [
            {"key": e.key, "operator": e.operator, **({"values": list(e.values)} if e.values else {})}
            for e in selector.matchExpressions
        ]
    return Marshalled(json.dumps(out, ensure_ascii=False, separators=(",", ":")))


def _selector_rules(selector: Any, labels: dict[str, str] | None) -> list[FieldError]:
    """ValidateJobSpec's own selector rules, on the selector and template labels as generated or given:
    the selector is required, valid, and selects the template's labels (a missing selector selects
    nothing, so the labels are reported too)."""
    if selector is None:
        errors = [required("spec.selector")]
    else:
        errors = label_selector("spec.selector", selector)
        if errors:  # LabelSelectorAsSelector fails: upstream compares nothing
            return errors
    if not _selects(selector, labels or {}):
        shown = dict(labels) if labels is not None else NIL
        errors.append(
            invalid("spec.template.metadata.labels", shown, "`selector` does not match template `labels`")
        )
    return errors
