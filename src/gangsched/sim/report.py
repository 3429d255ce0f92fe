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

ETA accuracy (`eta`, with a planner: gang-backfill, or `--backfill 0` under any policy): a job's first ETA
is the first start the plan gave its root (the PodGroup, or the lone pod as submitted), kept in the job row
as `first_eta_s`; its error is |first ETA - admitted_s| (the plan predicts when the root is placed, not when
it has started up). `median_abs_error_s` and `p90_abs_error_s` are over the jobs that got an ETA and were
admitted; jobs that never got one (they started at their first cycle, or never reached the plan's head) are
counted in `without_eta`, jobs given one but never admitted in `never_admitted`; neither enters the
percentiles. `estimate` names where the planner's run times came from (`simulate --estimate`); `slips` has
one record per reservation a plan moved later: job, at_s, old_start_s, new_start_s and its causes (work that
ran past its estimate, or reservations now ahead of it).

Per namespace (`namespaces`): jobs, avg_wait_s, p99_wait_s (waits as above) and average_share; `fairness`:
Jain's index over the backlogged namespaces and the share series (fairness.py).

Preemptions (`preemption_records`, one per preemptor and time): the preemptor (namespace/name), its job, the
victims' pods and jobs, the GPU-hours of progress the evictions threw away (work since the victims' last
checkpoint), and whether the preemptor's job completed afterwards (`preemptor_completed`; false while it was
still running or waiting at the end).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .fairness import share_stats
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


def first_etas(sim: Simulation) -> dict[int, float]:
    """id(run) -> the first start the plan gave the job's root (absent: it never got one)."""
    backfill = sim.scheduler.backfill
    if backfill is None:
        return {}
    out = {}
    for run in sim.runs:
        job = run.job
        root = (
            ("PodGroup", job.namespace, job.group) if job.group else ("Pod", job.namespace, job.pod_names[0])
        )
        eta = backfill.first_eta.get(root)
        if eta is not None:
            out[id(run)] = eta
    return out


def eta_accuracy(sim: Simulation, etas: dict[int, float]) -> dict[str, Any] | None:
    """Median and p90 of |first ETA - admission| (see the module docstring); None without a planner."""
    if sim.scheduler.backfill is None:
        return None
    errors = [abs(etas[id(r)] - r.admitted) for r in sim.runs if id(r) in etas and r.admitted is not None]
    return {
        "jobs_with_eta": len(etas),
        "admitted_with_eta": len(errors),
        "never_admitted": sum(1 for r in sim.runs if id(r) in etas and r.admitted is None),
        "without_eta": len(sim.runs) - len(etas),
        "median_abs_error_s": _pct(errors, 50),
        "p90_abs_error_s": _pct(errors, 90),
    }


def namespaces(sim: Simulation) -> dict[str, dict[str, Any]]:
    """Per namespace: jobs, average and p99 wait (censored as in the summary)."""
    waits: dict[str, list[float]] = {}
    for run in sim.runs:
        waits.setdefault(run.job.namespace, []).append(_wait(run, sim.end))
    return {
        ns: {"jobs": len(w), "avg_wait_s": float(np.mean(w)), "p99_wait_s": _pct(w, 99)}
        for ns, w in sorted(waits.items())
    }


def preemption_records(sim: Simulation) -> list[dict[str, Any]]:
    """One record per preemption: the evictions of one preemptor at one time (module docstring)."""
    preemptor_of = {e.pod: e.preemptor for e in sim.store.evictions}
    records: dict[tuple[float, str], dict[str, Any]] = {}
    for at, key, victim, lost in sim.injector.evicted:
        preemptor = preemptor_of.get(key, "?")
        record = records.get((at, preemptor))
        if record is None:
            ns, _, name = preemptor.partition("/")
            run = sim.job_of.get((ns, name))
            record = records[(at, preemptor)] = {
                "at_s": at,
                "preemptor": preemptor,
                "preemptor_job": run.job.name if run is not None else None,
                "victims": [],
                "victim_jobs": [],
                "lost_gpu_hours": 0.0,
                "preemptor_completed": run is not None and run.end is not None,
            }
        record["victims"].append(f"{key[0]}/{key[1]}")
        if victim.job.name not in record["victim_jobs"]:
            record["victim_jobs"].append(victim.job.name)
        record["lost_gpu_hours"] += lost / HOUR
    return list(records.values())


def slip_records(sim: Simulation) -> list[dict[str, Any]]:
    """One record per reservation moved later by a plan: the job, when, from and to which start, why."""
    backfill = sim.scheduler.backfill
    if backfill is None:
        return []
    records = []
    for slip in backfill.slips:
        run = sim.job_of.get(slip.root[1:])
        records.append(
            {
                "job": run.job.name if run is not None else f"{slip.root[1]}/{slip.root[2]}",
                "at_s": slip.at,
                "old_start_s": slip.old_start,
                "new_start_s": slip.new_start,
                "causes": list(slip.causes),
            }
        )
    return records


def job_rows(sim: Simulation) -> list[dict[str, Any]]:
    etas = first_etas(sim)
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
                "first_eta_s": etas.get(id(run)),
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
    by_namespace = namespaces(sim)
    backfill = sim.scheduler.backfill
    weights = dict(backfill.settings.fair_share or ()) if backfill is not None else {}
    fairness = share_stats(sim.shares, sim.ledger.total_gpus, end, weights)
    for ns, share in fairness["average_share"].items():
        by_namespace.setdefault(ns, {"jobs": 0, "avg_wait_s": None, "p99_wait_s": None})
        by_namespace[ns]["average_share"] = share
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
        "eta": eta_accuracy(sim, first_etas(sim)),
        "estimate": sim.options.estimate,
        "slips": slip_records(sim),
        "namespaces": by_namespace,
        "fairness": fairness,
        "preemption_records": preemption_records(sim),
        "policy": sim.options.policy,
        "recovery": sim.options.recovery.name,
        "seed": sim.options.seed,
        "termination_s": sim.options.termination_s,
    }
