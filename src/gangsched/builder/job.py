"""The Job controller's part of workload-aware scheduling (KEP-5547; upstream job_scheduling_manager.go).

A Job with or without `.spec.scheduling` becomes:
- a Workload `<job>-<hash(job uid)>` owned by the Job (controller owner reference, `spec.controllerRef`),
  with one PodGroupTemplate `<job>-pgt-0`: Basic unless the Job says otherwise, a gang's minCount
  defaulting to `.spec.parallelism`;
- a PodGroup `<workload>-<template>-<hash>` copied from that template (policy, constraints, disruption mode,
  resource claims), owned by the Job (controller) and the Workload (plain owner);
- its pods (see pods.py), each with `spec.schedulingGroup.podGroupName` set.

Exceptions, as upstream: a pod template that already names a PodGroup (bring-your-own) gets pods only; a Job
with a controller owner (its parent, e.g. a JobSet, owns the Workload) gets pods only.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from lightkube.models import batch_v1, core_v1, meta_v1, scheduling_v1alpha3, scheduling_v1beta1
from msgspec import Struct, field

from ..api.errors import FieldError, forbidden, invalid
from ..api.owners import controller_of
from ._objects import job_spec, metadata_of
from .config import PodGroupConfig, WorkloadItem, join_path
from .names import generate_pod_group_name, generate_workload_name, object_uid
from .options import BuildOptions, DisruptionModeOption, SchedulingPolicyOption
from .pods import default_job_selector, job_controller_ref, job_pods, job_uid
from .workloadbuilder import Builder

__all__ = [
    "JOB_BUILD_OPTIONS",
    "JobExpansion",
    "build_job",
    "default_gang_min_count",
    "job_builder",
    "job_workload_item",
    "manages_workload",
    "pod_group_template_name",
    "validate_job_scheduling",
]

#: The Job controller allows every policy and disruption mode the API has.
JOB_BUILD_OPTIONS = BuildOptions(
    allowed_policies=[SchedulingPolicyOption.BASIC, SchedulingPolicyOption.GANG],
    allowed_disruption_modes=[DisruptionModeOption.SINGLE, DisruptionModeOption.ALL],
)


def pod_group_template_name(job_name: str) -> str:
    """The single template the controller compiles for a Job: `<job>-pgt-0`."""
    return f"{job_name}-pgt-0"


def default_gang_min_count(parallelism: int) -> Callable[[PodGroupConfig], None]:
    """A callback giving an unset gang minCount the Job's parallelism; touches the resolved copy only."""

    def callback(cfg: PodGroupConfig) -> None:
        if cfg.policy is not None and cfg.policy.gang is not None and cfg.policy.gang.minCount is None:
            cfg.policy.gang.minCount = parallelism

    return callback


def _parallelism(job: batch_v1.Job) -> int:
    parallelism = job_spec(job).parallelism
    return parallelism if parallelism is not None else 1


def pod_priority_class_name(job: batch_v1.Job) -> str | None:
    """The pod template's priorityClassName, which the PodGroup must share.

    Why: the scheduler refuses a group whose pods' priority differs from the group's ("all pods in a single
    pod group should have the same priority as the pod group's priority"), so a PodGroup left at the default
    priority would never schedule a prioritized Job. The workloadbuilder's config has a priorityClassName
    for this; where upstream's v1.37 Job controller fills it was not found in the source we could read.
    """
    template_spec = job_spec(job).template.spec
    return template_spec.priorityClassName if template_spec is not None else None


def job_workload_item(job: batch_v1.Job) -> WorkloadItem:
    """The single-node WorkloadItem tree of a Job: Basic by default, the user's `.spec.scheduling` on top."""
    return WorkloadItem(
        name=pod_group_template_name(metadata_of(job).name or ""),
        user_config=PodGroupConfig.from_job_scheduling(job_spec(job).scheduling),
        default_config=PodGroupConfig(
            policy=scheduling_v1alpha3.WorkloadPodGroupSchedulingPolicy(basic={}),
            priority_class_name=pod_priority_class_name(job),
        ),
        callbacks=[default_gang_min_count(_parallelism(job))],
    )


def job_builder(job: batch_v1.Job) -> Builder:
    """The Builder the Job controller uses for `job`: Workload named after the Job's UID, owned by it."""
    meta = metadata_of(job)
    options = BuildOptions(
        name=generate_workload_name(meta.name or "", job_uid(job)),
        namespace=meta.namespace or "default",
        owner=job_controller_ref(job),
        allowed_policies=JOB_BUILD_OPTIONS.allowed_policies,
        allowed_disruption_modes=JOB_BUILD_OPTIONS.allowed_disruption_modes,
    )
    return Builder(job_workload_item(job), options)


