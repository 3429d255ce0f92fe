"""expand_jobs: the entry point `gangsched schedule` uses."""

from __future__ import annotations

from lightkube.models import batch_v1, core_v1, scheduling_v1, scheduling_v1beta1

from gangsched.api.gates import FeatureGates
from gangsched.builder import expand_jobs

from .conftest import make_job


def test_jobs_are_replaced_in_place_and_other_objects_kept() -> None:
    node = core_v1.Node.from_dict({"metadata": {"name": "n1"}})
    job = make_job(parallelism=2, scheduling={"schedulingPolicy": {"gang": {}}})
    out, problems = expand_jobs([node, job])
    assert problems == []
    assert [type(o).__name__ for o in out] == ["Node", "Job", "Workload", "PodGroup", "Pod", "Pod"]
    assert out[0] is node
    # Created objects are defaulted as the API server would.
    assert out[3].spec.disruptionMode == scheduling_v1beta1.DisruptionMode(single={})
    assert {p.spec.schedulerName for p in out[4:]} == {"default-scheduler"}


def test_already_expanded_jobs_are_left_alone() -> None:
    out, _ = expand_jobs([make_job(parallelism=2)])
    again, problems = expand_jobs(out)
    assert problems == [] and len(again) == len(out)
    assert [o.to_dict() for o in again] == [o.to_dict() for o in out]


def test_problems_name_the_object_and_the_file() -> None:
    job = make_job(scheduling={"schedulingPolicy": {"gang": {"minCount": 0}}})
    out, problems = expand_jobs([job], file_of=lambda obj: "jobs.yaml")
    assert out == [job]
    assert [str(p) for p in problems] == [
        "jobs.yaml: Job ml/train: spec.scheduling.schedulingPolicy.gang.minCount: Invalid value: 0: "
        "must be greater than or equal to 1"
    ]


def test_pod_priority_class_resolves_against_the_input() -> None:
    job = make_job(parallelism=1).to_dict()
    job["spec"]["template"]["spec"]["priorityClassName"] = "high"
    high = scheduling_v1.PriorityClass.from_dict({"metadata": {"name": "high"}, "value": 1000})
    out, problems = expand_jobs([high, batch_v1.Job.from_dict(job)])
    assert problems == []
    assert out[-1].spec.priority == 1000
    # The PodGroup shares its pods' class (the scheduler wants one priority per group).
    assert out[-2].spec.priorityClassName == "high" and out[-2].spec.priority == 1000
    _, missing = expand_jobs([batch_v1.Job.from_dict(job)])
    assert [(p.kind, str(p.error).split(":")[0]) for p in missing] == [
        ("Workload", "spec.podGroupTemplates[0].priorityClassName"),
        ("PodGroup", "spec.priorityClassName"),
        ("Pod", "spec.priorityClassName"),
    ]


def test_gates_off_expand_without_scheduling_objects() -> None:
    out, _ = expand_jobs([make_job(parallelism=2)], gates=FeatureGates.all_off())
    assert [type(o).__name__ for o in out] == ["Job", "Pod", "Pod"]
