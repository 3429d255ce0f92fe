"""Job -> Workload, PodGroup, pods, as the v1.37 Job controller: every field of .spec.scheduling, defaults,
refusals with exact messages, Indexed and NonIndexed pods."""

from __future__ import annotations

from typing import Any

import pytest
from lightkube.models import batch_v1

from gangsched.builder import build_job, generate_pod_group_name, generate_workload_name

from .conftest import make_job

UID = "job-uid"
WORKLOAD = generate_workload_name("train", UID)
POD_GROUP = generate_pod_group_name(WORKLOAD, "train-pgt-0")
# metav1.NewControllerRef(job): what every object the Job controller creates points back with.
JOB_REF = {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": UID, "controller": True,
           "blockOwnerDeletion": True}  # fmt: skip


def template_dict(job: batch_v1.Job) -> dict[str, Any]:
    expansion = build_job(job)
    assert expansion.errors == [] and expansion.workload is not None and expansion.pod_group is not None
    [template] = expansion.workload.spec.podGroupTemplates
    result: dict[str, Any] = template.to_dict()
    # The PodGroup carries exactly the template's blocks (name aside).
    group = expansion.pod_group.spec.to_dict()
    assert group.pop("workloadRef") == {"workloadName": WORKLOAD, "templateName": "train-pgt-0"}
    assert {k: v for k, v in result.items() if k != "name"} == group
    return result


@pytest.mark.parametrize(
    ("scheduling", "want"),
    [
        (None, {"schedulingPolicy": {"basic": {}}}),
        ({}, {"schedulingPolicy": {"basic": {}}}),
        ({"schedulingPolicy": {"basic": {}}}, {"schedulingPolicy": {"basic": {}}}),
        ({"schedulingPolicy": {"gang": {}}}, {"schedulingPolicy": {"gang": {"minCount": 4}}}),
        ({"schedulingPolicy": {"gang": {"minCount": 2}}}, {"schedulingPolicy": {"gang": {"minCount": 2}}}),
        (
            {"schedulingPolicy": {"gang": {}}, "schedulingConstraints": {"topology": [{"key": "rack"}]}},
            {
                "schedulingPolicy": {"gang": {"minCount": 4}},
                "schedulingConstraints": {"topology": [{"key": "rack"}]},
            },
        ),
        (
            {"schedulingPolicy": {"gang": {}}, "disruptionMode": {"all": {}}},
            {"schedulingPolicy": {"gang": {"minCount": 4}}, "disruptionMode": {"all": {}}},
        ),
        (
            {"disruptionMode": {"single": {}}},
            {"schedulingPolicy": {"basic": {}}, "disruptionMode": {"single": {}}},
        ),
        (
            {
                "schedulingPolicy": {"gang": {}},
                "resourceClaims": [{"name": "gpu", "resourceClaimName": "shared"}],
            },
            {
                "schedulingPolicy": {"gang": {"minCount": 4}},
                "resourceClaims": [{"name": "gpu", "resourceClaimName": "shared"}],
            },
        ),
    ],
    ids=[
        "omitted-is-basic",
        "empty-is-basic",
        "basic",
        "gang-min-count-defaults-to-parallelism",
        "gang-min-count",
        "topology",
        "disruption-all",
        "disruption-single-alone",
        "resource-claims",
    ],
)
def test_every_scheduling_field_maps_to_the_template_and_pod_group(
    scheduling: dict[str, Any] | None, want: dict[str, Any]
) -> None:
    got = template_dict(make_job(scheduling=scheduling, uid=UID))
    assert got == {"name": "train-pgt-0", **want}


def test_parallelism_omitted_means_one_for_the_gang_default() -> None:
    got = template_dict(make_job(parallelism=None, scheduling={"schedulingPolicy": {"gang": {}}}, uid=UID))
    assert got["schedulingPolicy"] == {"gang": {"minCount": 1}}


