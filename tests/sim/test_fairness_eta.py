"""Fairness, ETA accuracy and preemption records of a run, computed by hand on tiny workloads.

The workload of most tests: one node of 8 GPUs; lone pods (each a job)
- `a/big`  8 GPUs, created at 0 s, runs 100 s;
- `b/wide` 8 GPUs, created at 1 s, runs 100 s;
- `a/half` 4 GPUs, created at 10 s, runs 50 s.
Under gang: big runs 0-100; wide and half wait; big's end wakes them in queue order: wide 100-200, then
half 200-250 (end 250).
"""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.scheduler.backfill import BackfillSettings
from gangsched.sim import SimOptions
from gangsched.sim.fairness import ShareLog, share_stats

from .story import node, simulate

H = 3600.0


def lone(ns: str, name: str, gpus: int, created_s: int, duration: int, priority: int | None = None) -> Any:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x",
                            "resources": {"requests": {"nvidia.com/gpu": str(gpus)}}}]}  # fmt: skip
    if priority is not None:
        spec["priority"] = priority
    meta = {"name": name, "namespace": ns, "annotations": {"gangsched.io/duration": str(duration)},
            "creationTimestamp": f"2026-01-01T00:00:{created_s:02d}Z"}  # fmt: skip
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def three_jobs() -> list[Any]:
    return [
        node("n1", 8),
        lone("a", "big", 8, 0, 100),
        lone("b", "wide", 8, 1, 100),
        lone("a", "half", 4, 10, 50),
    ]


def test_share_stats_by_hand() -> None:
    """8 GPUs, 100 s. a holds 4 all along and waits all along; b holds 2, then 4 from 50 s, and waits until
    50 s. Over [0, 50) both wait: x = (0.5, 0.25), J = 0.75^2 / (2 x (0.25 + 0.0625)) = 0.9; after 50 s only
    a waits and J is not defined."""
    log = ShareLog()
    log.held(0.0, "a", 4.0)
    log.backlog(0.0, "a", 1)
    log.backlog(0.0, "b", 1)
    log.held(0.0, "b", 2.0)
    log.held(50.0, "b", 2.0)
    log.backlog(50.0, "b", -1)
    stats = share_stats(log, 8.0, 100.0, {}, bins=2)
    assert stats["jain_index"] == pytest.approx(0.9) and stats["jain_seconds"] == 50.0
    assert stats["average_share"] == {"a": 0.5, "b": pytest.approx(0.375)}
    assert stats["series"] == {"t_s": [0.0, 50.0], "a": [0.5, 0.5], "b": [0.25, 0.5]}
    # Weight 2 for a: its weighted share 0.25 equals b's, a perfectly fair split.
    assert share_stats(log, 8.0, 100.0, {"a": 2.0}, bins=2)["jain_index"] == pytest.approx(1.0)


def test_share_stats_without_two_waiting_namespaces_has_no_index() -> None:
    log = ShareLog()
    log.held(0.0, "a", 8.0)
    log.backlog(0.0, "a", 1)
    stats = share_stats(log, 8.0, 10.0, {})
    assert (stats["jain_index"], stats["jain_seconds"]) == (None, 0.0)


def test_per_namespace_waits_shares_and_jain_index_of_a_run() -> None:
    """Waits: big 0, wide 99, half 190. a: avg 95, p99 0 + 0.99 x 190; b: 99. Shares over 250 s: a holds 8
    for 100 s and 4 for 50 s (0.5 on average), b 8 for 100 s (0.4). Over [10, 100) both namespaces wait
    (a's half, b's wide) while a holds everything: J = 1 / 2, for 90 s; after 100 s only a waits."""
    s, jobs, _ = simulate(three_jobs(), SimOptions(policy="gang"))
    assert [(jobs[j]["start_s"], jobs[j]["end_s"]) for j in ("big", "wide", "half")] == [
        (0.0, 100.0), (100.0, 200.0), (200.0, 250.0)
    ]  # fmt: skip
    ns = s["namespaces"]
    assert (ns["a"]["jobs"], ns["a"]["avg_wait_s"], ns["a"]["p99_wait_s"]) == (2, 95.0, pytest.approx(188.1))
    assert (ns["b"]["jobs"], ns["b"]["avg_wait_s"], ns["b"]["p99_wait_s"]) == (1, 99.0, 99.0)
    assert (ns["a"]["average_share"], ns["b"]["average_share"]) == (0.5, 0.4)
    fairness = s["fairness"]
    assert (fairness["jain_index"], fairness["jain_seconds"]) == (0.5, 90.0)
    series = fairness["series"]
    assert len(series["t_s"]) == 200 and series["t_s"][1] == 1.25
    assert series["a"][0] == 1.0 and series["b"][100] == 1.0 and series["a"][-1] == 0.5


