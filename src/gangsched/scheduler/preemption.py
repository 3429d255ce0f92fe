"""Workload-aware preemption for a PodGroup or CompositePodGroup root whose cycle ended Unschedulable
(upstream's PodGroupEvaluator in pkg/scheduler/framework/preemption/podgrouppreemption.go).

1. Eligibility: preemptionPolicy Never means no preemption. A nominated node of the group that still holds a
   lower-priority pod terminating by preemption means an ongoing preemption (upstream's isOngoingPreemption):
   nothing new is evicted, the nominations stand and the group waits for its victims to leave.
2. Candidates: every preemption unit (victims.py) of lower priority than the group, cluster-wide.
3. One simulation: all candidates leave the snapshot and the group's cycle runs ONCE. If it still fails,
   nothing is preempted and its message is the answer.
4. Reprieve: candidates sorted most important first, those a PodDisruptionBudget protects tried first; each is
   put back and spared if every proposed placement still passes the filters.
The snapshot is left exactly as it was found (every removal's undo is called); the caller turns the answer
into evictions and nominations (postfilter.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .cycle import Code, GroupResult
from .cycle_rng import TieBreaker
from .evaluator import Evaluator
from .pdb import Budget, budgets, split_by_violation
from .podinfo import PodInfo, PodKey
from .snapshot import PodVector
from .tree import TreeResult
from .victims import ObjectReader, VictimUnit, collect_units, sort_by_importance

__all__ = [
    "NO_VICTIMS_FOR_GROUP",
    "ONGOING",
    "Ineligible",
    "Preemption",
    "PreemptionView",
    "TakenOut",
    "group_preemption_policy",
    "ineligibility",
    "lower_priority_units",
    "preempt_pod_group",
    "preemptor_kind",
]

PREEMPT_NEVER = "Never"
PREEMPT_LOWER = "PreemptLowerPriority"
GROUP_PREEMPTOR = "podgroup"  # fwk.PodGroupKeyType
COMPOSITE_PREEMPTOR = "compositepodgroup"  # fwk.CompositePodGroupKeyType
NO_VICTIMS_FOR_GROUP = "No preemption victims found for incoming preemptor"
ONGOING = "ongoing preemption on nominated nodes"
TERMINATING_ON_NOMINATED = "not eligible due to a terminating pod on the nominated node."


class Ineligible(str):
    """A reason the preemptor may not preempt now; a lone pod keeps its nomination then (upstream's
    Preempt returns no PostFilterResult), where finding no victims clears it."""


@dataclass(frozen=True, slots=True)
class PreemptionView:
    """What preemption reads: the cycle's evaluator and snapshot, every known pod, and the object store."""

    ev: Evaluator
    pods: Mapping[PodKey, PodInfo]
    objects: ObjectReader
    rng: TieBreaker
    # Gate PodGroupPreemptionPolicy: when off, a PodGroup's own preemptionPolicy is not honoured.
    group_preemption_policy: bool = True
    # (placed pods, priority) -> the placed pods that may be in a unit below that priority, in their order
    # (Scheduler.victim_keys): spares a walk over every running pod when none is of lower priority.
    victim_keys: Callable[[Mapping[PodKey, Any], int], Iterable[PodKey]] | None = None
    # Does a victim of this preemptor's own earlier preemption still terminate, wherever it is? Upstream
    # looks only at the nominated nodes; a victim elsewhere (a unit evicted whole across nodes) would make
    # it preempt again, and move its nomination, as soon as the victims on those nodes are gone.
    own_victims_terminating: bool = False

    def budgets(self) -> list[Budget]:
        pdbs = list(self.objects.list("PodDisruptionBudget"))
        return budgets(pdbs, [pi.pod for pi in self.pods.values()]) if pdbs else []


