"""The room hint never keeps a root from a cycle that could succeed: on one node (no ties for the seed to
break) and without backoff, a replay with selective requeueing makes exactly the decisions of a replay that
wakes every waiting root at every release, as NodeResourcesFit's hint does upstream, with far fewer cycles."""

from __future__ import annotations

import numpy as np
import pytest

import gangsched.scheduler.queue as queue_module
from gangsched.scheduler.scheduler import Scheduler
from gangsched.sim import SimOptions, Simulation, Workload
from gangsched.sim.inputs import GPU, gang_job, gpu_nodes


def _jobs(seed: int) -> list:  # type: ignore[type-arg]
    rng = np.random.default_rng(seed)
    jobs = []
    t = 0.0
    for i in range(120):
        t += float(np.round(rng.exponential(120)))
        per_pod = int(rng.choice([1, 2, 4, 8]))
        pods = int(rng.choice([1, 1, 2, 3]))
        jobs.append(
            gang_job(
                f"j{i}", t, float(np.round(rng.exponential(900)) + 1), pods, {GPU: str(per_pod)}, per_pod
            )
        )
    return jobs


def _starts(seed: int) -> tuple[list[tuple[str, float | None, float | None]], int]:
    sim = Simulation(Workload(gpu_nodes(1, 16), _jobs(seed)), SimOptions()).run()
    return [(r.job.name, r.start, r.end) for r in sim.runs], sim.scheduler.cycles


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_selective_requeueing_decides_as_waking_everyone(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(queue_module, "INITIAL_BACKOFF", 0.0)
    selective, few = _starts(seed)

    def wake_everyone(self: Scheduler) -> None:
        self.queue.move_all_to_active()
        self.waiters.clear()

    monkeypatch.setattr(Scheduler, "_released", wake_everyone)
    monkeypatch.setattr(Scheduler, "_bound_fails", lambda self, *args: False)
    everyone, many = _starts(seed)
    assert selective == everyone
    assert sum(1 for _, start, _ in selective if start is not None) > 100  # the replay made progress
    assert few * 3 < many
