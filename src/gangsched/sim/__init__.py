"""The simulator: workloads replayed through the decision core on a virtual clock (DESIGN.md, sim/)."""

from .delays import Delay
from .failures import FailureEvent, FailurePlan
from .simulation import JobRun, SimOptions, Simulation
from .workload import GPU, SimJob, Workload

__all__ = [
    "GPU",
    "Delay",
    "FailureEvent",
    "FailurePlan",
    "JobRun",
    "SimJob",
    "SimOptions",
    "Simulation",
    "Workload",
]
