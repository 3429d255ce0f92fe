"""In-memory object store with change events: the face the CLI, the simulator and (later) the live informer
cache all offer the scheduler. It applies Decisions; it decides nothing.

Evicted pods leave at once by default (`gangsched schedule`). With `termination_seconds` > 0 they terminate as
on a cluster: the eviction sets `metadata.deletionTimestamp` (an update: the pod still holds its node) and the
pod is deleted for good once that long has passed on the store's clock (`finish_terminations`), as a kubelet
does after the grace period. A pod already terminating is not evicted twice."""

from __future__ import annotations

import copy
import datetime as dt
import heapq
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from lightkube.models import core_v1, meta_v1, scheduling_v1beta1

from ..api.kinds import kind_info
from ..scheduler.decision import (
    ClaimReservation,
    ClaimUnreservation,
    Condition,
    Decision,
    Eviction,
    Notice,
    VolumeBinding,
)
from ..scheduler.extended import CLAIM_FINALIZER
from .change import Change, Key
from .claim_controller import release_claims
from .volume_controller import release_volumes

__all__ = ["Change", "Store"]

EPOCH = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


# The kinds that consume ResourceClaims, as status.reservedFor names their resource.
_CLAIM_CONSUMERS = {"Pod": "pods", "PodGroup": "podgroups"}


def _uses_claims(obj: Any) -> bool:
    """Whether a pod or PodGroup names claims, or a pod holds a special claim for its extended resources
    (status.extendedResourceClaimStatus)."""
    if obj.spec is not None and obj.spec.resourceClaims:
        return True
    return getattr(obj.status, "extendedResourceClaimStatus", None) is not None


def _has_ephemeral_volumes(pod: Any) -> bool:
    return pod.spec is not None and any(v.ephemeral is not None for v in pod.spec.volumes or ())


_SCHEDULED = Condition("PodScheduled", "True", "", "")  # what a bound pod's status says

# What the readers look a missing kind up in: one shared mapping they only read (never `setdefault` it).
_NONE: dict[Key, Any] = {}


def _merge_condition(
    conditions: Iterable[Any] | None, c: Condition, now: dt.datetime
) -> tuple[list[Any], dt.datetime]:
    """The conditions to keep beside `c` (those of other types) and the lastTransitionTime `c` gets: the first
    of its type's while the status stays, else `now`. One pass, no generator: every scheduled group comes
    here, and every bound pod that had a condition."""
    kept: list[Any] = []
    previous = None
    for x in conditions or ():
        if x.type != c.type:
            kept.append(x)
        elif previous is None:
            previous = x
    if previous is not None and previous.status == c.status:
        return kept, previous.lastTransitionTime
    return kept, now


def _pod_condition(c: Condition, at: dt.datetime) -> Any:
    return core_v1.PodCondition(
        type=c.type,
        status=c.status,
        reason=c.reason or None,
        message=c.message or None,
        lastTransitionTime=at,
    )


def key_of(obj: Any) -> Key:
    return (obj.metadata.namespace or "", obj.metadata.name)


