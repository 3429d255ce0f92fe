"""Turning a cycle's result into a Decision: bindings and Scheduled events, PodScheduled=False and
FailedScheduling for pods left pending, and the groups' InitiallyScheduled conditions."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from .cycle import ERROR, SUCCESS, UNSCHEDULABLE, Code, group_unschedulable
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
    keys, bindings, events = set(), d.bindings, d.events  # one pass: every bound pod comes here
    for pi, node in placed:
        key = pi.key
        if decided is not None and pi.claims:
            volumes, claims = decided(key)
            d.volume_bindings.extend(volumes)
            d.claims.extend(claims)
        node_name, name = node_names[node], f"{key[0]}/{key[1]}"  # `pi.name`, without its call
        bindings.append(Binding(key, node_name))
        events.append(
            Notice("Normal", "Scheduled", f"Pod {name}", f"Successfully assigned {name} to {node_name}")
        )
        keys.add(key)
    return keys


def pod_failed(d: Decision, pi: PodInfo, reason: str, message: str) -> None:
    d.conditions.append(ConditionChange("Pod", pi.key, Condition(POD_SCHEDULED, "False", reason, message)))
    d.events.append(Notice("Warning", "FailedScheduling", f"Pod {pi.name}", message))


def group_condition(
    d: Decision, kind: str, group: Any, code: Code, message: str, invalid: bool = False
) -> None:
    """{PodGroup,CompositePodGroup}InitiallyScheduled: True/Scheduled, or False with why; never back
    from True."""
    ctype = GROUP_SCHEDULED if kind == "PodGroup" else COMPOSITE_SCHEDULED
    for current in (group.status.conditions if group.status else None) or ():  # the first of its type
        if current.type == ctype:
            if current.status == "True":
                return
            break
    if code == SUCCESS:
        condition = Condition(ctype, "True", "Scheduled", "")
    elif invalid and kind == "CompositePodGroup":
        condition = Condition(ctype, "False", "Invalid", message)
    elif code == ERROR:
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
    appended: str = "",
    waiting: bool = False,
) -> None:
    """Pods left pending and every group of a composite tree (`nodes`, root first, parents before their
    children) get their outcome, as upstream's podGroupCycle leaves them.

    Each group's status is its own, or, for a group that succeeded inside a failed parent or was never
    tried, its parent's (completeCompositePodGroupAlgorithmResultMap: the same status object). `appended`
    holds the reasons PodGroupPostFilter added (`, pod group preemption: ...`): applyPodGroupPostFilterResult
    appends them once per group to that group's status object, so a status shared by k groups carries them
    k times. In a group with a status of its own, a pod is told its own FitError, and a pod that fit
    that status with the appended reasons (as is while the tree waits on its preemption, else wrapped in
    `pod group is unschedulable, `); every other pod the status as the cycle left it, copied before
    PostFilter ran (completePodGroupAlgorithmResult), a pod of a group that shares its parent's status
    included."""
    owner: dict[tuple[str, str, str], tuple[str, str, str]] = {}
    for n in nodes:
        parent = owner.setdefault(n.key, n.key)  # the root's status is its own
        for c in n.children:
            own = result.per_group.get(c.key)
            shares = own is None or (own[0] == SUCCESS and _status(result, parent)[0] != SUCCESS)
            owner[c.key] = parent if shares else c.key
    sharing = Counter(owner.values())

    def before(key: tuple[str, str, str]) -> tuple[Code, str]:
        """The status of `key`'s group as the cycle left it."""
        return _status(result, owner[key])

    def after(key: tuple[str, str, str]) -> str:
        """The same status once PostFilter appended its reasons."""
        return before(key)[1] + appended * sharing[owner[key]]

    group_of = {pi.key: n.key for n in nodes if n.attempt is not None for pi in n.attempt.pods}
    for pi in pending:
        if pi.key in placed:
            continue
        key = group_of[pi.key]
        code, message = before(key)
        if owner[key] != key:
            pass  # its results were replaced by its parent's: what it found itself is not reported
        elif pi.key in result.failures:
            message = result.failures[pi.key]
        elif pi.key in result.fit and code == UNSCHEDULABLE:
            message = after(key) if waiting else group_unschedulable(after(key))
        reason = "SchedulerError" if code == ERROR and not invalid else "Unschedulable"
        pod_failed(d, pi, reason, message)
    for n in nodes:
        code, _ = before(n.key)
        group = store.get(n.key[0], (n.key[1], n.key[2]))
        group_condition(d, n.key[0], group, code, after(n.key), invalid)


def _status(result: TreeResult, key: tuple[str, str, str]) -> tuple[Code, str]:
    """A group's own status in the tree's result; the root's is the result's."""
    return result.per_group.get(key, (result.code, result.message))
