"""`gangsched demo`: the 8-GPU story's figures, from run_demo and from the command as a person runs it."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from gangsched.cli import main
from gangsched.demo import DemoStep, run_demo

WIDE = {"COLUMNS": "200"}  # rich wraps table cells to the terminal width


def _steps() -> list[DemoStep]:
    return run_demo(seed=0)


def test_pod_by_pod_ends_split_four_and_four_with_no_job_running() -> None:
    last = _steps()[-1].pod_by_pod
    assert (last.bound, last.idle_gpus, last.runnable) == ({"train-a": 4, "train-b": 4}, 0, [])
    assert set(last.waiting) == {"train-a", "train-b"}
    assert all(
        why.startswith("0/2 nodes are available: 2 Insufficient nvidia.com/gpu.")
        for why in last.waiting.values()
    )


def test_pod_by_pod_passes_through_three_and_three_with_two_gpus_idle() -> None:
    states = {s.arrived: s.pod_by_pod for s in _steps()}
    assert (states[6].bound, states[6].idle_gpus, states[6].runnable) == ({"train-a": 3, "train-b": 3}, 2, [])


def test_gang_admits_train_a_whole_and_train_b_waits_with_two_gpus_idle() -> None:
    last = _steps()[-1].gang
    assert (last.bound, last.idle_gpus, last.runnable) == ({"train-a": 6, "train-b": 0}, 2, ["train-a"])
    # train-b's first pod fit on one of the 2 free GPUs, the gang did not: upstream tells such a pod the
    # group's status wrapped in errPodGroupUnschedulable, and that status is the placement algorithm's
    # (TopologyAwareWorkloadScheduling on: one placement of all nodes, not feasible)
    assert last.waiting["train-b"].startswith(
        "pod group is unschedulable, pod group is unschedulable, 0/1 placements are available, "
        "first placement status: minCount (6) cannot be satisfied: 2 scheduled, 3 remaining"
    )


def test_gang_never_holds_a_partial_job() -> None:
    for step in _steps():
        assert set(step.gang.bound.values()) <= {0, 6}, step


def test_command_prints_both_worlds_side_by_side() -> None:
    result = CliRunner().invoke(main, ["demo"], env=WIDE)
    assert result.exit_code == 0, result.output
    assert "A 4/6  B 4/6  idle 0  running: none" in result.output
    assert "A 3/6  B 3/6  idle 2  running: none" in result.output
    assert "A 6/6  B 0/6  idle 2  running: train-a" in result.output
    assert "gang: train-a admitted whole; 2 GPUs stay free" in result.output


def test_over_a_day_pod_by_pod_holds_every_gpu_without_progress_and_gang_completes_both() -> None:
    """Pods arrive one second apart from 2 s: pod by pod, a-0..a-3 bind at 2, 4, 6, 8 s and b-0..b-3 at 3, 5,
    7, 9 s and wait for the rest of their gang all day; gang runs train-a 12 s -> 2 h 12 s, then train-b."""
    from gangsched.demo import run_day

    day = run_day(seed=0)
    waiting = sum(86400 - t for t in range(2, 10))
    assert day["pod-by-pod"]["idle_by_cause"]["gang_wait"] == pytest.approx(waiting / 3600)  # 192.0 GPU-h
    assert (day["pod-by-pod"]["completed"], day["pod-by-pod"]["gpu_utilization"]) == (0, 0.0)
    assert day["gang"]["completed"] == 2 and day["gang"]["idle_allocated_gpu_hours"] == 0.0
    assert day["gang"]["gpu_utilization"] == pytest.approx(2 * 6 * 7200 / (8 * 86400))
