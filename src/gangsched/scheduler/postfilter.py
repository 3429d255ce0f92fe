"""PostFilter: what the scheduler does after a root's cycle ended Unschedulable.

A PodGroup root gets workload-aware preemption (preemption.py), a lone pod default preemption
(pod_preemption.py). When preemption finds nothing to do, its reason is appended to the failure message as
upstream words it: for a group `<cycle message>, pod group preemption: <reason>` (the status gains a reason,
and reasons are joined with ", "), for a pod `<fit error> preemption: <reason>` (FitError appends the
PostFilter message after a space). When it does, the Decision evicts the victims (DisruptionTarget /
PreemptionByScheduler on each victim pod and on each group evicted whole, a Preempted event per victim) and
nominates the preemptor's pods; the preemptor binds in a later cycle, once the victims are gone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .cycle import GroupResult
from .decision import Condition, ConditionChange, Decision, Eviction, Nomination, Notice
from .pod_preemption import preempt_pod
from .podinfo import PodInfo
from .preemption import Preemption, PreemptionView, preempt_pod_group
from .snapshot import Snapshot

__all__ = ["DISRUPTION_TARGET", "preempt_after_failure", "preemption_decision"]

DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"


def preemption_decision(p: Preemption, snap: Snapshot) -> Decision:
    """Evictions, conditions, events and nominations for a preemption found on `snap`."""
    d = Decision()
    d.nominations.extend(Nomination(key, snap.node_names[node]) for key, node in p.nominations)
    where = "cluster" if p.node is None else snap.node_names[p.node]
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


def preempt_after_failure(
    view: PreemptionView,
    pg: Any,
    pods: Sequence[PodInfo],
    result: GroupResult,
    rerun: Callable[[], GroupResult] | None,
) -> Decision | None:
    """Preempt for the root whose Unschedulable `result` this is. Returns the preemption's Decision, or None
    after appending the reason to `result` (its message for a group, the pod's failure for a lone pod)."""
    if pg is not None and rerun is not None:
        outcome = preempt_pod_group(view, pg, pods, rerun)
        if isinstance(outcome, str):
            result.message = f"{result.message}, pod group preemption: {outcome}"
            return None
    else:
        (pi,) = pods
        if len(view.ev.snap) == 0:
            return None  # upstream's ErrNoNodesAvailable returns before PostFilter runs
        outcome = preempt_pod(view, pi)
        if isinstance(outcome, str):
            fit_error = result.failures.get(pi.key) or result.message
            result.failures[pi.key] = f"{fit_error} preemption: {outcome}"
            return None
    return preemption_decision(outcome, view.ev.snap)
