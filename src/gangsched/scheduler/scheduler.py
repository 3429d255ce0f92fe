"""The scheduler: keeps the queue and the node snapshot in step with the store, runs one cycle at a time and
returns what it decided. It never writes to the store; `run_until_stable` or the live loop apply Decisions.

    store = Store(); store.add_all(objects)
    scheduler = Scheduler(store, FeatureGates(), seed=0)
    run_until_stable(store, scheduler)      # timeline.py: virtual time, events, run(until)
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from ..api.duration import DurationError, duration_of
from ..api.gates import FeatureGates
from ..store.change import Change
from .backfill_settings import BackfillSettings
from .claims_plugins import CLAIM_KINDS
from .consistency import pod_group_error, tree_error
from .cycle import ERROR, SUCCESS, UNSCHEDULABLE, GroupAttempt, GroupResult, run_group_cycle
from .cycle_rng import CycleRng
from .decision import (
    ClaimReservation,
    Condition,
    ConditionChange,
    Decision,
    Nomination,
    Notice,
    VolumeBinding,
)
from .default_spread import SELECTING_KINDS, PodSelectors
from .evaluator import Evaluator
from .extended import dra_requests, resource_classes
from .hierarchy import Hierarchy, topology_key
from .hints import RoomNeed, RoomWaiters
from .labelselector import Selector
from .lone_failures import LoneFailures
from .outcome import POD_SCHEDULED, bind, group_condition, pod_failed, record_tree
from .plugins import BoolArray
from .podinfo import TERMINAL_PHASES, PodInfo, PodKey, is_terminal, pod_info, uses_claims
from .podtraits import pod_traits
from .policy import QUEUE_POLICIES, QueuePolicy
from .queue import MAX_UNSCHEDULABLE_SECONDS, QueuedRoot, RootKey, SchedulingQueue
from .recovery import WAIT, Recovery
from .snapshot import Snapshot
from .topology import UNPINNED, Pin, in_one_placement, pin, place_with_topology
from .tree import TreeNode, TreeResult, evaluate_root
from .victims import group_priority

if TYPE_CHECKING:
    from ..store.store import Store
    from .backfill import Backfill
    from .claims_postfilter import ClaimsPostFilter
    from .claims_stage import ClaimsStage
    from .postfilter import PostFilterResult
    from .preemption import PreemptionView

# Backfill (backfill.py, plan.py) and PostFilter (postfilter.py: preemption, claims_postfilter.py) are
# imported where they are first used: a scheduler without backfill whose cycles all succeed never needs
# them, and importing them cost `gangsched schedule` about 0.01-0.02 s of its start. So is the claims stage
# (claims_stage.py: volumes and devices), built once a pod uses claims (`_claims_stage`).

__all__ = ["SCHEDULING_GATES_MESSAGE", "WHY_PENDING", "Placer", "Profile", "Scheduler"]


@functools.cache
def _post_filter_api() -> tuple[
    Callable[..., ClaimsPostFilter], Callable[..., PostFilterResult], type[PreemptionView]
]:
    """PostFilter's entry points, imported at the first failed cycle (see above) and kept: an import
    statement in a function costs about 8 us each time it runs, and a replay has a failed cycle per event."""
    from .claims_postfilter import pod_group_post_filter
    from .postfilter import preempt_after_failure
    from .preemption import PreemptionView

    return pod_group_post_filter, preempt_after_failure, PreemptionView


WHY_PENDING = "gangsched.io/WhyPending"  # condition type of `Profile.explain_pending`

# pkg/registry/core/pod/strategy.go applySchedulingGatedCondition (kube-scheduler's own PreEnqueue status,
# "waiting for scheduling gates: [...]", is not written to the pod).
SCHEDULING_GATES_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"


class Placer(Struct, frozen=True):
    """How a root's cycle places it inside a node mask (None: every node), reserving in the snapshot as the
    cycle does (undo with `result.revert`). `pods` are the pods it tries and `needs` how many of them must
    fit at once; `topology_key` the label all must share (PodGroups), None for trees and lone pods."""

    place: Callable[[BoolArray | None], GroupResult | TreeResult]
    pods: tuple[PodInfo, ...]
    needs: int
    topology_key: str | None = None
    fixed_domains: frozenset[str] = frozenset()
    tree: bool = False

    def __call__(self, nodes: BoolArray | None) -> GroupResult | TreeResult:
        return self.place(nodes)


# How long a preemptor waits for its evictions to show (a deletionTimestamp on the victim, or the victim gone)
# before it may be tried again anyway: live, the eviction calls are in flight meanwhile.
EVICTION_SEEN_WITHIN = 10.0


class Profile(Struct, frozen=True):
    """Which pods are ours, how nodes are scored and roots ordered; `scheduler_names=None` takes every pod
    (CLI, sim). `queue_policy`: see policy.py (`Profile(queue_policy=queue_policy("gang-sjf"))`)."""

    scheduler_names: frozenset[str] | None = None
    scoring: str = "LeastAllocated"
    placement_limit: bool = False  # upstream's adaptive limit on topology placements scored; off: score all
    disabled_plugins: frozenset[str] = frozenset()  # filter / score plugins switched off, by upstream name
    backfill: BackfillSettings | None = None  # reservations + backfill (backfill.py); None: none
    # Say why a failed PodGroup or tree waits and when it starts (explain.py) in a condition of its own
    # (WHY_PENDING) and an Event, beside upstream's; off by default: it costs a plan of the queue.
    explain_pending: bool = False
    # Upstream's podMaxInUnschedulablePodsDuration: a root unschedulable this long is retried anyway.
    max_unschedulable_s: float | None = MAX_UNSCHEDULABLE_SECONDS
    queue_policy: QueuePolicy = QUEUE_POLICIES["gang"]
    recovery: Recovery = WAIT  # members lost after admission: read by the simulator (recovery.py)


_ARRIVAL, _PRIORITY = operator.attrgetter("order"), operator.attrgetter("priority")


def _min_count(pg: Any) -> tuple[bool, int]:
    gang = pg.spec.schedulingPolicy.gang
    return (True, int(gang.minCount)) if gang is not None else (False, 1)


class Scheduler:
    """One scheduler over one store. Deterministic for a given seed and sequence of store changes."""

    def __init__(self, store: Store, gates: FeatureGates, *, seed: int = 0, profile: Profile = Profile()):
        self.store = store
        self.gates = gates
        self.profile = profile
        # Whether pods are scheduled by their PodGroups (`pod_info` reads it for every pod it makes).
        self.use_groups: bool = gates.generic_workload and profile.queue_policy.groups
        self.seed = seed  # planners break their trial placements' ties from it (plan.tie_breaker)
        self.rng = CycleRng(seed)
        self.clock: Callable[[], float] = store.clock  # one clock: a Timeline replaces both with its own
        self.queue = SchedulingQueue(
            max_unschedulable_s=profile.max_unschedulable_s, policy=profile.queue_policy
        )
        self.waiters = RoomWaiters()
        self._bound_priority: dict[PodKey, int] = {}  # running pods' priorities: may a root preempt?
        self._priorities_running: dict[int, int] = {}  # priority -> running pods of it
        # The same running pods, for preemption's victim search: lone pods by priority, and group members by
        # group (a member's unit takes its group's priority, read when a preemption asks).
        self._running_lone: dict[int, set[PodKey]] = {}
        self._running_in_groups: dict[tuple[str, str], set[PodKey]] = {}
        self.skipped = 0  # cycles not run because the room bound showed they must fail
        # Extended resource names DeviceClasses serve (DRAExtendedResource): NodeResourcesFit skips them where
        # no node offers them and DynamicResources allocates devices for them (extended.py).
        self._dra_resources = frozenset(resource_classes(store.list("DeviceClass")))
        self._snap: Snapshot | None = None
        self._ev: Evaluator | None = None
        self._claims_used = False  # some pod uses claims: the evaluator has a claims stage (`_note_claims`)
        self._pods: dict[PodKey, PodInfo] = {}
        self._members: dict[tuple[str, str], set[PodKey]] = {}
        self._gated: dict[PodKey, str] = {}
        self._gated_in_group: dict[tuple[str, str], set[PodKey]] = {}
        self._gating_reported: dict[PodKey, str] = {}
        self._queue_entries: dict[tuple[str, str], tuple[RootKey, int, tuple[float, int]]] = {}
        # Upstream's nominator: pending pods of ours nominated to a node (from status.nominatedNodeName, or
        # from our own decisions before their write lands). The snapshot mirrors it as held room.
        self._nominated: dict[PodKey, str] = {}
        # Victims of our preemptions not yet gone -> the root that preempted them: a victim's deletion
        # activates its preemptor at once (no backoff) so that it takes the room it made.
        self._victim_of: dict[PodKey, RootKey] = {}
        # Evictions decided but not seen yet (victim neither terminating nor gone): root -> victim -> when.
        # Upstream's preemption executor keeps such a preemptor out of the queue (IsPodRunningPreemption in
        # PreEnqueue) until its eviction calls are through; so does `_cycle`.
        self._evicting: dict[RootKey, dict[PodKey, float]] = {}
        self._order = 0
        self.cycles = 0
        # Failed lone-pod cycles kept while their inputs stand (lone_failures.py); `_objects_changed` counts
        # the changes to objects other than pods, which it reads as part of that state.
        self.lone_failures = LoneFailures()
        self._objects_changed = 0
        self.pod_selectors = PodSelectors(store)  # PodTopologySpread's default constraints read them
        # Whether the store holds any object of SELECTING_KINDS: without one no pod has a default selector.
        # Kept current by `_on_selecting_change` (every add, update and delete of those kinds reaches it),
        # so that each pod's arrival does not count four kinds again.
        self._selecting = self._any_selecting()
        backfill = profile.backfill
        if backfill is None and profile.queue_policy.name == "gang-backfill":
            backfill = BackfillSettings()
        self.backfill: Backfill | None = None
        if backfill is not None:
            from .backfill import Backfill
            from .estimates import History

            self.backfill = Backfill(self, backfill, History() if backfill.estimate == "history" else None)
        if self.backfill is not None and self.backfill.history is None and self.backfill.settings.depth != 0:
            # Release walks read only the roots the plan could let through by their estimates (hints.py); a
            # root's estimate is then fixed while it waits (not with history: that moves as work ends). At
            # depth 0 nothing is reserved, so no walk is bounded.
            self.waiters.estimate = self.backfill.expected_seconds
        self.hierarchy = Hierarchy(
            store,
            self._members,
            self._pods,
            composite=gates.composite_pod_group,
            topology=gates.topology_aware_workload_scheduling,
        )
        # Nodes are not replayed: the snapshot is built from the store when first needed, and a node's event
        # has nothing to wake while the queue is empty (5,000 nodes took a twentieth of a second). Nor are
        # PodGroups and CompositePodGroups, which the replay gave before any pod: with no pod known, a group's
        # arrival has no member to gate or let in, no root queued to move, no entry or plan kept to forget
        # (a sixteenth of the start for gangs of 3, each a no-op); they are read from the store as pods are.
        # Pods go straight to `_on_pod`: no evaluator exists yet, so no claims stage to feed (`_on_change`).
        # The pending members of groups are let through PreEnqueue once every pod has been seen, each once,
        # in pod order: gating only lifts as members arrive, so each ends where the replay one by one left
        # it, without being held at minCount and let in again as the rest of its gang arrives (a third of
        # the replay's time for gangs of 3).
        self._admit_after_replay: list[PodInfo] | None = []
        for pod in store.list("Pod"):
            self._on_pod(Change("add", "Pod", (pod.metadata.namespace or "", pod.metadata.name), pod))
        deferred, self._admit_after_replay = self._admit_after_replay, None
        # The group's part of the gate is the same for every member, and letting one in changes nothing it
        # reads (the store's groups, the members counted): asked once per group, as `_regate` does. Once a
        # member has let its group's root in, that root is active in a queue nothing has popped yet, and no
        # member was held at PreEnqueue during the replay: entering it for the next members would change
        # nothing (two thirds of this loop's time for gangs of 3), so they are passed over.
        group_messages: dict[tuple[str, str], str | None] = {}
        entered: set[tuple[str, str]] = set()
        for pi in deferred:
            group = pi.group
            assert group is not None  # only group members are deferred
            if pi.pod.spec.schedulingGates:
                self._enter(pi, SCHEDULING_GATES_MESSAGE)
                continue
            if group not in group_messages:
                group_messages[group] = self._group_gate_message(group)
            message = group_messages[group]
            if message is None:
                if group in entered:
                    continue
                entered.add(group)
            self._enter(pi, message)
        store.subscribe(self._on_change)

    # --- keeping in step with the store -------------------------------------------------------------------
    def _ours(self, pi: PodInfo) -> bool:
        names = self.profile.scheduler_names
        return names is None or pi.scheduler_name in names

    def _root_of(self, pi: PodInfo) -> RootKey:
        if pi.group is not None:
            return self.hierarchy.root_of_group(pi.group)
        return ("Pod", *pi.key)

    def _on_change(self, change: Change) -> None:
        if change.kind == "Pod":  # most changes (a pod added, bound, deleted): none of the kind checks below
            if self._ev is not None and self._ev.claims is not None:  # else a pod's change feeds nothing
                self._on_claims_change(change)
            pi = self._pods.get(change.key) if change.action == "bind" else None
            if pi is None:
                self._on_pod(change)
                return
            # A known pod bound by a Decision applied (the store's `apply`: every pod a cycle places comes
            # here): what `_on_pod` does on its update, less the checks a binding cannot meet (it changes no
            # phase, labels or gates, and leaves a bound pod nothing to admit).
            if self.backfill is not None:
                self.backfill.touch(change)
            pi.pod = change.obj
            self._running(pi)
            return
        self._objects_changed += 1
        if change.kind == "PodGroup":
            # A group's entry reads its PodGroup and the CompositePodGroups above it, never another PodGroup:
            # only its own is dropped (the entries of the groups whose pods are added next are kept).
            self._queue_entries.pop(change.key, None)
        elif change.kind == "CompositePodGroup":
            self._queue_entries.clear()
        if self.backfill is not None:
            # Pods' roots and nodes may have moved (pods: touch).
            self.backfill.objects_changed(change.kind, change.action, change)
        if change.kind in CLAIM_KINDS:
            self._on_claims_change(change)
        if change.kind == "DeviceClass":
            self._on_device_class_change()
        if change.kind in SELECTING_KINDS:
            self._on_selecting_change(change)
        if change.kind in ("Node", "Namespace"):  # namespace labels feed namespaceSelectors
            self._snap = self._ev = None
            self.waiters.clear()
            self.queue.move_all_to_active()
        elif change.kind == "PodGroup" and self.use_groups:
            self._on_pod_group(change)
        elif change.kind == "CompositePodGroup" and self.use_groups and self.gates.composite_pod_group:
            root = self.hierarchy.root_of_composite(change.key)
            for group in self.hierarchy.tree_groups(root):
                self._regate(group)

    def _default_selector(self, pod: Any) -> Selector | None:
        """The selector of PodTopologySpread's system default constraints for `pod`; None when the pod has
        constraints of its own or no object of the selecting kinds exists."""
        if pod.spec.topologySpreadConstraints or not self._selecting:
            return None
        return self.pod_selectors.selector_for(pod)

    def _any_selecting(self) -> bool:
        return any(self.store.count(k) for k in SELECTING_KINDS)

    def _on_selecting_change(self, change: Change) -> None:
        """A Service, ReplicationController, ReplicaSet or StatefulSet changed: the pending pods of its
        namespace are scored with the default selector as it is now (upstream reads its listers in each
        PreScore). No requeue: the defaults are ScheduleAnyway and never made a pod unschedulable."""
        self.pod_selectors.changed()
        self._selecting = self._any_selecting()
        namespace = change.key[0]
        for key, pi in self._pods.items():
            if key[0] == namespace and not pi.pod.spec.nodeName:
                selector = self._default_selector(pi.pod)
                traits = pod_traits(pi.pod, selector)
                if traits is not pi.traits:
                    pi.traits = traits

    def _on_device_class_change(self) -> None:
        """The resources DeviceClasses serve may have changed: the snapshot's DRA-served rows are rebuilt
        and each pod asks the claims stage again whether DynamicResources has work for it."""
        served = frozenset(resource_classes(self.store.list("DeviceClass")))
        if served == self._dra_resources:
            return
        self._dra_resources = served
        self._snap = self._ev = None
        for pi in self._pods.values():
            pi.claims = self._uses_claims(pi)
            self._note_claims(pi)

    def _uses_claims(self, pi: PodInfo) -> bool:
        """Whether the claims stage filters the pod: claims or volumes, or a resource a DeviceClass serves."""
        return uses_claims(pi.pod.spec) or bool(
            self._dra_resources and dra_requests(pi.requests, dict.fromkeys(self._dra_resources))
        )

    def _on_claims_change(self, change: Change) -> None:
        """Storage and device objects feed the claims stage; a change that may let a waiting pod fit
        (anything but a claim gaining an allocation or a consumer, or the special claim for a pod's extended
        resources being created, which is this scheduler's own doing: the store emits those with `old` the
        object itself) requeues everyone, as upstream's volume and DRA plugins' queueing hints do for these
        events."""
        stage = self._ev.claims if self._ev is not None else None
        obj = None if change.action == "delete" else change.obj
        if stage is not None:
            stage.on_change(
                change.kind, change.key, obj, change.old if change.action != "delete" else change.obj
            )
        if change.kind == "Pod":
            return
        ours = (
            change.kind in ("ResourceClaim", "PersistentVolumeClaim", "PersistentVolume")
            and change.action in ("add", "update")
            and change.obj is change.old
        )
        if not ours:
            self.queue.move_all_to_active()

    def _on_pod(self, change: Change) -> None:
        key, pod, action = change.key, change.obj, change.action
        if action != "delete" and action != "bind":  # binding changes no phase
            status = pod.status  # `is_terminal`, without its call: every pod comes here as it is added
            if status is not None and status.phase in TERMINAL_PHASES:
                # kube-scheduler's pod informer lists only pods that are not Succeeded/Failed: a pod turning
                # terminal leaves its cache as a delete does (frees its node, requeues who may use it).
                if key in self._pods:
                    self._on_pod(Change("delete", "Pod", key, pod, change.old))
                return
        if self.backfill is not None:
            self.backfill.touch(change)  # work started or ended, or a root came: the plan rests on it
        if action == "delete":
            pi = self._pods.pop(key, None)
            self._set_nomination(key, None)
            preemptor = self._victim_of.pop(key, None)
            if preemptor is not None:
                self._evicting.get(preemptor, {}).pop(key, None)
                self.queue.activate(preemptor)
            self._ungate(key, pi.group if pi is not None else None)
            if self._snap is not None:
                self._snap.remove(key)
            if pi is not None and pi.group is not None:
                self._members.get(pi.group, set()).discard(key)
            self.queue.remove(("Pod", *key))
            self.waiters.forget(("Pod", *key))
            if pi is not None and self._count_gone(key, pi.group):
                self._released()  # only a bound pod's deletion frees room (NodeResourcesFit's hint)
            return
        pi = self._pods.get(key)
        if pi is None:
            self._order += 1
            # (With no object of the selecting kinds, no pod has a default selector: no call to say so.)
            selector = self._default_selector(pod) if self._selecting else None
            pi = pod_info(pod, self._order, self.use_groups, selector)
            if self._dra_resources and not pi.claims:
                pi.claims = self._uses_claims(pi)
            self._pods[key] = pi
            if pi.claims:
                self._note_claims(pi)
            if pi.group is not None:
                members = self._members.get(pi.group)  # no empty set made for every pod
                if members is None:
                    members = self._members[pi.group] = set()
                members.add(key)
        else:
            relabelled = not pod.spec.nodeName and pod.metadata.labels != pi.pod.metadata.labels
            pi.pod = pod  # live informers replace objects on update; what it identifies stays immutable
            if relabelled:
                # A pending pod's labels may change: what other pods read of it, and the selector of its
                # default spread constraints (upstream builds them in each cycle), follow them.
                pi.traits = pod_traits(pod, self._default_selector(pod))
        if pod.spec.nodeName:
            self._running(pi)
        else:
            status = pod.status
            # A pod the nominator does not hold has no nomination to end, nor one to record unless its status
            # names a node (most pods: no call).
            nominated = self._nominated and key in self._nominated  # (none: the key is not hashed)
            if nominated or (status is not None and status.nominatedNodeName):
                self._track_nomination(pi, change)
            if self._victim_of and key in self._victim_of:
                self._eviction_seen(pi)
            if self.profile.scheduler_names is None or self._ours(pi):  # no names: all ours, no call
                if self._admit_after_replay is not None and pi.group is not None:
                    self._admit_after_replay.append(pi)  # admitted once every pod is known (__init__)
                else:
                    self._admit(pi)
        if (
            action == "add"
            and pi.group is not None
            and self._admit_after_replay is None
            and self._own_gate_open(pi.group)
        ):
            # One more member (pending or bound) may lift the gang's minCount gate for the others,
            # and in a composite tree the quorum gate for every group of the tree. (A bound member's group
            # was requeued already by `_running`: either comes first, the root ends in the same state.)
            root = self._root_of(pi)
            groups = self.hierarchy.tree_groups(root) if root[0] == "CompositePodGroup" else [pi.group]
            for group in groups:
                self._regate(group, only_gated=True)

    def _eviction_seen(self, pi: PodInfo) -> None:
        """For a victim of one of our preemptions (in `_victim_of`): once it shows as terminating, its
        eviction has landed."""
        if pi.pod.metadata.deletionTimestamp is not None:
            self._evicting.get(self._victim_of[pi.key], {}).pop(pi.key, None)

    def _running(self, pi: PodInfo) -> None:
        """A pod known bound (added bound, or bound since): nominated nowhere, counted as running, counted
        in the snapshot where no cycle of ours placed it, and its group requeued."""
        key, group = pi.key, pi.group
        # (While nothing is nominated or preempted, the key is not hashed to find that out.)
        if self._nominated and key in self._nominated:
            self._set_nomination(key, None)  # upstream's nominator: a bound pod has no nomination
        if self._victim_of and key in self._victim_of:
            self._eviction_seen(pi)
        # Running pods' priorities (may a root preempt?) and groups (preemption's victims), counted in plain
        # dicts, whose `get` costs half of what a Counter's `+= 1` does: every pod bound comes here.
        if key in self._bound_priority:  # counted already (an update of a running pod): counted again
            self._count_gone(key, group)
        priority = self._bound_priority[key] = pi.priority
        counts = self._priorities_running
        counts[priority] = counts.get(priority, 0) + 1
        if group is not None:
            running = self._running_in_groups.get(group)  # no empty set made for every pod
            if running is None:
                running = self._running_in_groups[group] = set()
            running.add(key)
        else:
            self._running_lone.setdefault(priority, set()).add(key)
        snap = self._snap
        if snap is not None and key not in snap.placed:  # bound by someone else: the cycle placed ours
            node = snap.index.get(pi.pod.spec.nodeName)
            if node is not None:
                snap.place(key, node, self._evaluator().vector(pi), pi.traits)
        if group is not None:
            # A member bound (by this scheduler or anyone) requeues its group, as upstream's assigned-pod
            # events do: members still pending get a cycle of their own, which may preempt. (The group's entry
            # is kept since its members entered the queue: looked up here without a call, as every bound
            # member of a group comes here.)
            entry = self._queue_entries.get(group) or self._queue_entry(pi)
            self.queue.move_to_active(entry[0])

    def _track_nomination(self, pi: PodInfo, change: Change) -> None:
        """Upstream's nominator on a pending pod's add/update: a pending pod of ours is nominated where its
        status says; a status without one keeps a nomination we made whose write has not landed yet, unless
        the previous object had one (someone cleared it). Not ours: no nomination (bound: `_running`).

        When a status write (another writer's: ours are recorded before they are sent) moves or clears a
        nomination, the room it held is free for others, as upstream's updatePodInSchedulingQueue treats
        the pod as deleted from its old nominated node and requeues who may use the room. The pod itself is
        requeued by its update (`_admit`), so a preemptor re-plans with its new nominated nodes."""
        if not self._ours(pi):
            self._set_nomination(pi.key, None)
            return
        before = self._nominated.get(pi.key)
        status = pi.pod.status.nominatedNodeName if pi.pod.status is not None else None
        if status:
            self._set_nomination(pi.key, status)
        else:
            old = change.old
            if old is None or old is pi.pod or old.status is None or not old.status.nominatedNodeName:
                return
            self._set_nomination(pi.key, None)
        if before is not None and before != status:
            self._released()

    def _set_nomination(self, key: PodKey, node_name: str | None) -> None:
        """Record (or with None drop) `key`'s nomination in the nominator and the snapshot."""
        if node_name is None:
            if self._nominated.pop(key, None) is not None and self._snap is not None:
                self._snap.unnominate(key)
            return
        if self._nominated.get(key) == node_name:
            return
        self._nominated[key] = node_name
        if self._snap is not None:
            self._hold(key, node_name)

    def _hold(self, key: PodKey, node_name: str) -> None:
        """Mirror a nomination in the snapshot (not for a pod counted there already, nor an unknown node)."""
        snap, pi = self._snap, self._pods.get(key)
        assert snap is not None
        node = snap.index.get(node_name)
        if pi is None or node is None or key in snap.placed:
            snap.unnominate(key)
            return
        snap.nominate(key, node, self._evaluator().vector(pi), pi.priority)

    def nominated_node(self, key: PodKey) -> str | None:
        """Where the nominator holds room for `key` (None: nowhere)."""
        return self._nominated.get(key)

    def _count_gone(self, key: PodKey, group: tuple[str, str] | None) -> bool:
        """A pod counted running (`_running`) is not any more (gone, or counted again); `group` is its
        PodInfo's, which never changes. True if it was counted."""
        old = self._bound_priority.pop(key, None)
        if old is None:
            return False
        counts = self._priorities_running
        counts[old] -= 1
        if not counts[old]:
            del counts[old]
        if group is not None:
            members = self._running_in_groups[group]
            members.discard(key)
            if not members:
                del self._running_in_groups[group]
        else:
            lone = self._running_lone[old]
            lone.discard(key)
            if not lone:
                del self._running_lone[old]
        return True

    def victim_keys(self, placed: Mapping[PodKey, Any], below: int) -> Iterable[PodKey]:
        """The pods of `placed` that may be in a preemption unit of priority < `below`, in `placed`'s order:
        lone pods of lower priority, and the members of groups whose priority is lower (or unknown: a
        PodGroup gone, its members' own priorities count), as `collect_units` judges them. All of `placed`
        when it is not the running pods (a cycle's own placements in it), so the answer never misses one."""
        if len(placed) != len(self._bound_priority):
            return placed
        wanted: set[PodKey] = set()
        for group, keys in self._running_in_groups.items():
            priority = group_priority(self.store, group)
            if priority is None or priority < below:
                wanted |= keys
        for priority, keys in self._running_lone.items():
            if priority < below:
                wanted |= keys
        if not wanted:
            return ()
        return [key for key in placed if key in wanted]

    def _released(self) -> None:
        """Room was freed on some node: requeue the roots it may help (hints.py)."""
        if self._ev is None:
            self.queue.move_all_to_active()  # no snapshot to bound anything with yet
            self.waiters.clear()
            return
        now = self.clock()
        fits = self.backfill.room_check(now) if self.backfill is not None else None
        for root in self.waiters.wake(self._ev.room_for, lambda key: self.queue.ready_by(key, now), fits):
            self.queue.move_to_active(root)

    def _wait_for_room(self, root: QueuedRoot, need: RoomNeed | None) -> None:
        """`root` failed (or was ruled out by the bound): index it, and give the roots of its class that the
        last walk passed over their chance at the room it did not take (hints.py)."""
        self.waiters.wait(root.key, root.sort_key(), need)
        if need is not None and self._ev is not None:
            now = self.clock()
            ready = lambda key: self.queue.ready_by(key, now)  # noqa: E731
            fits = functools.partial(self.backfill.room_check, now) if self.backfill is not None else None
            for key in self.waiters.rewake(need.like, self._ev.room_for, ready, fits):
                self.queue.move_to_active(key)

    def _room_need(self, priority: int, pg: Any, pending: list[PodInfo], bound: int) -> RoomNeed | None:
        """What must fit at once for this root to have a chance (hints.py), or None when no bound applies:
        pods of several classes, or a running pod of lower priority that preemption might take."""
        if not pending or any(pi.signature != pending[0].signature for pi in pending):
            return None
        if self._priorities_running and min(self._priorities_running) < priority:
            return None
        need = 1
        if pg is not None:
            gang, min_count = _min_count(pg)
            need = max(min_count - bound, 1) if gang else 1
        return RoomNeed(pending[0], need)

    def _on_pod_group(self, change: Change) -> None:
        group = change.key
        if change.action == "update" and change.old is not None:
            old_gang, old_min = _min_count(change.old)
            new_gang, new_min = _min_count(change.obj)
            if old_gang and new_gang and new_min < old_min:
                self.queue.move_to_active(("PodGroup", *group))
        self._regate(group)
        root = self.hierarchy.root_of_group(group)
        if root[0] == "CompositePodGroup":
            # A group joining a tree may complete its quorum: the pods its siblings hold at PreEnqueue for
            # it are let in too (pods created before their groups, as a controller may).
            for other in self.hierarchy.tree_groups(root):
                if other != group:
                    self._regate(other, only_gated=True)

    def _ungate(self, key: PodKey, group: tuple[str, str] | None) -> None:
        if self._gated.pop(key, None) is not None and group is not None:
            self._gated_in_group[group].discard(key)
        self._gating_reported.pop(key, None)

    def _report_gated(self, decision: Decision) -> None:
        """Say why pods wait at PreEnqueue, once the queue is idle: a gate lifted by the next pod of a burst
        is not worth a status write."""
        for key, message in self._gated.items():
            if self._gating_reported.get(key) != message:
                self._gating_reported[key] = message
                condition = Condition(POD_SCHEDULED, "False", "SchedulingGated", message)
                decision.conditions.append(ConditionChange("Pod", key, condition))

    def _own_gate_open(self, group: tuple[str, str]) -> bool:
        pg = self.store.get("PodGroup", group)
        if pg is None:
            return False
        gang, min_count = _min_count(pg)
        return not gang or len(self._members.get(group, ())) >= min_count

    def _gate_message(self, pi: PodInfo) -> str | None:
        """PreEnqueue: why the pod may not enter the queue yet (upstream's messages), or None. SchedulingGates
        runs first; for it the condition carries what kube-apiserver writes on a gated pod's creation."""
        if pi.pod.spec.schedulingGates:
            return SCHEDULING_GATES_MESSAGE
        return None if pi.group is None else self._group_gate_message(pi.group)

    def _group_gate_message(self, group: tuple[str, str]) -> str | None:
        """`_gate_message` after SchedulingGates, for a member of `group`: the same for all its members."""
        pg = self.store.get("PodGroup", group)
        if pg is None:
            return f'waiting for pod\'s pod group "{group[1]}" to appear in scheduling queue'
        gang, min_count = _min_count(pg)
        if gang and len(self._members.get(group, ())) < min_count:
            return "waiting for minCount pods from a gang to appear in scheduling queue"
        parent = self.hierarchy.parent_of(pg)
        if parent is None:
            return None
        chain, problem = self.hierarchy.ancestry(group[0], parent)
        if problem is not None:
            # A missing parent may still appear; a cycle never resolves: let the cycle report it Invalid.
            return None if "cycle" in problem else problem
        return self.hierarchy.gate_message(("CompositePodGroup", group[0], chain[-1]))

    def _pending(self, pi: PodInfo) -> bool:
        pod = pi.pod
        return not pod.spec.nodeName and not is_terminal(pod)

    def _regate(self, group: tuple[str, str], only_gated: bool = False) -> None:
        keys = self._gated_in_group.get(group, set()) if only_gated else self._members.get(group, set())
        if not keys:
            return
        # The group's part of the gate is the same for every member: asked once (a gang's members are
        # admitted together when its last pod arrives).
        group_message = self._group_gate_message(group)
        for key in sorted(keys, key=lambda k: self._pods[k].order):
            pi = self._pods[key]
            if self._pending(pi) and self._ours(pi):
                gated = pi.pod.spec.schedulingGates
                self._enter(pi, SCHEDULING_GATES_MESSAGE if gated else group_message)

    def _admit(self, pi: PodInfo) -> None:
        self._enter(pi, self._gate_message(pi))

    def _enter(self, pi: PodInfo, message: str | None) -> None:
        """Queue the pod's root when `message`, its `_gate_message`, is None; else hold it at PreEnqueue."""
        if message is not None:
            self._gated[pi.key] = message
            if pi.group is not None:
                self._gated_in_group.setdefault(pi.group, set()).add(pi.key)
            return
        if self._gated or self._gating_reported:  # (no pod held at PreEnqueue: no gate to lift, no call)
            self._ungate(pi.key, pi.group)
        root, priority, timestamp = self._queue_entry(pi)
        if root in self.queue:
            self.queue.move_to_active(root)
        else:
            # Only a policy that orders by it reads the run time: the annotation is not looked up for others.
            runtime = self._runtime(root) if self.profile.queue_policy.by_runtime else math.inf
            self.queue.add(root, priority, timestamp, runtime)

    def _queue_entry(self, pi: PodInfo) -> tuple[RootKey, int, tuple[float, int]]:
        """(root, priority, timestamp) under which the pod is queued. For group members it is the same for
        the whole group, so it is kept until its PodGroup or a CompositePodGroup changes."""
        if pi.group is None:
            return ("Pod", *pi.key), pi.priority, self.store.timestamp("Pod", pi.key, pi.pod)
        entry = self._queue_entries.get(pi.group)
        if entry is None:
            # The PodGroup read once: the root's object when the group is its own root (the usual group).
            pg = self.store.get("PodGroup", pi.group)
            root = self.hierarchy.root_of_group(pi.group, pg)  # `_root_of`, without its call
            key = (root[1], root[2])
            group = pg if root[0] == "PodGroup" else self.store.get(root[0], key)
            priority = int(group.spec.priority or 0) if group is not None else pi.priority
            entry = (root, priority, self.store.timestamp(root[0], key, group))
            self._queue_entries[pi.group] = entry
        return entry

    def _runtime(self, root: RootKey) -> float:
        """The root's annotated run time (gangsched.io/duration), inf when unknown (gang-sjf's order)."""
        try:
            seconds = duration_of(self.store.get(root[0], (root[1], root[2])))
        except DurationError:
            return float("inf")  # validation reports it
        return float("inf") if seconds is None else seconds

    def forget(self, pod_keys: Iterable[PodKey]) -> None:
        """Undo the assumed placements of pods whose binding failed (live mode): they leave the snapshot and
        those still pending (the caller has cleared their nodeName) requeue their roots. Idempotent."""
        for key in pod_keys:
            if self._snap is not None:
                self._snap.remove(key)
            pi = self._pods.get(key)
            if pi is not None and self._pending(pi) and self._ours(pi):
                self._admit(pi)
        self._released()  # the room they held is free again

    # --- read-only views for planners (plan.py, explain.py) ----------------------------------------------
    def snapshot(self) -> Snapshot:
        """The node snapshot cycles run on (built on first use)."""
        return self._evaluator().snap

    def evaluator(self) -> Evaluator:
        return self._evaluator()

    def pods(self) -> Iterable[PodInfo]:
        return self._pods.values()

    def pod(self, key: PodKey) -> PodInfo:
        return self._pods[key]

    def members(self, group: tuple[str, str]) -> Iterable[PodKey]:
        """Pods of a PodGroup still counted (finished pods have left)."""
        return self._members.get(group, ())

    def root_of(self, pi: PodInfo) -> RootKey:
        return self._root_of(pi)

    def gate_of(self, key: PodKey) -> str | None:
        """Why the pod waits at PreEnqueue, or None."""
        return self._gated.get(key)

    def waiting_pods(self) -> dict[PodKey, str]:
        """Each pending pod of ours and where it waits: "incomplete" (its PodGroup not seen yet: upstream's
        incompletePodGroupPods), "gated" (held at PreEnqueue otherwise), else its root's place in the queue
        ("active", "backoff", "unschedulable", "in-flight"). For metrics and the dashboard; reads only,
        O(pods)."""
        out: dict[PodKey, str] = {}
        for key, pi in self._pods.items():
            if not self._pending(pi) or not self._ours(pi):
                continue
            if key in self._gated:
                missing = pi.group is not None and self.store.get("PodGroup", pi.group) is None
                out[key] = "incomplete" if missing else "gated"
                continue
            root = self.queue.get(self._root_of(pi))
            if root is not None:
                out[key] = root.state
        return out

    # --- cycles ---------------------------------------------------------------------------------------------
    def sync(self) -> None:
        """Build the node snapshot now rather than at the first cycle (after an initial list of nodes)."""
        self._evaluator()

    def _evaluator(self) -> Evaluator:
        if self._ev is None:
            snap = Snapshot(self.store.list("Node"), self._dra_resources)
            self._snap = snap
            self._ev = Evaluator(
                snap,
                self.rng,
                self.profile.scoring,
                disabled=self.profile.disabled_plugins,
                namespace_labels=self._namespace_labels,
            )
            if self._claims_used:
                self._ev.claims = self._claims_stage(snap)
            for key, pi in self._pods.items():
                pod = pi.pod
                if pod.spec.nodeName and not is_terminal(pod):
                    node = snap.index.get(pod.spec.nodeName)
                    if node is not None:
                        snap.place(key, node, self._ev.vector(pi), pi.traits)
            for key, node_name in self._nominated.items():
                self._hold(key, node_name)
        return self._ev

    def _note_claims(self, pi: PodInfo) -> None:
        """Once a pod uses claims, the evaluator has a claims stage (built now if the evaluator exists). Until
        then it needs none: the stage filters only such pods, and what it carries from cycle to cycle (volumes
        and devices taken, allocations not yet in the store) comes only from reserving them, so a stage built
        from the store at this point is the one that would have followed the store's changes all along."""
        if pi.claims and not self._claims_used:
            self._claims_used = True
            if self._ev is not None:
                self._ev.claims = self._claims_stage(self._ev.snap)

    def _claims_stage(self, snap: Snapshot) -> ClaimsStage:
        from .claims_stage import ClaimsStage  # with devices.py and claims.py: see the note on imports above

        return ClaimsStage(
            self.store, snap, self._pods, workload_claims=self.gates.enabled("DRAWorkloadResourceClaims")
        )

    def _namespace_labels(self, namespace: str) -> dict[str, str]:
        """A Namespace's labels, with the `kubernetes.io/metadata.name` label kube-apiserver sets on every
        namespace (a namespace not in the input exists all the same: its pods are there)."""
        ns = self.store.get("Namespace", ("", namespace))
        labels = dict((ns.metadata.labels or {}) if ns is not None and ns.metadata is not None else {})
        labels["kubernetes.io/metadata.name"] = namespace
        return labels

    def schedule_one(self, now: float | None = None) -> Decision | None:
        """Run the next cycle at `now` (default: the clock): what changed (gating too), None if idle."""
        if now is None:
            now = self.clock()
        if self.backfill is not None:
            # Plan before the cycle, whichever root (if any) comes next: at once when a reserved root started
            # or left or the head lacks a reservation (the new head's ETA dates from here, and a head that
            # fits now is woken), else when the interval is due. So when plans are made depends on time and
            # events only, never on which cycles run (the room bound and hints.py skip some).
            self.backfill.refresh(self.store.clock())
        root = self.queue.pop(now)
        if root is None:
            if not self._gated:
                return None  # idle, and no pod waits at PreEnqueue to be told why
            gated = Decision()
            self._report_gated(gated)
            return gated if gated else None
        skipped = self.skipped
        self.rng.start_cycle()
        decision = self._cycle(root, now)
        if not decision.bindings and not decision.evictions:
            # A cycle that binds and evicts nothing leaves the tie-breaking draws as they were: only
            # then are the decisions of a replay independent of how many failing cycles ran, which
            # the room bound and hints.py must not change (kube-scheduler's ties are random anyway).
            self.rng.undo_cycle()
        self.cycles += self.skipped == skipped
        return decision

    def _victims_terminating(self, root: RootKey) -> bool:
        """Does a pod that `root` preempted still terminate (evicted, not gone)? Then it waits: a second
        preemption would evict more, or move its nominations while the first one's victims leave."""
        for victim, preemptor in self._victim_of.items():
            pi = self._pods.get(victim) if preemptor == root else None
            if pi is not None and pi.pod.metadata.deletionTimestamp is not None:
                return True
        return False

    def _evictions_in_flight(self, root: RootKey, now: float) -> bool:
        """Has `root` evicted victims that do not show as terminating yet (and not for too long)?"""
        pending = self._evicting.get(root)
        if not pending:
            return False
        for key, at in list(pending.items()):
            if now - at > EVICTION_SEEN_WITHIN:
                del pending[key]
        return bool(pending)

    def _cycle(self, root: QueuedRoot, now: float) -> Decision:
        kind, ns, name = root.key
        if self._evicting and self._evictions_in_flight(root.key, now):  # (no preemption, no call)
            # Not tried while its evictions are in flight: retried then, it would see no terminating victim
            # yet and preempt a second time. Their deletion (or a later event) brings it back.
            self.queue.park(root.key)
            return Decision()
        if kind == "CompositePodGroup":
            return self._tree_cycle(root, now)
        if kind == "Pod":
            pi = self._pods.get((ns, name))
            if pi is None or not self._pending(pi):
                self.queue.remove(root.key)
                return Decision()
            allowed = self._backfill_nodes(root, now)
            if self._bound_fails(root, None, [pi], 0, now, allowed):
                return Decision()
            return self._lone_cycle(root, pi, allowed, now)
        pg = self.store.get("PodGroup", (ns, name))
        pending, bound = self._group_members((ns, name))
        if pg is None or not pending:
            self.queue.remove(root.key)
            return Decision()
        error = pod_group_error(
            pg, pending, bound, preemption_policy_gate=self.gates.pod_group_preemption_policy
        )
        if error:
            return self._finish(root, pg, pending, GroupResult(ERROR, error), None, now)
        allowed = self._backfill_nodes(root, now) if self.backfill is not None else None  # (none: no call)
        if root.attempts and self._bound_fails(root, pg, pending, len(bound), now, allowed):  # first: no call
            return Decision()
        gang, min_count = _min_count(pg)
        attempt = GroupAttempt(min_count=min_count, gang=gang, scheduled=len(bound), pods=pending)
        result = self._place_group(pg, attempt, bound, allowed)
        post = None
        if result.code == UNSCHEDULABLE:  # PostFilter's only case (`_preempt`): most cycles make no call
            rerun = lambda: self._place_group(pg, attempt, bound)  # noqa: E731
            post = self._preempt(root, pg, pending, result, now, rerun, len(bound))
        return self._finish(root, pg, pending, result, post, now, bound=len(bound))

    def _lone_cycle(self, root: QueuedRoot, pi: PodInfo, allowed: BoolArray | None, now: float) -> Decision:
        """A lone pod's cycle and PostFilter, or, when a pod of its class failed on the same state and
        nothing else could change the answer, that failure again (lone_failures.py)."""
        ev = self._evaluator()
        key = state = None
        if self._lone_failure_keepable(ev, pi, root):
            state = (ev, ev.snap.version, self._objects_changed)
            nodes = None if allowed is None else allowed.tobytes()
            key = (pi.signature, pi.priority, pi.preemption_policy, nodes)
            kept = self.lone_failures.get(state, key)
            if kept is not None:
                return self._finish(root, None, [pi], kept.result(pi.key), kept.post_type(), now)
        attempt = GroupAttempt(min_count=1, gang=False, scheduled=0, pods=[pi])
        result = run_group_cycle(ev, attempt, allowed)
        post = self._preempt(root, None, [pi], result, now, None)
        if (
            state is not None
            and post is not None
            and not self.victim_keys(ev.snap.placed, pi.priority)  # PostFilter drew nothing, read no victim
        ):
            self.lone_failures.keep(state, key, result, post)
        return self._finish(root, None, [pi], result, post, now)

    def _lone_failure_keepable(self, ev: Evaluator, pi: PodInfo, root: QueuedRoot) -> bool:
        """Whether a lone pod's failed cycle reads nothing beyond lone_failures.py's key and state: no
        claims stage, no pod-reading plugin, no nomination anywhere (held room, the pod's own), no victim of
        its own still terminating."""
        status = pi.pod.status
        return (
            ev.claims is None
            and not pi.claims
            and not ev.snap.nominated
            and not (status is not None and status.nominatedNodeName)
            and not ev.reads_other_pods(pi)
            and not self._victims_terminating(root.key)
        )

    def _group_members(self, group: tuple[str, str]) -> tuple[list[PodInfo], list[PodInfo]]:
        """(pending members this cycle tries, in priority then arrival order; bound members still running,
        which count toward minCount: terminal pods have left the cache upstream)."""
        pending: list[PodInfo] = []
        bound: list[PodInfo] = []
        gated, names = self._gated, self.profile.scheduler_names
        for key in self._members.get(group, ()):  # one pass: every gang cycle reads all its members
            pi = self._pods[key]
            pod, status = pi.pod, pi.pod.status
            if status is not None and status.phase in TERMINAL_PHASES:  # `is_terminal`, without its call
                continue
            if pod.spec.nodeName:
                bound.append(pi)
            elif key not in gated and (names is None or self._ours(pi)):  # `_schedulable`; no names: all ours
                pending.append(pi)
        # Priority then arrival, by two stable sorts on C getters (a key function in Python cost a call per
        # member): arrival first, then priority, highest first (`reverse` keeps equal priorities in order).
        pending.sort(key=_ARRIVAL)
        pending.sort(key=_PRIORITY, reverse=True)
        return pending, bound

    def placer(self, key: RootKey) -> Placer | None:
        """How root `key`'s cycle would place it now inside a set of nodes, for planners (reservations,
        `explain`): the same filters, gang and topology rules as its cycle, without preemption or any
        Decision. None when the root has nothing to place or is in error."""
        kind, ns, name = key
        ev = self._evaluator()
        limit = self.profile.placement_limit
        if kind == "Pod":
            pi = self._pods.get((ns, name))
            if pi is None or not self._schedulable(pi):
                return None
            single = GroupAttempt(min_count=1, gang=False, scheduled=0, pods=[pi])
            return Placer(lambda nodes: run_group_cycle(ev, single, nodes), (pi,), 1)
        if kind == "CompositePodGroup":
            tree, invalid = self.hierarchy.build(key, self._schedulable, self._labels_of)
            if tree is None or invalid is not None:
                return None
            pods = tuple(pi for n in tree.walk() if n.attempt is not None for pi in n.attempt.pods)
            return Placer(lambda nodes: evaluate_root(ev, tree, nodes, limit), pods, 1, tree=True)
        pg = self.store.get("PodGroup", (ns, name))
        pending, bound = self._group_members((ns, name))
        if pg is None or not pending:
            return None
        if pod_group_error(pg, pending, bound, preemption_policy_gate=self.gates.pod_group_preemption_policy):
            return None
        gang, min_count = _min_count(pg)
        attempt = GroupAttempt(min_count=min_count, gang=gang, scheduled=len(bound), pods=pending)
        needs = max(1, min_count - len(bound)) if gang else 1
        tkey = topology_key(pg, self.store) if self.gates.topology_aware_workload_scheduling else None
        fixed = self._pin(bound, tkey).domains if tkey is not None else frozenset()
        return Placer(
            lambda nodes: self._place_group(pg, attempt, bound, nodes), tuple(pending), needs, tkey, fixed
        )

    def _bound_fails(
        self,
        root: QueuedRoot,
        pg: Any,
        pending: list[PodInfo],
        bound: int,
        now: float,
        allowed: BoolArray | None,
    ) -> bool:
        """The cheap bound before a full cycle, for a root that already failed one (so its pods carry that
        failure's reason): if fewer than `need` of its pods fit in the free room of the nodes its cycle
        would run on (`allowed`: under backfill, those no reservation holds over its run), the cycle must
        fail again, so the root goes back to wait for room without one, with every effect of that failed
        cycle: requeued with its backoff, waiting for room, and the planner told. (The failed cycle's
        PostFilter would find nothing: `_room_need` answers only when no running pod has a lower priority.
        Its status messages are not rewritten: they say what the last real cycle found.) A root whose pods
        use an allocated ResourceClaim always gets its cycle: DynamicResources' PostFilter may free it."""
        if not root.attempts:
            return False
        if any(self._evaluator().holds_allocated_claim(pi) for pi in pending):
            return False
        need = self._room_need(root.priority, pg, pending, bound)
        if need is None or self._evaluator().room_for(need.like, allowed) >= need.need:
            return False
        self.skipped += 1
        self.queue.requeue_failed(root.key, now, len(pending))  # as the failed cycle would, but no cycle
        self._wait_for_room(root, need)
        if self.backfill is not None:
            self.backfill.failed(root.key)
        return True

    def _labels_of(self, node_name: str) -> Mapping[str, str] | None:
        """A node's labels; None when the node is gone."""
        node = self.store.get("Node", ("", node_name))
        return None if node is None else (node.metadata.labels or {})

    def _pin(self, bound: list[PodInfo], key: str) -> Pin:
        if not bound:  # the usual group: no member running yet pins it anywhere
            return UNPINNED
        return pin(((*pi.key, pi.pod.spec.nodeName) for pi in bound), key, self._labels_of)

    def _place_group(
        self, pg: Any, attempt: GroupAttempt, bound: list[PodInfo], nodes: BoolArray | None = None
    ) -> GroupResult:
        """The PodGroup cycle on `nodes` (all when None), inside the best topology domain when the group is
        constrained; with TopologyAwareWorkloadScheduling on, a failure reads as upstream's placement
        algorithm reports it (`0/N placements are available, ...`, N = 1 without a constraint)."""
        if not self.gates.topology_aware_workload_scheduling:
            return run_group_cycle(self._evaluator(), attempt, nodes)  # upstream's default algorithm
        key = topology_key(pg, self.store)
        if key is None:
            return in_one_placement(run_group_cycle(self._evaluator(), attempt, nodes))
        return place_with_topology(
            self._evaluator(),
            attempt,
            key,
            nodes,
            self._pin(bound, key),
            use_limit=self.profile.placement_limit,
        )

    @staticmethod
    def _terminal(pi: PodInfo) -> bool:
        return is_terminal(pi.pod)

    def _finish(
        self,
        root: QueuedRoot,
        pg: Any,
        pods: list[PodInfo],
        result: GroupResult,
        post: PostFilterResult | None,
        now: float,
        bound: int = 0,
    ) -> Decision:
        """The Decision of a PodGroup's or lone pod's cycle: `result` after PostFilter, whose answer is
        `post` (None: PostFilter did not run, the cycle did not end Unschedulable)."""
        d = Decision()
        placed = bind(d, self._node_names(), result.placed, self._decided)
        waiting = post is not None and post.waiting
        for pi in pods if len(placed) < len(pods) else ():  # (most cycles place every pod)
            if pi.key not in placed:
                reason = "SchedulerError" if result.code == ERROR else "Unschedulable"
                pod_failed(d, pi, reason, result.pod_message(pi.key, waiting=waiting))
        if pg is not None:
            group_condition(d, "PodGroup", pg, result.code, result.message)
        if result.code == SUCCESS and len(placed) == len(pods):
            self._done(root)
        else:
            left = [pi for pi in pods if pi.key not in placed]
            need = None if result.code == ERROR else self._room_need(root.priority, pg, left, bound)
            self._failed(d, root, now, len(pods), need, explain=pg is not None and not waiting)
        if post is None and result.code == ERROR:
            post = _error_post_filter(pods, self._nominated)
        if post is not None:
            d.extend(self._apply_post_filter(root, post, now))
        return d

    def _preempt(
        self,
        root: QueuedRoot,
        group: Any,
        pods: list[PodInfo],
        result: GroupResult | TreeResult,
        now: float,
        rerun: Callable[[], GroupResult | TreeResult] | None,
        bound: int = 0,
    ) -> PostFilterResult | None:
        """PostFilter for a root whose cycle ended Unschedulable (None for any other outcome), `bound` its
        members already running; under
        backfill a preemption that would delay a reservation is dropped (nothing evicted, nominations as
        they were), one that needs no victim too: its dry run, on every node, may nominate the root where
        its own cycle may not go, and the room the nomination holds would keep the reserved root out."""
        if result.code != UNSCHEDULABLE:
            return None
        post = self._post_filter(root.key, group, pods, result, rerun, bound)
        if (
            (post.decision.evictions or any(n.node for n in post.decision.nominations))
            and self.backfill is not None
            and self._unless_delaying(root, post.decision, result, now) is None
        ):
            from .postfilter import PostFilterResult

            return PostFilterResult()
        return post

    def _done(self, root: QueuedRoot) -> None:
        """The root is admitted whole: out of the queue and of every waiting list."""
        self.queue.remove(root.key)
        self.waiters.forget(root.key)
        if self.backfill is not None:
            self.backfill.forget(root.key)

    def _failed(
        self, d: Decision, root: QueuedRoot, now: float, pods: int, need: RoomNeed | None, *, explain: bool
    ) -> None:
        """Upstream's FailureHandler for a root left with pods pending: to the unschedulable pool, even
        after a preemption (the deletion of its last victims activates it, see _on_pod; other events move
        it with its backoff); waiting for room; the planner told. `explain`: say why it waits (WHY_PENDING)
        when the profile asks, which a root waiting on its preemption does not need."""
        self.queue.requeue_failed(root.key, now, pods)
        self._wait_for_room(root, need)
        if self.backfill is not None:
            self.backfill.failed(root.key)
        if explain and self.profile.explain_pending:
            self._why_pending(d, root.key)

    def _apply_post_filter(self, root: QueuedRoot, post: PostFilterResult, now: float) -> Decision:
        """What PostFilter decided, made the scheduler's own: nominations recorded (only those that change
        something are kept), each victim tied to its preemptor (its deletion activates the root; until its
        eviction shows, the root is not tried), and a preemption without victims requeued."""
        preempted = post.decision
        self._nominate(preempted)
        for e in preempted.evictions:
            self._victim_of[e.pod] = root.key
            victim = self._pods.get(e.pod)
            if victim is not None and victim.pod.metadata.deletionTimestamp is None:
                self._evicting.setdefault(root.key, {})[e.pod] = now
        if post.retry:
            # A preemption that needed no victims brings no deletion event: requeue it with its
            # backoff, so that a cycle that keeps failing still lets time move on.
            self.queue.move_to_active(root.key)
        return preempted

    def _why_pending(self, d: Decision, root: RootKey) -> None:
        """The explanation of a failed group root as condition WHY_PENDING and a WhyPending Event on it; a
        condition type of its own, so that upstream's conditions and messages stay exactly upstream's."""
        from .explain import explain, render  # explain imports this module's types

        settings = self.backfill.settings.plan if self.backfill is not None else None
        history = self.backfill.history if self.backfill is not None else None
        text = render(explain(self, root, self.store.clock(), settings=settings, history=history))
        kind, ns, name = root
        d.conditions.append(
            ConditionChange(kind, (ns, name), Condition(WHY_PENDING, "True", "Pending", text))
        )
        d.events.append(Notice("Normal", "WhyPending", f"{kind} {ns}/{name}", text))

    def _nominate(self, d: Decision) -> None:
        """Keep only the nominations that change something (one write per decision) and record them in the
        nominator at once, as upstream's FailureHandler does before the status patch is sent."""
        changes = []
        for n in d.nominations:
            current = self._nominated.get(n.pod)
            pi = self._pods.get(n.pod)
            status = pi.pod.status.nominatedNodeName if pi is not None and pi.pod.status is not None else None
            if current == n.node and (status or None) == n.node:
                continue
            self._set_nomination(n.pod, n.node)
            changes.append(n)
        d.nominations = changes

    def _backfill_nodes(self, root: QueuedRoot, now: float) -> BoolArray | None:
        """Under gang-backfill, the nodes this root may take without delaying a reservation (backfill.py)."""
        # Plans are in the store's time (virtual, or wall seconds live), which stamps when pods started.
        return self.backfill.allowed(root.key, self.store.clock()) if self.backfill is not None else None

    def _decided(self, key: PodKey) -> tuple[list[VolumeBinding], list[ClaimReservation]]:
        stage = self._ev.claims if self._ev is not None else None
        return stage.decided(key) if stage is not None else ([], [])

    def _node_names(self) -> list[str]:
        return self._snap.node_names if self._snap is not None else []

    def _unless_delaying(
        self, root: QueuedRoot, preempted: Decision, result: GroupResult | TreeResult, now: float
    ) -> Decision | None:
        """No eviction for a preemptor that would then delay a reservation: the preemption is dropped and
        the reason appended to the root's failure, as a PostFilter reason is."""
        assert self.backfill is not None
        snap = self._evaluator().snap
        nodes = [snap.index[n.node] for n in preempted.nominations if n.node in snap.index]
        held = self.backfill.delayed_by(root.key, nodes, self.store.clock())
        if held is None:
            return preempted
        reason = f"backfill: preemption would delay the reservation of {held[1]}/{held[2]}"
        result.message = f"{result.message}, {reason}"
        for key, failure in result.failures.items():  # a lone pod's message is its own failure
            result.failures[key] = f"{failure}, {reason}"
        return None

    def _post_filter(
        self,
        root: RootKey,
        pg: Any,
        pods: list[PodInfo],
        result: GroupResult | TreeResult,
        rerun: Callable[[], GroupResult | TreeResult] | None,
        bound: int,
    ) -> PostFilterResult:
        """PostFilter after an Unschedulable cycle (postfilter.py), so never in a cycle that binds: for a
        PodGroup, DynamicResources' PodGroupPostFilter first (claims_postfilter.py), then preemption."""
        pod_group_post_filter, preempt_after_failure, preemption_view = _post_filter_api()
        freed = None
        if pg is not None and isinstance(result, GroupResult):
            freed = pod_group_post_filter(
                self._evaluator(),
                lambda key: self.store.get("ResourceClaim", key),
                pg,
                pods,
                result.failures.keys() | result.fit,
                bound,
                workload_claims=self.gates.enabled("DRAWorkloadResourceClaims"),
                topology_aware=self.gates.topology_aware_workload_scheduling,
            )
        view = preemption_view(
            self._evaluator(),
            self._pods,
            self.store,
            self.rng,
            self.gates.pod_group_preemption_policy,
            victim_keys=self.victim_keys,
            own_victims_terminating=self._victims_terminating(root),
        )
        return preempt_after_failure(view, pg, pods, result, rerun, freed)

    # --- composite trees ------------------------------------------------------------------------------------
    def _schedulable(self, pi: PodInfo) -> bool:
        return self._pending(pi) and pi.key not in self._gated and self._ours(pi)

    def _tree_cycle(self, root: QueuedRoot, now: float) -> Decision:
        """One cycle for a CompositePodGroup root: the whole tree is admitted, or nothing of it."""
        tree, invalid = self.hierarchy.build(root.key, self._schedulable, self._labels_of)
        nodes = tree.walk() if tree is not None else []
        pending = [pi for n in nodes if n.attempt is not None for pi in n.attempt.pods]
        if tree is None or not pending:
            self.queue.remove(root.key)
            return Decision()
        error = invalid or tree_error(self.store, root.key, nodes, pending)
        rerun = None
        if error:
            result = TreeResult(ERROR, error)
        else:
            allowed = self._backfill_nodes(root, now)
            ev, limit = self._evaluator(), self.profile.placement_limit
            result = evaluate_root(ev, tree, allowed, limit)
            # upstream's pgSchedulingFunc: runRootSchedulingAlgorithm again, the whole tree on every node
            rerun = lambda: evaluate_root(ev, tree, None, limit)  # noqa: E731
        return self._finish_tree(root, nodes, pending, result, now, rerun, invalid=invalid is not None)

    def _finish_tree(
        self,
        root: QueuedRoot,
        nodes: list[TreeNode],
        pending: list[PodInfo],
        result: TreeResult,
        now: float,
        rerun: Callable[[], TreeResult] | None,
        *,
        invalid: bool,
    ) -> Decision:
        cycle_message = result.message
        cpg = self.store.get(*_split(root.key))
        post = self._preempt(root, cpg, pending, result, now, rerun) if cpg is not None else None
        d = Decision()
        placed = bind(d, self._node_names(), result.placed, self._decided)
        waiting = post is not None and post.waiting
        # The reasons PostFilter appended to the root's status (preempt_after_failure writes them onto
        # result.message): record_tree appends them to every status of the tree, as upstream does.
        appended = result.message.removeprefix(cycle_message) if post is not None else ""
        result.message = cycle_message
        record_tree(
            d, self.store, nodes, pending, placed, result, invalid=invalid, appended=appended, waiting=waiting
        )
        if result.code == SUCCESS and len(placed) == len(pending):
            self._done(root)
        else:
            self._failed(d, root, now, len(pending), None, explain=not waiting)  # trees: no room bound
        if post is None and result.code == ERROR:
            post = _error_post_filter(pending, self._nominated)
        if post is not None:
            d.extend(self._apply_post_filter(root, post, now))
        return d


def _split(key: RootKey) -> tuple[str, tuple[str, str]]:
    kind, ns, name = key
    return kind, (ns, name)


def _error_post_filter(pods: list[PodInfo], nominated: dict[PodKey, str]) -> PostFilterResult:
    """A cycle that ended in an error clears its pods' nominations (upstream's clearNominatedNode)."""
    from .postfilter import PostFilterResult

    return PostFilterResult(
        Decision(nominations=[Nomination(pi.key, None) for pi in pods if pi.key in nominated])
    )
