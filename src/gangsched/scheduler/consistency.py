"""Checks a cycle makes before placing anything: the pods of a group, or of a composite tree, must agree on
their scheduler, priority and preemption policy (upstream's validatePodGroup). A disagreement is a
SchedulerError on the group."""

from __future__ import annotations

from typing import Any

from .podinfo import PodInfo
from .tree import TreeNode

__all__ = ["pod_group_error", "tree_error"]


def pod_group_error(
    pg: Any, pending: list[PodInfo], bound: list[PodInfo], *, preemption_policy_gate: bool
) -> str | None:
    """Upstream's validatePodGroup, with its messages: pending then bound members must share the first
    pending pod's schedulerName and the group's priority; with PodGroupPreemptionPolicy on, the group's
    preemption policy (off: the first pod's)."""
    name = pending[0].scheduler_name
    priority = int(pg.spec.priority or 0)
    policy = (pg.spec.preemptionPolicy or "PreemptLowerPriority") if preemption_policy_gate else ""
    same = "all pods in a single pod group should have the same"
    for pi in pending + bound:
        if pi.scheduler_name != name:
            return f'{same} .spec.schedulerName set, got: "{pi.scheduler_name}" and "{name}"'
        if pi.priority != priority:
            return f"{same} priority as the pod group's priority, got {pi.priority} and {priority}"
        if preemption_policy_gate:
            if pi.preemption_policy != policy:
                return (
                    f"{same} preemption policy as the pod group's preemption policy, "
                    f"got {pi.preemption_policy} and {policy}"
                )
        elif not policy:
            policy = pi.preemption_policy
        elif pi.preemption_policy != policy:
            return f"{same} preemption policy, got {pi.preemption_policy} and {policy}"
    return None


def tree_error(
    store: Any, root: tuple[str, str, str], nodes: list[TreeNode], pending: list[PodInfo]
) -> str | None:
    """One schedulerName, and the root's priority and preemption policy, across a whole composite tree."""
    top = store.get(root[0], (root[1], root[2]))
    assert top is not None
    priority = int(top.spec.priority or 0)
    policy = top.spec.preemptionPolicy or "PreemptLowerPriority"
    same = "all pods and groups in a composite pod group tree should have the same"
    names = sorted({pi.scheduler_name for pi in pending})
    if len(names) > 1:
        return f'{same} .spec.schedulerName set, got: "{names[0]}" and "{names[1]}"'
    for n in nodes:
        group = store.get(n.key[0], (n.key[1], n.key[2]))
        assert group is not None
        if int(group.spec.priority or 0) != priority:
            return f"{same} priority as the root's priority, got {group.spec.priority or 0} and {priority}"
    for pi in pending:
        if pi.priority != priority:
            return f"{same} priority as the root's priority, got {pi.priority} and {priority}"
        if pi.preemption_policy != policy:
            return f"{same} preemption policy as the root's, got {pi.preemption_policy} and {policy}"
    return None
