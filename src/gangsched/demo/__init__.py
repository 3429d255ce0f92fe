"""`gangsched demo`: the 8-GPU story, pod-by-pod against gang, on the same engine and the same arrivals.

Two trainings (train-a, train-b) of 6 workers x 1 GPU share 8 GPUs; each needs all 6 workers to make
progress. Their pods arrive interleaved, one pair per step. After each step both worlds are scheduled to a
fixed point and we record, per world, GPUs bound to each job, idle GPUs and jobs that can run.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

from ..api.defaults import apply_defaults
from ..api.duration import DURATION_ANNOTATION
from ..api.gates import FeatureGates
from ..api.loader import load_documents
from ..scheduler import Scheduler, run_until_stable
from ..store import Store

__all__ = ["DAY", "TRAINING", "DemoStep", "WorldState", "load_story", "run_day", "run_demo"]

WORKERS = 6
DAY = 86400.0
TRAINING = "2h"  # each training's work, with all 6 workers running


@dataclass(frozen=True, slots=True)
class WorldState:
    bound: dict[str, int]  # job -> GPUs bound
    idle_gpus: int
    runnable: list[str]  # jobs with all workers bound
    waiting: dict[str, str]  # job -> why it waits (a pending pod's message)


@dataclass(frozen=True, slots=True)
class DemoStep:
    arrived: int  # pods arrived so far
    pod_by_pod: WorldState
    gang: WorldState


def load_story() -> tuple[list[Any], list[Any]]:
    """(cluster objects, pods in arrival order) from the embedded manifest."""
    text = resources.files(__package__).joinpath("eight_gpu.yaml").read_text()
    result = load_documents(yaml.safe_load_all(text), "eight_gpu.yaml")
    assert not result.problems, result.problems
    objects = [item.obj for item in result.objects]
    problems = apply_defaults(objects)
    assert not problems, problems
    base = [o for o in objects if o.kind != "Pod"]
    pods = [o for o in objects if o.kind == "Pod"]
    return base, pods


def _state(store: Store) -> WorldState:
    total = sum(int(n.status.allocatable["nvidia.com/gpu"]) for n in store.list("Node"))
    bound: dict[str, int] = {"train-a": 0, "train-b": 0}
    waiting: dict[str, str] = {}
    for pod in store.list("Pod"):
        job = pod.metadata.labels["job"]
        if pod.spec.nodeName:
            bound[job] += 1
        else:
            cond = next(
                (
                    c
                    for c in (pod.status.conditions if pod.status else None) or []
                    if c.type == "PodScheduled"
                ),
                None,
            )
            if cond is not None and cond.message and job not in waiting:
                waiting[job] = cond.message
    runnable = [job for job, n in bound.items() if n >= WORKERS]
    return WorldState(bound, total - sum(bound.values()), runnable, waiting)


def run_demo(*, seed: int = 0) -> list[DemoStep]:
    """Replay the arrivals in both worlds; one DemoStep per arriving pair of pods."""
    worlds = []
    for gates in (FeatureGates.parse("GenericWorkload=false"), FeatureGates()):
        cluster, pods = load_story()  # each world owns its objects: a store mutates what it holds
        store = Store(claim_controller=True)
        store.add_all(cluster)
        worlds.append((store, Scheduler(store, gates, seed=seed), pods))
    steps = []
    for i in range(0, len(worlds[0][2]), 2):
        states = []
        for store, scheduler, pods in worlds:
            store.add_all(pods[i : i + 2])
            run_until_stable(store, scheduler)
            states.append(_state(store))
        steps.append(DemoStep(i + 2, states[0], states[1]))
    return steps


def run_day(*, seed: int = 0) -> dict[str, dict[str, Any]]:
    """The same story over a day of virtual time in the simulator, each training needing 2 h of all 6
    workers: policy ("pod-by-pod", "gang") -> the simulation's summary (sim/report.py)."""
    from ..sim.command import run_one
    from ..sim.inputs import from_manifests
    from ..sim.simulation import SimOptions

    out = {}
    for policy in ("pod-by-pod", "gang"):
        cluster, pods = load_story()
        for obj in cluster:
            if obj.kind == "PodGroup":
                obj.metadata.annotations = {DURATION_ANNOTATION: TRAINING}
        workload = from_manifests(cluster + pods, "eight_gpu.yaml")
        result, _ = run_one(workload, SimOptions(policy=policy, seed=seed, until=DAY))
        out[policy] = result["summary"]
    return out
