"""A plan of depth 0 reserves nothing and reads only its head's start (the ETA), so its search makes no trial
placement where the capacity check decides the trial (`earliest_start(..., start_only=True)`,
plan._capacity_decides): the start must be the one the trial finds, and where something the capacity check
does not count could refuse the pod, the trial must still be made.

One node of 4 GPUs runs r (4 GPUs, expected to end at 100 s: 120 on the 60 s grid). w (4 GPUs) waits: its
earliest start is 120, on n0. With a host port that a pod of unknown end (so never released) holds on n0, w
fits by capacity at 120 but its trial fails there (NodePorts): no start at all, with or without start_only.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from gangsched.scheduler import plan
from gangsched.scheduler.backfill import BackfillSettings
from gangsched.scheduler.backfill_settings import PlanSettings
from gangsched.scheduler.estimates import Estimate
from gangsched.scheduler.plan import earliest_start, running_work
from gangsched.sim import SimOptions, Simulation, Workload
from gangsched.sim.inputs import GPU, gang_job, gpu_nodes
from tests.scheduler.plan_objects import node, pod, scheduler_for

W = ("Pod", "default", "w")


def _with_port(p: dict[str, Any], port: int) -> dict[str, Any]:
    p["spec"]["containers"][0]["ports"] = [{"containerPort": port, "hostPort": port}]
    return p


def _search(objects: list[dict[str, Any]], start_only: bool) -> plan.StartSearch:
    _, scheduler = scheduler_for(objects)
    settings = PlanSettings()
    place = scheduler.placer(W)
    assert place is not None
    running = running_work(scheduler, 0.0, settings)
    return earliest_start(
        scheduler, W, place, Estimate(500.0), running, [], 0.0, settings, start_only=start_only
    )


@pytest.mark.parametrize("start_only", [False, True])
def test_the_start_is_the_trials(start_only: bool) -> None:
    found = _search([node("n0"), pod("r", 4, on="n0", duration="100"), pod("w", 4)], start_only).found
    assert found is not None and found.start == 120.0
    # Without start_only the trial names the node; with it no trial is made, and no node is named.
    assert found.nodes == (frozenset() if start_only else frozenset({0}))


@pytest.mark.parametrize("start_only", [False, True])
def test_a_pod_a_filter_beyond_capacity_refuses_gets_its_trial(start_only: bool) -> None:
    holder = _with_port(pod("p", 0, on="n0"), 8080)  # no estimate: it holds the port for ever
    objects = [node("n0"), pod("r", 4, on="n0", duration="100"), holder, _with_port(pod("w", 4), 8080)]
    assert _search(objects, start_only).found is None


def _jobs(seed: int) -> list[Any]:
    """Lone pods and gangs of 1 to 8 GPUs per pod on four 8-GPU nodes, arriving faster than they end."""
    rng = np.random.default_rng(seed)
    jobs, t = [], 0.0
    for i in range(80):
        t += float(np.round(rng.exponential(120)))
        per_pod = int(rng.choice([1, 2, 4, 8]))
        pods = int(rng.choice([1, 1, 2, 3]))
        duration = float(np.round(rng.exponential(900)) + 1)
        jobs.append(gang_job(f"j{i}", t, duration, pods, {GPU: str(per_pod)}, per_pod))
    return jobs


def _etas(policy: str, seed: int) -> tuple[dict[Any, float], int]:
    sim = Simulation(
        Workload(gpu_nodes(4, 8), _jobs(seed)),
        SimOptions(policy=policy, backfill=BackfillSettings(depth=0), seed=seed),
    ).run()
    assert sim.scheduler.backfill is not None
    return dict(sim.scheduler.backfill.first_eta), sum(r.end is not None for r in sim.runs)


@pytest.mark.parametrize("policy", ["gang", "gang-strict-fifo"])
@pytest.mark.parametrize("seed", [0, 1])
def test_depth_0_etas_are_those_the_trials_give(
    policy: str, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Replays with a depth-0 plan (every head's ETA): the same ETAs whether the capacity check stands for
    the trial or every start is found by a trial, and the check stood for it in most searches."""
    decides = plan._capacity_decides
    skipped = [0]

    def counting(*args: Any) -> bool:
        skipped[0] += decides(*args)
        return decides(*args)

    monkeypatch.setattr(plan, "_capacity_decides", counting)
    etas, ended = _etas(policy, seed)
    with monkeypatch.context() as m:
        m.setattr(plan, "_capacity_decides", lambda *_: False)
        assert _etas(policy, seed) == (etas, ended)
    assert ended == 80 and len(etas) >= 10 and skipped[0] >= 10, (len(etas), skipped[0])