def test_eta_accuracy_of_the_first_planned_starts() -> None:
    """gang-backfill, depth 1, plan resolution 60 s. wide fails at 1 s; the plan made before the next cycle
    expects big to end at 100, on the plan's grid 120: wide's first ETA is 120, it is placed at 100 (error
    20). half reaches the head when wide starts at 100: wide is expected to end at 200, on the grid 240;
    half is placed at 200 (error 40). big never waited: no ETA. Median 30, p90 20 + 0.9 x 20 = 38."""
    s, jobs, _ = simulate(three_jobs(), SimOptions(policy="gang-backfill"))
    assert [jobs[j]["first_eta_s"] for j in ("big", "wide", "half")] == [None, 120.0, 240.0]
    assert [jobs[j]["admitted_s"] for j in ("big", "wide", "half")] == [0.0, 100.0, 200.0]
    assert s["eta"] == {
        "jobs_with_eta": 2,
        "admitted_with_eta": 2,
        "never_admitted": 0,
        "without_eta": 1,
        "median_abs_error_s": 30.0,
        "p90_abs_error_s": pytest.approx(38.0),
    }


def test_eta_under_gang_with_a_plan_of_depth_zero_and_none_without_a_plan() -> None:
    """Depth 0 keeps no reservation, so the run is gang's, but the head is still planned: the same ETAs."""
    depth0 = SimOptions(policy="gang", backfill=BackfillSettings(depth=0))
    s, jobs, _ = simulate(three_jobs(), depth0)
    assert [jobs[j]["start_s"] for j in ("big", "wide", "half")] == [0.0, 100.0, 200.0]
    assert [jobs[j]["first_eta_s"] for j in ("big", "wide", "half")] == [None, 120.0, 240.0]
    assert s["eta"]["median_abs_error_s"] == 30.0
    assert simulate(three_jobs(), SimOptions(policy="gang"))[0]["eta"] is None


def test_a_job_given_an_eta_but_never_placed_is_counted_apart() -> None:
    s, jobs, _ = simulate(three_jobs(), SimOptions(policy="gang-backfill", until=150.0))
    assert (jobs["half"]["first_eta_s"], jobs["half"]["admitted_s"]) == (240.0, None)
    assert s["eta"]["never_admitted"] == 1 and s["eta"]["admitted_with_eta"] == 1
    assert s["eta"]["median_abs_error_s"] == 20.0


def preemption(until: float | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """`a/low` (priority 0, 8 GPUs, 1000 s, created at 0) runs when `b/high` (priority 100, 8 GPUs, 100 s)
    comes at 50 s and evicts it; low terminates for 30 s (the default grace period). A checkpoint every 30 s
    of progress: low loses 20 s x 8 GPUs, counted at the eviction."""
    docs = [
        node("n1", 8),
        lone("a", "low", 8, 0, 1000, priority=0),
        lone("b", "high", 8, 50, 100, priority=100),
    ]
    s, jobs, _ = simulate(docs, SimOptions(policy="gang", checkpoint_s=30.0, until=until))
    return s, jobs


def test_preemption_record_counts_the_work_lost_and_the_preemptor_completing() -> None:
    """high runs 80-180 (low's pod is gone at 80); low's replacement resumes from its 30 s checkpoint at 180
    and ends at 180 + 970 = 1150."""
    s, jobs = preemption(None)
    assert (jobs["high"]["start_s"], jobs["high"]["end_s"], jobs["low"]["end_s"]) == (80.0, 180.0, 1150.0)
    assert s["preemption_records"] == [
        {
            "at_s": 50.0,
            "preemptor": "b/high",
            "preemptor_job": "high",
            "victims": ["a/low"],
            "victim_jobs": ["low"],
            "lost_gpu_hours": pytest.approx(20 * 8 / H),
            "preemptor_completed": True,
        }
    ]
    assert s["lost_gpu_hours"] == pytest.approx(20 * 8 / H)


def test_a_preemptor_still_running_at_the_end_has_not_completed() -> None:
    s, _ = preemption(100.0)
    (record,) = s["preemption_records"]
    assert record["preemptor_completed"] is False and record["lost_gpu_hours"] == pytest.approx(20 * 8 / H)
