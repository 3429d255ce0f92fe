"""NodeResourcesBalancedAllocation: prefer nodes whose cpu and memory fractions stay close (weight 1)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ..snapshot import CPU, MEMORY, PodVector, Snapshot

NAME = "NodeResourcesBalancedAllocation"
WEIGHT = 1


def score(snap: Snapshot, vec: PodVector, cols: npt.NDArray[np.intp] | slice) -> npt.NDArray[np.int64]:
    """(1 - |f_cpu - f_mem| / 2) * 100 with fractions capped at 1, as upstream for two resources."""
    req = {r: v for r, v in vec.rows}
    fractions = []
    for row in (CPU, MEMORY):
        cap = snap.alloc[row, cols].astype(np.float64)
        used = snap.used[row, cols] + req.get(row, 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            fractions.append(np.where(cap > 0, np.minimum(used / cap, 1.0), np.nan))
    cpu, mem = fractions
    std = np.where(np.isnan(cpu) | np.isnan(mem), 0.0, np.abs(np.nan_to_num(cpu) - np.nan_to_num(mem)) / 2)
    return ((1 - std) * 100).astype(np.int64)