class Store:
    """Objects by kind and key, in first-seen order, with listeners called on every change."""

    def __init__(
        self,
        clock: Callable[[], float] = lambda: 0.0,
        *,
        termination_seconds: float = 0.0,
        claim_controller: bool = False,
    ) -> None:
        """`claim_controller`: release a deleted pod's or PodGroup's claims as the resourceclaim controller
        would, and a deleted pod's ephemeral volumes as the garbage collector and the PV controller would
        (`delete`). On for the store that is the whole cluster (`schedule`, `simulate`); off in live
        mode, whose store mirrors an API server where the real controller does it, and must not run ahead."""
        self.claim_controller = claim_controller
        self._objects: dict[str, dict[Key, Any]] = {}
        self._order: dict[tuple[str, Key], int] = {}
        self._listeners: list[Callable[[Change], None]] = []
        self._seq = 0
        self.clock = clock
        # The clock reading of the Decision being applied and its timestamp (conditions, deletionTimestamp):
        # `apply` sets them.
        self._stamp_seconds: float | None = None
        self._stamp = EPOCH
        self.events: list[Notice] = []
        self.evictions: list[Eviction] = []
        self.volume_bindings: list[VolumeBinding] = []
        self.termination_seconds = termination_seconds
        self._terminating: list[tuple[float, int, Key]] = []  # (gone at, seq, pod key)

    # --- reading ------------------------------------------------------------------------------------------
    def get(self, kind: str, key: Key) -> Any | None:
        return self._objects.get(kind, _NONE).get(key)

    def list(self, kind: str) -> Iterator[Any]:
        return iter(list(self._objects.get(kind, _NONE).values()))

    def count(self, kind: str) -> int:
        return len(self._objects.get(kind, _NONE))

    def order(self, kind: str, key: Key) -> int:
        """First-seen order: breaks ties in the queue as creation time does upstream."""
        return self._order.get((kind, key), 0)

    def timestamp(self, kind: str, key: Key, obj: Any = None) -> tuple[float, int]:
        """(creation time in seconds, first-seen order) of the object under `key`: the queue's tie-break.
        `obj`: that object, when the caller holds it already (None: looked up)."""
        if obj is None:
            obj = self.get(kind, key)
        created = obj.metadata.creationTimestamp if obj is not None and obj.metadata else None
        seconds = created.timestamp() if isinstance(created, dt.datetime) else 0.0
        return (seconds, self._order.get((kind, key), 0))  # `order`, without its call

    # --- writing ------------------------------------------------------------------------------------------
    def subscribe(self, listener: Callable[[Change], None]) -> None:
        self._listeners.append(listener)

    def _emit(self, change: Change) -> None:
        for listener in self._listeners:
            listener(change)

    def add(self, obj: Any) -> None:
        """Add or replace an object; replacing emits an update carrying the old object."""
        kind = kind_info(obj).kind
        key = key_of(obj)
        bucket = self._objects.setdefault(kind, {})
        old = bucket.get(key)
        bucket[key] = obj
        if old is None:
            self._seq += 1
            self._order[(kind, key)] = self._seq
        if self._listeners:  # objects loaded before the scheduler subscribes: it reads them from the store
            self._emit(Change("add" if old is None else "update", kind, key, obj, old))

    def add_all(self, objects: Iterable[Any]) -> None:
        """`add` each object in turn. Before anyone listens (`schedule` and the simulator load the whole input
        before the scheduler subscribes) there is no event to make, and what `add` does per object is done
        here in one loop: each object's kind looked up once per type, no call per object (a 3,000-pod
        shape's 8,750 objects: about a third of the loading's CPU time saved)."""
        if self._listeners:
            for obj in objects:
                self.add(obj)
            return
        kinds: dict[type, str] = {}
        buckets, order, seq = self._objects, self._order, self._seq
        for obj in objects:
            kind = kinds.get(type(obj))
            if kind is None:
                kind = kinds[type(obj)] = kind_info(obj).kind
            meta = obj.metadata
            key = (meta.namespace or "", meta.name)  # `key_of`, without its call
            bucket = buckets.get(kind)
            if bucket is None:
                bucket = buckets[kind] = {}
            if key not in bucket:  # as in `add`: a replaced object keeps its first-seen order
                seq += 1
                order[(kind, key)] = seq
            bucket[key] = obj
        self._seq = seq

    def update(self, kind: str, key: Key, obj: Any, old: Any) -> None:
        """`obj`, stored under `key`, was changed in place by a controller; `old` is its copy from before
        (an update whose `old` is the object itself would read as the scheduler's own write)."""
        self._emit(Change("update", kind, key, obj, old))

    def delete(self, kind: str, key: Key) -> Any | None:
        """Remove an object. With `claim_controller`, a pod's or PodGroup's claims are then released as the
        resourceclaim controller and the garbage collector release them (claim_controller.release_claims),
        and a pod's generic ephemeral volumes as the garbage collector and the PersistentVolume controller
        release them (volume_controller.release_volumes)."""
        obj = self._objects.get(kind, {}).pop(key, None)
        if obj is not None:
            self._emit(Change("delete", kind, key, obj))
            if self.claim_controller and kind in _CLAIM_CONSUMERS and _uses_claims(obj):
                release_claims(self, obj, _CLAIM_CONSUMERS[kind])
            if self.claim_controller and kind == "Pod" and _has_ephemeral_volumes(obj):
                release_volumes(self, obj)
        return obj

    # --- applying decisions -------------------------------------------------------------------------------
    def _set_pod_condition(self, pod: Any, c: Condition) -> None:
        status = pod.status
        if status is None:
            status = pod.status = core_v1.PodStatus()
        if status.conditions:
            conditions, at = _merge_condition(status.conditions, c, self._stamp)
        else:  # a pod's first condition: nothing to merge with
            conditions, at = [], self._stamp
        conditions.append(_pod_condition(c, at))
        status.conditions = conditions

    def _set_group_condition(self, group: Any, c: Condition) -> None:
        status = group.status
        if status is not None and status.conditions:
            conditions, at = _merge_condition(status.conditions, c, self._stamp)
        else:  # a group's first condition: nothing to merge with
            conditions, at = [], self._stamp
        conditions.append(
            meta_v1.Condition(
                type=c.type,
                status=c.status,
                reason=c.reason,
                message=c.message,
                lastTransitionTime=at,
                observedGeneration=group.metadata.generation,
            )
        )
        if status is None:
            if isinstance(group, scheduling_v1beta1.PodGroup):
                status = group.status = scheduling_v1beta1.PodGroupStatus()
            else:  # a CompositePodGroup's model, imported where used (api/kinds.py)
                from lightkube.models import scheduling_v1alpha3

                status = group.status = scheduling_v1alpha3.CompositePodGroupStatus()
        status.conditions = conditions

    def _bind_volume(self, vb: VolumeBinding) -> None:
        """The scheduler's binding of a claim, completed at once as the PV controller would complete it: a
        static binding sets the PV's claimRef and the claim's volumeName (both Bound); a claim to provision
        gets the selected node (no provisioner runs in memory: the claim stays Pending)."""
        pvc = self.get("PersistentVolumeClaim", vb.pvc)
        if pvc is None:
            return
        annotations = dict(pvc.metadata.annotations or {})
        if vb.pv is None:
            annotations["volume.kubernetes.io/selected-node"] = vb.node
            pvc.metadata.annotations = annotations
            self._emit(Change("update", "PersistentVolumeClaim", vb.pvc, pvc, pvc))
            return
        pv = self.get("PersistentVolume", ("", vb.pv))
        if pv is None:
            return
        pv.spec.claimRef = core_v1.ObjectReference(
            apiVersion="v1",
            kind="PersistentVolumeClaim",
            namespace=vb.pvc[0],
            name=vb.pvc[1],
            uid=pvc.metadata.uid,
        )
        pv.status = core_v1.PersistentVolumeStatus(phase="Bound")
        annotations.update(
            {"pv.kubernetes.io/bind-completed": "yes", "pv.kubernetes.io/bound-by-controller": "yes"}
        )
        pvc.metadata.annotations = annotations
        pvc.spec.volumeName = vb.pv
        pvc.status = core_v1.PersistentVolumeClaimStatus(
            phase="Bound", accessModes=pv.spec.accessModes, capacity=pv.spec.capacity
        )
        self._emit(Change("update", "PersistentVolume", ("", vb.pv), pv, pv))
        self._emit(Change("update", "PersistentVolumeClaim", vb.pvc, pvc, pvc))

    def _reserve_claim(self, cr: ClaimReservation) -> None:
        """status.allocation (when the cycle allocated it) and the consumer in status.reservedFor. The
        special claim of a pod's extended resources is created first (with the finalizer upstream's PreBind
        adds before allocating) and named in the pod's `status.extendedResourceClaimStatus`."""
        if cr.create is not None and self.get("ResourceClaim", cr.claim) is None:
            self._create_special_claim(cr)
            return
        claim = self.get("ResourceClaim", cr.claim)
        if claim is None:
            return
        from lightkube.models import resource_v1  # imported where used (api/kinds.py)

        if claim.status is None:
            claim.status = resource_v1.ResourceClaimStatus()
        if cr.allocation is not None:
            # bindClaim adds the delete-protection finalizer before it writes an allocation: the mark by which
            # the resourceclaim controller deallocates the claim once its last consumer is gone.
            if CLAIM_FINALIZER not in (claim.metadata.finalizers or []):
                claim.metadata.finalizers = [*(claim.metadata.finalizers or []), CLAIM_FINALIZER]
            claim.status.allocation = resource_v1.AllocationResult.from_dict(cr.allocation)
        consumer = resource_v1.ResourceClaimConsumerReference.from_dict(cr.consumer)
        if consumer not in (claim.status.reservedFor or []):
            claim.status.reservedFor = [*(claim.status.reservedFor or []), consumer]
        self._emit(Change("update", "ResourceClaim", cr.claim, claim, claim))

    def _create_special_claim(self, cr: ClaimReservation) -> None:
        """The special claim, allocated and reserved in one step; emitted as an add whose `old` is the
        object itself, which tells the scheduler it is its own write (nothing to requeue for)."""
        assert cr.create is not None
        from lightkube.models import resource_v1  # imported where used (api/kinds.py)

        claim: Any = resource_v1.ResourceClaim.from_dict(cr.create)
        claim.metadata.finalizers = [CLAIM_FINALIZER]
        claim.status = resource_v1.ResourceClaimStatus.from_dict(
            {"allocation": cr.allocation, "reservedFor": [cr.consumer]}
        )
        self._objects.setdefault("ResourceClaim", {})[cr.claim] = claim
        self._seq += 1
        self._order[("ResourceClaim", cr.claim)] = self._seq
        self._emit(Change("add", "ResourceClaim", cr.claim, claim, claim))
        pod = self.get("Pod", (cr.claim[0], cr.consumer["name"]))
        if pod is not None:
            if pod.status is None:
                pod.status = core_v1.PodStatus()
            pod.status.extendedResourceClaimStatus = core_v1.PodExtendedResourceClaimStatus.from_dict(
                {"requestMappings": list(cr.request_mappings), "resourceClaimName": cr.claim[1]}
            )

    def _deallocate_claim(self, key: Key) -> None:
        """DynamicResources' PostFilter: status.allocation, reservedFor and devices cleared. The change
        carries the claim as it was, so that the scheduler requeues pods (it is not a reservation of its
        own, which it already counts)."""
        claim = self.get("ResourceClaim", key)
        if claim is None or claim.status is None:
            return
        before = copy.deepcopy(claim)
        claim.status.allocation = None
        claim.status.reservedFor = None
        claim.status.devices = None
        self._emit(Change("update", "ResourceClaim", key, claim, before))

    def _unreserve_claim(self, u: ClaimUnreservation) -> None:
        """DynamicResources' PodGroupPostFilter: the PodGroup leaves the claim's status.reservedFor (by UID,
        or by resource and name for objects without UIDs); the allocation stays."""
        claim = self.get("ResourceClaim", u.claim)
        if claim is None or claim.status is None:
            return
        before = copy.deepcopy(claim)
        uid, name = u.consumer.get("uid"), u.consumer.get("name")
        claim.status.reservedFor = [
            r
            for r in claim.status.reservedFor or []
            if not (r.uid == uid if uid else (r.resource == u.consumer.get("resource") and r.name == name))
        ]
        self._emit(Change("update", "ResourceClaim", u.claim, claim, before))

    def _pre_bind(self, decision: Decision) -> None:
        """What a Decision writes before its pods bind: volumes and claims."""
        for vb in decision.volume_bindings:
            self._bind_volume(vb)
            self.volume_bindings.append(vb)
        for cr in decision.claims:
            self._reserve_claim(cr)
        for key in decision.deallocations:
            self._deallocate_claim(key)
        for key in decision.claim_deletions:
            self.delete("ResourceClaim", key)
        for u in decision.unreservations:
            self._unreserve_claim(u)

    def apply(self, decision: Decision) -> None:
        """Apply a Decision: volumes and claims first (kube-scheduler's PreBind), then bind, nominate,
        evict, set conditions, record events."""
        # One timestamp per applied Decision, made again only when the clock has moved: the datetime
        # arithmetic costs about 1.7 us, and a run applies thousands of Decisions at one virtual time.
        seconds = self.clock()
        if self._stamp_seconds != seconds:
            self._stamp_seconds, self._stamp = seconds, EPOCH + dt.timedelta(seconds=seconds)
        if (
            decision.volume_bindings
            or decision.claims
            or decision.deallocations
            or decision.claim_deletions
            or decision.unreservations
        ):  # most Decisions have none of these: five loops less for each
            self._pre_bind(decision)
        pods, listeners = self._objects.get("Pod", _NONE), self._listeners
        # The PodScheduled condition of a pod bound at its first cycle (no condition to merge with), made once
        # for the Decision: the pods it binds share it, as they share its type, status and time (a condition
        # is replaced, never changed in place).
        scheduled = None
        for b in decision.bindings:
            pod = pods.get(b.pod)
            if pod is None:
                continue
            pod.spec.nodeName = b.node
            status = pod.status
            if status is None:
                status = pod.status = core_v1.PodStatus()
            else:
                status.nominatedNodeName = None
            if status.conditions:
                self._set_pod_condition(pod, _SCHEDULED)
            else:
                if scheduled is None:
                    scheduled = _pod_condition(_SCHEDULED, self._stamp)
                status.conditions = [scheduled]
            bound = Change("bind", "Pod", b.pod, pod)
            for listener in listeners:  # `_emit`, without its call for each pod bound
                listener(bound)
        for n in decision.nominations:
            pod = self.get("Pod", n.pod)
            if pod is not None:
                if pod.status is None:
                    pod.status = core_v1.PodStatus()
                pod.status.nominatedNodeName = n.node
        for change in decision.conditions:
            obj = self._objects.get(change.kind, _NONE).get(change.key)  # `get` without its call
            if obj is None:
                continue
            if change.kind == "Pod":
                self._set_pod_condition(obj, change.condition)
            else:
                self._set_group_condition(obj, change.condition)
        for e in decision.evictions:
            if self._evict(e.pod):
                self.evictions.append(e)
        self.events.extend(decision.events)

    # --- terminating pods ---------------------------------------------------------------------------------
    def _evict(self, key: Key) -> bool:
        """Delete the pod now, or start its termination; False if it is gone or already terminating."""
        if self.termination_seconds <= 0:
            return self.delete("Pod", key) is not None
        pod = self.get("Pod", key)
        if pod is None or pod.metadata.deletionTimestamp is not None:
            return False
        pod.metadata.deletionTimestamp = self._stamp
        self._seq += 1
        heapq.heappush(self._terminating, (self.clock() + self.termination_seconds, self._seq, key))
        self._emit(Change("update", "Pod", key, pod))
        return True

    def next_termination_at(self) -> float | None:
        """When the next terminating pod is gone (store clock), or None."""
        return self._terminating[0][0] if self._terminating else None

    def finish_terminations(self, now: float) -> int:
        """Delete the pods whose termination ended by `now`; returns how many."""
        done = 0
        while self._terminating and self._terminating[0][0] <= now:
            _, _, key = heapq.heappop(self._terminating)
            pod = self.get("Pod", key)
            if pod is not None and pod.metadata.deletionTimestamp is not None:
                self.delete("Pod", key)
                done += 1
        return done
