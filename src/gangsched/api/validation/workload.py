"""Workload (scheduling.k8s.io/v1beta1): the template tree.

Per-template rules are the declarative ones (see common.py); tree-wide rules follow upstream's hand-written
ValidateWorkloadSpec in pkg/apis/scheduling/validation (v1.37): names unique across the tree, composite
depth at most 4, one priority configuration per Workload, at least one child per composite template.
The composite rules upstream enforces when scheduling a tree (one preemptionPolicy; `all` parents only
with `all` children; no basic child under a gang parent) are checked here too, so that a bad Workload is
refused up front rather than found Invalid later; their wording is ours [unconfirmed].
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from msgspec import Struct

from ..errors import OMIT, ErrorType, FieldError, duplicate, invalid, required, too_many
from ..gates import FeatureGates
from .common import (
    MAX_TEMPLATES,
    disruption_mode,
    gate_forbidden,
    label_name,
    priority_fields,
    resource_claims,
    scheduling_constraints,
    scheduling_policy,
    union,
)
from .names import dns1123_subdomain, path_segment_name

__all__ = ["MAX_DEPTH", "workload_spec"]

MAX_DEPTH = 4


class _Node(Struct, frozen=True):
    """One template of the tree with its field path and its composite parent (None at the top)."""

    template: Any
    path: str
    composite: bool
    parent: _Node | None


def _walk(
    templates: Sequence[Any] | None, path: str, composite: bool, parent: _Node | None
) -> Iterator[_Node]:
    """Pre-order over the tree: a template, then its composite children, then its PodGroup children."""
    for i, t in enumerate(templates or []):
        node = _Node(t, f"{path}[{i}]", composite, parent)
        yield node
        if composite:
            yield from _walk(
                t.compositePodGroupTemplates, f"{node.path}.compositePodGroupTemplates", True, node
            )
            yield from _walk(t.podGroupTemplates, f"{node.path}.podGroupTemplates", False, node)


def _template_list(templates: Sequence[Any] | None, path: str) -> list[FieldError]:
    """Size and per-list name uniqueness (upstream reports the second occurrence, at the item)."""
    items = templates or []
    if len(items) > MAX_TEMPLATES:
        return [too_many(path, len(items), MAX_TEMPLATES)]
    errors: list[FieldError] = []
    seen: set[str] = set()
    for i, t in enumerate(items):
        if t.name and t.name in seen:
            errors.append(duplicate(f"{path}[{i}]", t.name))
        seen.add(t.name)
    return errors


def _template(node: _Node, gates: FeatureGates) -> list[FieldError]:
    t, path = node.template, node.path
    errors = label_name(f"{path}.name", t.name)
    errors += scheduling_policy(f"{path}.schedulingPolicy", t.schedulingPolicy, composite=node.composite)
    errors += scheduling_constraints(f"{path}.schedulingConstraints", t.schedulingConstraints, gates)
    errors += disruption_mode(f"{path}.disruptionMode", t.disruptionMode)
    errors += priority_fields(path, t, gates)
    if node.composite:
        errors += _template_list(t.compositePodGroupTemplates, f"{path}.compositePodGroupTemplates")
        errors += _template_list(t.podGroupTemplates, f"{path}.podGroupTemplates")
        if not t.compositePodGroupTemplates and not t.podGroupTemplates:
            errors.append(
                invalid(
                    path, t.name, "must have at least one child PodGroupTemplate or CompositePodGroupTemplate"
                )
            )
    else:
        errors += resource_claims(f"{path}.resourceClaims", t.resourceClaims, gates)
    return errors


def _unique_across_lists(spec: Any) -> list[FieldError]:
    """A name used in one list of the tree may not appear in another (same-list repeats are reported by
    _template_list). Walks in upstream's order, so that the same occurrence is reported: at each level the
    PodGroup templates, then the composite templates, then each composite's subtree."""
    names = {t.name for t in spec.podGroupTemplates or []}
    return _composite_list_names(spec.compositePodGroupTemplates, "spec", names)


def _composite_list_names(templates: Sequence[Any] | None, path: str, names: set[str]) -> list[FieldError]:
    errors: list[FieldError] = []
    items = list(templates or [])
    list_path = f"{path}.compositePodGroupTemplates"
    errors += [duplicate(f"{list_path}[{i}].name", t.name) for i, t in enumerate(items) if t.name in names]
    names.update(t.name for t in items)
    for i, t in enumerate(items):
        child_path = f"{list_path}[{i}]"
        pods = list(t.podGroupTemplates or [])
        errors += [
            duplicate(f"{child_path}.podGroupTemplates[{j}].name", p.name)
            for j, p in enumerate(pods)
            if p.name in names
        ]
        names.update(p.name for p in pods)
        errors += _composite_list_names(t.compositePodGroupTemplates, child_path, names)
    return errors


