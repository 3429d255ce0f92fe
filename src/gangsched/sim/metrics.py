"""Exact GPU accounting: counts that are constant between events, integrated at each event (never sampled).

Every allocated GPU is in one state at any instant:
- `progress`: its job makes progress;
- `starting`: its pod is bound and still starting up;
- `gang_wait`: its pod runs, but the job has never had minCount members running (waiting for the rest);
- `below_min`: its pod runs, the job made progress before but is below minCount after losing members;
- `terminating`: its pod was evicted and has not left yet (no job's progress; freed when it leaves).
Free GPUs are `free`; while jobs wait for room and none of them fits in the free room (for each pod size
waited for, fewer pods of that size fit at once, node by node, than the smallest need among the jobs
waiting with it), all of them are `fragmented`: free, yet no pending gang can use them. Work thrown away
by failures and preemptions is counted apart, as GPU-seconds of progress lost (`lost`), when it is lost.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

__all__ = ["STATES", "GpuLedger"]

STATES = ("progress", "starting", "gang_wait", "below_min", "terminating")
JOB_STATES = 4  # the first four are a job's (JobRun.states); `terminating` GPUs belong to no job any more
TERMINATING = STATES.index("terminating")
_MAX_SAMPLES = 200_000


@dataclass(slots=True)
class GpuLedger:
    """GPU-seconds per state over [0, last]. `advance(now)` before every change, then `shift` the counts."""

    node_gpus: npt.NDArray[np.float64]
    counts: list[float] = field(default_factory=lambda: [0.0] * len(STATES))  # GPUs now, in STATES order
    seconds: list[float] = field(default_factory=lambda: [0.0] * len(STATES))  # GPU-seconds so far
    free_total: float = 0.0
    fragmented_total: float = 0.0
    lost: float = 0.0
    last: float = 0.0
    # (interval start, progress, starting, gang_wait, below_min, terminating, free): the states from then on
    samples: list[tuple[float, ...]] = field(default_factory=list)
    needs: dict[float, dict[int, int]] = field(default_factory=dict)  # GPUs per pod -> pods needed -> jobs
    _free: npt.NDArray[np.float64] = field(init=False)
    # For each size of pod waited for (GPUs per pod, above 0): how many such pods the free room holds, node
    # by node, summed. Kept as nodes take and give GPUs, so that the fragmentation test, at every event
    # that frees or takes GPUs, reads one number per size instead of every node.
    _fitting: dict[float, float] = field(default_factory=dict)
    _free_sum: float = 0.0  # kept as nodes take and give GPUs (whole or halved GPUs: sums exactly)
    _fragmented: float = 0.0
    _dirty: bool = True

    def __post_init__(self) -> None:
        self._free = self.node_gpus.astype(np.float64).copy()
        self._free_sum = float(self._free.sum())

    @property
    def total_gpus(self) -> float:
        return float(self.node_gpus.sum())

    def free(self, node: int) -> float:
        return float(self._free[node])

    def advance(self, now: float) -> None:
        """Integrate the current counts over [last, now]."""
        start = self.last
        dt = now - start
        if dt <= 0:
            return
        if self._dirty:
            self._fragmented = self._compute_fragmented()
            self._dirty = False
        counts, seconds = self.counts, self.seconds
        for i in range(len(STATES)):
            seconds[i] += counts[i] * dt
        free = self._free_sum
        self.free_total += free * dt
        self.fragmented_total += self._fragmented * dt
        self.last = now
        if len(self.samples) < _MAX_SAMPLES:
            self.samples.append((start, *counts, free))

    def close(self, end: float) -> None:
        """Integrate up to `end` and record the states that hold there (the figure's last step)."""
        self.advance(end)
        if len(self.samples) < _MAX_SAMPLES:
            self.samples.append((end, *self.counts, float(self._free.sum())))

    def _compute_fragmented(self) -> float:
        """The free GPUs when no job waiting fits in them (pods of its size per node, summed), else 0."""
        for size, needs in self.needs.items():
            if size <= 0:
                return 0.0  # a job asking no GPU could use the room
            fitting = self._fitting.get(size)
            if fitting is None:
                fitting = self._fitting[size] = float((self._free // size).sum())
            if fitting >= min(needs):
                return 0.0  # a job waiting fits
        return self._free_sum if self.needs else 0.0

    @property
    def totals(self) -> dict[str, float]:
        """GPU-seconds per state so far."""
        return dict(zip(STATES, self.seconds, strict=True))

    def shift(self, old: tuple[float, ...], new: tuple[float, ...]) -> None:
        """One job's GPUs moved from the states `old` to `new` (both the first JOB_STATES of STATES)."""
        counts = self.counts
        for i in range(JOB_STATES):
            counts[i] += new[i] - old[i]

    def _set_free(self, node: int, free: float) -> None:
        old = float(self._free[node])
        fitting = self._fitting
        for size in fitting:
            fitting[size] += free // size - old // size
        self._free[node] = free
        self._free_sum += free - old
        self._dirty = True

    def take(self, node: int, gpus: float) -> None:
        self._set_free(node, float(self._free[node]) - gpus)

    def give(self, node: int, gpus: float) -> None:
        self._set_free(node, float(self._free[node]) + gpus)

    def terminating(self, gpus: float) -> None:
        """An evicted pod's GPUs stay allocated, without progress, until it leaves (`left`)."""
        self.counts[TERMINATING] += gpus

    def left(self, node: int, gpus: float) -> None:
        """A terminating pod is gone: its GPUs are free."""
        self.counts[TERMINATING] -= gpus
        self.give(node, gpus)

    def node_down(self, node: int) -> None:
        """A failed node's GPUs are neither free nor allocated until it is back."""
        self.take(node, float(self.node_gpus[node]))

    def node_up(self, node: int) -> None:
        self.give(node, float(self.node_gpus[node]))

    def waiting(self, old: tuple[float, int] | None, new: tuple[float, int] | None) -> None:
        """A job's (GPUs per pod, pods needed at once) while it waits for room changed from `old` to `new`."""
        for entry, delta in ((old, -1), (new, 1)):
            if entry is None:
                continue
            size, need = entry
            needs = self.needs.get(size)
            if needs is None:
                needs = self.needs[size] = {}
            jobs = needs.get(need, 0) + delta
            if jobs:
                needs[need] = jobs
            else:
                del needs[need]
                if not needs:
                    del self.needs[size]
                    self._fitting.pop(size, None)  # nobody waits with this size: no need to keep its count
        self._dirty = True