@dataclass(slots=True)
class Preemption:
    """A preemption that will make room: victims to evict and where the preemptor's pods are nominated."""

    preemptor: str  # "namespace/name" of the PodGroup or pod
    kind: str  # upstream's preemptor Type(): "podgroup", "compositepodgroup" or "pod"
    uid: str
    scheduler_name: str
    victims: list[VictimUnit]
    nominations: list[tuple[PodKey, int]] = field(default_factory=list)
    node: int | None = None  # the single node a pod preemptor targets; None for a group (the cluster)
    priority: int = 0
    # Victims of an earlier preemption still terminate on the nominated nodes: nothing new is evicted and
    # the nominations stand (upstream's isOngoingPreemption answer, a Success without victims).
    ongoing: bool = False

    def message(self, node_names: Sequence[str]) -> str:
        """Upstream's PostFilter status message for this outcome (without its "preemption: " prefix)."""
        if self.ongoing:
            return ONGOING
        count = sum(len(unit.pods) for unit in self.victims)
        if self.node is None:  # upstream's words for any group preemptor, a CompositePodGroup too
            return f"found a placement for podgroup, preempting {count} victims"
        node = node_names[self.node]
        return f"found a potential placement for pod on node {node}, preempting {count} victims"


class TakenOut:
    """Victim units taken out of the snapshot and put back, as a stack of undos: `restore` unwinds it, so
    the snapshot ends exactly as it was found whatever was taken and put back in between."""

    def __init__(self, view: PreemptionView) -> None:
        self.snap = view.ev.snap
        self._undo: list[Callable[[], None]] = []
        self._where: dict[PodKey, tuple[int, PodVector]] = {}
        self._taken: list[VictimUnit] = []

    def _record(self, unit: VictimUnit) -> list[PodKey]:
        placed = self.snap.placed
        keys = [pi.key for pi in unit.pods if pi.key in placed]
        self._where.update((k, placed[k]) for k in keys)
        return keys

    def take_all(self, units: Sequence[VictimUnit]) -> None:
        """Remove every pod of every unit at once (thousands of pods: no per-pod Python work but a list)."""
        self._where.update(self.snap.placed)  # where each pod was; copying the dict beats looking them up
        self._taken = list(units)
        self._undo.append(self.snap.remove_many([pi.key for unit in units for pi in unit.pods]))

    def units_on(self, nodes: Iterable[int]) -> list[VictimUnit]:
        """Units taken by `take_all` with a pod on any of `nodes`."""
        wanted, where = set(nodes), self._where
        return [u for u in self._taken if any(where[pi.key][0] in wanted for pi in u.pods if pi.key in where)]

    def take(self, unit: VictimUnit) -> None:
        """Remove the unit's pods, on every node: dry-running a pod's preemption on one node, upstream's
        SelectVictimsOnNode takes a unit's members elsewhere out of the preemptor's pod affinity and spread
        counts too (PreFilterExtension RemovePod), and they free nothing on the node it tries."""
        self._undo.extend(self.snap.remove(k) for k in self._record(unit))

    def put_back(self, unit: VictimUnit) -> None:
        """Place again the unit's pods that were taken and are out now."""
        placed, where = self.snap.placed, self._where
        for pi in unit.pods:
            if pi.key in where and pi.key not in placed:
                self._undo.append(self.snap.place(pi.key, *where[pi.key]))

    def nodes(self, unit: VictimUnit) -> set[int]:
        """The nodes the unit's taken pods were on."""
        return {self._where[pi.key][0] for pi in unit.pods if pi.key in self._where}

    def restore(self) -> None:
        while self._undo:
            self._undo.pop()()


def terminating_by_preemption(pod: Any) -> bool:
    """Upstream's PodTerminatingByPreemption: being deleted, with DisruptionTarget from the scheduler."""
    if pod.metadata is None or pod.metadata.deletionTimestamp is None:
        return False
    for c in (pod.status.conditions if pod.status else None) or []:
        if c.type == "DisruptionTarget":
            return bool(c.status == "True" and c.reason == "PreemptionByScheduler")
    return False


def unit_priority_of(view: PreemptionView, pi: PodInfo) -> int:
    """A pod's priority as a victim: its PodGroup's priority when it has one."""
    if pi.group is not None:
        pg = view.objects.get("PodGroup", pi.group)
        if pg is not None:
            return int(pg.spec.priority or 0)
    return pi.priority


