"""Pods from a Job's pod template, as the Job controller creates them (pkg/controller/job).

- Labels and annotations come from the template; the API server has already added the Job's selector
  labels to it (see `default_job_selector`).
- Indexed jobs: completion index as annotation AND label `batch.kubernetes.io/job-completion-index`,
  hostname `<job>-<index>` when the template sets none, `JOB_COMPLETION_INDEX` in every container's
  environment, generateName `<job>-<index>-`.
- NonIndexed jobs: generateName `<job>-`.
- A controller owner reference to the Job, the `batch.kubernetes.io/job-tracking` finalizer, and
  `spec.schedulingGroup.podGroupName` when the Job has a PodGroup.
Names are completed deterministically (names.pod_name) instead of by the API server's random suffix.
"""

from __future__ import annotations

import copy

from lightkube.models import batch_v1, core_v1, meta_v1

from ._objects import job_spec, metadata_of
from .names import indexed_pod_generate_name, object_uid, pod_generate_name, pod_name

__all__ = [
    "COMPLETION_INDEX_ANNOTATION",
    "CONTROLLER_UID_LABEL",
    "JOB_NAME_LABEL",
    "JOB_TRACKING_FINALIZER",
    "active_pod_count",
    "default_job_selector",
    "generated_selector",
    "job_controller_ref",
    "job_labels",
    "job_pods",
    "job_uid",
]

JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
# Kept by the API server next to the prefixed labels for compatibility with older selectors.
LEGACY_JOB_NAME_LABEL = "job-name"
LEGACY_CONTROLLER_UID_LABEL = "controller-uid"
COMPLETION_INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
JOB_TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"


def job_uid(job: batch_v1.Job) -> str:
    """The Job's UID; a stable one derived from its namespace/name when the manifest has none."""
    meta = job.metadata
    if meta is None:
        return object_uid("Job", "", "")
    return meta.uid or object_uid("Job", meta.namespace or "default", meta.name or "")


def job_controller_ref(job: batch_v1.Job) -> meta_v1.OwnerReference:
    """metav1.NewControllerRef(job, batch/v1 Job): controller and blockOwnerDeletion both true."""
    name = job.metadata.name if job.metadata is not None else ""
    return meta_v1.OwnerReference(
        apiVersion="batch/v1",
        kind="Job",
        name=name or "",
        uid=job_uid(job),
        controller=True,
        blockOwnerDeletion=True,
    )


def job_labels(job: batch_v1.Job) -> dict[str, str]:
    """The job-name and controller-uid labels, legacy and prefixed, as the API server generates them."""
    uid, name = job_uid(job), metadata_of(job).name or ""
    return {
        LEGACY_CONTROLLER_UID_LABEL: uid,
        LEGACY_JOB_NAME_LABEL: name,
        CONTROLLER_UID_LABEL: uid,
        JOB_NAME_LABEL: name,
    }


def generated_selector(job: batch_v1.Job) -> tuple[meta_v1.LabelSelector, dict[str, str]]:
    """generateSelector (pkg/registry/batch/job/strategy.go), for a Job without manualSelector: the
    selector with the prefixed controller-uid label added to its matchLabels where absent (a new one if
    there is none), and the pod template's labels with the `job_labels` added where absent (a label the
    user set keeps its value: validation then refuses a wrong one). Pure."""
    spec = job_spec(job)
    generated = job_labels(job)
    template_meta = spec.template.metadata
    labels = dict(template_meta.labels or {}) if template_meta is not None else {}
    for key, value in generated.items():
        labels.setdefault(key, value)
    selector = copy.deepcopy(spec.selector) if spec.selector is not None else meta_v1.LabelSelector()
    selector.matchLabels = dict(selector.matchLabels or {})
    selector.matchLabels.setdefault(CONTROLLER_UID_LABEL, generated[CONTROLLER_UID_LABEL])
    return selector, labels


