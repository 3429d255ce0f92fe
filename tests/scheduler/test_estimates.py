"""Run-time estimates: activeDeadlineSeconds first, then the expected-duration annotation, then history."""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.api.gates import FeatureGates
from gangsched.scheduler.estimates import DurationError, Estimate, History, estimate_of, parse_duration
from tests.scenarios.harness import load_objects
from tests.scheduler.plan_objects import pod


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 90.0), ("2.5", 2.5), ("1h30m", 5400.0), ("250ms", 0.25), ("1m0.5s", 60.5), ("2h", 7200.0)],
)
def test_durations_in_seconds_or_go_form(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "-5", "1d", "h", "1h 30m", "nan", "inf", "5m-1s"])
def test_bad_durations_are_refused(text: str) -> None:
    with pytest.raises(DurationError):
        parse_duration(text)


class Objects:
    def __init__(self, objs: list[Any]) -> None:
        self.by_key = {(o.kind, (o.metadata.namespace or "", o.metadata.name)): o for o in objs}

    def get(self, kind: str, key: tuple[str, str]) -> Any:
        return self.by_key.get((kind, key))


def typed(*docs: dict[str, Any]) -> list[Any]:
    return load_objects(list(docs), "test", FeatureGates())


def test_deadline_bounds_before_annotation() -> None:
    (p,) = typed(pod("p", 1, duration="60", deadline=600))
    assert estimate_of([p], Objects([])) == Estimate(600.0, "activeDeadlineSeconds")
    (q,) = typed(pod("q", 1, duration="1m"))
    assert estimate_of([q], Objects([])) == Estimate(60.0, "annotation")


def test_job_deadline_counts_for_its_pods() -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "train", "namespace": "default"},
        "spec": {
            "activeDeadlineSeconds": 3600,
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}},
        },
    }
    member = pod("train-0", 1, duration="60")
    member["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "u", "controller": True}
    ]
    j, p = typed(job, member)
    assert estimate_of([p], Objects([j, p])) == Estimate(3600.0, "activeDeadlineSeconds")


def test_history_is_the_mean_of_the_owners_last_two_runs() -> None:
    member = pod("train-0", 1)
    member["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "u", "controller": True}
    ]
    (p,) = typed(member)
    history = History()
    assert estimate_of([p], Objects([]), history=history) == Estimate(None)
    for seconds in (100.0, 300.0, 500.0):
        history.record(("Job", "default", "train"), seconds)
    assert estimate_of([p], Objects([]), history=history) == Estimate(400.0, "history")
    assert estimate_of([p], Objects([])) == Estimate(None)  # no history kept (schedule mode)


def test_live_history_records_the_run_time_of_a_finished_pod() -> None:
    """A Job's pod bound at t = 0 and finished at t = 250 is one run of 250 s of its owner."""
    from gangsched.scheduler import Profile, run_until_stable
    from gangsched.scheduler.backfill import BackfillSettings
    from tests.scheduler.plan_objects import node, scheduler_for

    member = pod("train-0", 1)
    member["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "u", "controller": True}
    ]
    store, scheduler = scheduler_for([node("n1"), member], Profile(backfill=BackfillSettings()))
    assert scheduler.backfill is not None
    scheduler.backfill.history = history = History()
    run_until_stable(store, scheduler)
    store.clock = lambda: 250.0
    store.delete("Pod", ("default", "train-0"))
    assert history.estimate(("Job", "default", "train")) == 250.0
