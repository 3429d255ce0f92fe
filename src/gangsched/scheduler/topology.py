"""Topology-aware placement (spec §4, KEP-5732): a group constrained to one value of a node label key.

Placements are the distinct values of the key among the parent placement's nodes (unlabelled nodes are
excluded). Each feasible placement is scored by PodGroupPodsCount (scheduled + proposed pods, normalised to
0..100 by the best) plus NodeResourcesFit MostAllocated over the placement's summed requested/allocatable
(0..100), weights 1; the highest total wins, ties broken by the seeded generator.

When every pending pod of the group is of one equivalence class, the outcome of the pod-by-pod cycle inside
a placement is known without running it: greedy placement fits min(pending, sum over nodes of how many such
pods each node still takes). That is a few vector operations over all nodes, grouped by domain code with
`bincount`, whatever the number of placements. Otherwise each placement runs the cycle and is reverted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .cycle import Code, GroupAttempt, GroupResult, feasibility, run_group_cycle
from .evaluator import Evaluator
from .plugins import BoolArray
from .snapshot import CPU, MEMORY, Snapshot

__all__ = ["Placement", "adaptive_placement_limit", "place_with_topology", "placements"]

MAX_SCORE = 100


@dataclass(frozen=True, slots=True)
class Placement:
    value: str
    nodes: BoolArray


def placements(snap: Snapshot, key: str, candidates: BoolArray | None) -> list[Placement]:
    """One placement per value of `key` among `candidates` (all nodes when None), in value order."""
    codes = snap.label_codes(key)
    valid = codes >= 0 if candidates is None else (codes >= 0) & candidates
    values = {code: value for value, code in snap.label_values.get(key, {}).items()}
    present = np.unique(codes[valid])
    out = [Placement(values[int(c)], valid & (codes == c)) for c in present]
    return sorted(out, key=lambda p: p.value)


def adaptive_placement_limit(n_placements: int, n_nodes: int) -> int:
    """Feasible placements upstream scores before choosing: max(1, n*max(5, 100 - nodes*9/500)/100)."""
    percent = max(5, 100 - n_nodes * 9 // 500)
    return max(1, n_placements * percent // 100)


def most_allocated(snap: Snapshot, nodes: BoolArray, extra_cpu: int = 0, extra_mem: int = 0) -> int:
    """MostAllocated over the placement's summed requested and allocatable, 0..100."""
    total = 0
    for row, extra in ((CPU, extra_cpu), (MEMORY, extra_mem)):
        alloc = int(snap.alloc[row, nodes].sum())
        if alloc > 0:
            total += min(int(snap.used[row, nodes].sum()) + extra, alloc) * MAX_SCORE // alloc
    return total // 2


