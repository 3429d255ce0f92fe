"""Preemption victims that take time to leave, computed by hand (issue #15's simulator part).

One node of 4 GPUs. Gang g (priority low, 4 pods x 1 GPU, minCount 4, disruptionMode all, 1000 s of work,
a checkpoint every 300 s of progress) runs from 0 s. Gang h (priority high, 2 pods x 1 GPU, minCount 2,
100 s of work) arrives at 500 s and finds no room. Workload-aware preemption evicts g as one unit (its
disruptionMode is `all`): all 4 pods at 500 s. At 500 s g has done 500 s of work, 300 s checkpointed, and a
victim makes no progress once evicted, so 200 s x 4 GPUs = 800 GPU-seconds are lost whatever the delay.

With a termination of T seconds the victims hold their 4 GPUs until 500 + T; h, nominated meanwhile, waits
(ongoing preemption) and binds at 500 + T, ends at 600 + T. g's replacements (created at the eviction) need
all 4 GPUs, so they bind when h ends and finish the remaining 700 s at 1300 + T.
"""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.sim import FailureEvent, FailurePlan, SimOptions

from .story import group, node, pod, simulate

H = 3600.0


def _docs() -> list[dict[str, Any]]:
    classes = (("low", 10), ("high", 100))
    docs: list[dict[str, Any]] = [
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": n}, "value": v}
        for n, v in classes
    ]
    docs.append(node("node-0", 4))
    jobs = (("g", 4, "1000", "low", "00:00"), ("h", 2, "100", "high", "08:20"))  # h at 500 s
    for name, size, work, priority, at in jobs:
        members = [group(name, size, work)] + [pod(f"{name}-{i}", name) for i in range(size)]
        members[0]["spec"]["priorityClassName"] = priority
        members[0]["spec"]["disruptionMode"] = {"all": {}} if name == "g" else {"single": {}}
        for doc in members:
            doc["metadata"]["creationTimestamp"] = f"2026-01-01T00:{at}Z"
            if doc["kind"] == "Pod":
                doc["spec"]["priorityClassName"] = priority
        docs += members
    return docs


@pytest.mark.parametrize("delay", [30.0, 0.0])
def test_the_preemptor_binds_when_its_victims_are_gone_and_their_lost_work_is_exact(delay: float) -> None:
    s, jobs, sim = simulate(_docs(), SimOptions(checkpoint_s=300.0, termination_s=delay))
    assert sorted(e.pod[1] for e in sim.store.evictions) == ["g-0", "g-1", "g-2", "g-3"]
    h = jobs["h"]
    assert (h["submit_s"], h["start_s"], h["end_s"]) == (500.0, 500.0 + delay, 600.0 + delay)
    assert (jobs["g"]["start_s"], jobs["g"]["end_s"]) == (0.0, 1300.0 + delay)
    assert s["preemptions"] == 4
    assert s["lost_gpu_hours"] == pytest.approx(800 / H)
    # the victims' GPUs were allocated without progress while they terminated: 4 GPUs x the delay
    assert s["idle_by_cause"]["terminating"] == pytest.approx(4 * delay / H)
    assert s["idle_by_cause"]["below_min"] == 0.0
    assert s["makespan_s"] == 1300.0 + delay


def test_the_preemptor_does_not_preempt_again_while_its_victims_terminate() -> None:
    """A long termination (300 s): h waits the whole time; g's 4 pods are the only evictions."""
    s, jobs, sim = simulate(_docs(), SimOptions(checkpoint_s=300.0, termination_s=300.0))
    assert len(sim.store.evictions) == 4 and s["preemptions"] == 4
    assert jobs["h"]["start_s"] == 800.0


def test_a_node_failing_while_victims_terminate_takes_them_at_once() -> None:
    """node-0 fails at 510 s, 10 s into the 30 s termination, and is back at 1510 s. The victims go with the
    node (4 GPUs x 10 s terminating). At 1510 s h (higher priority) binds first and ends at 1610 s; g's
    replacements need all 4 GPUs and run from 1610 s: 700 s left after the checkpoint, done at 2310 s. The
    failure loses no more work: g's pods were no longer running."""
    failures = FailurePlan(events=(FailureEvent(510.0, "node", "node-0"),), node_repair_s=1000.0)
    options = SimOptions(checkpoint_s=300.0, termination_s=30.0, failures=failures)
    s, jobs, sim = simulate(_docs(), options)
    assert (jobs["h"]["start_s"], jobs["h"]["end_s"]) == (1510.0, 1610.0)
    assert jobs["g"]["end_s"] == 2310.0
    assert (s["preemptions"], s["failures"]) == (4, 1)
    assert s["lost_gpu_hours"] == pytest.approx(800 / H)
    assert s["idle_by_cause"]["terminating"] == pytest.approx(4 * 10 / H)
    assert sim.ledger.free(0) == 4.0, "every GPU is free again at the end"
