"""The decision core: queue, snapshot, plugins, PodGroup cycle. Snapshot in, Decision out; no I/O."""

from .cycle import Code, GroupAttempt, GroupResult, run_group_cycle
from .decision import Binding, Condition, ConditionChange, Decision, Eviction, Nomination, Notice
from .scheduler import Profile, Scheduler
from .timeline import Event, Timeline, VirtualClock, run_until_stable

__all__ = [
    "Binding",
    "Code",
    "Condition",
    "ConditionChange",
    "Decision",
    "Event",
    "Eviction",
    "GroupAttempt",
    "GroupResult",
    "Nomination",
    "Notice",
    "Profile",
    "Scheduler",
    "Timeline",
    "VirtualClock",
    "run_group_cycle",
    "run_until_stable",
]
