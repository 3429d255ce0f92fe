"""Failures after admission and the recovery policies, computed by hand.

Two nodes x 2 GPUs; gang g of 4 pods x 1 GPU (2 per node), 1000 s of work, a checkpoint every 300 s of
progress, admitted and running from 0 s. node-0 fails at 500 s with its 2 pods and is back at 1500 s. At 500 s
the job has done 500 s of work, 300 s of it checkpointed: 200 s x 4 GPUs = 800 GPU-seconds are lost whenever
the gang cannot go on."""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.scheduler.recovery import Recovery
from gangsched.sim import FailureEvent, FailurePlan, SimOptions

from .story import group, node, pod, simulate

H = 3600.0


def _gang(min_count: int) -> list[dict[str, Any]]:
    """The cluster and gang g, every object created at the same instant (so all arrive at 0 s)."""
    docs = [group("g", min_count, "1000")] + [pod(f"g-{i}", "g") for i in range(4)]
    for doc in docs:
        doc["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    return [node("node-0", 2), node("node-1", 2), *docs]


def _run(recovery: str, min_count: int = 4) -> tuple[dict[str, Any], dict[str, Any]]:
    failures = FailurePlan(events=(FailureEvent(500.0, "node", "node-0"),), node_repair_s=1000.0)
    options = SimOptions(
        until=5000.0, checkpoint_s=300.0, failures=failures, recovery=Recovery.parse(recovery)
    )
    s, jobs, _ = simulate(_gang(min_count), options)
    return s, jobs["g"]


def test_wait_holds_the_survivors_idle_until_the_node_is_back() -> None:
    """Replacements cannot be placed until node-0 returns at 1500 s; the 2 survivors hold 2 GPUs without
    progress for 1000 s; then the job resumes from 300 s of work: 700 s more, done at 2200 s."""
    s, g = _run("wait")
    assert (g["end_s"], g["restarts"]) == (2200.0, 0)
    assert s["lost_gpu_hours"] == pytest.approx(800 / H)
    assert s["idle_by_cause"]["below_min"] == pytest.approx(2 * 1000 / H)
    assert s["failures"] == 1


def test_restart_recreates_the_whole_group_and_holds_nothing_meanwhile() -> None:
    s, g = _run("restart")
    assert (g["end_s"], g["restarts"]) == (2200.0, 1)
    assert s["lost_gpu_hours"] == pytest.approx(800 / H)
    assert s["idle_by_cause"]["below_min"] == 0.0


def test_release_after_frees_the_survivors_after_t_seconds() -> None:
    """Below minCount from 500 s; released at 600 s; requeued whole and admitted when node-0 returns."""
    s, g = _run("release-after:100")
    assert (g["end_s"], g["restarts"]) == (2200.0, 1)
    assert s["lost_gpu_hours"] == pytest.approx(800 / H)
    assert s["idle_by_cause"]["below_min"] == pytest.approx(2 * 100 / H)


def test_continue_above_min_count_loses_nothing() -> None:
    """minCount 2: the 2 survivors keep the gang going at full rate; it ends at 1000 s, no work lost."""
    s, g = _run("continue", min_count=2)
    assert (g["end_s"], g["restarts"]) == (1000.0, 0)
    assert s["lost_gpu_hours"] == 0.0 and s["idle_by_cause"]["below_min"] == 0.0


def test_wait_with_min_count_two_still_waits_for_the_replacements() -> None:
    """Under `wait` a gang that lost members resumes only with its replacements, whatever minCount says."""
    s, g = _run("wait", min_count=2)
    assert g["end_s"] == 2200.0
    assert s["lost_gpu_hours"] == pytest.approx(800 / H)


def test_a_member_exiting_mid_run_without_checkpoints_loses_all_work_so_far() -> None:
    """No checkpoints: the exit at 500 s loses 500 s x 4 GPUs; the replacement binds at once (its GPU is
    free), so the job runs again from 0 at 500 s and ends at 1500 s."""
    failures = FailurePlan(events=(FailureEvent(500.0, "exit", "g-1"),))
    s, jobs, _ = simulate(_gang(4), SimOptions(until=5000.0, failures=failures))
    assert jobs["g"]["end_s"] == 1500.0
    assert s["lost_gpu_hours"] == pytest.approx(500 * 4 / H)


def test_a_member_failing_to_start_is_replaced_before_any_progress() -> None:
    """g-2 fails as it would start at 0 s: nothing to lose; its replacement binds at 0 s and the job ends at
    1000 s."""
    failures = FailurePlan(events=(FailureEvent(0.0, "start", "g-2"),))
    s, jobs, _ = simulate(_gang(4), SimOptions(until=5000.0, failures=failures))
    assert jobs["g"]["end_s"] == 1000.0 and s["lost_gpu_hours"] == 0.0 and s["failures"] == 1


@pytest.mark.parametrize("seed", [0, 1])
def test_random_failures_are_deterministic_for_a_seed(seed: int) -> None:
    failures = FailurePlan(exit_per_h=20.0, node_per_h=2.0, node_repair_s=600.0, start_failure_p=0.1)
    options = SimOptions(until=20000.0, checkpoint_s=300.0, failures=failures, seed=seed)
    docs = [*_gang(4), group("h", 2, "3000"), pod("h-0", "h"), pod("h-1", "h")]
    for doc in docs[-3:]:
        doc["metadata"]["creationTimestamp"] = "2026-01-01T00:00:30Z"
    first = simulate(docs, options)[:2]
    assert simulate(docs, options)[:2] == first
    assert first[0]["failures"] > 0