def default_job_selector(job: batch_v1.Job) -> None:
    """What the API server does to a Job without manualSelector (`generated_selector`), with the UID it
    is given. Mutates."""
    spec, meta = job.spec, job.metadata
    if spec is None or meta is None or spec.manualSelector:
        return
    meta.uid = job_uid(job)
    spec.selector, labels = generated_selector(job)
    if spec.template.metadata is None:
        spec.template.metadata = meta_v1.ObjectMeta()
    spec.template.metadata.labels = labels


def active_pod_count(job: batch_v1.Job) -> int:
    """Pods a new Job starts with: parallelism, fewer when completions is lower; none when suspended."""
    spec = job.spec
    if spec is None or spec.suspend:
        return 0
    want = spec.parallelism if spec.parallelism is not None else 1
    if spec.completions is not None:
        want = min(want, spec.completions)
    return max(want, 0)


def _add_index_env(containers: list[core_v1.Container] | None) -> None:
    # From the label, as upstream does with PodIndexLabel (GA since v1.32, always on in v1.37).
    field_path = f"metadata.labels['{COMPLETION_INDEX_ANNOTATION}']"
    for c in containers or []:
        if any(e.name == COMPLETION_INDEX_ENV for e in c.env or []):
            continue
        source = core_v1.EnvVarSource(fieldRef=core_v1.ObjectFieldSelector(fieldPath=field_path))
        c.env = [*(c.env or []), core_v1.EnvVar(name=COMPLETION_INDEX_ENV, valueFrom=source)]


def _pod(
    job: batch_v1.Job, pod_group_name: str | None, index: int | None, ordinal: int, used: set[str]
) -> core_v1.Pod:
    template = job_spec(job).template
    job_name = metadata_of(job).name or ""
    template_meta = template.metadata or meta_v1.ObjectMeta()
    spec = copy.deepcopy(template.spec) if template.spec is not None else core_v1.PodSpec(containers=[])
    labels = dict(template_meta.labels or {})
    annotations = dict(template_meta.annotations or {})
    if index is None:
        generate_name = pod_generate_name(job_name)
    else:
        generate_name = indexed_pod_generate_name(job_name, index)
        annotations[COMPLETION_INDEX_ANNOTATION] = str(index)
        labels[COMPLETION_INDEX_ANNOTATION] = str(index)
        if not spec.hostname:
            spec.hostname = f"{job_name}-{index}"
        _add_index_env(spec.initContainers)
        _add_index_env(spec.containers)
    if pod_group_name is not None:
        spec.schedulingGroup = core_v1.PodSchedulingGroup(podGroupName=pod_group_name)
    uid = job_uid(job)
    name = pod_name(generate_name, uid, ordinal)
    attempt = 0
    while name in used:  # a hash collision among this Job's own pods: salt and retry
        attempt += 1
        name = pod_name(generate_name, f"{uid}#{attempt}", ordinal)
    used.add(name)
    meta = meta_v1.ObjectMeta(
        name=name,
        generateName=generate_name,
        namespace=metadata_of(job).namespace,
        labels=labels or None,
        annotations=annotations or None,
        finalizers=[JOB_TRACKING_FINALIZER],
        ownerReferences=[job_controller_ref(job)],
    )
    return core_v1.Pod(apiVersion="v1", kind="Pod", metadata=meta, spec=spec)


def job_pods(job: batch_v1.Job, pod_group_name: str | None) -> list[core_v1.Pod]:
    """The pods a new Job starts with (`active_pod_count`), linked to `pod_group_name` when given.

    Indexed jobs get indexes 0..n-1 (the first pending indexes of a new Job). Does not mutate the Job.
    """
    if job.spec is None or job.metadata is None:
        return []
    count = active_pod_count(job)
    indexed = job.spec.completionMode == "Indexed"
    used: set[str] = set()
    return [_pod(job, pod_group_name, i if indexed else None, i, used) for i in range(count)]
