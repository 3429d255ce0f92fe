"""Defaulting and admission-time resolution, as the API server does them before the scheduler sees objects.

- namespace `default` for namespaced objects without one;
- Pod: schedulerName `default-scheduler`, priority and preemptionPolicy from its PriorityClass (or the
  global default class, else 0 / PreemptLowerPriority), as the Priority admission plugin resolves them;
- PodGroup / CompositePodGroup: disruptionMode `single`, preemptionPolicy `PreemptLowerPriority`, priority
  from priorityClassName; Workload templates are left as written, as the API server stores them;
- Job: parallelism 1, completionMode NonIndexed, backoffLimit 6;
- StorageClass: volumeBindingMode Immediate, reclaimPolicy Delete; PersistentVolume: reclaim policy Retain,
  volumeMode Filesystem; PersistentVolumeClaim: volumeMode Filesystem, and a claim without
  storageClassName gets the default class (annotation `storageclass.kubernetes.io/is-default-class`), as the
  DefaultStorageClass admission plugin does;
- ResourceClaim and ResourceClaimTemplate requests: allocationMode ExactCount with count 1, a toleration's
  operator Equal;
- ReplicationController: an empty selector becomes the template's labels (SetDefaults_ReplicationController).

Mutates the objects in place and returns field errors for references that cannot be resolved (a
priorityClassName naming no PriorityClass), which upstream's admission would refuse.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from lightkube.models import core_v1, meta_v1, scheduling_v1beta1

if TYPE_CHECKING:  # the other kinds' models are imported where used (kinds.py): objects are told by kind
    from lightkube.models import batch_v1

from .errors import FieldError, not_found
from .kinds import kind_info
from .pod_selectors import ReplicationController

__all__ = ["SYSTEM_PRIORITY_CLASSES", "PriorityResolver", "apply_defaults", "claim_defaults"]

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
    if spec.hostNetwork:  # pkg/apis/core/v1/defaults.go defaultHostNetworkPorts: NodePorts then sees them
        for container in [*(spec.containers or []), *(spec.initContainers or [])]:
            for port in container.ports or []:
                if not port.hostPort:
                    port.hostPort = port.containerPort
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


DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"


def default_storage_class(classes: Iterable[Any]) -> str | None:
    """The class the DefaultStorageClass admission plugin assigns: of those annotated default, the newest
    (creationTimestamp), then the first by name, as upstream's GetDefaultClass."""
    marked = [
        c
        for c in classes
        if ((c.metadata.annotations or {}) if c.metadata else {}).get(DEFAULT_CLASS_ANNOTATION) == "true"
    ]
    if not marked:
        return None
    stamp = [c.metadata.creationTimestamp.timestamp() if c.metadata.creationTimestamp else 0 for c in marked]
    newest = max(stamp)
    name: str = min(c.metadata.name for c, t in zip(marked, stamp, strict=True) if t == newest)
    return name


def claim_defaults(pvc: core_v1.PersistentVolumeClaim, classes: Iterable[Any]) -> None:
    """A PersistentVolumeClaim created in the cluster (by a controller) as the API server stores it:
    volumeMode Filesystem, the default StorageClass among `classes` when it names none."""
    _storage_defaults(pvc, "PersistentVolumeClaim", default_storage_class(classes))


def _storage_defaults(obj: Any, kind: str, default_class: str | None) -> None:
    if kind == "StorageClass":
        obj.volumeBindingMode = obj.volumeBindingMode or "Immediate"
        obj.reclaimPolicy = obj.reclaimPolicy or "Delete"
    elif kind == "PersistentVolume" and obj.spec is not None:
        obj.spec.persistentVolumeReclaimPolicy = obj.spec.persistentVolumeReclaimPolicy or "Retain"
        obj.spec.volumeMode = obj.spec.volumeMode or "Filesystem"
    elif kind == "PersistentVolumeClaim" and obj.spec is not None:
        obj.spec.volumeMode = obj.spec.volumeMode or "Filesystem"
        if obj.spec.storageClassName is None and default_class is not None:
            obj.spec.storageClassName = default_class


def _exact_defaults(req: Any) -> None:
    if not req.allocationMode:
        req.allocationMode = "ExactCount"
    if req.allocationMode == "ExactCount" and not req.count:
        req.count = 1
    for toleration in req.tolerations or []:
        toleration.operator = toleration.operator or "Equal"


def claim_spec_defaults(spec: Any) -> None:
    """SetDefaults_ExactDeviceRequest and SetDefaults_DeviceSubRequest on every request of a claim spec, and
    a toleration's operator Equal (zz_generated.defaults.go SetObjectDefaults_ResourceClaim)."""
    devices = spec.devices if spec is not None else None
    for req in (devices.requests if devices is not None else None) or []:
        if req.exactly is not None:
            _exact_defaults(req.exactly)
        for sub in req.firstAvailable or []:
            _exact_defaults(sub)


def _replication_controller_defaults(rc: ReplicationController) -> None:
    spec, template = rc.spec, rc.spec.template if rc.spec is not None else None
    labels = template.metadata.labels if template is not None and template.metadata is not None else None
    if spec is not None and labels is not None and not spec.selector:
        spec.selector = dict(labels)


def apply_defaults(objects: Iterable[Any]) -> list[tuple[Any, FieldError]]:
    """Default every object in place; returns (object, error) for unresolvable references."""
    objects = list(objects)
    resolver = PriorityResolver(o for o in objects if kind_info(o).kind == "PriorityClass")
    default_class = default_storage_class(o for o in objects if kind_info(o).kind == "StorageClass")
    problems: list[tuple[Any, FieldError]] = []
    for obj in objects:
        info = kind_info(obj)
        kind = info.kind
        _ensure_meta(obj, info.namespaced)
        errors: list[FieldError] = []
        if kind == "Pod":
            errors = _pod_defaults(obj, resolver)
        elif kind == "PodGroup" and obj.spec is not None:
            errors = _group_defaults(obj.spec, "spec", resolver, scheduling_v1beta1.DisruptionMode(single={}))
        elif kind == "CompositePodGroup" and obj.spec is not None:
            from lightkube.models import scheduling_v1alpha3

            errors = _group_defaults(
                obj.spec, "spec", resolver, scheduling_v1alpha3.CompositeDisruptionMode(single={})
            )
        elif kind == "Workload":
            errors = _workload_references(obj, resolver)
        elif kind == "Job":
            _job_defaults(obj)
        elif kind == "ResourceClaim":
            from lightkube.models import resource_v1

            if obj.spec is None:  # `spec: null` decodes to the zero value on the API server: no devices
                obj.spec = resource_v1.ResourceClaimSpec()
            claim_spec_defaults(obj.spec)
        elif kind == "ResourceClaimTemplate":
            from lightkube.models import resource_v1

            if obj.spec is None:
                obj.spec = resource_v1.ResourceClaimTemplateSpec(spec=resource_v1.ResourceClaimSpec())
            elif obj.spec.spec is None:
                obj.spec.spec = resource_v1.ResourceClaimSpec()
            claim_spec_defaults(obj.spec.spec)
        elif kind == "ReplicationController":
            _replication_controller_defaults(obj)
        else:
            _storage_defaults(obj, kind, default_class)
        problems.extend((obj, e) for e in errors)
    return problems
