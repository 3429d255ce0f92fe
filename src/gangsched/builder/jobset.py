"""Multi-role jobs in JobSet's `replicatedJobs` shape -> one CompositePodGroup tree and its pods.

The shape is JobSet's (`jobset.x-k8s.io/v1alpha2`), which ML platform users already write: each
`spec.replicatedJobs[i]` is a role with a `name`, `replicas` (copies of the Job) and a batch/v1 Job
`template`. Each role's Job template may carry `.spec.scheduling` (Job's own field: policy, minCount,
topology, disruption mode, resource claims) for that role's PodGroups. gangsched adds one optional field,
`spec.scheduling` on the JobSet, with the CompositePodGroupTemplate's blocks for the root::

    spec:
      scheduling:                       # the root CompositePodGroup (optional)
        schedulingPolicy: {gang: {minGroupCount: 5}}          # default: every Job of every role
        schedulingConstraints: {topology: [{key: topology.kubernetes.io/zone}]}
      replicatedJobs:
      - name: workers
        replicas: 1
        template:
          spec:
            parallelism: 4
            scheduling: {schedulingConstraints: {topology: [{key: topology.kubernetes.io/rack}]}}
            template: {spec: {containers: [...]}}

Omitted scheduling means the whole JobSet or nothing: a gang root over every Job, each Job a gang of its
parallelism. It expands, as the JobSet controller and the Job controller together would, into a Workload
(one composite template, one PodGroupTemplate per role), a root CompositePodGroup, one PodGroup per Job,
the Jobs `<jobset>-<role>-<index>` (each naming its PodGroup in its pod template), and their pods.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import msgspec
from lightkube.models import batch_v1, core_v1, meta_v1, scheduling_v1alpha3, scheduling_v1beta1
from msgspec import Struct, field

from ..api.errors import FieldError, Problem, duplicate, invalid, not_supported, required, too_many
from ..api.jobset import JOBSET_API_VERSION, JobSet
from ..api.loader import decode
from ._objects import job_spec, metadata_of
from .config import (
    BlockPaths,
    CompositeGroupConfig,
    CompositeWorkloadItem,
    PodGroupConfig,
    WorkloadItem,
    join_path,
    resolve,
)
from .job import JOB_BUILD_OPTIONS, build_job, default_gang_min_count, pod_priority_class_name
from .names import generate_pod_group_name, generate_workload_name, object_uid
from .options import BuildOptions
from .workloadbuilder import Builder

__all__ = ["JOBSET_LABELS", "JobSetExpansion", "build_jobset"]

JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_NAME_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
REPLICATED_JOB_REPLICAS_LABEL = "jobset.sigs.k8s.io/replicatedjob-replicas"
JOB_INDEX_LABEL = "jobset.sigs.k8s.io/job-index"
JOBSET_LABELS = (JOBSET_NAME_LABEL, REPLICATED_JOB_NAME_LABEL, REPLICATED_JOB_REPLICAS_LABEL, JOB_INDEX_LABEL)
MAX_ROLES = 8
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
_ROOT_BLOCKS = {
    "schedulingPolicy": scheduling_v1beta1.CompositePodGroupSchedulingPolicy,
    "schedulingConstraints": scheduling_v1beta1.CompositePodGroupSchedulingConstraints,
    "disruptionMode": scheduling_v1beta1.CompositeDisruptionMode,
}


class _Role(Struct):
    index: int
    name: str
    replicas: int
    job: batch_v1.Job  # the role's Job template as a Job, for decoding, validation and defaults


class JobSetExpansion(Struct):
    """What one JobSet turns into, or the errors that stop it (then nothing is built)."""

    jobset: JobSet
    workload: scheduling_v1beta1.Workload | None = None
    root: scheduling_v1alpha3.CompositePodGroup | None = None
    pod_groups: list[scheduling_v1beta1.PodGroup] = field(default_factory=list)
    jobs: list[batch_v1.Job] = field(default_factory=list)
    pods: list[core_v1.Pod] = field(default_factory=list)
    errors: list[FieldError] = field(default_factory=list)

    def objects(self) -> list[object]:
        head: list[object] = [self.jobset]
        head += [o for o in (self.workload, self.root) if o is not None]
        return head + list(self.pod_groups) + list(self.jobs) + list(self.pods)


def _decode_role(raw: Any, i: int, namespace: str) -> tuple[_Role | None, list[FieldError]]:
    at = f"spec.replicatedJobs[{i}]"
    if not isinstance(raw, dict):
        return None, [invalid(at, raw, "must be an object")]
    errors: list[FieldError] = []
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        errors.append(required(f"{at}.name"))
    elif len(name) > 63 or not _DNS_LABEL.match(name):
        errors.append(invalid(f"{at}.name", name, "must be a valid DNS label"))
    replicas = raw.get("replicas", 1)
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 1:
        errors.append(invalid(f"{at}.replicas", replicas, "must be an integer greater than or equal to 1"))
    template = raw.get("template")
    if not isinstance(template, dict) or not isinstance(template.get("spec"), dict):
        return None, [*errors, required(f"{at}.template.spec")]
    doc = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": namespace}}
    loaded = decode({**doc, "spec": template["spec"]}, "", i)
    if isinstance(loaded, Problem):
        error = loaded.error
        if isinstance(error, FieldError):
            errors.append(
                FieldError(error.type, f"{at}.template.{error.field}", error.bad_value, error.detail)
            )
        else:
            errors.append(invalid(f"{at}.template", None, error))
        return None, errors
    if errors:
        return None, errors
    return _Role(i, str(name), int(replicas), loaded.obj), []


def _decode_root(raw: Any, group_count: int) -> tuple[CompositeGroupConfig | None, list[FieldError]]:
    if raw is None:
        return None, []
    if not isinstance(raw, dict):
        return None, [invalid("spec.scheduling", raw, "must be an object")]
    config = CompositeGroupConfig()
    errors: list[FieldError] = []
    attrs = {
        "schedulingPolicy": "policy",
        "schedulingConstraints": "constraints",
        "disruptionMode": "disruption_mode",
    }
    for key, value in raw.items():
        model = _ROOT_BLOCKS.get(key)
        if model is None:
            errors.append(not_supported(f"spec.scheduling.{key}", key, list(_ROOT_BLOCKS)))
            continue
        if key == "schedulingPolicy" and isinstance(value, dict) and isinstance(value.get("gang"), dict):
            # minGroupCount defaults to "every Job": the whole JobSet or nothing.
            value = {**value, "gang": {"minGroupCount": group_count, **value["gang"]}}
        try:
            setattr(config, attrs[key], msgspec.convert(value, model))
        except (msgspec.ValidationError, TypeError, ValueError) as e:
            errors.append(invalid(f"spec.scheduling.{key}", value, str(e).replace("`", "")))
    return config, errors


def _role_item(role: _Role, root: CompositeGroupConfig) -> WorkloadItem:
    at = f"replicatedJobs[{role.index}]"
    blocks = f"{at}.template.spec.scheduling"
    root_gang = root.policy is not None and root.policy.gang is not None
    root_all = root.disruption_mode is not None and root.disruption_mode.all is not None
    # Children follow the root by default: a gang root has gang children, an `all` root `all` children.
    gang = scheduling_v1alpha3.WorkloadPodGroupGangSchedulingPolicy()
    policy = (
        scheduling_v1alpha3.WorkloadPodGroupSchedulingPolicy(gang=gang)
        if root_gang
        else scheduling_v1alpha3.WorkloadPodGroupSchedulingPolicy(basic={})
    )
    mode = scheduling_v1alpha3.WorkloadPodGroupDisruptionMode(all={}) if root_all else None
    spec = job_spec(role.job)
    parallelism = spec.parallelism if spec.parallelism is not None else 1
    return WorkloadItem(
        name=role.name,
        user_config=PodGroupConfig.from_job_scheduling(spec.scheduling),
        default_config=PodGroupConfig(
            policy=policy, disruption_mode=mode, priority_class_name=pod_priority_class_name(role.job)
        ),
        callbacks=[default_gang_min_count(parallelism)],
        paths=BlockPaths(
            name=f"{at}.name",
            policy=f"{blocks}.schedulingPolicy",
            constraints=f"{blocks}.schedulingConstraints",
            disruption_mode=f"{blocks}.disruptionMode",
            resource_claims=f"{blocks}.resourceClaims",
        ),
    )


def _composite_rules(
    root: CompositeGroupConfig, roles: list[_Role], items: list[WorkloadItem], groups: int
) -> list[FieldError]:
    """Rules across the tree (wording ours; upstream's messages were not found): a minGroupCount and
    minCounts the Jobs can reach, no basic child under a gang parent, only `all` children under `all`."""
    errors: list[FieldError] = []
    gang = root.policy.gang if root.policy is not None else None
    if gang is not None and gang.minGroupCount > groups:
        errors.append(
            invalid(
                "spec.scheduling.schedulingPolicy.gang.minGroupCount",
                gang.minGroupCount,
                f"must be less than or equal to the number of Jobs ({groups})",
            )
        )
    root_all = root.disruption_mode is not None and root.disruption_mode.all is not None
    first_class = pod_priority_class_name(roles[0].job) if roles else None
    for role in roles:
        # A CompositePodGroup tree has one priority; the groups take theirs from their pods.
        if pod_priority_class_name(role.job) != first_class:
            path = f"spec.replicatedJobs[{role.index}].template.spec.template.spec.priorityClassName"
            detail = f"must be the same in every role ({first_class!r} in the first): one priority per tree"
            errors.append(invalid(path, pod_priority_class_name(role.job), detail))
    for role, item in zip(roles, items, strict=True):
        child: PodGroupConfig = resolve(item)
        policy_path = join_path("spec", item.paths.policy)
        child_gang = child.policy.gang if child.policy is not None else None
        role_parallelism = job_spec(role.job).parallelism
        parallelism = role_parallelism if role_parallelism is not None else 1
        if child_gang is not None and child_gang.minCount is not None and child_gang.minCount > parallelism:
            detail = f"must be less than or equal to spec.parallelism ({parallelism})"
            errors.append(invalid(join_path(policy_path, "gang", "minCount"), child_gang.minCount, detail))
        if gang is not None and child.policy is not None and child.policy.basic is not None:
            errors.append(invalid(policy_path, "", "a gang parent may not have a basic child"))
        if root_all and (child.disruption_mode is None or child.disruption_mode.all is None):
            detail = "a parent with disruptionMode `all` may only have `all` children"
            errors.append(invalid(join_path("spec", item.paths.disruption_mode), "", detail))
    return errors


def _decode(js: JobSet) -> tuple[list[_Role], CompositeGroupConfig | None, list[FieldError]]:
    meta = js.metadata or meta_v1.ObjectMeta()
    errors: list[FieldError] = []
    if not meta.name:
        errors.append(required("metadata.name"))
    spec = js.spec
    if not isinstance(spec, dict):
        return [], None, [*errors, required("spec")]
    raw_roles = spec.get("replicatedJobs")
    if not isinstance(raw_roles, list) or not raw_roles:
        return [], None, [*errors, required("spec.replicatedJobs")]
    if len(raw_roles) > MAX_ROLES:
        errors.append(too_many("spec.replicatedJobs", len(raw_roles), MAX_ROLES))
    roles: list[_Role] = []
    seen: set[str] = set()
    for i, raw in enumerate(raw_roles):
        role, role_errors = _decode_role(raw, i, meta.namespace or "default")
        errors.extend(role_errors)
        if role is not None and role.name in seen:
            errors.append(duplicate(f"spec.replicatedJobs[{i}].name", role.name))
        elif role is not None:
            seen.add(role.name)
            roles.append(role)
    root, root_errors = _decode_root(spec.get("scheduling"), sum(r.replicas for r in roles))
    return roles, root, errors + root_errors


def _controller_ref(js: JobSet, uid: str) -> meta_v1.OwnerReference:
    name = js.metadata.name if js.metadata is not None else ""
    return meta_v1.OwnerReference(
        apiVersion=JOBSET_API_VERSION,
        kind="JobSet",
        name=name or "",
        uid=uid,
        controller=True,
        blockOwnerDeletion=True,
    )


def _child_job(
    js_name: str, namespace: str, role: _Role, replica: int, owner: meta_v1.OwnerReference, group: str | None
) -> batch_v1.Job:
    """The Job the JobSet controller creates for one replica of a role, wired to its PodGroup."""
    job = copy.deepcopy(role.job)
    spec = job_spec(job)
    labels = {
        JOBSET_NAME_LABEL: js_name,
        REPLICATED_JOB_NAME_LABEL: role.name,
        REPLICATED_JOB_REPLICAS_LABEL: str(role.replicas),
        JOB_INDEX_LABEL: str(replica),
    }
    job.metadata = meta_v1.ObjectMeta(
        name=f"{js_name}-{role.name}-{replica}",
        namespace=namespace,
        labels=dict(labels),
        ownerReferences=[copy.deepcopy(owner)],
    )
    # The JobSet owns scheduling; the Job's pods name the JobSet's PodGroup (Job's bring-your-own path).
    spec.scheduling = None
    template_meta = metadata_of(spec.template)
    template_meta.labels = {**(template_meta.labels or {}), **labels}
    if spec.template.spec is None:
        spec.template.spec = core_v1.PodSpec(containers=[])
    if group is not None:
        spec.template.spec.schedulingGroup = core_v1.PodSchedulingGroup(podGroupName=group)
    return job


def build_jobset(js: JobSet, *, composite_pod_groups: bool = True) -> JobSetExpansion:
    """Expand a JobSet into its scheduling objects, Jobs and pods; errors instead when it is invalid.

    `composite_pod_groups=False` (CompositePodGroup or WorkloadWithJob gate off): Jobs and pods only, no
    scheduling objects. Works on a copy; nothing is half-built: either every object or only errors.
    """
    js = copy.deepcopy(js)
    roles, root_config, errors = _decode(js)
    if errors:
        return JobSetExpansion(js, errors=errors)
    meta = js.metadata or meta_v1.ObjectMeta()
    js.metadata = meta
    namespace = meta.namespace or "default"
    meta.uid = meta.uid or object_uid("JobSet", namespace, meta.name or "")
    groups = sum(r.replicas for r in roles)
    root_item = CompositeWorkloadItem(
        name=meta.name or "",
        user_config=root_config,
        # Omitted: the whole JobSet or nothing.
        default_config=CompositeGroupConfig(
            policy=scheduling_v1beta1.CompositePodGroupSchedulingPolicy(
                gang=scheduling_v1beta1.CompositeGangSchedulingPolicy(minGroupCount=groups)
            ),
            priority_class_name=pod_priority_class_name(roles[0].job) if roles else None,
        ),
        paths=BlockPaths(
            name="metadata.name",
            policy="scheduling.schedulingPolicy",
            constraints="scheduling.schedulingConstraints",
            disruption_mode="scheduling.disruptionMode",
        ),
    )
    resolved_root: CompositeGroupConfig = resolve(root_item)
    items = [_role_item(r, resolved_root) for r in roles]
    root_item.children = list(items)
    owner = _controller_ref(js, meta.uid)
    if not composite_pod_groups:
        return _without_scheduling(js, roles, owner)
    options = BuildOptions(
        name=generate_workload_name(meta.name or "", meta.uid),
        namespace=namespace,
        owner=owner,
        allowed_policies=JOB_BUILD_OPTIONS.allowed_policies,
        allowed_disruption_modes=JOB_BUILD_OPTIONS.allowed_disruption_modes,
    )
    builder = Builder(root_item, options)
    errors = builder.validate("spec") + _composite_rules(resolved_root, roles, items, groups)
    if errors:
        return JobSetExpansion(js, errors=errors)
    workload = builder.build_workload()
    workload_name = metadata_of(workload).name or ""
    root_name = generate_pod_group_name(workload_name, root_item.name)
    expansion = JobSetExpansion(
        js, workload=workload, root=builder.new_composite_pod_group(root_name, root_item.name)
    )
    for role in roles:
        for replica in range(role.replicas):
            group = builder.new_pod_group(
                generate_pod_group_name(workload_name, f"{role.name}-{replica}"),
                role.name,
                parent_composite_pod_group_name=root_name,
            )
            job = _child_job(meta.name or "", namespace, role, replica, owner, metadata_of(group).name or "")
            built = build_job(job)
            expansion.pod_groups.append(group)
            expansion.jobs.append(built.job)
            expansion.pods.extend(built.pods)
    return expansion


def _without_scheduling(js: JobSet, roles: list[_Role], owner: meta_v1.OwnerReference) -> JobSetExpansion:
    meta = metadata_of(js)
    expansion = JobSetExpansion(js)
    for role in roles:
        for replica in range(role.replicas):
            job = _child_job(meta.name or "", meta.namespace or "default", role, replica, owner, None)
            built = build_job(job, workload_with_job=False)
            expansion.jobs.append(built.job)
            expansion.pods.extend(built.pods)
    return expansion
