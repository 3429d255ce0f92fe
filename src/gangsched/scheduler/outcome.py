"""Turning a cycle's result into a Decision: bindings and Scheduled events, PodScheduled=False and
FailedScheduling for pods left pending, and the groups' InitiallyScheduled conditions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .cycle import Code
from .decision import Binding, ClaimReservation, Condition, ConditionChange, Decision, Notice, VolumeBinding
from .podinfo import PodInfo, PodKey
from .tree import TreeNode, TreeResult

__all__ = ["COMPOSITE_SCHEDULED", "GROUP_SCHEDULED", "POD_SCHEDULED", "bind", "group_condition", "pod_failed"]

POD_SCHEDULED = "PodScheduled"
GROUP_SCHEDULED = "PodGroupInitiallyScheduled"
COMPOSITE_SCHEDULED = "CompositePodGroupInitiallyScheduled"


def bind(
    d: Decision,
    node_names: list[str],
    placed: list[tuple[PodInfo, int]],
    decided: Callable[[PodKey], tuple[list[VolumeBinding], list[ClaimReservation]]] | None = None,
) -> set[PodKey]:
    """Bindings and Scheduled events for reserved pods, with the volume bindings and claim reservations
    `decided` holds for them (written before the pods bind); returns their keys."""
    for pi, node in placed:
        if decided is not None and pi.claims:
            volumes, claims = decided(pi.key)
            d.volume_bindings.extend(volumes)
            d.claims.extend(claims)
        node_name = node_names[node]
        d.bindings.append(Binding(pi.key, node_name))
        message = f"Successfully assigned {pi.name} to {node_name}"
        d.events.append(Notice("Normal", "Scheduled", f"Pod {pi.name}", message))
    return {pi.key for pi, _ in placed}


def pod_failed(d: Decision, pi: PodInfo, reason: str, message: str) -> None:
    d.conditions.append(ConditionChange("Pod", pi.key, Condition(POD_SCHEDULED, "False", reason, message)))
    d.events.append(Notice("Warning", "FailedScheduling", f"Pod {pi.name}", message))


def group_condition(
    d: Decision, kind: str, group: Any, code: Code, message: str, invalid: bool = False
) -> None:
    """{PodGroup,CompositePodGroup}InitiallyScheduled: True/Scheduled, or False with why; never back
    from True."""
    ctype = GROUP_SCHEDULED if kind == "PodGroup" else COMPOSITE_SCHEDULED
    current = next(
        (c for c in ((group.status.conditions if group.status else None) or []) if c.type == ctype), None
    )
    if current is not None and current.status == "True":
        return
    if code == Code.SUCCESS:
        condition = Condition(ctype, "True", "Scheduled", "")
    elif invalid and kind == "CompositePodGroup":
        condition = Condition(ctype, "False", "Invalid", message)
    elif code == Code.ERROR:
        condition = Condition(ctype, "False", "SchedulerError", message)
    else:
        condition = Condition(ctype, "False", "Unschedulable", message)
    key = (group.metadata.namespace or "", group.metadata.name)
    d.conditions.append(ConditionChange(kind, key, condition))


def record_tree(
    d: Decision,
    store: Any,
    nodes: list[TreeNode],
    pending: list[PodInfo],
    placed: set[PodKey],
    result: TreeResult,
    *,
    invalid: bool,
) -> None:
    """Pods left pending and every group of a composite tree get their outcome; a failed root pushes its
    failure down to the groups that had succeeded inside it."""
    group_of = {pi.key: n.key for n in nodes if n.attempt is not None for pi in n.attempt.pods}

    def outcome(key: tuple[str, str, str]) -> tuple[Code, str]:
        code, message = result.per_group.get(key, (result.code, result.message))
        if result.code != Code.SUCCESS and code == Code.SUCCESS:
            return result.code, result.message
        return code, message

    for pi in pending:
        if pi.key not in placed:
            code, message = outcome(group_of[pi.key])
            reason = "SchedulerError" if code == Code.ERROR and not invalid else "Unschedulable"
            pod_failed(d, pi, reason, result.failures.get(pi.key) or message)
    for n in nodes:
        code, message = outcome(n.key)
        group_condition(d, n.key[0], store.get(n.key[0], (n.key[1], n.key[2])), code, message, invalid)
