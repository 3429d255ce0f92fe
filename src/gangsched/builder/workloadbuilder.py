"""A Python workloadbuilder: scheduling intent in, Workload / PodGroup / CompositePodGroup out.

Modelled on upstream's k8s.io/component-helpers/scheduling/schedulingv1/workloadbuilder, which the Job
controller (and JobSet, LeaderWorkerSet, custom controllers) call so that none of them re-implements
defaulting, validation and template compilation::

    builder = Builder(item, BuildOptions(
        name="trainer-wl", namespace="ml", owner=owner_ref,
        allowed_policies=[SchedulingPolicyOption.BASIC, SchedulingPolicyOption.GANG],
        allowed_disruption_modes=[DisruptionModeOption.SINGLE, DisruptionModeOption.ALL],
    ))
    if errors := builder.validate("spec.scheduling"):
        ...                                   # refuse the object; errors name the user's fields
    workload = builder.build_workload()       # compiled once, cached
    pod_group = builder.new_pod_group("trainer-pg", "trainer-pgt-0")

A controller that manages PodGroups for a Workload it did not compile uses
`Builder.from_existing_workload(workload, options)`: it materialises PodGroups from that Workload and
refuses `build_workload` and `validate`, so a persisted Workload is never recompiled over.

No I/O, no global state; objects returned are new and owned by the caller.
"""

from __future__ import annotations

import copy
from typing import Any

import msgspec
from lightkube.models import meta_v1, scheduling_v1alpha3, scheduling_v1beta1

from ..api.errors import OMIT, ErrorType, FieldError
from ._objects import metadata_of
from .config import CompositeGroupConfig, CompositeWorkloadItem, PodGroupConfig, WorkloadItem, resolve
from .options import BuildOptions
from .validate import validate_tree

__all__ = ["BuildError", "Builder"]

SCHEDULING_API_VERSION = "scheduling.k8s.io/v1beta1"
COMPOSITE_API_VERSION = "scheduling.k8s.io/v1alpha3"


class BuildError(ValueError):
    """The tree cannot be compiled, or the builder was asked for something its mode does not allow."""


def _leaf_template(name: str, cfg: PodGroupConfig) -> scheduling_v1beta1.PodGroupTemplate:
    """upstream buildLeafTemplate: a nil or empty policy is Basic; gang needs a resolved minCount."""
    policy = cfg.policy
    if policy is not None and policy.gang is not None:
        if policy.gang.minCount is None:
            raise BuildError("gang scheduling requires minCount to be set after resolution")
        compiled = scheduling_v1beta1.PodGroupSchedulingPolicy(
            gang=scheduling_v1beta1.GangSchedulingPolicy(minCount=policy.gang.minCount)
        )
    else:
        compiled = scheduling_v1beta1.PodGroupSchedulingPolicy(basic={})
    template = scheduling_v1beta1.PodGroupTemplate(name=name, schedulingPolicy=compiled)
    if cfg.priority_class_name:
        template.priorityClassName = cfg.priority_class_name
    if cfg.constraints is not None and cfg.constraints.topology:
        template.schedulingConstraints = scheduling_v1beta1.PodGroupSchedulingConstraints(
            topology=[scheduling_v1beta1.TopologyConstraint(key=t.key) for t in cfg.constraints.topology]
        )
    mode = cfg.disruption_mode
    if mode is not None and mode.all is not None:
        template.disruptionMode = scheduling_v1beta1.DisruptionMode(all={})
    elif mode is not None and mode.single is not None:
        template.disruptionMode = scheduling_v1beta1.DisruptionMode(single={})
    if cfg.resource_claims:
        template.resourceClaims = [
            scheduling_v1beta1.PodGroupResourceClaim(
                name=c.name,
                resourceClaimName=c.resourceClaimName,
                resourceClaimTemplateName=c.resourceClaimTemplateName,
            )
            for c in cfg.resource_claims
        ]
    return template


