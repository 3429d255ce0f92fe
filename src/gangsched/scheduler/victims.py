"""Preemption units: what can be evicted, as one piece, and how important each piece is.

A bound pod is its own unit unless some group above it says `disruptionMode: all`; then the HIGHEST such
ancestor (a PodGroup or a CompositePodGroup) is one unit holding every bound pod below it, on every node
(upstream's getCrossNodesVictims). A unit's priority is its group's priority, not the pods' own.
Importance follows upstream's moreImportantVictim: higher priority; then units of group members before lone
pods; among lone pods the older start time; among groups more pods, then the older start time.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol

from msgspec import Struct, field

from .podinfo import PodInfo, PodKey

__all__ = [
    "LAST_CHECKPOINT",
    "GroupRef",
    "ObjectReader",
    "VictimUnit",
    "collect_units",
    "group_priority",
    "sort_by_importance",
    "start_time",
    "work_since",
]

GroupRef = tuple[str, str, str]  # (kind, namespace, name) of a PodGroup or CompositePodGroup


class ObjectReader(Protocol):
    """The read side of the store (or the live informer cache)."""

    def get(self, kind: str, key: tuple[str, str]) -> Any | None: ...

    def list(self, kind: str) -> Iterator[Any]: ...


class VictimUnit(Struct, eq=False):
    """Pods that are evicted together or not at all."""

    pods: list[PodInfo]
    priority: int
    # The group evicted as a whole (`all`), else None; PodGroups whose members are all in this unit.
    whole_group: GroupRef | None = None
    member_groups: set[GroupRef] = field(default_factory=set)

    @property
    def pod_objects(self) -> list[Any]:
        return [pi.pod for pi in self.pods]

    @property
    def is_group(self) -> bool:
        """Upstream's IsPodGroup: the unit's first pod belongs to a scheduling group."""
        return self.pods[0].group is not None

    def earliest_start(self) -> tuple[float, int]:
        """Earliest pod start; a pod without status.startTime counts as starting now (upstream's
        GetPodStartTime), i.e. after every recorded start. First-seen order breaks ties deterministically."""
        return min((start_time(pi.pod), pi.order) for pi in self.pods)

    def importance(self) -> tuple[int, bool, int, tuple[float, int]]:
        """Sort key: ascending order = most important first."""
        return (
            -self.priority,
            not self.is_group,
            -len(self.pods) if self.is_group else 0,
            self.earliest_start(),
        )


def start_time(pod: Any) -> float:
    started = pod.status.startTime if pod.status is not None else None
    return started.timestamp() if isinstance(started, dt.datetime) else math.inf


LAST_CHECKPOINT = "gangsched.io/last-checkpoint"  # RFC 3339 time of the pod's last saved checkpoint


def work_since(pod: Any) -> float:
    """Since when the pod's work would be lost if it were evicted now: its last checkpoint (annotation
    LAST_CHECKPOINT) or else its start; inf (nothing to lose) for a pod that has not started."""
    since = start_time(pod)
    text = ((pod.metadata.annotations or {}) if pod.metadata else {}).get(LAST_CHECKPOINT)
    if text:
        try:
            checkpoint = dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return since  # not a time: as if there were no checkpoint
        since = max(since, checkpoint) if since != math.inf else since
    return since


def _has_all(obj: Any) -> bool:
    mode = obj.spec.disruptionMode if obj is not None and obj.spec is not None else None
    return mode is not None and mode.all is not None


def group_priority(objects: ObjectReader, group: tuple[str, str]) -> int | None:
    """The priority a member of PodGroup `group` has as a victim: its PodGroup's (None when the PodGroup is
    gone: then each member's own)."""
    pg = objects.get("PodGroup", group)
    return int(pg.spec.priority or 0) if pg is not None else None


class _Hierarchy:
    """Per call memo of each PodGroup's highest `all` ancestor and priority."""

    def __init__(self, objects: ObjectReader) -> None:
        self.objects = objects
        self._memo: dict[tuple[str, str], tuple[GroupRef | None, int | None]] = {}

    def resolve(self, group: tuple[str, str]) -> tuple[GroupRef | None, int | None]:
        cached = self._memo.get(group)
        if cached is not None:
            return cached
        ns = group[0]
        pg = self.objects.get("PodGroup", group)
        highest: GroupRef | None = ("PodGroup", *group) if _has_all(pg) else None
        priority = group_priority(self.objects, group)
        parent = pg.spec.parentCompositePodGroupName if pg is not None else None
        seen: set[str] = set()
        while parent and parent not in seen:  # a cycle is invalid input; stop rather than loop
            seen.add(parent)
            cpg = self.objects.get("CompositePodGroup", (ns, parent))
            if cpg is None:
                break
            if _has_all(cpg):
                highest = ("CompositePodGroup", ns, parent)
            parent = cpg.spec.parentCompositePodGroupName
        self._memo[group] = (highest, priority)
        return highest, priority


def collect_units(
    bound: Iterable[PodKey], pods: Mapping[PodKey, PodInfo], objects: ObjectReader, below: int | None = None
) -> list[VictimUnit]:
    """Every preemption unit among the `bound` pods (only those of priority < `below` when given).

    Pods are bucketed by PodGroup first, so each group's hierarchy is resolved once however many pods it has.
    """
    hierarchy = _Hierarchy(objects)
    lone: list[PodInfo] = []
    by_group: defaultdict[tuple[str, str], list[PodInfo]] = defaultdict(list)
    get = pods.get  # a few thousand pods per preemption: keep the loop free of attribute lookups
    for key in bound:
        pi = get(key)
        if pi is None:
            continue
        if pi.group is None:
            lone.append(pi)
        else:
            by_group[pi.group].append(pi)
    limit = math.inf if below is None else below
    units = [VictimUnit([pi], pi.priority) for pi in lone if pi.priority < limit]
    wholes: dict[GroupRef, VictimUnit] = {}
    for group, members in by_group.items():
        whole, group_priority = hierarchy.resolve(group)
        if group_priority is not None and group_priority >= limit:
            continue  # the whole group is out of reach: no need to build its units
        if whole is None:
            units += [
                VictimUnit([pi], pi.priority if group_priority is None else group_priority) for pi in members
            ]
            continue
        unit = wholes.get(whole)
        if unit is None:
            unit = wholes[whole] = VictimUnit(
                [], members[0].priority if group_priority is None else group_priority
            )
            unit.whole_group = whole
            units.append(unit)
        unit.pods += members
        unit.member_groups.add(("PodGroup", *group))
    return [u for u in units if u.priority < limit]


def sort_by_importance(units: Sequence[VictimUnit]) -> list[VictimUnit]:
    return sorted(units, key=VictimUnit.importance)
