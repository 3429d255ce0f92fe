"""Defaulting and admission-time resolution, as the API server does them before the scheduler sees objects.

- namespace `default` for namespaced objects without one;
- Pod: schedulerName `default-scheduler`, priority and preemptionPolicy from its PriorityClass (or the
  global default class, else 0 / PreemptLowerPriority), as the Priority admission plugin resolves them;
- PodGroup / CompositePodGroup: disruptionMode `single`, preemptionPolicy `PreemptLowerPriority`, priority
  from priorityClassName; Workload templates are left as written, as the API server stores them;
- Job: parallelism 1, completionMode NonIndexed, backoffLimit 6.

Mutates the objects in place and returns field errors for references that cannot be resolved (a
priorityClassName naming no PriorityClass), which upstream's admission would refuse.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from lightkube.models import batch_v1, core_v1, meta_v1, scheduling_v1alpha3, scheduling_v1beta1

from .errors import FieldError, not_found
from .kinds import kind_info

__all__ = ["SYSTEM_PRIORITY_CLASSES", "PriorityResolver", "apply_defaults"]

#: Built-in classes every API server has.
SYSTEM_PRIORITY_CLASSES = {"system-cluster-critical": 2000000000, "system-node-critical": 2000001000}
DEFAULT_SCHEDULER = "default-scheduler"
PREEMPT_LOWER = "PreemptLowerPriority"


class PriorityResolver:
    """Resolves priorityClassName to (priority, preemptionPolicy) like the Priority admission plugin."""

    def __init__(self, classes: Iterable[Any]) -> None:
        self._classes: dict[str, tuple[int, str]] = {
            name: (value, PREEMPT_LOWER) for name, value in SYSTEM_PRIORITY_CLASSES.items()
        }
        self._default: tuple[int, str] = (0, PREEMPT_LOWER)
        for pc in classes:
            name = pc.metadata.name if pc.metadata else None
            if not name:
                continue
            entry = (int(pc.value or 0), pc.preemptionPolicy or PREEMPT_LOWER)  # value omitted means 0
            self._classes[name] = entry
            if pc.globalDefault:
                self._default = entry

    def resolve(self, class_name: str | None) -> tuple[int, str] | None:
        """(priority, preemptionPolicy) for a class name; None if the class does not exist."""
        if not class_name:
            return self._default
        return self._classes.get(class_name)


def _ensure_meta(obj: Any, namespaced: bool) -> None:
    if obj.metadata is None:
        obj.metadata = meta_v1.ObjectMeta()
    if namespaced and not obj.metadata.namespace:
        obj.metadata.namespace = "default"


def _group_defaults(spec: Any, field: str, resolver: PriorityResolver, single: Any) -> list[FieldError]:
    """Shared by PodGroup, CompositePodGroup and Workload templates: the fields they have in common."""
    errors: list[FieldError] = []
    if spec.disruptionMode is None:
        spec.disruptionMode = single
    if spec.priority is None or spec.preemptionPolicy is None:
        resolved = resolver.resolve(spec.priorityClassName)
        if resolved is None:
            errors.append(not_found(f"{field}.priorityClassName", spec.priorityClassName))
            resolved = (0, PREEMPT_LOWER)
        if spec.priority is None:
            spec.priority = resolved[0]
        if spec.preemptionPolicy is None:
            spec.preemptionPolicy = resolved[1] if spec.priorityClassName else PREEMPT_LOWER
    return errors


def _pod_defaults(pod: core_v1.Pod, resolver: PriorityResolver) -> list[FieldError]:
    spec = pod.spec
    if spec is None:
        return []
    if not spec.schedulerName:
        spec.schedulerName = DEFAULT_SCHEDULER
    if spec.priority is None:
        resolved = resolver.resolve(spec.priorityClassName)
        if resolved is None:
            spec.priority = 0
            return [not_found("spec.priorityClassName", spec.priorityClassName)]
        spec.priority = resolved[0]
        if spec.preemptionPolicy is None:
            spec.preemptionPolicy = resolved[1]
    if spec.preemptionPolicy is None:
        spec.preemptionPolicy = PREEMPT_LOWER
    return []


def _job_defaults(job: batch_v1.Job) -> None:
    spec = job.spec
    if spec is None:
        return
    if spec.parallelism is None:
        spec.parallelism = 1
    if spec.completionMode is None:
        spec.completionMode = "NonIndexed"
    if spec.backoffLimit is None:
        spec.backoffLimit = 6


def _workload_references(wl: scheduling_v1beta1.Workload, resolver: PriorityResolver) -> list[FieldError]:
    """Templates are stored as written (the API server defaults none of their fields: the objects made from
    them are defaulted themselves); only a priorityClassName naming no class is reported."""
    errors: list[FieldError] = []

    def walk(templates: Any, path: str, composite: bool) -> None:
        for i, t in enumerate(templates or []):
            if t.priorityClassName and resolver.resolve(t.priorityClassName) is None:
                errors.append(not_found(f"{path}[{i}].priorityClassName", t.priorityClassName))
            if composite:
                walk(t.podGroupTemplates, f"{path}[{i}].podGroupTemplates", False)
                walk(t.compositePodGroupTemplates, f"{path}[{i}].compositePodGroupTemplates", True)

    if wl.spec is not None:
        walk(wl.spec.podGroupTemplates, "spec.podGroupTemplates", False)
        walk(wl.spec.compositePodGroupTemplates, "spec.compositePodGroupTemplates", True)
    return errors


def apply_defaults(objects: Iterable[Any]) -> list[tuple[Any, FieldError]]:
    """Default every object in place; returns (object, error) for unresolvable references."""
    objects = list(objects)
    resolver = PriorityResolver(o for o in objects if kind_info(o).kind == "PriorityClass")
    problems: list[tuple[Any, FieldError]] = []
    for obj in objects:
        info = kind_info(obj)
        _ensure_meta(obj, info.namespaced)
        errors: list[FieldError] = []
        if isinstance(obj, core_v1.Pod):
            errors = _pod_defaults(obj, resolver)
        elif isinstance(obj, scheduling_v1beta1.PodGroup) and obj.spec is not None:
            errors = _group_defaults(obj.spec, "spec", resolver, scheduling_v1beta1.DisruptionMode(single={}))
        elif isinstance(obj, scheduling_v1alpha3.CompositePodGroup) and obj.spec is not None:
            errors = _group_defaults(
                obj.spec, "spec", resolver, scheduling_v1alpha3.CompositeDisruptionMode(single={})
            )
        elif isinstance(obj, scheduling_v1beta1.Workload):
            errors = _workload_references(obj, resolver)
        elif isinstance(obj, batch_v1.Job):
            _job_defaults(obj)
        problems.extend((obj, e) for e in errors)
    return problems
