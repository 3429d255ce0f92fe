"""NodeResourcesBalancedAllocation: prefer nodes whose cpu and memory balance the pod improves (weight 1).
Upstream: plugins/noderesources/balanced_allocation.go (balancedResourceScorer), v1.37.2.

A node's balance is `int((1 - |f_cpu - f_mem| / 2) * 100)` over its requested fractions (capped at 1; a node
offering only one of the two has no spread: 100). The score weighs the balance with the pod against the
balance without it: `50 + (50 + with - without) / 2`, about 75 when the pod changes little, towards 100 when
it improves the balance, towards 50 when it worsens it. Requests are the pods' own (no non-zero defaults);
a pod requesting neither cpu nor memory is not scored at all (PreScore Skip: 0 on every node).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..snapshot import CPU, MEMORY, PodVector, Snapshot

if TYPE_CHECKING:
    import numpy.typing as npt

NAME = "NodeResourcesBalancedAllocation"
WEIGHT = 1
HALF_SCORE = 50  # MaxNodeScore / 2


def _balance(
    cpu: npt.NDArray[np.int64],
    mem: npt.NDArray[np.int64],
    cap_cpu: npt.NDArray[np.int64],
    cap_mem: npt.NDArray[np.int64],
) -> npt.NDArray[np.int64]:
    f_cpu = np.minimum(cpu / np.maximum(cap_cpu, 1), 1.0)
    f_mem = np.minimum(mem / np.maximum(cap_mem, 1), 1.0)
    std = np.where((cap_cpu > 0) & (cap_mem > 0), np.abs(f_cpu - f_mem) / 2, 0.0)
    return ((1 - std) * 100).astype(np.int64)


def score(snap: Snapshot, vec: PodVector, cols: npt.NDArray[np.intp] | slice) -> npt.NDArray[np.int64]:
    """Per node of `cols`, the score as upstream's balancedResourceScorer computes it."""
    cap_cpu, cap_mem = snap.alloc[CPU, cols], snap.alloc[MEMORY, cols]
    if vec.cpu == 0 and vec.memory == 0:
        return np.zeros(cap_cpu.shape, dtype=np.int64)
    used_cpu, used_mem = snap.used[CPU, cols], snap.used[MEMORY, cols]
    with_pod = _balance(used_cpu + vec.cpu, used_mem + vec.memory, cap_cpu, cap_mem)
    without = _balance(used_cpu, used_mem, cap_cpu, cap_mem)
    return HALF_SCORE + (HALF_SCORE + with_pod - without) // 2


def _balance_one(cpu: int, mem: int, cap_cpu: int, cap_mem: int) -> int:
    if cap_cpu <= 0 or cap_mem <= 0:
        return 100
    return int((1 - abs(min(cpu / cap_cpu, 1.0) - min(mem / cap_mem, 1.0)) / 2) * 100)


def score_one(alloc: Sequence[int], used: Sequence[int], vec: PodVector) -> int:
    """`score` for one node, given its column of `alloc` and `used` (Snapshot.state), with the same
    float64 arithmetic."""
    if vec.cpu == 0 and vec.memory == 0:
        return 0
    cap_cpu, cap_mem, used_cpu, used_mem = alloc[CPU], alloc[MEMORY], used[CPU], used[MEMORY]
    with_pod = _balance_one(used_cpu + vec.cpu, used_mem + vec.memory, cap_cpu, cap_mem)
    without = _balance_one(used_cpu, used_mem, cap_cpu, cap_mem)
    return HALF_SCORE + (HALF_SCORE + with_pod - without) // 2
