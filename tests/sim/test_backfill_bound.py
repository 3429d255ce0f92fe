"""The room bound under gang-backfill changes no decision: it skips only cycles that must fail.

Under backfill a root's cycle runs on the nodes no reservation holds over its run, so the bound counts the
free room of those nodes only (Scheduler._bound_fails). Replays of random gang workloads on several nodes (so
that node ties are broken by the seed's draws) make exactly the same decisions, reservations, ETAs and slips
with the bound as with every cycle run, and the bound skips cycles. Two things made a bound change decisions
before (docs/backfill.md, "The room bound"): failing cycles drew tie-breaks from the scheduler's generator
(so skipping one shifted every later tie-break), and plans were made only when a cycle ran.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from gangsched.scheduler.backfill import BackfillSettings
from gangsched.scheduler.scheduler import Scheduler
from gangsched.sim import SimOptions, Simulation, Workload
from gangsched.sim.inputs import GPU, gang_job, gpu_nodes


def _jobs(seed: int) -> list[Any]:
    """Bursts of small jobs with now and then a gang as large as the cluster (4 nodes of 8 GPUs)."""
    rng = np.random.default_rng(seed)
    jobs = []
    t = 0.0
    for i in range(150):
        t += float(np.round(rng.exponential(60)))
        big = rng.random() < 0.08
        per_pod = 8 if big else int(rng.choice([1, 2, 4]))
        pods = int(rng.choice([3, 4])) if big else int(rng.choice([1, 1, 2]))
        duration = float(np.round(rng.exponential(1800 if big else 600)) + 1)
        jobs.append(gang_job(f"j{i}", t, duration, pods, {GPU: str(per_pod)}, per_pod))
    return jobs


def _replay(seed: int, depth: int) -> tuple[list[Any], int, int]:
    options = SimOptions(policy="gang-backfill", backfill=BackfillSettings(depth=depth))
    sim = Simulation(Workload(gpu_nodes(4, 8), _jobs(seed)), options).run()
    backfill = sim.scheduler.backfill
    assert backfill is not None
    decisions = [(r.job.name, r.admitted, r.start, r.end) for r in sim.runs]
    decisions += sorted(backfill.first_eta.items())
    decisions += [(s.root, s.at, s.old_start, s.new_start, s.causes) for s in backfill.slips]
    return decisions, sim.scheduler.cycles, sim.scheduler.skipped


@pytest.mark.parametrize(("seed", "depth"), [(0, 1), (1, 1), (2, 4), (3, 4)])
def test_the_bound_decides_as_running_every_cycle(
    seed: int, depth: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    bounded, cycles, skipped = _replay(seed, depth)
    monkeypatch.setattr(Scheduler, "_bound_fails", lambda self, *args: False)
    every, all_cycles, none_skipped = _replay(seed, depth)
    assert bounded == every
    assert none_skipped == 0 and skipped > 0 and cycles < all_cycles
    ended = [r for r in bounded if len(r) == 4 and r[3] is not None]
    assert len(ended) == 150  # the replay made progress: every job ran to its end
