"""The 8-GPU story over time, computed by hand: two trainings of 6 x 1 GPU, 2 h each, on 2 nodes x 4 GPUs;
objects arrive one second apart in input order (PodGroups at 0 and 1 s, pods interleaved from 2 s to 13 s)."""

from __future__ import annotations

import pytest

from gangsched.sim import Delay, SimOptions

from .story import eight_gpu_story, simulate

DAY = 86400.0
H = 3600.0


@pytest.mark.parametrize("policy", ["gang", "gang-strict-fifo", "gang-sjf"])
def test_gang_policies_run_one_training_then_the_other(policy: str) -> None:
    """train-a's sixth pod arrives at 12 s: admitted whole, it runs 12 -> 7212. train-b's sixth arrives at
    13 s: 2 GPUs are free, it waits; a's completion at 7212 frees 6 and b runs 7212 -> 14412."""
    s, jobs, _ = simulate(eight_gpu_story(), SimOptions(policy=policy, until=DAY))
    a, b = jobs["train-a"], jobs["train-b"]
    assert (a["submit_s"], a["start_s"], a["end_s"], a["wait_s"], a["jct_s"]) == (
        0.0,
        12.0,
        7212.0,
        12.0,
        7212.0,
    )
    assert (b["submit_s"], b["start_s"], b["end_s"], b["wait_s"], b["jct_s"]) == (
        1.0,
        7212.0,
        14412.0,
        7211.0,
        14411.0,
    )
    assert (a["state"], b["state"], a["restarts"]) == ("completed", "completed", 0)
    assert s["completed"] == 2 and s["makespan_s"] == DAY
    assert s["idle_allocated_gpu_hours"] == 0.0
    assert s["gpu_utilization"] == pytest.approx(2 * 6 * 7200 / (8 * DAY))
    assert s["avg_jct_s"] == (7212 + 14411) / 2 and s["max_wait_s"] == 7211.0
    # From 12 s (a bound) to 7212 s the 2 free GPUs cannot serve b, which needs 6 at once: fragmented.
    assert s["fragmented_gpu_hours"] == pytest.approx(2 * (7212 - 12) / H)


def test_pod_by_pod_splits_the_gpus_four_and_four_and_wastes_them_all_day() -> None:
    """Pods bind as they arrive: a-0..a-3 at 2,4,6,8 s and b-0..b-3 at 3,5,7,9 s fill the 8 GPUs; the last two
    of each wait. Neither training ever has 6 workers: every bound GPU waits for the rest of its gang."""
    s, jobs, _ = simulate(eight_gpu_story(), SimOptions(policy="pod-by-pod", until=DAY))
    assert [jobs[j]["state"] for j in ("train-a", "train-b")] == ["pending", "pending"]
    assert jobs["train-a"]["start_s"] is None and jobs["train-a"]["wait_s"] == DAY
    waiting = sum(DAY - t for t in (2, 4, 6, 8)) + sum(DAY - t for t in (3, 5, 7, 9))
    assert s["idle_by_cause"]["gang_wait"] == pytest.approx(waiting / H)  # 191.99 GPU-hours
    assert s["idle_allocated_gpu_hours"] == pytest.approx(waiting / H)
    assert s["gpu_utilization"] == 0.0 and s["completed"] == 0


def test_start_up_delay_is_allocated_time_without_progress() -> None:
    """A constant 60 s start-up: a runs 72 -> 7272, b 7272 -> 14472; 6 GPUs x 60 s starting, twice."""
    s, jobs, _ = simulate(eight_gpu_story(), SimOptions(policy="gang", until=DAY, startup=Delay.parse("60")))
    assert (jobs["train-a"]["start_s"], jobs["train-a"]["end_s"]) == (72.0, 7272.0)
    assert (jobs["train-b"]["start_s"], jobs["train-b"]["end_s"]) == (7272.0 + 60, 14472.0 + 60)
    assert s["idle_by_cause"]["starting"] == pytest.approx(2 * 6 * 60 / H)


def test_jobs_running_at_the_end_are_censored_not_dropped() -> None:
    s, jobs, _ = simulate(eight_gpu_story(), SimOptions(policy="gang", until=3600.0))
    assert (jobs["train-a"]["state"], jobs["train-a"]["end_s"]) == ("running", None)
    assert (jobs["train-b"]["state"], jobs["train-b"]["wait_s"]) == ("pending", 3599.0)
    assert (s["jobs"], s["completed"], s["max_wait_s"]) == (2, 0, 3599.0)
