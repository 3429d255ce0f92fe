"""`gangsched simulate`: build the workload once, run it under one or several policies, report.

    results = simulate(SimRequest(trace="philly:jobs.csv", nodes=64, gpus_per_node=8), ["gang"])

A result is the JSON contract `{"summary": {...}, "jobs": [...]}` (report.py). Bad input raises
`SimInputError` with a one-line message naming the file, object or option and field; nothing runs then.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..api.errors import Problem
from ..api.gates import FeatureGates
from .inputs import TraceError, from_manifests, gpu_nodes, openb, philly, synthetic
from .report import job_rows, summary
from .simulation import SimOptions, Simulation
from .workload import Workload

__all__ = ["SimInputError", "SimRequest", "build_workload", "run_one", "simulate"]


class SimInputError(ValueError):
    """Bad input for a simulation; the message is the one line to print."""


@dataclass(frozen=True, slots=True)
class SimRequest:
    """Where the jobs and the cluster come from (see inputs.py)."""

    paths: tuple[str, ...] = ()
    trace: str | None = None  # philly:PATH | openb:PODS,NODES | synthetic:JOBS
    nodes: int | None = None
    gpus_per_node: int = 8
    limit: int | None = None  # only the first N jobs of a trace (in submission order)
    philly_namespaces: int = 1  # philly: virtual clusters mapped to this many namespaces (inputs.philly)
    arrival_rate_per_h: float = 10.0
    gang_sizes: dict[int, float] = field(default_factory=lambda: {1: 0.6, 2: 0.2, 4: 0.15, 8: 0.05})
    mean_duration_s: float = 3600.0
    seed: int = 0
    gates: FeatureGates = field(default_factory=FeatureGates)


def _manifests(paths: Sequence[str], gates: FeatureGates) -> Workload:
    from ..builder.command import expanded_inputs

    objects, problems = expanded_inputs(paths, gates)
    if problems:
        first: Problem = problems[0]
        more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
        raise SimInputError(f"{first}{more}")
    try:
        return from_manifests(objects, ",".join(paths))
    except TraceError as e:
        raise SimInputError(str(e)) from None


def build_workload(request: SimRequest) -> Workload:
    """The workload a request describes; SimInputError on any bad input."""
    try:
        workload = _manifests(request.paths, request.gates) if request.paths else Workload([], [])
        if request.trace:
            kind, _, arg = request.trace.partition(":")
            if kind == "philly" and arg:
                workload.jobs += philly(arg, request.limit, request.philly_namespaces)
                workload.source = request.trace
            elif kind == "openb" and arg.count(",") == 1:
                pods, nodes = arg.split(",")
                trace = openb(pods, nodes)
                if request.limit is not None:
                    trace.jobs = trace.jobs[: request.limit]
                if workload.jobs or workload.cluster:
                    raise SimInputError("--trace openb: brings its own nodes and GPU shares; use it alone")
                workload = trace
            elif kind == "synthetic" and arg.isdigit():
                workload.jobs += synthetic(
                    seed=request.seed,
                    jobs=int(arg),
                    arrival_rate_per_h=request.arrival_rate_per_h,
                    sizes=request.gang_sizes,
                    mean_duration_s=request.mean_duration_s,
                    gpus_per_pod=request.gpus_per_node,
                )
                workload.source = request.trace
            else:
                raise SimInputError(
                    f"--trace: invalid value {request.trace!r}: expected philly:PATH, openb:PODS,NODES "
                    "or synthetic:JOBS"
                )
    except TraceError as e:
        raise SimInputError(str(e)) from None
    if request.nodes is not None:
        if request.nodes < 1 or request.gpus_per_node < 1:
            raise SimInputError("--nodes and --gpus-per-node: must be at least 1")
        workload.cluster = gpu_nodes(request.nodes, request.gpus_per_node) + workload.cluster
    if not any(o.kind == "Node" for o in workload.cluster):
        raise SimInputError("no nodes: give Node objects with -f, or --nodes N --gpus-per-node G")
    if not workload.jobs:
        raise SimInputError("no jobs: give pods with -f, or --trace")
    return workload


def run_one(
    workload: Workload, options: SimOptions, on_progress: Callable[[float, int], None] | None = None
) -> tuple[dict[str, Any], Simulation]:
    """Run once; returns ({"summary", "jobs"}, the finished Simulation)."""
    sim = Simulation(workload, options, on_progress=on_progress).run()
    return {"summary": summary(sim), "jobs": job_rows(sim)}, sim


def simulate(
    request: SimRequest,
    policies: Sequence[str],
    options: SimOptions,
    on_progress: Callable[[str, float, int], None] | None = None,
) -> tuple[list[dict[str, Any]], list[Simulation]]:
    """The same workload under each policy (a fresh workload per run: jobs build their objects anew).
    Returns the results and the finished Simulations (for their GPU-state samples)."""
    results, sims = [], []
    for policy in policies:
        workload = build_workload(request)
        report = (lambda now, done, p=policy: on_progress(p, now, done)) if on_progress else None
        result, sim = run_one(workload, replace(options, policy=policy), report)
        results.append(result)
        sims.append(sim)
    return results, sims
