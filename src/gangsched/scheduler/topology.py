"""Topology-aware placement (KEP-5732): a group constrained to one value of a node label key.

Placements are the distinct values of the key among the parent placement's nodes (unlabelled nodes are
excluded), in value order. Each feasible placement is scored by PodGroupPodsCount (scheduled + proposed pods,
normalised to 0..100 by the best) plus NodeResourcesFit MostAllocated over the placement's summed
requested/allocatable (0..100), weights 1; the highest total wins, ties broken by the seeded generator.

When every pending pod of the group is of one equivalence class, no pods-stage plugin reads other pods
for it (no ports, spread or pod affinity) and it uses no PersistentVolumeClaim or ResourceClaim, the outcome
of the pod-by-pod cycle inside a placement is known without running it: greedy placement fits min(pending,
sum over the placement's nodes of how many such pods each node still takes). Over all nodes, those
per-domain sums and each placement's score from them are kept from group to group and refreshed only where
nodes changed (domains.py: usually the one domain the previous group went to); inside a parent placement
they are summed afresh. Otherwise each placement runs the cycle and is reverted. Only the chosen placement
runs the real cycle, which picks the nodes; when it is a whole domain (no parent placement), find_node picks
among the best nodes kept for that domain (domains.DomainBests) rather than scanning its nodes for each pod.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
from msgspec import Struct

from . import domains
from .cycle import (
    ERROR,
    GROUP_UNSCHEDULABLE,
    SUCCESS,
    UNSCHEDULABLE,
    GroupAttempt,
    GroupResult,
    group_unschedulable,
    run_group_cycle,
)
from .domains import DomainSums
from .evaluator import Evaluator
from .plugins import BoolArray
from .podinfo import PodInfo
from .snapshot import CPU, MEMORY, Snapshot

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = [
    "NO_PLACEMENTS",
    "UNPINNED",
    "Pin",
    "Placement",
    "adaptive_placement_limit",
    "choose",
    "in_one_placement",
    "no_placement_fits",
    "pin",
    "place_with_topology",
    "placements",
    "placements_status",
    "several_domains",
]

MAX_SCORE = 100
# RunPlacementGeneratePlugins when the plugin generates no placement: no node in the parent placement (or in
# the domain members already run in) carries the key. Unschedulable, without errPodGroupUnschedulable.
NO_PLACEMENTS = "no feasible placements found"


# TopologyPlacement.GeneratePlacements' error when it cannot tell the domain of the members already running
PIN_ERROR = "cannot determine domain for already scheduled pods: "


def several_domains(domains: set[str]) -> str:
    """TopologyPlacement's error for members already running in more than one domain (an Error status).
    Upstream names the first two domains in the order it meets the running pods; here in sorted order."""
    first, second = sorted(domains)[:2]
    return f"{PIN_ERROR}more than 1 domain found for pod group: {first}, {second}"


class Pin(Struct, frozen=True):
    """What the members already running say about a constrained group's placements: the domains (values
    of the key) they run in, which its placements are restricted to, or the Error upstream returns instead
    of placements (`error`)."""

    domains: frozenset[str] = frozenset()
    error: str | None = None


UNPINNED = Pin()  # no member running: every placement is open


def pin(
    running: Iterable[tuple[str, str, str]], key: str, labels_of: Callable[[str], Mapping[str, str] | None]
) -> Pin:
    """Upstream's TopologyPlacement.getScheduledPodsTopologyDomain over the members already running, given as
    (namespace, name, node); `labels_of` gives a node's labels, None for a node that is gone. An Error when
    a member's node is gone (`getting node for pod`) or lacks the key (`no topology domain found for pod`),
    or when the members run in more than one domain. Upstream meets the pods in no set order and stops at
    the first of these; here they are met in (namespace, name) order."""
    domains: set[str] = set()
    for namespace, name, node in sorted(running):
        labels = labels_of(node)
        if labels is None:
            lister = f'nodeinfo not found for node name "{node}"'  # the snapshot's Get
            return Pin(frozenset(domains), f"{PIN_ERROR}getting node for pod {namespace}/{name}: {lister}")
        value = labels.get(key)
        if value is None:
            return Pin(frozenset(domains), f"{PIN_ERROR}no topology domain found for pod {namespace}/{name}")
        domains.add(value)
        if len(domains) > 1:
            return Pin(frozenset(domains), several_domains(domains))
    return Pin(frozenset(domains))


Int64Array: TypeAlias = "npt.NDArray[np.int64]"
# (feasible placements' indexes among the options, their pods counts, their MostAllocated), as `choose` reads
_Scored = tuple[list[int], list[int], list[int]]


class Placement(Struct, eq=False):
    """The nodes among `within` whose label code is `code`; the mask is built when first asked for, then
    kept. `domain` (key, code) when `within` is every node with the key: the placement is that whole
    domain (find_node keeps the best node per such domain).

    The placements over all nodes are kept as long as the evaluator's snapshot (`placements`), so the mask
    of a domain that group after group goes to is built once (one byte per node for each domain chosen)."""

    value: str
    code: int
    codes: npt.NDArray[np.int32]
    within: BoolArray
    domain: tuple[str, int] | None = None
    _nodes: BoolArray | None = None

    @property
    def nodes(self) -> BoolArray:
        if self._nodes is None:
            self._nodes = self.within & (self.codes == self.code)
        return self._nodes


def placements(ev: Evaluator, key: str, candidates: BoolArray | None) -> list[Placement]:
    """One placement per value of `key` among `candidates` (all nodes when None), in value order. Without
    candidates the list is the same for every group of the cycle's snapshot, and kept."""
    snap = ev.snap
    if candidates is None:
        cached = ev.root_placements.get(key)
        if cached is None:
            codes = snap.label_codes(key)
            cached = [Placement(v, c, codes, ev.labelled(key), (key, c)) for v, c in snap.domains(key)[2]]
            ev.root_placements[key] = cached
        return cached
    codes = snap.label_codes(key)
    valid = (codes >= 0) & candidates
    _, _, ordered = snap.domains(key)
    if not ordered:
        return []
    present = np.bincount(codes[valid], minlength=len(ordered)) > 0
    return [Placement(v, c, codes, valid) for v, c in ordered if present[c]]