def manages_workload(job: batch_v1.Job) -> bool:
    """Upstream's shouldManageWorkloadForJob (gate on): not for a bring-your-own PodGroup, not for a Job
    whose controller owner manages the Workload."""
    template_spec = job_spec(job).template.spec
    if template_spec is not None and template_spec.schedulingGroup is not None:
        return False
    return controller_of(job) is None


def validate_job_scheduling(job: batch_v1.Job) -> list[FieldError]:
    """Errors in a Job's `.spec.scheduling`, at the Job's own field paths.

    The builder's layers (structure, allow-lists, `all` with Basic) plus the Job API's own rules: a gang
    larger than parallelism can never start, and `.spec.scheduling` has no effect next to a pod template
    that names its own PodGroup. (Those two messages are gangsched's wording: upstream's were not found.)
    """
    spec = job_spec(job)
    errors = job_builder(job).validate("spec.scheduling")
    scheduling = spec.scheduling
    if scheduling is None:
        return errors
    policy = scheduling.schedulingPolicy
    gang = policy.gang if policy is not None else None
    parallelism = _parallelism(job)
    if gang is not None and gang.minCount is not None and gang.minCount > parallelism:
        path = join_path("spec.scheduling", "schedulingPolicy", "gang", "minCount")
        errors.append(
            invalid(path, gang.minCount, f"must be less than or equal to spec.parallelism ({parallelism})")
        )
    template_spec = spec.template.spec
    if template_spec is not None and template_spec.schedulingGroup is not None:
        errors.append(
            forbidden("spec.scheduling", "may not be set when spec.template.spec.schedulingGroup is set")
        )
    return errors


def _byo_group(job: batch_v1.Job) -> str | None:
    """The PodGroup the pod template already names, if any (the template is copied as it is)."""
    template_spec = job_spec(job).template.spec
    group = template_spec.schedulingGroup if template_spec is not None else None
    return group.podGroupName if group is not None else None


class JobExpansion(Struct):
    """What one Job turns into. `workload`/`pod_group` are None when the controller manages neither."""

    job: batch_v1.Job
    workload: scheduling_v1beta1.Workload | None = None
    pod_group: scheduling_v1beta1.PodGroup | None = None
    pods: list[core_v1.Pod] = field(default_factory=list)
    errors: list[FieldError] = field(default_factory=list)

    def objects(self) -> list[object]:
        """Job, Workload, PodGroup, then pods: the order they are created in (and best applied in)."""
        head: list[object] = [self.job]
        head += [o for o in (self.workload, self.pod_group) if o is not None]
        return head + list(self.pods)


def build_job(job: batch_v1.Job, *, workload_with_job: bool = True) -> JobExpansion:
    """Expand a new Job as the v1.37 Job controller would. Works on a copy of `job`.

    `workload_with_job=False` is the controller with the WorkloadWithJob gate off: pods only, as before
    v1.36. Returns errors instead of objects when `.spec.scheduling` is invalid; nothing is half-built.

    >>> expansion = build_job(job)            # doctest: +SKIP
    >>> [type(o).__name__ for o in expansion.objects()]  # doctest: +SKIP
    ['Job', 'Workload', 'PodGroup', 'Pod', 'Pod', 'Pod', 'Pod']
    """
    job = copy.deepcopy(job)
    meta = metadata_of(job)
    if job.spec is None:
        return JobExpansion(job)
    default_job_selector(job)
    if not workload_with_job:
        return JobExpansion(job, pods=job_pods(job, _byo_group(job)))
    errors = validate_job_scheduling(job)
    if errors:
        return JobExpansion(job, errors=errors)
    if not manages_workload(job):
        return JobExpansion(job, pods=job_pods(job, _byo_group(job)))
    builder = job_builder(job)
    workload = builder.build_workload()
    wl_meta = metadata_of(workload)
    wl_meta.uid = object_uid("Workload", wl_meta.namespace or "", wl_meta.name or "")
    template = pod_group_template_name(meta.name or "")
    pod_group = builder.new_pod_group(generate_pod_group_name(wl_meta.name or "", template), template)
    # A root Job owns its Workload, so the PodGroup also names the Workload as a (non-controller) owner.
    group_meta = metadata_of(pod_group)
    workload_owner = meta_v1.OwnerReference(
        apiVersion="scheduling.k8s.io/v1beta1", kind="Workload", name=wl_meta.name or "", uid=wl_meta.uid
    )
    group_meta.ownerReferences = [job_controller_ref(job), workload_owner]
    pods = job_pods(job, group_meta.name)
    return JobExpansion(job, workload, pod_group, pods)
