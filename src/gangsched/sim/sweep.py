"""`gangsched simulate --sweep`: one workload under every policy x load x seed, each run in its own process.

    points = grid(["gang", "gang-strict-fifo"], loads=[0.5, 1, 2], seeds=[0, 1])
    rows = run_sweep(request, options, points, workers=2)            # a local process pool
    rows = run_sweep(request, options, points, ray_address="auto")   # an existing Ray cluster

**Load** is a scaling of the arrival rate. At load L every job and pod arrives at its time divided by L: L = 2
brings the same jobs in half the time, and L = 0.5 in twice the time. Run times, sizes and the cluster stay
as they are. For a synthetic workload this is the arrival rate times L, applied to the generated times. A
**seed** seeds the run (tie-breaking between equal nodes, start-up delays, random failures) and the
synthetic generator; a trace or manifests are the same jobs under every seed.

Each point builds its workload anew from the request in its worker (a trace is read there), so the points
share nothing and the sweep is deterministic: the same rows in the same order whatever the number of
workers. A row is `{"policy", "load", "seed", "wall_s", "summary"}` (report.py's summary; the per-job
rows are left out). With Ray the workers run `run_point` remotely: gangsched (`pip install gangsched[ray]`)
and any trace file must be reachable from them at the same path.
"""

from __future__ import annotations

import concurrent.futures
import datetime as dt
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from ..store.store import EPOCH
from .command import SimInputError, SimRequest, build_workload, run_one
from .simulation import SimOptions
from .workload import SimJob, Workload

__all__ = ["SweepPoint", "at_load", "grid", "run_point", "run_sweep"]


@dataclass(frozen=True, slots=True)
class SweepPoint:
    policy: str
    load: float
    seed: int


def grid(policies: Sequence[str], loads: Sequence[float], seeds: Sequence[int]) -> list[SweepPoint]:
    """Every combination, policy slowest (the table reads policy by policy)."""
    return [SweepPoint(p, load, s) for p in policies for load in loads for s in seeds]


def _stamp(seconds: float) -> dt.datetime:
    return EPOCH + dt.timedelta(seconds=seconds)


def _restamped(make: Callable[[], list[Any]], submit: float, offsets: tuple[float, ...]) -> list[Any]:
    """The job's objects with creationTimestamps at their scaled arrival (queue order reads them)."""
    objects = make()
    pods = 0
    for obj in objects:
        offset = 0.0
        if obj.kind == "Pod":
            offset = offsets[pods] if pods < len(offsets) else 0.0
            pods += 1
        obj.metadata.creationTimestamp = _stamp(submit + offset)
    return objects


def at_load(workload: Workload, load: float) -> Workload:
    """`workload` with every arrival time divided by `load` (in place; returns it)."""
    if load <= 0:
        raise SimInputError(f"--loads: must be greater than 0: {load}")
    if load == 1:
        return workload
    jobs: list[SimJob] = []
    for job in workload.jobs:
        job.submit /= load
        job.pod_offsets = tuple(o / load for o in job.pod_offsets)
        job.make = partial(_restamped, job.make, job.submit, job.pod_offsets)
        jobs.append(job)
    workload.jobs = jobs
    return workload


def run_point(request: SimRequest, options: SimOptions, point: SweepPoint) -> dict[str, Any]:
    """One run of the sweep (in a worker process); its row."""
    started = time.perf_counter()
    workload = at_load(build_workload(replace(request, seed=point.seed)), point.load)
    result, _ = run_one(workload, replace(options, policy=point.policy, seed=point.seed))
    wall = time.perf_counter() - started
    return {
        "policy": point.policy,
        "load": point.load,
        "seed": point.seed,
        "wall_s": wall,
        "summary": result["summary"],
    }


def run_sweep(
    request: SimRequest,
    options: SimOptions,
    points: Sequence[SweepPoint],
    *,
    workers: int | None = None,
    ray_address: str | None = None,
    on_done: Callable[[int], None] | None = None,
) -> list[dict[str, Any]]:
    """Rows in the order of `points`. Bad input raises SimInputError before anything runs."""
    build_workload(request)  # fail once, here, on bad input, rather than in every worker
    if ray_address is not None:
        return _on_ray(request, options, points, ray_address)
    rows: list[dict[str, Any] | None] = [None] * len(points)
    with concurrent.futures.ProcessPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(run_point, request, options, p): i for i, p in enumerate(points)}
        for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
            rows[futures[future]] = future.result()
            if on_done is not None:
                on_done(done)
    return [r for r in rows if r is not None]


def _on_ray(
    request: SimRequest, options: SimOptions, points: Sequence[SweepPoint], address: str
) -> list[dict[str, Any]]:
    try:
        import ray
    except ImportError:
        raise SimInputError("--ray: Ray is not installed: pip install 'gangsched[ray]'") from None
    started_here = not ray.is_initialized()
    if started_here:
        try:
            ray.init(address=address, logging_level=logging.WARNING, log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise SimInputError(f"--ray: cannot connect to the Ray cluster at {address!r}: {e}") from None
    try:
        remote = ray.remote(num_cpus=1)(run_point)
        return list(ray.get([remote.remote(request, options, p) for p in points]))
    finally:
        if started_here:
            ray.shutdown()
