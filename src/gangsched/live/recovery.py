"""Failures after admission in `gangsched run`: the Profile's recovery policy (scheduler/recovery.py, the
rules the simulator uses too) carried out on a real cluster.

    tracker = GangRecovery(store, recovery, scheduler_name="gangsched")
    for action in tracker.observe(now):          # after every batch of changes the informers delivered
        applier.delete_members(action.delete, action.notice)

A member of an admitted gang is *in place* while it is bound, not finished, not being deleted, and its node
exists and is not NotReady (condition Ready False or Unknown). It is *lost* when it stops being in place:
its pod failed (phase Failed) or was deleted (by anyone: a user, kube-scheduler's or gangsched's preemption,
the taint-eviction controller), or its node went NotReady or was deleted. A member that Succeeded is not a
loss: the gang is finishing, and is no longer watched. Facts in, one rule module decides:
- `after_loss` says what the policy does with the loss: RESTART deletes every member still bound, now (the
  owner, a Job controller, creates the group again and it is scheduled whole); CONTINUE goes on; STALL
  holds the rest until the lost members are replaced (the owner creates replacements, which the core binds
  beside the members in place: a gang with members bound needs only the rest).
- `stalled` says whether the gang is held without progress; `release_at` when release-after:T gives up:
  after T seconds stalled, every member still bound is deleted, as under RESTART.
gangsched itself never deletes a member under wait or continue. A pod on a NotReady node stays bound: the
node lifecycle controller taints the node and the taint-eviction controller evicts the pod after its
tolerationSeconds (300 s by default), as on any cluster; gangsched counts it as lost at once, so the
policies act from the moment the node is NotReady. Pods of a deleted node are deleted by the pod garbage
collector, or by gangsched's RESTART/release.

While a gang is stalled, the GPUs of its members in place are held without progress: that is
`gpu_seconds` per gang (the simulator's `below_min` state), exported as the counter
gangsched_gpu_seconds_below_min_count_total{namespace,podgroup}, exact at each observation and read at
scrape time (a stall in progress counts up to the moment of the scrape).

Contract: single-threaded (the event loop); `observe` only reads the Store and returns what to delete.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..scheduler.decision import Notice
from ..scheduler.podinfo import is_terminal
from ..scheduler.recovery import (
    CONTINUE,
    RESTART,
    STALL,
    Recovery,
    after_loss,
    recovering_after,
    release_at,
    stalled,
)
from ..scheduler.resources import pod_requests
from ..store.change import Change
from ..store.store import Store

__all__ = ["GangRecovery", "GangState", "RecoveryAction", "is_gpu_resource", "node_ready"]

log = logging.getLogger("gangsched.live.recovery")

Key = tuple[str, str]


def is_gpu_resource(resource: str) -> bool:
    """Extended resources named `<vendor>/gpu` count as GPUs (nvidia.com/gpu, amd.com/gpu, ...)."""
    return "/" in resource and resource.rsplit("/", 1)[1] == "gpu"


def node_ready(node: Any) -> bool:
    """False when the node's Ready condition is False or Unknown (the kubelet says so, or the node lifecycle
    controller stopped hearing from it); a node without the condition counts as ready."""
    for c in (node.status.conditions if node.status else None) or []:
        if c.type == "Ready":
            return bool(c.status == "True")
    return True


@dataclass(slots=True)
class GangState:
    """What is known of one admitted gang between observations."""

    in_place: set[Key] = field(default_factory=set)  # members in place at the last observation
    gpus: float = 0.0  # GPUs of those members
    recovering: int = 0  # after a STALL: members that must be in place again before it progresses
    below_since: float | None = None  # stalled since (wall clock), while it holds members
    last: float = 0.0  # time of the last observation
    gpu_seconds: float = 0.0  # GPUs held while stalled, integrated


@dataclass(frozen=True, slots=True)
class RecoveryAction:
    """Delete these bound members of `group` (a restart or a release), and say so with `notice`."""

    group: Key
    kind: str  # "restart" | "release"
    delete: tuple[Key, ...]
    notice: Notice


class GangRecovery:
    """Watches the gangs of one scheduler name in a Store and applies a recovery policy to them."""

    def __init__(self, store: Store, recovery: Recovery, *, scheduler_name: str) -> None:
        self.store = store
        self.recovery = recovery
        self.scheduler_name = scheduler_name
        self.gangs: dict[Key, GangState] = {}  # admitted gangs
        self.gpu_seconds: dict[Key, float] = {}  # every gang that was ever stalled: its total so far
        self.actions: dict[str, int] = {"restart": 0, "release": 0}
        self._members: dict[Key, set[Key]] = {}  # group -> its pods (ours) in the Store
        self._dirty: set[Key] = set()
        self._nodes_changed = False
        # Members this tracker asked to delete, until the Store shows them going: never counted again.
        self._deleting: set[Key] = set()
        for pod in store.list("Pod"):
            self._index(pod)
        store.subscribe(self._on_change)

    # --- what changed ---------------------------------------------------------------------------------------
    def _group_of(self, pod: Any) -> Key | None:
        sg = pod.spec.schedulingGroup
        if sg is None or not sg.podGroupName or pod.spec.schedulerName != self.scheduler_name:
            return None
        return pod.metadata.namespace, sg.podGroupName

    def _index(self, pod: Any) -> None:
        group = self._group_of(pod)
        if group is not None:
            self._members.setdefault(group, set()).add((pod.metadata.namespace, pod.metadata.name))
            self._dirty.add(group)

    def _on_change(self, change: Change) -> None:
        if change.kind == "Node":
            # a node added, deleted, or going Ready / NotReady: the gangs with members on it may change
            old_ready = node_ready(change.old) if change.old is not None else None
            if change.action in ("add", "delete") or old_ready != node_ready(change.obj):
                self._nodes_changed = True
        elif change.kind == "PodGroup":
            self._dirty.add(change.key)
        elif change.kind == "Pod":
            for obj in (change.old, change.obj):
                if obj is not None:
                    self._index(obj)

    # --- deciding -------------------------------------------------------------------------------------------
    def observe(self, now: float) -> list[RecoveryAction]:
        """Bring every gang touched since the last call (and every admitted gang after a node change, or a
        release falling due) up to `now`; returns the deletions the policy asks for."""
        dirty, self._dirty = self._dirty, set()
        if self._nodes_changed:
            dirty |= set(self.gangs)
            self._nodes_changed = False
        dirty |= {g for g, s in self.gangs.items() if s.below_since is not None}  # release clocks, gauges
        actions = []
        for group in sorted(dirty):
            action = self._observe_gang(group, now)
            if action is not None:
                actions.append(action)
        return actions

    def next_release_at(self) -> float | None:
        """The earliest time a stalled gang is released (release-after), for the loop's wait."""
        times = [
            t
            for s in self.gangs.values()
            if s.below_since is not None and (t := release_at(self.recovery, s.below_since)) is not None
        ]
        return min(times, default=None)

    def _min_count(self, group: Key) -> int | None:
        pg = self.store.get("PodGroup", group)
        gang = pg.spec.schedulingPolicy.gang if pg is not None else None
        return int(gang.minCount) if gang is not None else None

    def _survey(self, group: Key) -> tuple[dict[Key, float], list[Key], bool]:
        """(members in place -> their GPUs, members bound and not yet being deleted, any Succeeded)."""
        in_place: dict[Key, float] = {}
        bound: list[Key] = []
        succeeded = False
        keys = self._members.get(group, set())
        for key in sorted(keys):
            pod = self.store.get("Pod", key)
            if pod is None:
                keys.discard(key)
                self._deleting.discard(key)
                continue
            if key in self._deleting:
                if pod.metadata.deletionTimestamp is not None or is_terminal(pod):
                    self._deleting.discard(key)
                continue
            if pod.status is not None and pod.status.phase == "Succeeded":
                succeeded = True
            if not pod.spec.nodeName or is_terminal(pod) or pod.metadata.deletionTimestamp is not None:
                continue
            bound.append(key)
            node = self.store.get("Node", ("", pod.spec.nodeName))
            if node is not None and node_ready(node):
                gpus = sum(v for r, v in pod_requests(pod.spec).items() if is_gpu_resource(r))
                in_place[key] = gpus / 1000
        if not keys:
            self._members.pop(group, None)
        return in_place, bound, succeeded

    def _observe_gang(self, group: Key, now: float) -> RecoveryAction | None:
        min_count = self._min_count(group)
        state = self.gangs.get(group)
        if min_count is None:  # not (or no longer) a gang: nothing to recover
            self._forget(group, state, now)
            return None
        in_place, bound, succeeded = self._survey(group)
        if state is None:
            if len(in_place) >= min_count and not succeeded:
                self.gangs[group] = GangState(set(in_place), sum(in_place.values()), last=now)
            return None
        self._accrue(group, state, now)
        if succeeded:
            self._forget(group, state, now)  # finishing: members leaving are not failures
            return None
        lost = state.in_place - set(in_place)
        was_stalled = stalled(running=len(state.in_place), min_count=min_count, recovering=state.recovering)
        action = None
        if lost:
            action = after_loss(
                self.recovery, gang=True, started=True, running=len(in_place), min_count=min_count
            )
            log.info(
                "gang %s/%s lost %s (%d of minCount %d in place): %s under %s",
                *group,
                ", ".join(k[1] for k in sorted(lost)),
                len(in_place),
                min_count,
                action,
                self.recovery.name,
            )
            if action == STALL and not was_stalled:
                state.recovering = len(state.in_place)
        if action == RESTART:
            return self._delete_all(group, state, bound, now, "restart")
        state.recovering = recovering_after(running=len(in_place), recovering=state.recovering)
        state.in_place = set(in_place)
        state.gpus = sum(in_place.values())
        is_stalled = stalled(running=len(in_place), min_count=min_count, recovering=state.recovering)
        if action == CONTINUE or not is_stalled or not in_place:
            state.below_since = None
            if not in_place and not bound:
                self._forget(group, state, now)  # nothing left of it: it is a new gang when recreated
            return None
        if state.below_since is None:
            state.below_since = now
        deadline = release_at(self.recovery, state.below_since)
        if deadline is not None and now >= deadline:
            return self._delete_all(group, state, bound, now, "release")
        return None

    def _accrue(self, group: Key, state: GangState, now: float) -> None:
        if state.below_since is not None and now > state.last:
            held = state.gpus * (now - state.last)
            state.gpu_seconds += held
            self.gpu_seconds[group] = self.gpu_seconds.get(group, 0.0) + held
        state.last = max(state.last, now)

    def _forget(self, group: Key, state: GangState | None, now: float) -> None:
        if state is not None:
            self._accrue(group, state, now)
            del self.gangs[group]

    def _delete_all(
        self, group: Key, state: GangState, bound: list[Key], now: float, kind: str
    ) -> RecoveryAction:
        """Restart or release: every member still bound goes; the gang is no longer admitted."""
        self._forget(group, state, now)
        self.actions[kind] += 1
        self._deleting.update(bound)
        if kind == "restart":
            why = f"recovery policy restart: a member was lost; deleting the {len(bound)} still bound"
        else:
            why = (
                f"recovery policy {self.recovery.name}: held without progress for "
                f"{self.recovery.release_after_s:g}s; releasing the {len(bound)} member(s) still bound"
            )
        log.warning("gang %s/%s: %s", *group, why)
        notice = Notice("Warning", "GangRestart" if kind == "restart" else "GangReleased",
                        f"PodGroup {group[0]}/{group[1]}", why)  # fmt: skip
        return RecoveryAction(group, kind, tuple(bound), notice)

    # --- reading --------------------------------------------------------------------------------------------
    def held_below_min_count(self, now: float) -> Iterator[tuple[Key, float]]:
        """GPU-seconds held without progress per gang ever stalled, counted up to `now`."""
        for group in sorted(set(self.gpu_seconds) | set(self.gangs)):
            state = self.gangs.get(group)
            ongoing = 0.0
            if state is not None and state.below_since is not None and now > state.last:
                ongoing = state.gpus * (now - state.last)
            total = self.gpu_seconds.get(group, 0.0) + ongoing
            if total or group in self.gpu_seconds:
                yield group, total

    def stalled_since(self, group: Key) -> float | None:
        """When this gang stalled (held without progress after a loss), None if it is not stalled."""
        state = self.gangs.get(group)
        return state.below_since if state is not None else None