def _composite_template(item: CompositeWorkloadItem) -> scheduling_v1beta1.CompositePodGroupTemplate:
    cfg: CompositeGroupConfig = resolve(item)
    policy = copy.deepcopy(cfg.policy)
    if policy is None or (policy.gang is None and policy.basic is None):
        policy = scheduling_v1beta1.CompositePodGroupSchedulingPolicy(basic={})
    template = scheduling_v1beta1.CompositePodGroupTemplate(name=item.name, schedulingPolicy=policy)
    template.schedulingConstraints = copy.deepcopy(cfg.constraints)
    template.disruptionMode = copy.deepcopy(cfg.disruption_mode)
    template.priorityClassName = cfg.priority_class_name or None
    leaves = [_compile(c) for c in item.children if isinstance(c, WorkloadItem)]
    composites = [_compile(c) for c in item.children if isinstance(c, CompositeWorkloadItem)]
    template.podGroupTemplates = leaves or None
    template.compositePodGroupTemplates = composites or None
    return template


def _compile(item: WorkloadItem | CompositeWorkloadItem) -> Any:
    if not item.name:
        # Rejected before callbacks run, so a callback cannot "recover" a name the caller never set.
        raise BuildError("workload item name cannot be empty")
    if isinstance(item, WorkloadItem):
        return _leaf_template(item.name, resolve(item))
    return _composite_template(item)


def _walk_templates(templates: list[Any] | None, out: dict[str, Any]) -> None:
    for t in templates or []:
        out[t.name] = t
        if isinstance(t, scheduling_v1beta1.CompositePodGroupTemplate):
            _walk_templates(t.podGroupTemplates, out)
            _walk_templates(t.compositePodGroupTemplates, out)