def choose(scores: list[tuple[int, int]], ev: Evaluator) -> int:
    """Index of the best (pods count, most allocated) pair by normalised sum; ties at random."""
    best_pods = max(p for p, _ in scores) or 1
    totals = np.array([p * MAX_SCORE // best_pods + m for p, m in scores])
    winners = np.flatnonzero(totals == totals.max())
    return int(winners[0] if winners.size == 1 else winners[ev.rng.integers(winners.size)])


def _single_class_capacity(
    ev: Evaluator, attempt: GroupAttempt, codes: npt.NDArray[np.int32], valid: BoolArray
) -> tuple[npt.NDArray[np.int64], int, int]:
    """Per domain code: how many more pods of the group's one class fit; plus the class's cpu/mem request."""
    snap = ev.snap
    c = ev.equivalence_class(attempt.pods[0])
    ok = valid & c.static_ok
    per_node = np.full(len(snap), np.iinfo(np.int64).max, dtype=np.int64)
    for row, v in c.vec.rows:
        per_node = np.minimum(per_node, (snap.alloc[row] - snap.used[row]) // v)
    per_node = np.where(ok, np.maximum(per_node, 0), 0)
    size = int(codes.max()) + 1 if codes.size else 0
    capacity = np.bincount(codes[ok], weights=per_node[ok], minlength=size).astype(np.int64)
    req = dict(c.vec.rows)
    return capacity, req.get(CPU, 0), req.get(MEMORY, 0)


def _fast(
    ev: Evaluator, attempt: GroupAttempt, key: str, options: list[Placement], limit: int | None
) -> tuple[list[int], list[tuple[int, int]]]:
    """Feasible placement indexes and their scores, for a group of one equivalence class."""
    snap = ev.snap
    codes = snap.label_codes(key)
    valid = np.zeros(len(snap), dtype=bool)
    for p in options:
        valid |= p.nodes
    capacity, cpu, mem = _single_class_capacity(ev, attempt, codes, valid)
    feasible, scores = [], []
    for i, p in enumerate(options):
        code = snap.label_values[key][p.value]
        placed = min(len(attempt.pods), int(capacity[code]) if code < capacity.size else 0)
        code_ok, _ = feasibility(attempt, attempt.scheduled + placed, 0)
        if code_ok != Code.SUCCESS or placed == 0:
            continue
        feasible.append(i)
        scores.append((attempt.scheduled + placed, most_allocated(snap, p.nodes, placed * cpu, placed * mem)))
        if limit is not None and len(feasible) >= limit:
            break
    return feasible, scores


def _full(
    ev: Evaluator, attempt: GroupAttempt, options: list[Placement], limit: int | None
) -> tuple[list[int], list[tuple[int, int]], GroupResult | None]:
    """Run the cycle in every placement (reverting each); also the first result, for the failure message."""
    feasible, scores, first = [], [], None
    for i, p in enumerate(options):
        result = run_group_cycle(ev, attempt, p.nodes)
        first = first or result
        if result.code == Code.SUCCESS:
            feasible.append(i)
            scores.append((attempt.scheduled + len(result.placed), most_allocated(ev.snap, p.nodes)))
            result.revert()
            if limit is not None and len(feasible) >= limit:
                break
    return feasible, scores, first


def place_with_topology(
    ev: Evaluator,
    attempt: GroupAttempt,
    key: str,
    candidates: BoolArray | None,
    fixed_domains: set[str],
    *,
    use_limit: bool = False,
) -> GroupResult:
    """The group cycle under a topology constraint: choose the best placement and reserve the group in it.

    `fixed_domains` are the values of `key` on nodes where members already run: they pin the group there.
    On success the reservations stay (undo with `result.revert`); otherwise the snapshot is unchanged."""
    snap = ev.snap
    if len(fixed_domains) > 1:
        return GroupResult(
            Code.ERROR,
            f"pods of the group are already scheduled in more than one {key} domain: "
            + ", ".join(sorted(fixed_domains)),
        )
    options = placements(snap, key, candidates)
    if fixed_domains:
        options = [p for p in options if p.value in fixed_domains]
    if not options:
        return GroupResult(Code.UNSCHEDULABLE, "0/0 placements are available")
    limit = adaptive_placement_limit(len(options), len(snap)) if use_limit else None
    one_class = len({pi.signature for pi in attempt.pods}) == 1
    first: GroupResult | None = None
    if one_class:
        feasible, scores = _fast(ev, attempt, key, options, limit)
    else:
        feasible, scores, first = _full(ev, attempt, options, limit)
    if not feasible:
        first = first or run_group_cycle(ev, attempt, options[0].nodes)  # failed: left nothing behind
        first.code = Code.UNSCHEDULABLE if first.code != Code.ERROR else first.code
        first.message = f"0/{len(options)} placements are available, first placement status: {first.message}"
        first.placed = []
        return first
    best = options[feasible[choose(scores, ev)]]
    result = run_group_cycle(ev, attempt, best.nodes)
    if result.code == Code.SUCCESS:
        result.domain = best.value
    return result
