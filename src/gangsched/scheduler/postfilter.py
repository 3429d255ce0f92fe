"""PostFilter: what the scheduler does after a root's cycle ended Unschedulable.

A PodGroup or CompositePodGroup root gets workload-aware preemption (preemption.py), a lone pod default
preemption (pod_preemption.py). When preemption finds nothing to do, its reason is appended to the failure
message as upstream words it: for a group `<cycle message>, pod group preemption: <reason>` (the status
gains a reason, and reasons are joined with ", "; in a tree every group's status, see record_tree), for a
pod `<fit error> preemption: <reason>` (FitError appends the
PostFilter message after a space). When it does, the Decision evicts the victims (DisruptionTarget /
PreemptionByScheduler on each victim pod and on each group evicted whole, a Preempted event per victim) and
nominates the preemptor's pods; the preemptor binds in a later cycle, once the victims are gone. Its own
message says so too (`..., pod group preemption: found a placement for podgroup, preempting N victims`).

For a PodGroup root DynamicResources' PodGroupPostFilter ran first (claims_postfilter.py): its claim writes
join the decision, and its reason precedes preemption's unless preemption succeeded or found no victims at
all (UnschedulableAndUnresolvable: the framework then returns that status alone).

Nominations follow upstream (schedule_one.go, schedule_one_podgroup.go): a preemption that found victims
nominates; an ongoing one (victims still terminating) keeps the nominations as they are; a lone pod that is
not eligible keeps its nomination; every other failure clears the nominations of the cycle's pods. Only
changes are returned, so a nomination is written once per decision. Lower-priority pods nominated to the
nodes a preemption targets lose their nomination (upstream's prepareCandidate).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .claims_postfilter import ClaimsPostFilter
from .cycle import GroupResult
from .decision import Condition, ConditionChange, Decision, Eviction, Nomination, Notice
from .pod_preemption import preempt_pod
from .podinfo import PodInfo
from .preemption import NO_VICTIMS_FOR_GROUP, Ineligible, Preemption, PreemptionView, preempt_pod_group
from .snapshot import Snapshot
from .tree import TreeResult

__all__ = ["DISRUPTION_TARGET", "PostFilterResult", "preempt_after_failure", "preemption_decision"]

DISRUPTION_TARGET = "DisruptionTarget"
DEALLOCATED = "deallocation of ResourceClaim completed"  # DynamicResources' PostFilter reasons
DELETED = "deletion of ResourceClaim completed"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"


@dataclass(slots=True)
class PostFilterResult:
    """What PostFilter decided: `decision` (evictions, conditions, events, nomination changes) and whether
    the preemptor now waits on a preemption (upstream's waitingOnPreemption): new victims, or an ongoing
    preemption whose victims still terminate."""

    decision: Decision = field(default_factory=Decision)
    waiting: bool = False
    retry: bool = False  # a preemption that needed no victims: no deletion will wake the preemptor


def preemption_decision(p: Preemption, snap: Snapshot) -> Decision:
    """Evictions, conditions, events and nominations for a preemption found on `snap` (all nominations:
    the caller drops those that change nothing)."""
    d = Decision()
    d.nominations.extend(Nomination(key, snap.node_names[node]) for key, node in p.nominations)
    where = "cluster" if p.node is None else snap.node_names[p.node]
    # Upstream's executor clears the lower-priority nominations on the node named by the candidate
    # (getLowerPriorityNominatedPods): a pod's node; for a group the candidate is named "cluster", so none.
    candidate = snap.index.get(where)
    for key, (node, _, priority) in sorted(snap.nominated.items()):
        if node == candidate and priority < p.priority:
            d.nominations.append(Nomination(key, None))
    target = Condition(
        DISRUPTION_TARGET,
        "True",
        PREEMPTION_BY_SCHEDULER,
        f"{p.scheduler_name}: preempting to accommodate a higher priority {p.kind}",
    )
    for unit in p.victims:
        for pi in unit.pods:
            d.conditions.append(ConditionChange("Pod", pi.key, target))
            d.evictions.append(Eviction(pi.key, p.preemptor))
            d.events.append(
                Notice(
                    "Normal", "Preempted", f"Pod {pi.name}", f"Preempted by {p.kind} {p.uid} on node {where}"
                )
            )
        whole = unit.member_groups | ({unit.whole_group} if unit.whole_group is not None else set())
        for kind, ns, name in sorted(whole):
            d.conditions.append(ConditionChange(kind, (ns, name), target))
    return d


def _clear(pods: Sequence[PodInfo], snap: Snapshot) -> Decision:
    """Nominations of `pods` cleared (upstream's clearNominatedNode), for those that have one."""
    d = Decision()
    for pi in pods:
        status = pi.pod.status.nominatedNodeName if pi.pod.status is not None else None
        if pi.key in snap.nominated or status:
            d.nominations.append(Nomination(pi.key, None))
    return d


def preempt_after_failure(
    view: PreemptionView,
    pg: Any,
    pods: Sequence[PodInfo],
    result: GroupResult | TreeResult,
    rerun: Callable[[], GroupResult | TreeResult] | None,
    freed: ClaimsPostFilter | None = None,
) -> PostFilterResult:
    """Preempt for the root whose Unschedulable `result` this is: `pg` is the root PodGroup or
    CompositePodGroup (with `rerun`, its cycle run again) or None for a lone pod; `freed`, what
    DynamicResources' PodGroupPostFilter did before (its writes join the decision). The PostFilter message
    is appended to `result` (its message for a group, the pod's failure for a lone pod)."""
    snap = view.ev.snap
    if pg is not None and rerun is not None:
        outcome = preempt_pod_group(view, pg, pods, rerun)
        message = outcome if isinstance(outcome, str) else outcome.message(snap.node_names)
        message = f"pod group preemption: {message}"
        # The framework joins the Unschedulable reasons of the plugins in order; a preemption that succeeds,
        # or finds no victims at all (UnschedulableAndUnresolvable), returns its own status alone.
        if (
            freed is not None
            and freed.reason
            and isinstance(outcome, str)
            and outcome != NO_VICTIMS_FOR_GROUP
        ):
            message = f"{freed.reason}, {message}"
        result.message = f"{result.message}, {message}"
        written = Decision()
        if freed is not None:
            written.deallocations = list(freed.deallocations)
            written.claim_deletions = list(freed.deletions)
            written.unreservations = list(freed.unreservations)
        return _ended(written, outcome, pods, snap)
    (pi,) = pods
    if len(snap) == 0:
        # upstream's ErrNoNodesAvailable returns before PostFilter runs, clearing the nomination
        return PostFilterResult(_clear(pods, snap))
    # DynamicResources' PostFilter runs first (upstream inserts it before DefaultPreemption); it
    # deallocates one claim and is always Unschedulable, so preemption runs after it, on the snapshot as
    # it was (the claim write is not in the scheduler's cache yet). A preemption that succeeds replaces
    # the joined reasons with its own.
    dealloc = Decision()
    dealloc.deallocations = view.ev.claims_to_deallocate(pi)[:1]
    if not dealloc.deallocations:
        dealloc.claim_deletions = view.ev.special_claim_to_delete(pi)
    outcome = preempt_pod(view, pi)
    message = outcome if isinstance(outcome, str) else outcome.message(snap.node_names)
    fit_error = result.failures.get(pi.key) or result.message
    if dealloc.deallocations and isinstance(outcome, str):
        message = f"{DEALLOCATED}, preemption: {message}"
    elif dealloc.claim_deletions and isinstance(outcome, str):
        message = f"{DELETED}, preemption: {message}"
    else:
        message = f"preemption: {message}"
    result.failures[pi.key] = f"{fit_error} {message}"
    if isinstance(outcome, Ineligible):
        return PostFilterResult(dealloc)  # the nomination stays as it is
    return _ended(dealloc, outcome, pods, snap)


def _ended(
    written: Decision, outcome: Preemption | str, pods: Sequence[PodInfo], snap: Snapshot
) -> PostFilterResult:
    """PostFilter's end for a group and a lone pod alike, after `written` (DynamicResources' writes):
    preemption that found nothing to do clears the cycle's nominations; an ongoing one (victims still
    terminating) waits with them as they are; new victims are evicted and the preemptor nominated, and it
    waits for them (retried at once when it needed none)."""
    if isinstance(outcome, str):
        written.extend(_clear(pods, snap))
        return PostFilterResult(written)
    if outcome.ongoing:
        return PostFilterResult(written, waiting=True)
    written.extend(preemption_decision(outcome, snap))
    return PostFilterResult(written, waiting=True, retry=not outcome.victims)
