"""Filter and score one pod against every node at once, and pick a node (upstream's SchedulePod).

Pods are grouped into equivalence classes by their signature (same requests, selector, affinity and
tolerations). A class keeps its static filter verdict (unschedulable, taints, affinity) and its resource fit
and score per node; when the snapshot changes, only the changed columns are recomputed. This is what makes a
1,000-pod gang cost about as much as one pod per node touched.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from .domains import DomainSums
from .plugins import (
    BoolArray,
    balanced_allocation,
    node_affinity,
    node_resources_fit,
    node_unschedulable,
    taint_toleration,
)
from .podinfo import PodInfo
from .snapshot import PodVector, Snapshot

__all__ = ["Evaluator", "FitFailure", "ScoringStrategy"]

ScoringStrategy = str  # "LeastAllocated" (upstream default) or "MostAllocated"
_MAX_CHANGE_LOG = 200_000


@dataclass(slots=True)
class FitFailure:
    """No node fits: per-reason node counts, rendered as upstream's FitError."""

    nodes: int
    histogram: Counter[str] = field(default_factory=Counter)

    def message(self) -> str:
        if self.nodes == 0:
            return "no nodes available to schedule pods"
        parts = sorted(f"{count} {reason}" for reason, count in self.histogram.items())
        tail = f" {', '.join(parts)}." if parts else ""
        return f"0/{self.nodes} nodes are available:{tail}"


@dataclass(slots=True, eq=False)
class _Class:
    key: Hashable  # the pods' equivalence signature
    vec: PodVector
    static_ok: BoolArray
    static_rejections: list[tuple[BoolArray, str]]
    taint_counts: npt.NDArray[np.int64] | None
    affinity_weights: npt.NDArray[np.int64] | None
    masked: npt.NDArray[np.int64]  # resource + balance score where the pod fits, -1 where it does not
    synced: int


