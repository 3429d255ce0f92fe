"""NodeResourcesFit: requests must fit in allocatable minus requested; LeastAllocated (default) or
MostAllocated scoring over cpu and memory with weight 1 each, in upstream's integer arithmetic: the
per-resource scores are averaged over the resources the node offers (a resource of allocatable 0 is left out
of the sum and of the weights, as least/mostResourceScorer do; a node offering neither scores 0)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeAlias

import numpy as np

from ..snapshot import CPU, MEMORY, PODS, PodVector, Snapshot
from . import BoolArray

if TYPE_CHECKING:
    import numpy.typing as npt

NAME = "NodeResourcesFit"
WEIGHT = 1
MAX_SCORE = 100
Int64Array: TypeAlias = "npt.NDArray[np.int64]"


def fits(snap: Snapshot, vec: PodVector, cols: npt.NDArray[np.intp] | slice = slice(None)) -> BoolArray:
    free = snap.alloc[:, cols] - snap.used[:, cols]
    ok: BoolArray = np.ones(free.shape[1], dtype=bool)
    for row, v in vec.rows:
        ok &= free[row] >= v
    return ok


def fits_one(alloc: Sequence[int], used: Sequence[int], vec: PodVector) -> bool:
    """`fits` on one node, given its allocatable and used amounts per resource row (Snapshot.state)."""
    return all(alloc[row] - used[row] >= v for row, v in vec.rows)


def score_one(alloc: Sequence[int], nonzero_used: Sequence[int], vec: PodVector, most_allocated: bool) -> int:
    """least_allocated / most_allocated for one node, given its column of `alloc` and `nonzero_used`
    (Snapshot.state), in the same integer arithmetic."""
    total = offered = 0
    for cap, req in (
        (alloc[CPU], nonzero_used[0] + vec.nonzero_cpu),
        (alloc[MEMORY], nonzero_used[1] + vec.nonzero_mem),
    ):
        if cap <= 0:
            continue
        offered += 1
        if most_allocated:
            total += min(req, cap) * MAX_SCORE // cap
        elif req <= cap:
            total += (cap - req) * MAX_SCORE // cap
    return total // offered if offered else 0


def insufficient(snap: Snapshot, row: int) -> str:
    """How upstream's fitsRequest words a resource the node lacks (its InsufficientResource reason)."""
    return "Too many pods" if row == PODS else f"Insufficient {snap.resources[row]}"


def _requested(snap: Snapshot, vec: PodVector, cols: npt.NDArray[np.intp] | slice) -> tuple[Int64Array, ...]:
    cpu = snap.nonzero_used[0, cols] + vec.nonzero_cpu
    mem = snap.nonzero_used[1, cols] + vec.nonzero_mem
    return cpu, mem


def least_allocated(snap: Snapshot, vec: PodVector, cols: npt.NDArray[np.intp] | slice) -> Int64Array:
    total = np.zeros(snap.alloc[CPU, cols].shape, dtype=np.int64)
    for row, req in zip((CPU, MEMORY), _requested(snap, vec, cols), strict=True):
        cap = snap.alloc[row, cols]
        safe = np.maximum(cap, 1)
        total += np.where((cap > 0) & (req <= cap), (cap - req) * MAX_SCORE // safe, 0)
    return _average(snap, cols, total)


def most_allocated(snap: Snapshot, vec: PodVector, cols: npt.NDArray[np.intp] | slice) -> Int64Array:
    total = np.zeros(snap.alloc[CPU, cols].shape, dtype=np.int64)
    for row, req in zip((CPU, MEMORY), _requested(snap, vec, cols), strict=True):
        cap = snap.alloc[row, cols]
        safe = np.maximum(cap, 1)
        total += np.where(cap > 0, np.minimum(req, cap) * MAX_SCORE // safe, 0)
    return _average(snap, cols, total)


def _average(snap: Snapshot, cols: npt.NDArray[np.intp] | slice, total: Int64Array) -> Int64Array:
    """`total` over the number of the two resources each node offers (0 where it offers neither)."""
    offered = (snap.alloc[CPU, cols] > 0).astype(np.int64) + (snap.alloc[MEMORY, cols] > 0)
    return np.where(offered > 0, total // np.maximum(offered, 1), 0)
