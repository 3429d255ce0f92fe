"""Default preemption for a lone pod (upstream's DefaultPreemption PostFilter, which in v1.37 honours
disruption modes): per node, evict the fewest and least important units that make the pod fit, then pick
one node.

A unit with `disruptionMode: all` goes whole or not at all, even when only one of its pods is on the node;
a `single` member can go alone. Nodes the pod could never use (node affinity, taints, cordoned) are not
tried. As upstream, nodes are dry-run from a random offset until max(10% of them, 100) candidates are found
(at least one of them without PodDisruptionBudget violations), then pickOneNodeForPreemption decides:
fewest budget violations, lowest highest victim priority, smallest priority sum, fewest victims, latest
start among the highest-priority victims, first found.
"""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass

import numpy as np

from .evaluator import FitFailure
from .pdb import Budget, split_by_violation
from .plugins import BoolArray
from .plugins.node_resources_fit import insufficient
from .podinfo import PodInfo
from .preemption import (
    TERMINATING_ON_NOMINATED,
    Ineligible,
    Preemption,
    PreemptionView,
    TakenOut,
    ineligibility,
    lower_priority_units,
    nominated_nodes,
    terminating_on,
)
from .snapshot import PODS, Int64Array, PodVector, Snapshot
from .victims import VictimUnit, sort_by_importance, start_time, work_since

__all__ = ["NOT_HELPFUL", "NO_VICTIMS_FOR_POD", "preempt_pod"]

NO_VICTIMS_FOR_POD = "No preemption victims found for incoming pod"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
MIN_CANDIDATE_NODES_PERCENTAGE = 10
MIN_CANDIDATE_NODES_ABSOLUTE = 100
_PRIORITY_OFFSET = 2**31  # upstream adds MaxInt32+1 so that negative priorities sum sensibly


@dataclass(slots=True)
class _Candidate:
    node: int
    victims: list[VictimUnit]
    pdb_violations: int

    def rank(self) -> tuple[int, int, int, int, float, float]:
        """pickOneNodeForPreemption's criteria as one ascending key; where they all tie (upstream then takes
        the first candidate found, from a random offset), the victims whose work since their last
        checkpoint is least: the latest checkpoints (or starts) in sum."""
        pods = [(u.priority, pi) for u in self.victims for pi in u.pods]
        highest = max(p for p, _ in pods)
        earliest_of_highest = min(start_time(pi.pod) for p, pi in pods if p == highest)
        return (
            self.pdb_violations,
            highest,
            sum(p + _PRIORITY_OFFSET for p, _ in pods),
            len(pods),
            -earliest_of_highest,
            -sum(work_since(pi.pod) for _, pi in pods),
        )


def _held_short(snap: Snapshot, vec: PodVector, node: int, held: Int64Array | None) -> list[str]:
    """What `vec` lacks on `node` once the room nominated pods of equal or higher priority hold (`held`) is
    counted, in NodeResourcesFit's words (pods first); empty when it fits or nothing is held there."""
    if held is None:
        return []
    return [
        insufficient(snap, row)
        for row, v in sorted(vec.rows, key=lambda rv: rv[0] != PODS)
        if snap.alloc[row, node] - snap.used[row, node] - held[row] < v
    ]


def _beyond_allocatable(snap: Snapshot, vec: PodVector) -> BoolArray:
    """Nodes where the pod asks for more of a resource than the node's allocatable: NodeResourcesFit's
    rejection there is UnschedulableAndUnresolvable (fit.go fitsRequest, InsufficientResource.Unresolvable),
    so no eviction can help. Not the pod count: `Too many pods` is always Unschedulable."""
    return snap.allocatable_below(tuple((row, v) for row, v in vec.rows if row != PODS))


def _victims_on_node(
    view: PreemptionView, pi: PodInfo, node: int, units: list[VictimUnit], pdbs: list[Budget]
) -> _Candidate | list[str]:
    """SelectVictimsOnNode: the units to evict for `pi` to fit on `node`, or why it cannot. Every filter
    is asked (a victim may hold a host port or match an anti-affinity term, not only take resources), and
    as upstream the room pods nominated to the node at `pi`'s priority or above hold counts
    (RunFilterPluginsWithNominatedPods)."""
    ev = view.ev
    snap = ev.snap
    vec = ev.vector(pi)
    held = snap.held_on(node, pi.priority, pi.key) if snap.nominated else None
    out = TakenOut(view)
    for unit in units:  # whole units, members on other nodes included: they count for pod affinity and spread
        out.take(unit)
    try:
        reasons = ev.fit_reasons(pi, node) or _held_short(snap, vec, node, held)
        if reasons:
            return reasons
        violating, fine = split_by_violation(sort_by_importance(units), pdbs)
        victims: list[VictimUnit] = []
        violations = 0
        for unit, count in [*violating, *((u, 0) for u in fine)]:
            out.put_back(unit)
            if ev.fit_reasons(pi, node) or _held_short(snap, vec, node, held):
                out.take(unit)
                victims.append(unit)
                violations += count
        if not victims:  # it fits with nothing evicted: upstream reports an error for such a node
            return [NO_VICTIMS_FOR_POD]
        return _Candidate(node, sort_by_importance(victims), violations)
    finally:
        out.restore()