class Evaluator:
    """Finds nodes for pods on one Snapshot. Not thread-safe; reads the snapshot, never changes it."""

    def __init__(self, snap: Snapshot, rng: np.random.Generator, scoring: ScoringStrategy = "LeastAllocated"):
        if scoring not in ("LeastAllocated", "MostAllocated"):
            raise ValueError(f"unknown scoring strategy {scoring!r}")
        self.snap = snap
        self.rng = rng
        self._resource_score = (
            node_resources_fit.least_allocated
            if scoring == "LeastAllocated"
            else node_resources_fit.most_allocated
        )
        self._classes: dict[Hashable, _Class] = {}
        self._domain_sums: dict[tuple[Hashable, str], DomainSums] = {}
        self._labelled: dict[str, BoolArray] = {}
        self.root_placements: dict[str, list[Any]] = {}  # topology key -> placements over all nodes
        self._last_mask: BoolArray | None = None
        self._last_scope: npt.NDArray[np.intp] = np.zeros(0, dtype=np.intp)

    def _dynamic(self, c: _Class, cols: npt.NDArray[np.intp] | slice | set[int]) -> None:
        """Refresh fit and score on `cols`. A handful of columns (the usual case: the node the previous pod
        went to) is cheaper in scalar code than in numpy calls; both paths compute the same integers."""
        snap = self.snap
        if not isinstance(cols, set):
            fit = c.static_ok[cols] & node_resources_fit.fits(snap, c.vec, cols)
            score = self._resource_score(snap, c.vec, cols) * node_resources_fit.WEIGHT + (
                balanced_allocation.score(snap, c.vec, cols) * balanced_allocation.WEIGHT
            )
            c.masked[cols] = np.where(fit, score, -1)
            return
        most = self._resource_score is node_resources_fit.most_allocated
        for col in cols:
            if not (c.static_ok[col] and node_resources_fit.fits_one(snap, c.vec, col)):
                c.masked[col] = -1
                continue
            c.masked[col] = node_resources_fit.score_one(
                snap, c.vec, col, most
            ) * node_resources_fit.WEIGHT + (
                balanced_allocation.score_one(snap, c.vec, col) * balanced_allocation.WEIGHT
            )

    def _class(self, pi: PodInfo) -> _Class:
        snap = self.snap
        if len(snap.changed) > _MAX_CHANGE_LOG:
            snap.changed.clear()
            for c in self._classes.values():
                c.synced = -1
        cached = self._classes.get(pi.signature)
        if cached is not None:
            c = cached
        else:
            spec = pi.pod.spec
            tolerations = list(spec.tolerations or [])
            rejections = (
                node_affinity.prefilter_nodes(snap, spec)  # nodes PreFilter leaves out get only its reason
                + node_unschedulable.filter_nodes(snap, tolerations)
                + taint_toleration.filter_nodes(snap, tolerations)
                + node_affinity.filter_nodes(snap, spec)
            )
            static_ok = np.ones(len(snap), dtype=bool)
            for mask, _ in rejections:
                static_ok &= ~mask
            n = len(snap)
            c = _Class(
                key=pi.signature,
                vec=snap.vector(pi.requests, pi.nonzero),
                static_ok=static_ok,
                static_rejections=rejections,
                taint_counts=taint_toleration.prefer_no_schedule_counts(snap, tolerations),
                affinity_weights=node_affinity.preferred_weights(snap, spec),
                masked=np.full(n, -1, dtype=np.int64),
                synced=-1,
            )
            self._classes[pi.signature] = c
        if c.synced < 0:
            self._dynamic(c, slice(None))
        elif c.synced < len(snap.changed):
            pending = snap.changed[c.synced :]
            if len(pending) <= 8:
                self._dynamic(c, set(pending))
            else:
                self._dynamic(c, np.unique(np.asarray(pending, dtype=np.intp)))
        c.synced = len(snap.changed)
        return c

    def domain_sums(
        self, name: Hashable, key: str, values_of: Callable[[npt.NDArray[np.intp]], npt.NDArray[np.int64]]
    ) -> DomainSums:
        """The DomainSums called `name` for topology key `key`, created on first use and then kept."""
        sums = self._domain_sums.get((name, key))
        if sums is None:
            sums = DomainSums(self.snap, key, values_of)
            self._domain_sums[(name, key)] = sums
        return sums

    def labelled(self, key: str) -> BoolArray:
        """Nodes that carry label `key` (the same array object on every call)."""
        mask = self._labelled.get(key)
        if mask is None:
            mask = self.snap.label_codes(key) >= 0
            self._labelled[key] = mask
        return mask

    def equivalence_class(self, pi: PodInfo) -> _Class:
        """The pod's class, refreshed: static verdict (`static_ok`), vector (`vec`), fit and score."""
        return self._class(pi)

    def vector(self, pi: PodInfo) -> PodVector:
        cached = self._classes.get(pi.signature)
        return cached.vec if cached is not None else self._class(pi).vec

    def _scope(self, candidates: BoolArray) -> npt.NDArray[np.intp]:
        """Indexes of the candidate nodes; a cycle passes the same mask for every pod, so keep the last."""
        if candidates is not self._last_mask:
            self._last_mask, self._last_scope = candidates, np.flatnonzero(candidates)
        return self._last_scope

    def _nominated_node(self, pi: PodInfo, c: _Class, candidates: BoolArray | None) -> int | None:
        """Upstream's evaluateNominatedNode: a pod nominated by preemption takes its nominated node, unscored,
        whenever it still fits there - so the room preemption made for it is the room it gets."""
        name = pi.pod.status.nominatedNodeName if pi.pod.status is not None else None
        node = self.snap.index.get(name) if name else None
        if node is None or c.masked[node] < 0 or (candidates is not None and not candidates[node]):
            return None
        return node

    def find_node(self, pi: PodInfo, candidates: BoolArray | None = None) -> int | FitFailure:
        """The best node for `pi` among `candidates` (all nodes when None), or why there is none.

        Ties are broken by the generator among the tied nodes in node order, whether or not a candidate
        mask restricts them, so the same state and seed give the same node."""
        c = self._class(pi)
        nominated = self._nominated_node(pi, c, candidates)
        if nominated is not None:
            return nominated
        scope = None if candidates is None else self._scope(candidates)
        masked = c.masked if scope is None else c.masked[scope]
        if c.taint_counts is None and c.affinity_weights is None:
            top = masked.max() if masked.size else -1
            if top < 0:
                return self._failure(c, candidates)
            best = np.flatnonzero(masked == top)
            pick = int(best[0] if best.size == 1 else best[self.rng.integers(best.size)])
            return pick if scope is None else int(scope[pick])
        idx = np.flatnonzero(masked >= 0)
        if idx.size == 0:
            return self._failure(c, candidates)
        nodes = idx if scope is None else scope[idx]
        total = masked[idx].copy()
        if c.taint_counts is not None:
            counts = c.taint_counts[nodes]
            top = counts.max()
            total += taint_toleration.WEIGHT * (100 - counts * 100 // top if top > 0 else 100)
        if c.affinity_weights is not None:
            weights = c.affinity_weights[nodes]
            top = weights.max()
            if top > 0:
                total += node_affinity.WEIGHT * (weights * 100 // top)
        best = np.flatnonzero(total == total.max())
        return int(nodes[best[0] if best.size == 1 else best[self.rng.integers(best.size)]])

    def _failure(self, c: _Class, candidates: BoolArray | None) -> FitFailure:
        snap = self.snap
        considered = np.ones(len(snap), dtype=bool) if candidates is None else candidates.copy()
        failure = FitFailure(int(considered.sum()))
        remaining = considered.copy()
        for mask, reason in c.static_rejections:
            hit = remaining & mask
            if hit.any():
                failure.histogram[reason] += int(hit.sum())
                remaining &= ~hit
        free = snap.alloc - snap.used
        for row, v in c.vec.rows:
            short = remaining & (free[row] < v)
            if short.any():
                reason = "Too many pods" if row == 2 else f"Insufficient {snap.resources[row]}"
                failure.histogram[reason] += int(short.sum())
        return failure