def test_names_owners_and_controller_ref_are_upstreams() -> None:
    expansion = build_job(make_job(scheduling={"schedulingPolicy": {"gang": {}}}, uid=UID))
    assert expansion.workload is not None and expansion.pod_group is not None
    job_ref = JOB_REF
    wl = expansion.workload.to_dict()
    assert wl["metadata"]["name"] == WORKLOAD == "train-" + WORKLOAD.rsplit("-", 1)[1]
    assert wl["metadata"]["ownerReferences"] == [job_ref]
    assert wl["spec"]["controllerRef"] == {"apiGroup": "batch", "kind": "Job", "name": "train"}
    pg = expansion.pod_group.to_dict()
    assert pg["metadata"]["name"] == POD_GROUP
    assert pg["metadata"]["ownerReferences"][0] == job_ref
    workload_ref = pg["metadata"]["ownerReferences"][1]
    assert (workload_ref["kind"], workload_ref["name"], workload_ref.get("controller")) == (
        "Workload",
        WORKLOAD,
        None,
    )


@pytest.mark.parametrize(
    ("scheduling", "want"),
    [
        (
            {"schedulingPolicy": {"basic": {}}, "disruptionMode": {"all": {}}},
            'spec.scheduling.disruptionMode: Invalid value: "": '
            "the disruptionMode `all` is not supported with the Basic scheduling policy",
        ),
        (
            {"disruptionMode": {"all": {}}},
            'spec.scheduling.disruptionMode: Invalid value: "": '
            "the disruptionMode `all` is not supported with the Basic scheduling policy",
        ),
        (
            {"schedulingPolicy": {"gang": {"minCount": 0}}},
            "spec.scheduling.schedulingPolicy.gang.minCount: Invalid value: 0: "
            "must be greater than or equal to 1",
        ),
        (
            {"schedulingPolicy": {}},
            'spec.scheduling.schedulingPolicy: Invalid value: "": must specify one of: `basic`, `gang`',
        ),
        (
            {"schedulingPolicy": {"gang": {"minCount": 5}}},
            "spec.scheduling.schedulingPolicy.gang.minCount: Invalid value: 5: "
            "must be less than or equal to spec.parallelism (4)",
        ),
        (
            {
                "schedulingPolicy": {"gang": {}},
                "schedulingConstraints": {"topology": [{"key": "a"}, {"key": "b"}]},
            },
            "spec.scheduling.schedulingConstraints.topology: Too many: 2: must have at most 1 item",
        ),
    ],
    ids=[
        "all-with-basic",
        "all-with-default-basic",
        "min-count-zero",
        "empty-policy",
        "gang-above-parallelism",
        "two-topology-keys",
    ],
)
def test_refused_scheduling_gives_exact_errors_and_no_objects(scheduling: dict[str, Any], want: str) -> None:
    expansion = build_job(make_job(scheduling=scheduling))
    assert [str(e) for e in expansion.errors] == [want]
    assert expansion.objects() == [expansion.job]


def test_nonindexed_pods_follow_parallelism_with_labels_owner_and_group() -> None:
    expansion = build_job(make_job(parallelism=3, completions=10, uid=UID))
    pods = [p.to_dict() for p in expansion.pods]
    assert len(pods) == 3
    names = [p["metadata"]["name"] for p in pods]
    assert len(set(names)) == 3 and all(n.startswith("train-") and len(n) == len("train-") + 5 for n in names)
    assert names == [
        p.metadata.name for p in build_job(make_job(parallelism=3, completions=10, uid=UID)).pods
    ]
    for pod in pods:
        meta, spec = pod["metadata"], pod["spec"]
        assert meta["generateName"] == "train-" and meta["namespace"] == "ml"
        assert meta["labels"] == {
            "app": "train",
            "batch.kubernetes.io/controller-uid": UID,
            "batch.kubernetes.io/job-name": "train",
            "controller-uid": UID,
            "job-name": "train",
        }
        assert meta["ownerReferences"] == [JOB_REF]
        assert meta["finalizers"] == ["batch.kubernetes.io/job-tracking"]
        assert "annotations" not in meta and "hostname" not in spec
        assert spec["schedulingGroup"] == {"podGroupName": POD_GROUP}
    assert expansion.job.spec.selector is not None
    assert expansion.job.spec.selector.matchLabels == {"batch.kubernetes.io/controller-uid": UID}


