"""Fairness between namespaces over a run: each namespace's share of the cluster's GPUs over time, and
Jain's fairness index of the weighted shares among the namespaces that want more.

The simulation logs every change (`ShareLog.held` when a namespace's bound GPUs change, `ShareLog.backlog`
when one of its jobs starts or stops waiting for room); `share_stats` integrates that exactly at the end,
as the GPU ledger does (metrics.py): the counts are constant between events, nothing is sampled.

Definitions (docs/simulate.md):
- share_i(t) = GPUs bound to namespace i's pods at t / the cluster's GPUs. Trace pods ask for GPUs only, so
  this is also their dominant share in DRF's sense (Ghodsi et al., NSDI 2011); weighted: share_i / w_i.
- a namespace is backlogged at t when at least one of its jobs waits for room (submitted, not all members
  bound, not ended): only a namespace that wants more can be wronged by getting less (max-min fairness).
- Jain's index at t (R. Jain, D. Chiu, W. Hawe, "A Quantitative Measure of Fairness and Discrimination for
  Resource Allocation in Shared Computer Systems", DEC-TR-301, 1984): J = (sum x)^2 / (n * sum x^2) over
  the n backlogged namespaces, x their weighted shares; 1 when they hold equal weighted shares, 1/n when one
  holds everything. It is defined at instants with at least two backlogged namespaces of which at least one
  holds GPUs; `jain_index` is its average over those instants, weighted by time, and `jain_seconds` how long
  they lasted (None and 0 when there were none).
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["ShareLog", "share_stats"]

SERIES_BINS = 200


@dataclass(slots=True)
class ShareLog:
    """Changes to each namespace's bound GPUs and waiting jobs, in time order (compact arrays)."""

    namespaces: dict[str, int] = field(default_factory=dict)
    times: array[float] = field(default_factory=lambda: array("d"))
    which: array[int] = field(default_factory=lambda: array("l"))
    gpus: array[float] = field(default_factory=lambda: array("d"))
    waiting: array[int] = field(default_factory=lambda: array("l"))

    def _log(self, now: float, namespace: str, gpus: float, waiting: int) -> None:
        index = self.namespaces.setdefault(namespace, len(self.namespaces))
        self.times.append(now)
        self.which.append(index)
        self.gpus.append(gpus)
        self.waiting.append(waiting)

    def held(self, now: float, namespace: str, gpus: float) -> None:
        """`namespace` holds `gpus` more (less when negative) GPUs from `now` on."""
        self._log(now, namespace, gpus, 0)

    def backlog(self, now: float, namespace: str, jobs: int) -> None:
        """`jobs` more (fewer when negative) of `namespace`'s jobs wait for room from `now` on."""
        self._log(now, namespace, 0.0, jobs)


def share_stats(
    log: ShareLog, total_gpus: float, end: float, weights: dict[str, float], bins: int = SERIES_BINS
) -> dict[str, Any]:
    """{"jain_index", "jain_seconds", "weights", "average_share": {ns: ...}, "series": {"t_s": [...],
    ns: [...]}}: the series holds each namespace's share averaged over `bins` equal intervals of [0, end],
    `t_s` their starts. Namespaces absent from `weights` weigh 1."""
    names = list(log.namespaces)
    n = len(names)
    w = np.array([weights.get(ns, 1.0) for ns in names], dtype=np.float64)
    result: dict[str, Any] = {"weights": dict(zip(names, w.tolist(), strict=True))}
    if not n or total_gpus <= 0 or end <= 0:
        return result | {"jain_index": None, "jain_seconds": 0.0, "average_share": {}, "series": {}}
    times = np.frombuffer(log.times, dtype=np.float64)
    which = np.array(log.which, dtype=np.int64)
    rows = np.arange(len(times))
    held = np.zeros((len(times), n))
    held[rows, which] = np.frombuffer(log.gpus, dtype=np.float64)
    waiting = np.zeros((len(times), n), dtype=np.int64)
    waiting[rows, which] = np.array(log.waiting, dtype=np.int64)
    np.cumsum(held, axis=0, out=held)  # the state from each event on
    np.cumsum(waiting, axis=0, out=waiting)
    dt = np.diff(np.append(times, end))  # how long each state lasted
    share = held / total_gpus
    # Jain's index over the backlogged namespaces, where defined.
    x = np.where(waiting > 0, share / w, 0.0)
    backlogged = (waiting > 0).sum(axis=1)
    sum_x, sum_x2 = x.sum(axis=1), (x * x).sum(axis=1)
    defined = (backlogged >= 2) & (sum_x2 > 0) & (dt > 0)
    jain = np.divide(sum_x * sum_x, backlogged * sum_x2, out=np.zeros(len(times)), where=defined)
    jain_seconds = float(dt[defined].sum())
    # Exact integrals of each share up to each event and up to each bin edge.
    before = np.vstack([np.zeros((1, n)), np.cumsum(share * dt[:, None], axis=0)])  # integral to event k
    edges = np.linspace(0.0, end, bins + 1)
    k = np.searchsorted(times, edges, side="right") - 1  # the last event at or before each edge
    last = np.maximum(k, 0)
    since = (edges - times[last])[:, None]
    at_edge = np.where(k[:, None] >= 0, before[last] + share[last] * since, 0.0)
    per_bin = np.diff(at_edge, axis=0) / np.diff(edges)[:, None]
    return result | {
        "jain_index": float((jain * dt)[defined].sum() / jain_seconds) if jain_seconds > 0 else None,
        "jain_seconds": jain_seconds,
        "average_share": {ns: float(before[-1, i] / end) for i, ns in enumerate(names)},
        "series": {"t_s": edges[:-1].tolist(), **{ns: per_bin[:, i].tolist() for i, ns in enumerate(names)}},
    }
