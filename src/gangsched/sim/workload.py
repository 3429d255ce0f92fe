"""What a simulation replays: the cluster (Node objects plus any object present from the start) and the jobs,
each submitted at a time with the objects it creates then.

A job is a PodGroup with its pods (named as the PodGroup, or as the Job that owns it), or a lone Pod. Its
`duration` is the work it needs: seconds of progress at full rate (None: it never finishes and is censored).
How members turn into progress is its `progress` mode:
- `gang`: the job progresses only while at least `min_count` members run, at full rate;
- `basic`: each member runs `duration` on its own from its start; the job ends with its last member;
- `elastic`: while at least `min_count` members run, at the rate running / size.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["GPU", "SimJob", "Workload"]

GPU = "nvidia.com/gpu"


@dataclass(slots=True)
class SimJob:
    """One job of a workload. `make()` returns its objects (PodGroup first, then pods), built when submitted,
    so that a trace of 100,000 jobs does not hold 100,000 pods before they arrive."""

    namespace: str
    name: str
    submit: float
    duration: float | None
    size: int  # pods
    min_count: int
    progress: str  # gang | basic | elastic
    gpus_per_pod: float
    pod_names: list[str]
    group: str | None  # PodGroup name; None for a lone pod
    make: Callable[[], list[Any]] = field(repr=False)
    pod_offsets: tuple[float, ...] = ()  # per pod (in make() order): created this long after submission

    @property
    def gpus(self) -> float:
        return self.size * self.gpus_per_pod


@dataclass(slots=True)
class Workload:
    """Nodes and other objects present at t = 0, and jobs in submission order (ties: input order)."""

    cluster: list[Any]
    jobs: list[SimJob]
    gpu_resource: str = GPU
    gpu_scale: float = 1.0  # resource units per GPU (1000 for milli-GPUs)
    source: str = ""
