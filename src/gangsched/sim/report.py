"""What a simulation measured, as the `simulate -o json` contract: `{"summary": {...}, "jobs": [...]}`.

Per job: namespace, name, gpus, pods, min_count, submit_s, admitted_s (enough members bound to progress),
start_s (first progress), end_s (null while not ended), state (completed | running | pending), restarts,
wait_s (submission to first progress, up to the end for jobs that never progressed), jct_s (completion time,
null unless completed). Times in seconds from the first submission.

Summary: jobs, completed, avg/p50/p99_jct_s (completed jobs), avg_wait_s and max_wait_s (every job, waits of
jobs still waiting counted up to the end: censored, not dropped), makespan_s (the end of the run),
gpu_utilization (GPU time making progress / GPU time of the cluster, 0-1), idle_allocated_gpu_hours and
idle_by_cause (waiting for the rest of the gang, starting up, below minCount after a loss, held by evicted
pods while they terminate, lost to preemption or failure), fragmented_gpu_hours (free GPU time on nodes
where no pending pod fits), preemptions, failures, lost_gpu_hours, starvation (max and p99 wait by gang-size
bucket), cycles.
Percentiles interpolate linearly between order statistics (numpy's default).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .simulation import JobRun, Simulation

__all__ = ["BUCKETS", "job_rows", "summary"]

BUCKETS = (("1 GPU", 0, 1), ("2-8 GPUs", 1, 8), ("9-32 GPUs", 8, 32), ("33+ GPUs", 32, float("inf")))
HOUR = 3600.0


def _state(run: JobRun) -> str:
    if run.end is not None:
        return "completed"
    return "running" if run.start is not None else "pending"


def _wait(run: JobRun, end: float) -> float:
    return (run.start if run.start is not None else end) - run.job.submit


def job_rows(sim: Simulation) -> list[dict[str, Any]]:
    rows = []
    for run in sim.runs:
        job = run.job
        rows.append(
            {
                "namespace": job.namespace,
                "name": job.name,
                "gpus": job.gpus,
                "pods": job.size,
                "min_count": job.min_count,
                "submit_s": job.submit,
                "admitted_s": run.admitted,
                "start_s": run.start,
                "end_s": run.end,
                "state": _state(run),
                "restarts": run.restarts,
                "wait_s": _wait(run, sim.end),
                "jct_s": run.end - job.submit if run.end is not None else None,
            }
        )
    return rows


def _pct(values: list[float], q: float) -> float | None:
    return float(np.percentile(values, q)) if values else None


def summary(sim: Simulation) -> dict[str, Any]:
    runs = sim.runs
    end = sim.end
    jcts = [r.end - r.job.submit for r in runs if r.end is not None]
    waits = [_wait(r, end) for r in runs]
    totals = sim.ledger.totals
    capacity = sim.ledger.total_gpus * end
    lost = sim.injector.lost_gpu_s
    idle = {
        "gang_wait": totals["gang_wait"] / HOUR,
        "starting": totals["starting"] / HOUR,
        "below_min": totals["below_min"] / HOUR,
        "terminating": totals["terminating"] / HOUR,
        "lost": lost / HOUR,
    }
    starvation = {}
    for label, low, high in BUCKETS:
        bucket = [_wait(r, end) for r in runs if low < r.job.gpus <= high]
        if bucket:
            starvation[label] = {
                "jobs": len(bucket),
                "max_wait_s": max(bucket),
                "p99_wait_s": _pct(bucket, 99),
            }
    return {
        "jobs": len(sim.workload.jobs),
        "submitted": len(runs),
        "completed": len(jcts),
        "avg_jct_s": float(np.mean(jcts)) if jcts else None,
        "p50_jct_s": _pct(jcts, 50),
        "p99_jct_s": _pct(jcts, 99),
        "avg_wait_s": float(np.mean(waits)) if waits else None,
        "max_wait_s": max(waits) if waits else None,
        "makespan_s": end,
        "gpus": sim.ledger.total_gpus,
        "gpu_utilization": totals["progress"] / capacity if capacity > 0 else 0.0,
        "idle_allocated_gpu_hours": sum(idle.values()),
        "idle_by_cause": idle,
        "fragmented_gpu_hours": sim.ledger.fragmented_total / HOUR,
        "preemptions": sim.injector.preemptions,
        "failures": sim.injector.failures,
        "lost_gpu_hours": lost / HOUR,
        "starvation": starvation,
        "cycles": sim.scheduler.cycles,
        "policy": sim.options.policy,
        "recovery": sim.options.recovery.name,
        "seed": sim.options.seed,
        "termination_s": sim.options.termination_s,
    }
