"""Multi-role jobs in JobSet's replicatedJobs shape -> CompositePodGroup tree, Jobs and pods."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gangsched.api.jobset import JobSet
from gangsched.builder import build_jobset


def role(
    name: str, parallelism: int, *, replicas: int = 1, scheduling: dict[str, Any] | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "parallelism": parallelism,
        "completions": parallelism,
        "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": name}]}},
    }
    if scheduling is not None:
        spec["scheduling"] = scheduling
    return {"name": name, "replicas": replicas, "template": {"spec": spec}}


def jobset(*roles: dict[str, Any], scheduling: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"replicatedJobs": list(roles)}
    if scheduling is not None:
        spec["scheduling"] = scheduling
    meta = {"name": "train", "namespace": "ml"}
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": meta, "spec": spec}


WORKERS_AND_DRIVER = jobset(
    role("workers", 4, scheduling={"schedulingConstraints": {"topology": [{"key": "rack"}]}}),
    role("driver", 1),
    scheduling={"schedulingConstraints": {"topology": [{"key": "zone"}]}},
)


def test_workers_and_driver_become_one_tree() -> None:
    expansion = build_jobset(JobSet.from_dict(WORKERS_AND_DRIVER))
    assert expansion.errors == []
    assert expansion.workload is not None and expansion.root is not None
    [template] = expansion.workload.spec.compositePodGroupTemplates
    assert template.schedulingPolicy.to_dict() == {"gang": {"minGroupCount": 2}}
    assert template.schedulingConstraints.to_dict() == {"topology": [{"key": "zone"}]}
    assert [(t.name, t.schedulingPolicy.to_dict()) for t in template.podGroupTemplates] == [
        ("workers", {"gang": {"minCount": 4}}),
        ("driver", {"gang": {"minCount": 1}}),
    ]
    root_name = expansion.root.metadata.name
    assert expansion.root.spec.workloadRef.templateName == "train"
    assert expansion.root.spec.parentCompositePodGroupName is None
    groups = {g.spec.workloadRef.templateName: g for g in expansion.pod_groups}
    assert set(groups) == {"workers", "driver"}
    assert all(g.spec.parentCompositePodGroupName == root_name for g in groups.values())
    assert groups["workers"].spec.schedulingConstraints.to_dict() == {"topology": [{"key": "rack"}]}
    assert [j.metadata.name for j in expansion.jobs] == ["train-workers-0", "train-driver-0"]
    by_group: dict[str, int] = {}
    for pod in expansion.pods:
        by_group[pod.spec.schedulingGroup.podGroupName] = (
            by_group.get(pod.spec.schedulingGroup.podGroupName, 0) + 1
        )
    assert by_group == {groups["workers"].metadata.name: 4, groups["driver"].metadata.name: 1}
    assert all(j.spec.scheduling is None for j in expansion.jobs)  # the JobSet owns scheduling
    owner = expansion.jobs[0].metadata.ownerReferences[0]
    assert (owner.kind, owner.name, owner.controller) == ("JobSet", "train", True)
    assert expansion.jobs[0].metadata.labels["jobset.sigs.k8s.io/replicatedjob-name"] == "workers"


def test_replicas_give_one_job_and_pod_group_each() -> None:
    expansion = build_jobset(JobSet.from_dict(jobset(role("workers", 2, replicas=3))))
    assert [j.metadata.name for j in expansion.jobs] == [
        "train-workers-0",
        "train-workers-1",
        "train-workers-2",
    ]
    assert len({g.metadata.name for g in expansion.pod_groups}) == 3
    assert expansion.root is not None
    assert expansion.root.spec.schedulingPolicy.to_dict() == {"gang": {"minGroupCount": 3}}
    assert len(expansion.pods) == 6


def test_basic_root_lets_roles_default_to_basic() -> None:
    expansion = build_jobset(
        JobSet.from_dict(jobset(role("a", 2), scheduling={"schedulingPolicy": {"basic": {}}}))
    )
    assert expansion.errors == []
    assert [g.spec.schedulingPolicy.to_dict() for g in expansion.pod_groups] == [{"basic": {}}]


def test_all_at_the_root_flows_to_the_roles() -> None:
    expansion = build_jobset(
        JobSet.from_dict(jobset(role("a", 2), scheduling={"disruptionMode": {"all": {}}}))
    )
    assert [g.spec.disruptionMode.to_dict() for g in expansion.pod_groups] == [{"all": {}}]


ROLES: list[Any] = ["spec", "replicatedJobs"]
SCHED: list[Any] = ["template", "spec", "scheduling"]


def bad(path: list[Any], value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(WORKERS_AND_DRIVER)
    target = doc
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return doc


@pytest.mark.parametrize(
    ("doc", "want"),
    [
        (bad(ROLES, []), ["spec.replicatedJobs: Required value"]),
        (
            bad([*ROLES, 1, "name"], "Driver!"),
            ['spec.replicatedJobs[1].name: Invalid value: "Driver!": must be a valid DNS label'],
        ),
        (bad([*ROLES, 1, "name"], "workers"), ['spec.replicatedJobs[1].name: Duplicate value: "workers"']),
        (
            bad([*ROLES, 0, "replicas"], 0),
            [
                "spec.replicatedJobs[0].replicas: Invalid value: 0: "
                "must be an integer greater than or equal to 1"
            ],
        ),
        (bad([*ROLES, 0, "template"], KeyError), ["spec.replicatedJobs[0].template.spec: Required value"]),
        (
            bad([*ROLES, 0, "template", "spec", "parallelism"], "four"),
            [
                'spec.replicatedJobs[0].template.spec.parallelism: Invalid value: "four": '
                "expected int | null, got str"
            ],
        ),
        (
            bad(["spec", "scheduling", "priority"], 3),
            [
                'spec.scheduling.priority: Unsupported value: "priority": '
                'supported values: "schedulingPolicy", "schedulingConstraints", "disruptionMode"'
            ],
        ),
        (
            bad(["spec", "scheduling", "schedulingPolicy"], {"gang": {"minGroupCount": 3}}),
            [
                "spec.scheduling.schedulingPolicy.gang.minGroupCount: Invalid value: 3: "
                "must be less than or equal to the number of Jobs (2)"
            ],
        ),
        (
            bad([*ROLES, 1, *SCHED], {"schedulingPolicy": {"basic": {}}}),
            [
                'spec.replicatedJobs[1].template.spec.scheduling.schedulingPolicy: Invalid value: "": '
                "a gang parent may not have a basic child"
            ],
        ),
        (bad([*ROLES, 1, *SCHED], {"disruptionMode": {"all": {}}}), []),
        (
            bad([*ROLES, 0, *SCHED], {"schedulingPolicy": {"gang": {"minCount": 5}}}),
            [
                "spec.replicatedJobs[0].template.spec.scheduling.schedulingPolicy.gang.minCount: "
                "Invalid value: 5: "
                "must be less than or equal to spec.parallelism (4)"
            ],
        ),
    ],
    ids=[
        "no-roles",
        "bad-role-name",
        "duplicate-role",
        "zero-replicas",
        "no-template",
        "template-type-error",
        "unknown-root-field",
        "min-group-count-too-high",
        "basic-under-gang",
        "all-child-under-single-root",
        "min-count-above-parallelism",
    ],
)
def test_invalid_jobsets_are_refused_with_field_errors(doc: dict[str, Any], want: list[str]) -> None:
    expansion = build_jobset(JobSet.from_dict(doc))
    assert [str(e) for e in expansion.errors] == want
    if want:
        assert expansion.objects() == [expansion.jobset]


def test_roles_must_share_one_priority_class() -> None:
    doc = copy.deepcopy(WORKERS_AND_DRIVER)
    doc["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]["priorityClassName"] = "high"
    [error] = build_jobset(JobSet.from_dict(doc)).errors
    assert str(error) == (
        'spec.replicatedJobs[1].template.spec.template.spec.priorityClassName: Invalid value: "null": '
        "must be the same in every role ('high' in the first): one priority per tree"
    )
    for role in doc["spec"]["replicatedJobs"]:
        role["template"]["spec"]["template"]["spec"]["priorityClassName"] = "high"
    expansion = build_jobset(JobSet.from_dict(doc))
    assert expansion.root is not None and expansion.root.spec.priorityClassName == "high"
    assert {g.spec.priorityClassName for g in expansion.pod_groups} == {"high"}


def test_gate_off_gives_jobs_and_pods_without_scheduling_objects() -> None:
    expansion = build_jobset(JobSet.from_dict(WORKERS_AND_DRIVER), composite_pod_groups=False)
    assert expansion.workload is None and expansion.root is None and expansion.pod_groups == []
    assert len(expansion.jobs) == 2 and len(expansion.pods) == 5
    assert all(p.spec.schedulingGroup is None for p in expansion.pods)
