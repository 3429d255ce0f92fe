"""The settings of reservations and backfill (backfill.py) and of the planner (plan.py), apart from them: the
command line, the simulator and live mode read these, and only a scheduler with backfill on needs the planner
itself (importing it costs `gangsched schedule` about a hundredth of a second at start-up)."""

from __future__ import annotations

import math

from msgspec import Struct

from .estimates import LIVE, SOURCES

__all__ = ["INFINITE", "BackfillSettings", "PlanSettings"]

INFINITE = math.inf


class PlanSettings(Struct, frozen=True):
    """Slurm's bf_window (how far ahead reservations are made) and bf_resolution (time step of the plan;
    default 60 s), in seconds. The window is unbounded by default, unlike Slurm's 1 day: Slurm advises a
    window at least as long as the longest time limit, and work here need not have one (docs/backfill.md).
    Unbounded costs nothing extra: the candidate times are the expected ends of running work anyway."""

    window: float = INFINITE
    resolution: float = 60.0

    def __post_init__(self) -> None:
        if not self.window > 0 or not self.resolution > 0:
            raise ValueError("planning window and resolution must be > 0 seconds")

    def round_up(self, t: float) -> float:
        """`t` on the plan's time grid (multiples of the resolution), never earlier than `t`."""
        return t if math.isinf(t) else math.ceil(t / self.resolution - 1e-9) * self.resolution


class BackfillSettings(Struct, frozen=True):
    """`depth`: roots that get a reservation (0 none, 1 EASY, None all: conservative). `window` and
    `resolution`: Slurm's bf_window / bf_resolution (s). `interval`: bf_interval, the longest a plan is kept
    (s). `aging_rate`: priority points per hour waited, up to `aging_cap` points. `max_job_test`: how many
    waiting roots one plan looks at (bf_max_job_test). `estimate`: where run-time estimates come from
    (estimates.SOURCES: oracle, limit, history; None: estimates.LIVE, as `schedule` and `run` do)."""

    depth: int | None = 1
    window: float = INFINITE  # unbounded: see PlanSettings
    resolution: float = 60.0
    interval: float = 30.0
    aging_rate: float = 0.0
    aging_cap: float = 0.0
    max_job_test: int = 100
    # Fair share (DRF) within a priority level: namespace -> weight (unlisted namespaces weigh 1); None: off.
    fair_share: tuple[tuple[str, float], ...] | None = None
    estimate: str | None = None

    def __post_init__(self) -> None:
        if self.depth is not None and self.depth < 0:
            raise ValueError("reservation depth must be >= 0 or 'all'")
        if self.interval < 0 or self.aging_rate < 0 or self.aging_cap < 0 or self.max_job_test < 1:
            raise ValueError("backfill interval, aging rate and cap must be >= 0, max_job_test >= 1")
        if self.fair_share is not None and any(not w > 0 for _, w in self.fair_share):
            raise ValueError("fair-share weights must be > 0")
        if self.estimate is not None and self.estimate not in SOURCES:
            raise ValueError(f"estimate must be one of {', '.join(SOURCES)}")
        PlanSettings(self.window, self.resolution)  # validates them

    @property
    def sources(self) -> tuple[str, ...]:
        return LIVE if self.estimate is None else SOURCES[self.estimate]

    @property
    def plan(self) -> PlanSettings:
        return PlanSettings(self.window, self.resolution)