def adaptive_placement_limit(n_placements: int, n_nodes: int) -> int:
    """Feasible placements upstream scores before choosing: max(1, n*max(5, 100 - nodes*9/500)/100)."""
    percent = max(5, 100 - n_nodes * 9 // 500)
    return max(1, n_placements * percent // 100)


def most_allocated(snap: Snapshot, nodes: BoolArray) -> int:
    """MostAllocated over the placement's summed requested and allocatable, 0..100: upstream's
    scorePlacement hands the sums to the same mostResourceScorer as a node's score, which averages over the
    resources offered (allocatable > 0) only, with requests counted as that scorer counts them (a container
    without a cpu or memory request counts upstream's defaults, 100m and 200Mi: `nonzero_used`)."""
    total = offered = 0
    for row in (CPU, MEMORY):
        alloc = int(snap.alloc[row, nodes].sum())
        if alloc > 0:
            offered += 1
            total += min(int(snap.nonzero_used[row, nodes].sum()), alloc) * MAX_SCORE // alloc
    return total // offered if offered else 0


def choose(pods: Sequence[int], most: Sequence[int], ev: Evaluator) -> int:
    """Index of the best placement: pods count normalised by the best, plus MostAllocated; ties at random
    among the tied placements in order. Called once per group on a few dozen placements: in plain Python,
    as the dozen numpy calls it would take cost more than the work."""
    best_pods = max(pods) or 1
    totals = [p * MAX_SCORE // best_pods + m for p, m in zip(pods, most, strict=True)]
    top = max(totals)
    if totals.count(top) == 1:
        return totals.index(top)
    winners = [i for i, total in enumerate(totals) if total == top]
    return winners[int(ev.rng.integers(len(winners)))]


# Node states a `_ClassRoom` keeps its per-node values for (then dropped and started over)
_STATE_MEMO = 4096


class _ClassRoom:
    """Per node, for one equivalence class `c`: how many more of its pods fit (0 where its static filters
    reject the node), allocatable cpu and memory, requested cpu and memory as MostAllocated counts them
    (`nonzero_used`). A NodeValues (domains.py): `many` and `one` give the same integers."""

    def __init__(self, snap: Snapshot, c: Any) -> None:  # c: the evaluator's equivalence class
        self.snap, self.c = snap, c
        # all the class's resource rows in one block (it always has the pods row, so the minimum over rows
        # is the per-resource minimum a loop would take)
        self.rows = np.array([row for row, _ in c.vec.rows], dtype=np.intp)
        self.per_row = np.array([[v] for _, v in c.vec.rows], dtype=np.int64)
        # `one` of the nodes the class's static filters admit, by node state (Snapshot.state, as the class
        # read it when it refreshed the node): the pods of a template fill nodes of one kind in the same
        # few steps, so most nodes a group changed are found here
        self._by_state: dict[tuple[int, ...], list[int]] = {}

    def many(self, cols: npt.NDArray[np.intp]) -> Int64Array:
        snap, c = self.snap, self.c
        block = np.ix_(self.rows, cols)
        free = ((snap.alloc[block] - snap.used[block]) // self.per_row).min(axis=0)
        capacity = np.where(c.static_ok[cols], np.maximum(free, 0), 0)
        out: Int64Array = np.vstack(
            (capacity, snap.alloc[CPU : MEMORY + 1, cols], snap.nonzero_used[:, cols])
        )
        return out

    def one(self, col: int) -> list[int]:
        """`many` of node `col` alone, as Python ints (a list kept and shared: not to be changed)."""
        snap, c = self.snap, self.c
        if not c.static_cells[col]:
            return [0, *snap.scored_amounts(col)]
        by_state, state = self._by_state, c.state(snap, col)
        kept = by_state.get(state)
        if kept is None:
            if len(by_state) >= _STATE_MEMO:
                by_state.clear()
            kept = by_state[state] = [snap.holds(col, c.vec), *snap.scored_amounts(col)]
        return kept


def _scores(sums: Int64Array, want: tuple[int, int, int, int, int]) -> tuple[Int64Array, Int64Array]:
    """(pods count, MostAllocated) of the placements whose `_ClassRoom` sums are the columns of `sums`, for
    `want` = (pending pods, pods already scheduled, pods needed, the class's cpu and memory as MostAllocated
    counts them); pods count -1 where infeasible. Greedy placement fits min(pending, room); a placement is
    feasible when it places a pod and reaches the count needed. MostAllocated as `most_allocated` computes
    it over the placement, with the pods placed counted in."""
    pending, scheduled, needed, cpu, mem = want
    placed = np.minimum(pending, sums[0])
    pods = scheduled + placed
    pods[(placed <= 0) | (pods < needed)] = -1
    allocs = sums[1:3]
    used = sums[3:5] + placed * np.array([[cpu], [mem]], dtype=np.int64)
    most = np.where(allocs > 0, np.minimum(used, allocs) * MAX_SCORE // np.maximum(allocs, 1), 0).sum(axis=0)
    offered = (allocs > 0).sum(axis=0)  # as most_allocated: the average over the resources offered
    most = np.where(offered > 0, most // np.maximum(offered, 1), 0)
    return pods, most


def _score_one(sums: list[int], want: tuple[int, int, int, int, int]) -> tuple[int, int]:
    """`_scores` of one placement in scalar code, the same integers: the few placements a group changed are
    refreshed so, cheaper than a dozen numpy calls on one column."""
    room, alloc_cpu, alloc_mem, used_cpu, used_mem = sums
    pending, scheduled, needed, cpu, mem = want
    placed = min(pending, room)
    pods = scheduled + placed if placed > 0 and scheduled + placed >= needed else -1
    total = offered = 0
    for used, alloc in ((used_cpu + placed * cpu, alloc_cpu), (used_mem + placed * mem, alloc_mem)):
        if alloc > 0:
            offered += 1
            total += min(used, alloc) * MAX_SCORE // alloc
    return pods, total // offered if offered else 0


class _KeptScores:
    """`_scores` of every column of a DomainSums of `_ClassRoom`, for one `want`: refreshed only on the
    columns whose sums changed since (usually the one domain the previous group went to), as lists of
    Python ints.

    Also `choose`'s answer over every column (`winners`), kept the same way: the best pods count among the
    feasible columns (`_norm`), the best total and the columns that have it, in order. A refreshed column
    moves them in scalar code (the domain a group fills rises above the best total, or drops out of the
    ties) instead of a pass over every column; they are ranked again only when the best pods count may
    move or no tie is left."""

    def __init__(self, kept: DomainSums, want: tuple[int, int, int, int, int]) -> None:
        self.kept, self.want = kept, want
        self.rebuilds = -1
        self.synced = 0
        self.pods: list[int] = []
        self.most: list[int] = []
        self._norm = 0
        self._top = -1
        self._winners: list[int] = []
        self._ranked = False

    def current(self) -> tuple[list[int], list[int]]:
        kept = self.kept
        if self.rebuilds != kept.rebuilds:
            all_pods, all_most = _scores(kept.array(), self.want)
            self.pods, self.most = all_pods.tolist(), all_most.tolist()
            self.rebuilds, self.synced = kept.rebuilds, len(kept.touched)
            self._ranked = False
        elif self.synced < len(kept.touched):
            touched = set(kept.touched[self.synced :])
            if len(touched) <= domains.FEW:
                for column in touched:
                    self._set(column, *_score_one(kept.column_sums(column), self.want))
            else:
                columns = list(touched)
                new_pods, new_most = _scores(kept.array(columns), self.want)
                for column, p, m in zip(columns, new_pods.tolist(), new_most.tolist(), strict=True):
                    self._set(column, p, m)
            self.synced = len(kept.touched)
        return self.pods, self.most

    def winners(self) -> list[int]:
        """The columns `choose` would pick among over every column, in order (empty: none is feasible)."""
        self.current()
        if not self._ranked:
            self._rank()
        return self._winners

    def _set(self, column: int, pods: int, most: int) -> None:
        before = self.pods[column]
        self.pods[column], self.most[column] = pods, most
        if not self._ranked:
            return
        norm = self._norm
        if pods > norm or (before == norm and pods != norm):  # the normalisation may move
            self._ranked = False
            return
        total = pods * MAX_SCORE // (norm if norm > 0 else 1) + most if pods >= 0 else -1
        winners, top = self._winners, self._top
        if total > top:
            self._top, self._winners = total, [column]
            return
        i = bisect_left(winners, column)
        present = i < len(winners) and winners[i] == column
        if total == top and total >= 0 and not present:
            winners.insert(i, column)
        elif total < top and present:
            del winners[i]
            if not winners:  # the best total fell: find it again
                self._ranked = False

    def _rank(self) -> None:
        pods, most = self.pods, self.most
        norm = max(pods)  # infeasible columns count -1, below any feasible one
        scale = norm if norm > 0 else 1
        totals = [p * MAX_SCORE // scale + m if p >= 0 else -1 for p, m in zip(pods, most, strict=True)]
        top = max(totals)
        self._norm, self._top = norm, top
        self._winners = [i for i, total in enumerate(totals) if total == top] if top >= 0 else []
        self._ranked = True


# Kept scores per DomainSums, for this many distinct groups' wants at most (then dropped and started over)
_MAX_KEPT_SCORES = 8


def _want(attempt: GroupAttempt, c: Any) -> tuple[int, int, int, int, int]:
    """What `_scores` reads of a group of one class `c` (the evaluator's equivalence class)."""
    return (
        len(attempt.pods),
        attempt.scheduled,
        attempt.min_count if attempt.gang else 1,
        c.vec.nonzero_cpu,
        c.vec.nonzero_mem,
    )


def _kept(ev: Evaluator, attempt: GroupAttempt, key: str) -> tuple[DomainSums, _KeptScores]:
    """The evaluator's per-domain sums of `key` for the group's class (all nodes) and the scores kept from
    them for the group's `want`, the sums brought in step with the snapshot."""
    c = ev.equivalence_class(attempt.pods[0])
    kept = ev.domain_sums(c, key, _ClassRoom)
    kept.current()
    want = _want(attempt, c)
    kept_scores = kept.derived.get(want)
    if kept_scores is None:
        if len(kept.derived) >= _MAX_KEPT_SCORES:
            kept.derived.clear()
        kept_scores = kept.derived[want] = _KeptScores(kept, want)
    return kept, kept_scores


def _fast(ev: Evaluator, attempt: GroupAttempt, key: str, options: list[Placement]) -> _Scored:
    """(feasible option indexes, their pods counts, their MostAllocated) for a group of one class.

    With no parent placement the per-domain sums, and the scores from them, are kept by the evaluator, in
    the order of the placements over all nodes; inside a parent placement they are summed afresh over the
    parent's nodes."""
    if options[0].within is ev.labelled(key):  # every labelled node: the kept sums apply
        kept, kept_scores = _kept(ev, attempt, key)
        pods, most = kept_scores.current()
        if options is not ev.root_placements.get(key):  # some of them (the members' domain)
            columns = [kept.column[p.code] for p in options]
            pods, most = [pods[i] for i in columns], [most[i] for i in columns]
    else:
        snap = ev.snap
        c = ev.equivalence_class(attempt.pods[0])
        want = _want(attempt, c)
        perm, starts, _ = snap.domains(key)
        values = _ClassRoom(snap, c).many(np.arange(len(snap), dtype=np.intp)) * options[0].within
        # Exact int64 sums per label code (bincount would go through float64 and lose memory's low bits).
        option_codes = np.array([p.code for p in options], dtype=np.intp)
        summed, scored = _scores(np.add.reduceat(values[:, perm], starts, axis=1)[:, option_codes], want)
        pods, most = summed.tolist(), scored.tolist()
    if min(pods) >= 0:  # the usual case: every placement is feasible (the kept lists are only read)
        return list(range(len(pods))), pods, most
    index = [i for i, p in enumerate(pods) if p >= 0]
    return index, [pods[i] for i in index], [most[i] for i in index]


def _full(
    ev: Evaluator, attempt: GroupAttempt, options: list[Placement]
) -> tuple[list[int], list[int], list[int], GroupResult | None]:
    """Run the cycle in every placement (reverting each); also the first result, for the failure message."""
    index: list[int] = []
    pods: list[int] = []
    most: list[int] = []
    first: GroupResult | None = None
    for i, p in enumerate(options):
        result = run_group_cycle(ev, attempt, p.nodes)
        first = first or result
        if result.code == SUCCESS:
            index.append(i)
            pods.append(attempt.scheduled + len(result.placed))
            most.append(most_allocated(ev.snap, p.nodes))
            result.revert()
    return index, pods, most, first


def placements_status(first_message: str, first_wrapped: bool, count: int) -> str:
    """Upstream's status message when none of a group's `count` placements is feasible
    (podGroupSchedulingPlacementAlgorithm, compositePodGroupSchedulingPlacementAlgorithm): Unschedulable,
    wrapped in errPodGroupUnschedulable, naming the first placement's status by its AsError(), which is
    that error alone when the status carries it (`first_wrapped`), else the status's message."""
    first_status = GROUP_UNSCHEDULABLE if first_wrapped else first_message
    return group_unschedulable(f"0/{count} placements are available, first placement status: {first_status}")


def no_placement_fits(first: GroupResult, count: int) -> GroupResult:
    """`first` (the first placement's failed cycle) as upstream reports a group none of whose `count`
    placements is feasible: the first placement's pods, under the wrapped status. An error is not a
    feasibility result: upstream returns it at once, as it is."""
    if first.code == ERROR:
        return first
    first.code = UNSCHEDULABLE
    first.message = first.cycle_message = placements_status(first.message, first.wrapped, count)
    first.wrapped = True
    first.placed = []
    return first


def in_one_placement(result: GroupResult) -> GroupResult:
    """A group without a topology constraint under TopologyAwareWorkloadScheduling: upstream still runs its
    placement algorithm (podGroupSchedulingAlgorithm), with the one placement TopologyPlacement generates
    for it (its parent's nodes, all nodes for a root), so a failed cycle reads `0/1 placements are
    available, ...`. A cycle that succeeded without placing a pod is left as it is: its placement was
    feasible, and only the root fails such a cycle. With the gate off (the default algorithm) the cycle's
    own status stands: do not call this then."""
    if result.code == SUCCESS or result.none_placed:
        return result
    return no_placement_fits(result, 1)


def _one_class_alone(ev: Evaluator, pods: Sequence[PodInfo]) -> bool:
    """Whether `pods` (at least one) are of one equivalence class, none uses claims and no pods-stage
    plugin reads other pods for any of them. Pods of one template share one signature and one traits
    object: signatures are compared, not hashed, and `reads_other_pods`, which reads the traits, is asked
    once per traits object."""
    if not pods:
        return False
    first = pods[0]
    signature, traits = first.signature, first.traits
    if ev.reads_other_pods(first):
        return False
    for pi in pods:
        if (
            (pi.signature is not signature and pi.signature != signature)
            or pi.claims
            or (pi.traits is not traits and ev.reads_other_pods(pi))
        ):
            return False
    return True


def place_with_topology(
    ev: Evaluator,
    attempt: GroupAttempt,
    key: str,
    candidates: BoolArray | None,
    pinned: Pin,
    *,
    use_limit: bool = False,
) -> GroupResult:
    """The group cycle under a topology constraint: choose the best placement and reserve the group in it.

    `pinned` says where members already run (`pin`): they pin the group to that domain, or make the cycle
    an Error. `use_limit` scores only the first feasible placements, as many as upstream's adaptive limit
    allows. On success the reservations stay (undo with `result.revert`); otherwise the snapshot is
    unchanged."""
    snap = ev.snap
    if pinned.error is not None:
        return GroupResult(ERROR, pinned.error)
    options = placements(ev, key, candidates)
    if pinned.domains:
        options = [p for p in options if p.value in pinned.domains]
    if not options:
        return GroupResult(UNSCHEDULABLE, NO_PLACEMENTS, cycle_message=NO_PLACEMENTS)
    first: GroupResult | None = None
    # The per-domain capacity sums know nothing of nominated pods, of what the pods-stage plugins read
    # (ports, spread, pod affinity, also among the members), nor of volumes and devices (the claims stage:
    # a placement without the members' devices or PVs is infeasible): then every placement runs the cycle.
    if not snap.nominated and _one_class_alone(ev, attempt.pods):
        if options is ev.root_placements.get(key) and not use_limit:
            # every placement over all nodes, all scored: choose's answer is kept from group to group
            winners = _kept(ev, attempt, key)[1].winners()
            if winners:
                pick = winners[0] if len(winners) == 1 else winners[int(ev.rng.integers(len(winners)))]
                return _run_in(ev, attempt, options[pick])
        index, pods, most = _fast(ev, attempt, key, options)
    else:
        index, pods, most, first = _full(ev, attempt, options)
    if use_limit:
        keep = adaptive_placement_limit(len(options), len(snap))
        index, pods, most = index[:keep], pods[:keep], most[:keep]
    if not index:
        first = first or run_group_cycle(ev, attempt, options[0].nodes)  # failed: left nothing behind
        return first if first.none_placed else no_placement_fits(first, len(options))
    return _run_in(ev, attempt, options[index[choose(pods, most, ev)]])


def _run_in(ev: Evaluator, attempt: GroupAttempt, best: Placement) -> GroupResult:
    """The real cycle in the chosen placement."""
    result = run_group_cycle(ev, attempt, best.nodes, best.domain)
    if result.code == SUCCESS:
        result.domain = best.value
    return result