def _no_candidate(nodes: int, histogram: Counter[str]) -> str:
    """The message of a preemption that found no node among `nodes`: why each node was not one."""
    failure = FitFailure(nodes)
    failure.histogram.update(+histogram)
    return failure.message()


@functools.lru_cache(maxsize=64)
def _nothing_to_evict(nodes: int, tried: int) -> str:
    """The message when no pod of lower priority runs: `tried` nodes found no victims, the others could
    not be helped. The same few counts come back at every failed cycle of a replay, so it is kept."""
    return _no_candidate(nodes, Counter({NOT_HELPFUL: nodes - tried, NO_VICTIMS_FOR_POD: tried}))


def preempt_pod(view: PreemptionView, pi: PodInfo) -> Preemption | str:
    """Default preemption for `pi`; a message (without upstream's prefix) when there is none: an
    `Ineligible` message when the pod keeps its nomination, a plain one when no node would do."""
    ev = view.ev
    snap = ev.snap
    cls = ev.equivalence_class(pi)
    reason = ineligibility(pi.preemption_policy)
    if reason is not None:
        return reason
    # PodEligibleToPreemptOthers: a nominated node still holding a lower-priority pod terminating by
    # preemption means the pod waits for it - unless the pod can no longer use that node at all
    # (UnschedulableAndUnresolvable there).
    nodes = {node for node in nominated_nodes(view, [pi]) if cls.static_ok[node]}
    if view.own_victims_terminating or terminating_on(view, nodes, pi.priority):
        return Ineligible(TERMINATING_ON_NOMINATED)
    claims_ok = ev.claims_feasible(pi)
    feasible = cls.static_ok if claims_ok is None else cls.static_ok & claims_ok
    tried = feasible & ~_beyond_allocatable(snap, cls.vec)
    by_node: dict[int, list[VictimUnit]] = {}
    for unit in lower_priority_units(view, pi.priority):
        for node in {snap.placed[p.key][0] for p in unit.pods}:
            by_node.setdefault(node, []).append(unit)
    if not by_node:
        # Nothing of lower priority runs anywhere: every node tried would say so, whatever the budgets and
        # wherever the walk began (its random offset is not drawn: a cycle that evicts nothing leaves the
        # generator as it was anyway, Scheduler.schedule_one).
        return _nothing_to_evict(len(snap), int(np.count_nonzero(tried)))
    potential = np.flatnonzero(tried)
    histogram: Counter[str] = Counter({NOT_HELPFUL: len(snap) - potential.size})
    pdbs = view.budgets()
    candidates: list[_Candidate] = []
    wanted = min(
        potential.size,
        max(potential.size * MIN_CANDIDATE_NODES_PERCENTAGE // 100, MIN_CANDIDATE_NODES_ABSOLUTE),
    )
    offset = int(view.rng.integers(potential.size)) if potential.size else 0
    for i in range(potential.size):
        node = int(potential[(offset + i) % potential.size])
        units = by_node.get(node)
        if not units:
            histogram[NO_VICTIMS_FOR_POD] += 1
            continue
        found = _victims_on_node(view, pi, node, units, pdbs)
        if isinstance(found, _Candidate):
            candidates.append(found)
            if len(candidates) >= wanted and any(c.pdb_violations == 0 for c in candidates):
                break
        else:
            histogram.update(found)
    if not candidates:
        return _no_candidate(len(snap), histogram)
    best = min(candidates, key=_Candidate.rank)
    meta = pi.pod.metadata
    return Preemption(
        preemptor=pi.name,
        kind="pod",
        uid=meta.uid or pi.name,
        scheduler_name=pi.scheduler_name,
        victims=best.victims,
        nominations=[(pi.key, best.node)],
        node=best.node,
        priority=pi.priority,
    )