def ineligibility(policy: str) -> Ineligible | None:
    """Why this preemptor may never preempt (upstream's message), or None."""
    if policy == PREEMPT_NEVER:
        return Ineligible("not eligible due to preemptionPolicy=Never.")
    return None


def terminating_on(view: PreemptionView, nodes: set[int], priority: int) -> bool:
    """Does any of `nodes` hold a pod of priority below `priority` terminating by preemption? (upstream's
    isOngoingPreemption for a group, the terminating-pod clause of PodEligibleToPreemptOthers for a pod)"""
    if not nodes:
        return False
    for key, (node, _) in view.ev.snap.placed.items():
        pi = view.pods.get(key)
        if (
            node in nodes
            and pi is not None
            and terminating_by_preemption(pi.pod)
            and unit_priority_of(view, pi) < priority
        ):
            return True
    return False


def nominated_nodes(view: PreemptionView, members: Sequence[PodInfo]) -> set[int]:
    """The nodes the preemptor's pods are nominated to (the nominator's view, which a status write only
    confirms: a preemptor retried before its write lands must not preempt again)."""
    nominated = view.ev.snap.nominated
    return {entry[0] for pi in members if (entry := nominated.get(pi.key)) is not None}


def lower_priority_units(view: PreemptionView, priority: int) -> list[VictimUnit]:
    """Every preemption unit with priority strictly below `priority`."""
    placed = view.ev.snap.placed
    keys = placed if view.victim_keys is None else view.victim_keys(placed, priority)
    if not keys:  # nothing runs below `priority`, as is usual when every pod has one priority
        return []
    return collect_units(keys, view.pods, view.objects, below=priority)


def _placements_fit(
    view: PreemptionView,
    rows_by_node: dict[int, set[int]],
    placed_on: dict[int, list[PodInfo]],
    nodes: set[int],
    domain_wide: bool,
) -> bool:
    """With the preemptor's pods reserved, does every proposed placement on `nodes` still pass the filters,
    room held by nominated pods of equal or higher priority included (RunFilterPluginsWithNominatedPods)?

    The static filters do not depend on other pods. For resources, each pod's sequential check (free >=
    request, earlier pods reserved) holds for all of them exactly when no resource any of them requests is
    over-committed on its node once all are reserved. A pod whose filters read other placed pods
    (`Evaluator.reads_placed_pods`: host ports, spread, pod affinity, CSI attach limits) is asked again with
    every other pod in place, itself taken out for the question, when one of `nodes` is its own or, with
    `domain_wide`, wherever it is if it reads every node (a pod put back elsewhere in a zone may still
    count). Upstream's reprieve runs every filter that did not Skip for every proposed placement; this is
    one rule for all of them.
    """
    ev = view.ev
    snap = ev.snap
    for node in nodes:
        priority = min(pi.priority for pi in placed_on[node])
        held = snap.held_on(node, priority) if snap.nominated else None
        for row in rows_by_node[node]:
            if snap.used[row, node] + (int(held[row]) if held is not None else 0) > snap.alloc[row, node]:
                return False
    for node in placed_on if domain_wide else nodes:
        for pi in placed_on[node]:
            own_node, anywhere = ev.reads_placed_pods(pi)
            if not (anywhere or (own_node and node in nodes)):
                continue
            undo = snap.remove(pi.key)
            try:
                fits = not ev.fit_reasons(pi, node)
            finally:
                undo()
            if not fits:
                return False
    return True