def test_indexed_pods_carry_index_hostname_and_env() -> None:
    expansion = build_job(make_job(parallelism=2, completions=2, indexed=True, uid=UID))
    for index, pod in enumerate(expansion.pods):
        meta, spec = pod.metadata, pod.spec
        assert meta.generateName == f"train-{index}-" and meta.name.startswith(f"train-{index}-")
        assert meta.annotations == {"batch.kubernetes.io/job-completion-index": str(index)}
        assert meta.labels["batch.kubernetes.io/job-completion-index"] == str(index)
        assert spec.hostname == f"train-{index}"
        [env] = spec.containers[0].env
        assert env.to_dict() == {
            "name": "JOB_COMPLETION_INDEX",
            "valueFrom": {
                "fieldRef": {"fieldPath": "metadata.labels['batch.kubernetes.io/job-completion-index']"}
            },
        }


@pytest.mark.parametrize(
    ("kwargs", "count"),
    [
        ({"parallelism": 4}, 4),
        ({"parallelism": 4, "completions": 2}, 2),
        ({"parallelism": 0}, 0),
        ({"parallelism": 4, "suspend": True}, 0),
        ({"parallelism": None}, 1),
    ],
    ids=["parallelism", "completions-lower", "zero", "suspended", "default-one"],
)
def test_pod_count(kwargs: dict[str, Any], count: int) -> None:
    assert len(build_job(make_job(**kwargs)).pods) == count


def test_bring_your_own_pod_group_gets_pods_only() -> None:
    job = make_job()
    job.spec.template.spec.schedulingGroup = {"podGroupName": "mine"}  # type: ignore[union-attr]
    job = batch_v1.Job.from_dict(job.to_dict())
    expansion = build_job(job)
    assert expansion.workload is None and expansion.pod_group is None
    assert {p.spec.schedulingGroup.podGroupName for p in expansion.pods} == {"mine"}


def test_scheduling_next_to_bring_your_own_group_is_refused() -> None:
    job = make_job(scheduling={"schedulingPolicy": {"gang": {}}}).to_dict()
    job["spec"]["template"]["spec"]["schedulingGroup"] = {"podGroupName": "mine"}
    [error] = build_job(batch_v1.Job.from_dict(job)).errors
    assert (
        str(error)
        == "spec.scheduling: Forbidden: may not be set when spec.template.spec.schedulingGroup is set"
    )


def test_job_with_a_controller_owner_leaves_scheduling_objects_to_it() -> None:
    job = make_job().to_dict()
    job["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "CronJob", "name": "nightly", "uid": "u", "controller": True}
    ]
    expansion = build_job(batch_v1.Job.from_dict(job))
    assert expansion.workload is None and len(expansion.pods) == 4
    assert all(p.spec.schedulingGroup is None for p in expansion.pods)


def test_gate_off_gives_classic_pods() -> None:
    expansion = build_job(make_job(scheduling={"schedulingPolicy": {"gang": {}}}), workload_with_job=False)
    assert expansion.workload is None and len(expansion.pods) == 4
    assert all(p.spec.schedulingGroup is None for p in expansion.pods)


def test_build_job_never_mutates_its_input() -> None:
    job = make_job(scheduling={"schedulingPolicy": {"gang": {}}})
    before = job.to_dict()
    build_job(job)
    assert job.to_dict() == before


def test_pod_group_takes_the_pods_priority_class() -> None:
    job = make_job(scheduling={"schedulingPolicy": {"gang": {}}}, uid=UID).to_dict()
    job["spec"]["template"]["spec"]["priorityClassName"] = "training-high"
    assert template_dict(batch_v1.Job.from_dict(job))["priorityClassName"] == "training-high"
