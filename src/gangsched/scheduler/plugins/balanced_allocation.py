"""NodeResourcesBalancedAllocation: prefer nodes whose cpu and memory fractions stay close (weight 1)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..snapshot import CPU, MEMORY, PodVector, Snapshot

NAME = "NodeResourcesBalancedAllocation"
WEIGHT = 1


def score(snap: Snapshot, vec: PodVector, cols: npt.NDArray[np.intp] | slice) -> npt.NDArray[np.int64]:
    """(1 - |f_cpu - f_mem| / 2) * 100 with fractions capped at 1, as upstream for two resources; a node
    offering only one of them scores 100 (a single fraction has no spread)."""
    cap_cpu, cap_mem = snap.alloc[CPU, cols], snap.alloc[MEMORY, cols]
    f_cpu = np.minimum((snap.used[CPU, cols] + vec.cpu) / np.maximum(cap_cpu, 1), 1.0)
    f_mem = np.minimum((snap.used[MEMORY, cols] + vec.memory) / np.maximum(cap_mem, 1), 1.0)
    std = np.where((cap_cpu > 0) & (cap_mem > 0), np.abs(f_cpu - f_mem) / 2, 0.0)
    return ((1 - std) * 100).astype(np.int64)


def score_one(snap: Snapshot, vec: PodVector, col: int) -> int:
    """`score` for one node, with the same float64 arithmetic."""
    cap_cpu, cap_mem = int(snap.alloc[CPU, col]), int(snap.alloc[MEMORY, col])
    if cap_cpu <= 0 or cap_mem <= 0:
        return 100
    f_cpu = min((int(snap.used[CPU, col]) + vec.cpu) / cap_cpu, 1.0)
    f_mem = min((int(snap.used[MEMORY, col]) + vec.memory) / cap_mem, 1.0)
    return int((1 - abs(f_cpu - f_mem) / 2) * 100)