def _reprieve(
    view: PreemptionView, units: list[VictimUnit], placed: list[tuple[PodInfo, int]], out: TakenOut
) -> list[VictimUnit]:
    """Put back as many units as the proposed placements allow; returns those that must go."""
    rows_by_node: dict[int, set[int]] = {}
    placed_on: dict[int, list[PodInfo]] = {}
    for pi, node in placed:
        rows_by_node.setdefault(node, set()).update(row for row, _ in view.ev.vector(pi).rows)
        placed_on.setdefault(node, []).append(pi)
    # Pods that read other pods (ports, spread, pod affinity) may be affected by a unit on any node. A unit
    # carrying terms of its own does not make it domain-wide: upstream's InterPodAffinity PreFilter, run on
    # the snapshot without the victims, skips a pod without terms when no remaining pod has any, so the
    # filter never sees the terms of a unit put back (kube-scheduler side by side agrees).
    domain_wide = any(view.ev.reads_placed_pods(pi)[1] for pi, _ in placed)
    pdbs = view.budgets()
    if not pdbs and not domain_wide:  # order is all that matters then, and only among units sharing a node
        units = out.units_on(rows_by_node)
    violating, fine = split_by_violation(sort_by_importance(units), pdbs)
    victims = []
    for unit in [u for u, _ in violating] + fine:
        touched = out.nodes(unit) & rows_by_node.keys()
        if not touched and not domain_wide:
            continue  # none of its pods share a node with the preemptor's: putting it back changes nothing
        out.put_back(unit)
        if not _placements_fit(view, rows_by_node, placed_on, touched, domain_wide):
            out.take(unit)
            victims.append(unit)
    return sort_by_importance(victims)


def preemptor_kind(group: Any) -> str:
    """Upstream's preemptor Type() for a PodGroup or CompositePodGroup object (fwk.PodGroupKeyType,
    CompositePodGroupKeyType): the word the DisruptionTarget message and the Preempted event name."""
    return COMPOSITE_PREEMPTOR if group.kind == "CompositePodGroup" else GROUP_PREEMPTOR


def group_preemption_policy(view: PreemptionView, group: Any, pods: Sequence[PodInfo]) -> str:
    """upstream's resolvePreemptionPolicy / resolveCompositePreemptionPolicy (framework/preemption/types.go):
    with the PodGroupPreemptionPolicy gate on, the group's own policy (its default is PreemptLowerPriority);
    with it off, Never as soon as one of its pods says Never."""
    if view.group_preemption_policy:
        return PREEMPT_NEVER if group.spec.preemptionPolicy == PREEMPT_NEVER else PREEMPT_LOWER
    return PREEMPT_NEVER if any(pi.preemption_policy == PREEMPT_NEVER for pi in pods) else PREEMPT_LOWER


def preempt_pod_group(
    view: PreemptionView,
    group: Any,
    pods: Sequence[PodInfo],
    rerun: Callable[[], GroupResult | TreeResult],
) -> Preemption | str:
    """Workload-aware preemption for a root `group`, a PodGroup or a CompositePodGroup (upstream's
    podGroupPreemptor: the group's priority and preemption policy; for a tree `pods` are the pending pods
    of all its PodGroups, GetUnscheduledPods); a message (without upstream's prefix) when there is none.

    `rerun` runs the root's cycle again on the evaluator's snapshot (upstream's podGroupSchedulingFunc: a
    PodGroup's cycle, or the whole tree's); on success its reservations stay until its `revert` is called.
    """
    priority = int(group.spec.priority or 0)
    reason = ineligibility(group_preemption_policy(view, group, pods))
    if reason is not None:
        return reason
    meta = group.metadata
    preemption = Preemption(
        preemptor=f"{meta.namespace}/{meta.name}",
        kind=preemptor_kind(group),
        uid=meta.uid or f"{meta.namespace}/{meta.name}",
        scheduler_name=pods[0].scheduler_name,
        victims=[],
        priority=priority,
    )
    if view.own_victims_terminating or terminating_on(view, nominated_nodes(view, pods), priority):
        preemption.ongoing = True
        return preemption
    units = lower_priority_units(view, priority)
    if not units:
        return NO_VICTIMS_FOR_GROUP
    out = TakenOut(view)
    out.take_all(units)
    result = rerun()
    if result.code != Code.SUCCESS:
        out.restore()
        return result.message
    try:
        victims = _reprieve(view, units, result.placed, out)
    finally:
        result.revert()
        out.restore()
    preemption.victims = victims
    preemption.nominations = [(pi.key, node) for pi, node in result.placed]
    return preemption
