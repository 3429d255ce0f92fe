"""Elastic gangs: only gang.minCount may change, and the change reaches the PodGroup and Workload."""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.builder import MinCountUpdate, apply_min_count_change, build_job

from .conftest import make_job

GANG4: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": 4}}}


def built(scheduling: dict[str, Any], parallelism: int = 4) -> tuple[Any, Any, Any]:
    job = make_job(parallelism=parallelism, scheduling=scheduling)
    expansion = build_job(job)
    return job, expansion.pod_group, expansion.workload


def test_decrease_reaches_pod_group_and_workload_and_asks_for_requeue() -> None:
    old, group, workload = built(GANG4)
    result = apply_min_count_change(
        old, make_job(scheduling={"schedulingPolicy": {"gang": {"minCount": 2}}}), group, workload
    )
    assert isinstance(result, MinCountUpdate)
    assert (result.old_min_count, result.new_min_count, result.decreased) == (4, 2, True)
    assert result.pod_group.spec.schedulingPolicy.gang.minCount == 2
    assert result.workload is not None
    assert result.workload.spec.podGroupTemplates[0].schedulingPolicy.gang.minCount == 2
    # The caller's objects are untouched: the update is a new value, applied by whoever owns the store.
    assert group.spec.schedulingPolicy.gang.minCount == 4
    assert workload.spec.podGroupTemplates[0].schedulingPolicy.gang.minCount == 4


def test_increase_is_applied_but_is_not_a_requeue() -> None:
    old, group, _ = built({"schedulingPolicy": {"gang": {"minCount": 2}}})
    result = apply_min_count_change(old, make_job(scheduling=GANG4), group)
    assert isinstance(result, MinCountUpdate)
    assert (result.new_min_count, result.changed, result.decreased) == (4, True, False)


def test_unset_min_count_follows_a_new_parallelism() -> None:
    old, group, _ = built({"schedulingPolicy": {"gang": {}}})
    result = apply_min_count_change(
        old, make_job(parallelism=3, scheduling={"schedulingPolicy": {"gang": {}}}), group
    )
    assert isinstance(result, MinCountUpdate) and result.new_min_count == 3


def test_basic_group_is_left_alone() -> None:
    old, group, _ = built({})
    result = apply_min_count_change(old, make_job(scheduling={}), group)
    assert isinstance(result, MinCountUpdate) and not result.changed
    assert result.pod_group.spec.schedulingPolicy.basic is not None


@pytest.mark.parametrize(
    ("new", "want"),
    [
        (
            {"schedulingPolicy": {"basic": {}}},
            ['spec.scheduling.schedulingPolicy: Invalid value: "null": field is immutable'],
        ),
        (
            {**GANG4, "schedulingConstraints": {"topology": [{"key": "rack"}]}},
            ['spec.scheduling.schedulingConstraints: Invalid value: "null": field is immutable'],
        ),
        (
            {**GANG4, "disruptionMode": {"all": {}}},
            ['spec.scheduling.disruptionMode: Invalid value: "null": field is immutable'],
        ),
        (
            {**GANG4, "resourceClaims": [{"name": "gpu", "resourceClaimName": "x"}]},
            ['spec.scheduling.resourceClaims: Invalid value: "null": field is immutable'],
        ),
        (None, ['spec.scheduling: Invalid value: "null": field is immutable']),
        (
            {"schedulingPolicy": {"gang": {"minCount": 9}}},
            [
                "spec.scheduling.schedulingPolicy.gang.minCount: Invalid value: 9: "
                "must be less than or equal to spec.parallelism (4)"
            ],
        ),
    ],
    ids=[
        "gang-to-basic",
        "constraints",
        "disruption-mode",
        "resource-claims",
        "removed",
        "above-parallelism",
    ],
)
def test_any_other_change_is_refused_and_nothing_changes(new: dict[str, Any] | None, want: list[str]) -> None:
    old, group, _ = built(GANG4)
    result = apply_min_count_change(old, make_job(scheduling=new), group)
    assert isinstance(result, list)
    assert [str(e) for e in result] == want