def _depth(node: _Node) -> int:
    depth = 1
    while node.parent is not None:
        node, depth = node.parent, depth + 1
    return depth


def _too_deep(nodes: list[_Node]) -> list[FieldError]:
    """Upstream reports the top-level composite template whose subtree nests composites 4 deep."""
    roots: list[str] = []
    for node in nodes:
        if node.composite and _depth(node) >= MAX_DEPTH:
            root = node
            while root.parent is not None:
                root = root.parent
            if root.path not in roots:
                roots.append(root.path)
    return [invalid(p, OMIT, f"maximum tree depth is {MAX_DEPTH}") for p in roots]


def _one_configuration(nodes: list[_Node]) -> list[FieldError]:
    priorities = {(n.template.priorityClassName or "", n.template.priority) for n in nodes}
    errors: list[FieldError] = []
    if len(priorities) > 1:
        errors.append(invalid("spec", None, "detected multiple priority configurations"))
    if len({n.template.preemptionPolicy for n in nodes}) > 1:
        errors.append(invalid("spec", None, "detected multiple preemption policy configurations"))
    return errors


def _policy_kind(template: Any) -> str | None:
    policy = template.schedulingPolicy
    if policy is None:
        return None
    return "gang" if policy.gang is not None else "basic" if policy.basic is not None else None


def _mode_kind(template: Any) -> str | None:
    mode = template.disruptionMode
    if mode is None:
        return None
    return "all" if mode.all is not None else "single" if mode.single is not None else None


def _composite_rules(nodes: list[_Node]) -> list[FieldError]:
    errors: list[FieldError] = []
    for node in nodes:
        parent = node.parent
        if parent is None:
            continue
        if _mode_kind(parent.template) == "all" and _mode_kind(node.template) == "single":
            errors.append(
                invalid(
                    f"{node.path}.disruptionMode",
                    "single",
                    "must be `all` when the parent's disruptionMode is `all`",
                )
            )
        if _policy_kind(parent.template) == "gang" and _policy_kind(node.template) == "basic":
            errors.append(
                invalid(
                    f"{node.path}.schedulingPolicy",
                    "basic",
                    "must be `gang` when the parent's schedulingPolicy is `gang`",
                )
            )
    return errors


def _controller_ref(ref: Any) -> list[FieldError]:
    path = "spec.controllerRef"
    errors: list[FieldError] = []
    if ref.apiGroup:
        errors += [invalid(f"{path}.apiGroup", ref.apiGroup, m) for m in dns1123_subdomain(ref.apiGroup)]
    for field in ("kind", "name"):
        value = getattr(ref, field)
        if not value:
            errors.append(required(f"{path}.{field}"))
        else:
            errors += [invalid(f"{path}.{field}", value, m) for m in path_segment_name(value)]
    return errors


def workload_spec(spec: Any, gates: FeatureGates) -> list[FieldError]:
    errors: list[FieldError] = []
    if spec.controllerRef is not None:
        errors += _controller_ref(spec.controllerRef)
    composite_on = gates.enabled("CompositePodGroup")
    composites = spec.compositePodGroupTemplates or None
    if composites is not None and not composite_on:
        return [*errors, gate_forbidden("spec.compositePodGroupTemplates", "CompositePodGroup")]
    members: dict[str, Any] = {"podGroupTemplates": spec.podGroupTemplates or None}
    if composite_on:
        members["compositePodGroupTemplates"] = composites
    union_errors = union("spec", members)
    if union_errors:
        return errors + union_errors
    errors += _template_list(spec.podGroupTemplates, "spec.podGroupTemplates")
    errors += _template_list(composites, "spec.compositePodGroupTemplates")
    if any(e.type is ErrorType.TOO_MANY for e in errors):
        return errors  # as upstream: items of an oversized list are not looked at
    nodes = list(_walk(spec.podGroupTemplates, "spec.podGroupTemplates", False, None))
    nodes += _walk(composites, "spec.compositePodGroupTemplates", True, None)
    for node in nodes:
        errors += _template(node, gates)
    errors += _unique_across_lists(spec)
    errors += _too_deep(nodes)
    errors += _one_configuration(nodes)
    errors += _composite_rules(nodes)
    return errors