class Builder:
    """Turns one WorkloadItem tree into scheduler-facing objects. Not thread-safe; cheap to create."""

    def __init__(self, root: WorkloadItem | CompositeWorkloadItem | None, options: BuildOptions) -> None:
        self._root = root
        self._options = options
        self._workload: scheduling_v1beta1.Workload | None = None
        self._existing: scheduling_v1beta1.Workload | None = None

    @classmethod
    def from_existing_workload(cls, workload: scheduling_v1beta1.Workload, options: BuildOptions) -> Builder:
        """A builder that only materialises PodGroups from an already-persisted Workload."""
        builder = cls(None, options)
        builder._existing = workload
        return builder

    @property
    def options(self) -> BuildOptions:
        return self._options

    def validate(self, root_path: str = "") -> list[FieldError]:
        """Field errors for the tree, at the controller's own paths below `root_path`. Never raises."""
        if self._existing is not None:
            detail = "cannot validate a builder constructed from an existing workload"
            return [FieldError(ErrorType.INTERNAL, root_path or "<root>", OMIT, detail)]
        if self._root is None:
            return [
                FieldError(
                    ErrorType.INVALID,
                    root_path or "<root>",
                    None,
                    "invalid builder: missing root WorkloadItem",
                )
            ]
        return validate_tree(self._root, root_path, self._options)

    def build_workload(self) -> scheduling_v1beta1.Workload:
        """Compile the tree into a Workload owned by `options.owner`; compiled once, then cached.

        Raises BuildError for a builder made from an existing Workload, an unnamed item, a gang without a
        resolved minCount, or a missing owner (a Workload must be garbage-collected with its controller).
        """
        if self._existing is not None:
            raise BuildError(
                "build_workload is not available on a Builder created from an existing Workload: "
                "it materializes from the supplied Workload"
            )
        if self._workload is not None:
            return self._workload
        if self._root is None:
            raise BuildError("root WorkloadItem must not be None")
        template = _compile(self._root)
        spec = scheduling_v1beta1.WorkloadSpec()
        if isinstance(template, scheduling_v1beta1.CompositePodGroupTemplate):
            spec.compositePodGroupTemplates = [template]
        else:
            spec.podGroupTemplates = [template]
        owner = self._options.owner
        if owner is None:
            raise BuildError("a Workload must be owned by its controller for garbage collection")
        group = owner.apiVersion.rpartition("/")[0]
        spec.controllerRef = scheduling_v1beta1.TypedLocalObjectReference(
            apiGroup=group or None, kind=owner.kind, name=owner.name
        )
        self._workload = scheduling_v1beta1.Workload(
            apiVersion=SCHEDULING_API_VERSION,
            kind="Workload",
            metadata=meta_v1.ObjectMeta(
                name=self._options.name,
                namespace=self._options.namespace or None,
                ownerReferences=[copy.deepcopy(owner)],
            ),
            spec=spec,
        )
        return self._workload

    def _source(self) -> scheduling_v1beta1.Workload:
        workload = self._existing or self._workload
        if workload is None:
            raise BuildError(
                "no Workload available: call build_workload or use Builder.from_existing_workload first"
            )
        return workload

    def _template(self, template_name: str, kind: type) -> Any:
        workload = self._source()
        index: dict[str, Any] = {}
        _walk_templates(workload.spec.podGroupTemplates, index)
        _walk_templates(workload.spec.compositePodGroupTemplates, index)
        template = index.get(template_name)
        if not isinstance(template, kind):
            names = sorted(n for n, t in index.items() if isinstance(t, kind))
            raise BuildError(f"{kind.__name__} {template_name!r} not found in workload; have {names}")
        return template

    def _meta(self, name: str) -> meta_v1.ObjectMeta:
        owner = self._options.owner
        return meta_v1.ObjectMeta(
            name=name,
            namespace=metadata_of(self._source()).namespace,
            ownerReferences=[copy.deepcopy(owner)] if owner is not None else None,
        )

    def new_pod_group(
        self, name: str, template_name: str, *, parent_composite_pod_group_name: str | None = None
    ) -> scheduling_v1beta1.PodGroup:
        """A runtime PodGroup from the named PodGroupTemplate: its blocks deep-copied, workloadRef set."""
        t: scheduling_v1beta1.PodGroupTemplate = self._template(
            template_name, scheduling_v1beta1.PodGroupTemplate
        )
        spec = scheduling_v1beta1.PodGroupSpec(
            schedulingPolicy=copy.deepcopy(t.schedulingPolicy),
            workloadRef=scheduling_v1beta1.WorkloadReference(
                workloadName=metadata_of(self._source()).name or "", templateName=t.name
            ),
            schedulingConstraints=copy.deepcopy(t.schedulingConstraints),
            disruptionMode=copy.deepcopy(t.disruptionMode),
            resourceClaims=copy.deepcopy(t.resourceClaims),
            priorityClassName=t.priorityClassName,
            priority=t.priority,
            parentCompositePodGroupName=parent_composite_pod_group_name,
        )
        return scheduling_v1beta1.PodGroup(
            apiVersion=SCHEDULING_API_VERSION, kind="PodGroup", metadata=self._meta(name), spec=spec
        )

    def new_composite_pod_group(
        self, name: str, template_name: str, *, parent_composite_pod_group_name: str | None = None
    ) -> scheduling_v1alpha3.CompositePodGroup:
        """A runtime CompositePodGroup (v1alpha3) from the named CompositePodGroupTemplate."""
        t = self._template(template_name, scheduling_v1beta1.CompositePodGroupTemplate)
        spec: dict[str, Any] = {
            "workloadRef": {"workloadName": metadata_of(self._source()).name, "templateName": t.name},
            "schedulingPolicy": t.schedulingPolicy.to_dict(),
        }
        for key in ("schedulingConstraints", "disruptionMode"):
            value = getattr(t, key)
            if value is not None:
                spec[key] = value.to_dict()
        for key in ("priorityClassName", "priority"):
            if getattr(t, key) is not None:
                spec[key] = getattr(t, key)
        if parent_composite_pod_group_name:
            spec["parentCompositePodGroupName"] = parent_composite_pod_group_name
        # v1beta1 template blocks -> v1alpha3 object: same JSON shape, different Python classes.
        doc = {"apiVersion": COMPOSITE_API_VERSION, "kind": "CompositePodGroup", "spec": spec}
        group = msgspec.convert(doc, scheduling_v1alpha3.CompositePodGroup)
        group.metadata = self._meta(name)
        return group
