"""Applies the scheduler's Decisions through the API server, without waiting for them (kube-scheduler's
asynchronous binding cycle): the scheduler goes on with the next root while writes are in flight.

0. PreBind: the cycle's volume bindings (a PV's claimRef, or a claim's selected node) and claim allocations
   and reservations (ResourceClaim status) are written before its pods are bound, and then, as upstream's
   VolumeBinding does, the pods wait until the PV controller has bound their claims; if a write fails or
   the wait times out, none of the cycle's pods is bound and they go back to the queue.
1. Bindings: the pods are assumed in the cache at once; the members of the cycle are bound concurrently. If a
   bind fails and the group is left with fewer bound members than its minCount, the members bound in this
   cycle are deleted (no gang stays bound below minCount longer than one round trip), the failed pods are
   forgotten (out of the snapshot, back in the queue) and the next cycle starts from what the server says.
   A group's `PodGroupInitiallyScheduled=True` is written only once all its bindings succeeded.
2. Conditions: pod conditions by strategic merge on pods/status, group conditions (with observedGeneration)
   by merge patch on the group's /status; a condition already there is not written again.
3. Nominations: pod status nominatedNodeName, only when it changes (the scheduler already sends only
   changes; a pod whose cached status says the same is not written again).
4. Evictions: DisruptionTarget (PreemptionByScheduler) first, then a DELETE, as kube-scheduler's DeletePod; a
   victim already terminating is not deleted again.
   A pod's special claim for extended resources served by devices (DRAExtendedResource) is created in
   PreBind as kube-scheduler's bindClaim does: POST with generateName, then the delete-protection finalizer
   (update), then status allocation and reservedFor, then the pod's status.extendedResourceClaimStatus; when
   the cycle's pods are not bound after all, the claims it created are deleted (its Unreserve).
5. Claim deallocations (DynamicResources' PostFilter and PodGroupPostFilter): a ResourceClaim's status
   without allocation and reservations, conditional on the resourceVersion the scheduler judged; a stale
   special claim is deleted (finalizer removed first); a PodGroup unreserved from a claim by a strategic
   merge patch deleting its reservedFor entry (by UID).
6. Events: events.k8s.io/v1, through a small separate pool, sent while no binding is in flight (the CPU and
   connections go to bindings first; events are informational).
A pod's SchedulingGated condition is written a second late, and only if it still waits then.

Contract: `apply` is synchronous and returns at once; `drain()` waits for what is in flight; `shutdown(t)`
waits at most t seconds, then abandons (cancels) what is still in flight, and returns soon after.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import socket
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

import httpx2 as httpx

from ..scheduler.decision import (
    Binding,
    ClaimReservation,
    ClaimUnreservation,
    ConditionChange,
    Decision,
    Eviction,
    Nomination,
    Notice,
    VolumeBinding,
)
from ..scheduler.extended import CLAIM_FINALIZER
from ..scheduler.volumes import ANN_BIND_COMPLETED, ANN_BOUND_BY_CONTROLLER, ANN_SELECTED_NODE
from .cache import LiveCache
from .kube import ApiStatus, KubeApi
from .metrics import Metrics
from .shutdown import settle

if TYPE_CHECKING:
    from ..scheduler import Scheduler

__all__ = ["EVENT_WRITES", "Applier"]

log = logging.getLogger(__name__)
RETRIABLE = {429, 500, 502, 503, 504}
GROUP_KINDS = ("PodGroup", "CompositePodGroup")
GATED_DELAY = 1.0
EVENT_WRITES = 4
# VolumeBinding's wait for the PV controller: VolumeBindingArgs.bindTimeoutSeconds (default 600) and the
# poll interval of volumeBinder.BindPodVolumes.
VOLUME_BIND_TIMEOUT = 600.0
VOLUME_BIND_POLL = 1.0
EVENT_REPEAT = 600.0


def _rfc3339(when: dt.datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _same(existing: Any, change: ConditionChange) -> bool:
    c = change.condition
    return bool(
        existing is not None
        and existing.status == c.status
        and (existing.reason or "") == c.reason
        and (existing.message or "") == c.message
    )


class Applier:
    """Writes Decisions to the API server for one Scheduler over one LiveCache."""

    def __init__(
        self,
        api: KubeApi,
        cache: LiveCache,
        scheduler: Scheduler,
        metrics: Metrics,
        *,
        scheduler_name: str,
        max_writes: int = 16,
        max_event_writes: int = EVENT_WRITES,
    ) -> None:
        self.api = api
        self.cache = cache
        self.scheduler = scheduler
        self.metrics = metrics
        self.scheduler_name = scheduler_name
        self.instance = f"{scheduler_name}-{socket.gethostname()}"
        self._writes = asyncio.Semaphore(max_writes)
        self._event_writes = asyncio.Semaphore(max_event_writes)
        self._tasks: set[asyncio.Task[None]] = set()
        self._last_event: dict[str, tuple[tuple[str, str], float]] = {}
        self.volume_bind_timeout = VOLUME_BIND_TIMEOUT
        self._binding = 0  # bind cycles in flight
        self._binds_idle = asyncio.Event()
        self._binds_idle.set()
        self._written: dict[tuple[str, tuple[str, str], str], tuple[str, str, str]] = {}
        # SchedulingGated writes waiting out their delay; a later condition for the same pod (the gate lifted
        # and its cycle ran within the delay) takes the pod out, so the stale gated write never lands over it.
        self._gated_pending: dict[tuple[str, str], ConditionChange] = {}
        # Groups admitted (binding or bound): their InitiallyScheduled condition never goes back from True,
        # though the next cycle, still reading a cache without our own write, may say otherwise.
        self._scheduled: set[tuple[str, tuple[str, str]]] = set()

    # --- entry points ---------------------------------------------------------------------------------------
    def apply(self, decision: Decision) -> None:
        deferred: list[ConditionChange] = []
        victims = {e.pod for e in decision.evictions}
        victim_conditions: dict[tuple[str, str], ConditionChange] = {}
        for change in decision.conditions:
            if change.kind == "Pod" and change.condition.reason != "SchedulingGated":
                self._gated_pending.pop(change.key, None)
            if change.kind == "Pod" and change.key in victims:
                victim_conditions[change.key] = change
            elif change.condition.reason == "SchedulingGated":
                self._gated_pending[change.key] = change
                self._spawn(self._write_gated(change))
            elif decision.bindings and change.kind in GROUP_KINDS and change.condition.status == "True":
                deferred.append(change)  # written once the gang is really bound
                self._scheduled.add((change.kind, change.key))
            else:
                self._spawn(self._write_condition(change))
        if decision.bindings:
            self.cache.assume(decision.bindings)
            self._binding += 1
            self._binds_idle.clear()
            self._spawn(
                self._bind_cycle(list(decision.bindings), deferred, decision.volume_bindings, decision.claims)
            )
        for key in decision.deallocations:
            self._spawn(self._deallocate_claim(key))
        for key in decision.claim_deletions:
            self._spawn(self._delete_claim(key))
        for u in decision.unreservations:
            self._spawn(self._unreserve_claim(u))
        for n in decision.nominations:
            self._spawn(self._nominate(n))
        for e in decision.evictions:
            self._spawn(self._evict(e, victim_conditions.get(e.pod)))
        for notice in decision.events:
            self._spawn(self._event(notice))

    def delete_members(self, pods: tuple[tuple[str, str], ...], notice: Notice) -> None:
        """A recovery policy's restart or release (live/recovery.py): delete these bound pods with their own
        grace period, as a controller would (their owner creates them again), and say why on the group."""
        for key in pods:
            self._spawn(self._delete_member(key))
        self._spawn(self._event(notice))

    async def _delete_member(self, key: tuple[str, str]) -> None:
        pod = self.cache.store.get("Pod", key)
        uid = pod.metadata.uid if pod is not None else None
        async with self._writes:
            status = await self.api.delete_pod(key, uid=uid)  # uid: never a pod made since under that name
        if not status.ok and status.code not in (404, 409):
            log.warning("recovery: delete %s/%s: %s %s", *key, status.code, status.reason)

    async def drain(self) -> None:
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def shutdown(self, timeout: float) -> tuple[int, int]:
        """Let the writes in flight finish for up to `timeout` seconds, then abandon the rest (a retry loop
        through an unreachable API server may run for half a minute): each is cancelled, its HTTP request
        with it, and given shutdown.CANCEL_GRACE to unwind, not more. A request is applied by the server
        whole or not at all; what a cancelled bind cycle leaves (a gang bound below minCount) is recovered by
        the next scheduler to start (live/runner.py, step 4). Returns (finished, abandoned)."""
        in_flight = set(self._tasks)  # the loop has stopped: nothing spawns more
        abandoned = await settle(in_flight, timeout)
        return len(in_flight) - abandoned, abandoned

    def in_flight(self) -> int:
        return len(self._tasks)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("write failed", exc_info=task.exception())

    # --- bindings -------------------------------------------------------------------------------------------
    async def _bind_cycle(
        self,
        bindings: list[Binding],
        deferred: list[ConditionChange],
        volumes: list[VolumeBinding],
        claims: list[ClaimReservation],
    ) -> None:
        created: list[tuple[str, str]] = []  # special claims this cycle created
        try:
            if (volumes or claims) and not (
                await self._prebind(volumes, claims, created) and await self._volumes_bound(volumes)
            ):
                for change in deferred:
                    self._scheduled.discard((change.kind, change.key))
                self.metrics.bindings.inc("failure", len(bindings))
                self.scheduler.forget([b.pod for b in bindings if self.cache.forget(b.pod, b.node)])
                await asyncio.gather(*(self._delete_claim(key) for key in created))
                return
            await self._bind_all(bindings, deferred)
        finally:
            self._binding -= 1
            if not self._binding:
                self._binds_idle.set()

    async def _bind_all(self, bindings: list[Binding], deferred: list[ConditionChange]) -> None:
        results = await asyncio.gather(*(self._bind_one(b) for b in bindings))
        failed = [b for b, ok in zip(bindings, results, strict=True) if not ok]
        self.metrics.bindings.inc("success", len(bindings) - len(failed))
        now = time.monotonic()
        for b, ok in zip(bindings, results, strict=True):
            seen = self.cache.first_pending.pop(b.pod, None) if ok else None
            if seen is not None:
                self.metrics.pod_scheduling_sli.observe(now - seen)
        if not failed:
            for change in deferred:
                await self._write_condition(change)
            return
        self.metrics.bindings.inc("failure", len(failed))
        bound = [b for b, ok in zip(bindings, results, strict=True) if ok]
        for change in deferred:
            self._scheduled.discard((change.kind, change.key))
        if bound and self._below_min_count(bindings, {b.pod for b in failed}):
            log.warning("rolling back %d bound members of a gang whose other binds failed", len(bound))
            self.metrics.rollbacks.inc("gang")
            await asyncio.gather(*(self._unbind(b) for b in bound))
        # A pod deleted meanwhile left the snapshot with its delete event; one bound by someone else stays.
        self.scheduler.forget([b.pod for b in failed if self.cache.forget(b.pod, b.node)])

    # --- PreBind: volumes and claims, written before the pods are bound -----------------------------------
    async def _prebind(
        self, volumes: list[VolumeBinding], claims: list[ClaimReservation], created: list[tuple[str, str]]
    ) -> bool:
        """What kube-scheduler's VolumeBinding and DynamicResources PreBind write: a PV's claimRef (the PV
        controller then binds the claim) or a claim's selected node (its provisioner then creates the PV),
        and each ResourceClaim's allocation and reservedFor; special claims are created (their keys added to
        `created`). True when all of it was written."""
        merged: dict[tuple[str, str], tuple[dict[str, Any] | None, list[dict[str, str]]]] = {}
        for c in claims:
            if c.create is not None:
                continue
            allocation, consumers = merged.get(c.claim, (None, []))
            if c.consumer not in consumers:
                consumers.append(c.consumer)
            merged[c.claim] = (allocation or c.allocation, consumers)
        writes = [self._bind_volume(v) for v in volumes]
        writes += [self._reserve_claim(key, a, consumers) for key, (a, consumers) in merged.items()]
        writes += [self._create_special_claim(c, created) for c in claims if c.create is not None]
        return all(await asyncio.gather(*writes))

    async def _create_special_claim(self, cr: ClaimReservation, created: list[tuple[str, str]]) -> bool:
        """bindClaim for the special claim: create it (the API server names it from generateName; once
        only, so no retry that could make two), add the finalizer, write allocation and reservedFor, then
        name it in the pod's status.extendedResourceClaimStatus with the request mappings."""
        assert cr.create is not None
        ns = cr.claim[0]
        body = {k: v for k, v in cr.create.items() if k != "status"}
        body["metadata"] = {k: v for k, v in body["metadata"].items() if k != "name"}
        async with self._writes:
            try:
                status = await self.api.create("ResourceClaim", ns, body)
            except httpx.TransportError as e:
                log.warning("create claim for extended resources in %s: %s", ns, type(e).__name__)
                return False
        if not status.ok or not isinstance(status.body, dict):
            log.warning("create claim for extended resources in %s: %s %s", ns, status.code, status.reason)
            return False
        claim = status.body
        key = (ns, str(claim["metadata"]["name"]))
        created.append(key)
        claim["metadata"]["finalizers"] = [CLAIM_FINALIZER]
        if not await self._write(
            lambda: self.api.replace("ResourceClaim", ns, key[1], claim),
            f"add finalizer to claim {ns}/{key[1]}",
        ):
            return False
        allocation = _stamped(cr.allocation) if cr.allocation is not None else None
        patch = {"status": {"allocation": allocation, "reservedFor": [cr.consumer]}}
        if not await self._write(
            lambda: self.api.patch_status("ResourceClaim", key, patch), f"reserve claim {ns}/{key[1]}"
        ):
            return False
        pod_status = {
            "extendedResourceClaimStatus": {
                "requestMappings": list(cr.request_mappings),
                "resourceClaimName": key[1],
            }
        }
        pod = (ns, cr.consumer["name"])
        return await self._write(
            lambda: self.api.patch_status("Pod", pod, {"status": pod_status}, strategic=True),
            f"extended resource claim status of pod {ns}/{pod[1]}",
        )

    async def _delete_claim(self, key: tuple[str, str]) -> None:
        """deleteClaim: the delete-protection finalizer removed (merge patch), then the claim deleted."""
        claim = self.cache.store.get("ResourceClaim", key)
        finalizers = list((claim.metadata.finalizers or []) if claim is not None else [CLAIM_FINALIZER])
        if CLAIM_FINALIZER in finalizers:
            finalizers.remove(CLAIM_FINALIZER)
            patch = {"metadata": {"finalizers": finalizers or None}}
            await self._write(
                lambda: self.api.patch("ResourceClaim", key, patch),
                f"remove finalizer of claim {key[0]}/{key[1]}",
            )
        await self._write(lambda: self.api.delete("ResourceClaim", key), f"delete claim {key[0]}/{key[1]}")

    async def _volumes_bound(self, volumes: list[VolumeBinding]) -> bool:
        """VolumeBinding's PreBind then waits for the PV controller (volumeBinder.BindPodVolumes:
        checkBindings polled every second, first after one second, for up to bindTimeoutSeconds): each claim
        fully bound, i.e. `spec.volumeName` set and the `pv.kubernetes.io/bind-completed` annotation there.
        False after the timeout, or at once when a PV we bound names another claim (taken meanwhile)."""
        deadline = time.monotonic() + self.volume_bind_timeout
        while volumes:
            await asyncio.sleep(VOLUME_BIND_POLL)
            done = self._volumes_done(volumes)
            if done is not None:
                return done
            if time.monotonic() > deadline:
                log.warning("binding volumes: timed out waiting for the condition (%d claims)", len(volumes))
                return False
        return True

    def _volumes_done(self, volumes: list[VolumeBinding]) -> bool | None:
        """True when every claim is fully bound, False when one cannot be any more, None to wait on."""
        store = self.cache.store
        waiting = False
        for v in volumes:
            pvc = store.get("PersistentVolumeClaim", v.pvc)
            if pvc is None:
                return False
            if v.pv is not None:
                pv = store.get("PersistentVolume", ("", v.pv))
                ref = pv.spec.claimRef if pv is not None else None
                if pv is None or (ref is not None and ref.uid and ref.uid != pvc.metadata.uid):
                    return False
            annotations = pvc.metadata.annotations or {}
            if not (pvc.spec.volumeName and ANN_BIND_COMPLETED in annotations):
                waiting = True
        return None if waiting else True

    async def _bind_volume(self, v: VolumeBinding) -> bool:
        """Static binding: the PV's claimRef (volume.BindVolumeToClaim); provisioning: the claim's
        `volume.kubernetes.io/selected-node` annotation."""
        pvc = self.cache.store.get("PersistentVolumeClaim", v.pvc)
        if pvc is None:
            return False
        if v.pv is None:
            body = pvc.to_dict()
            body.setdefault("metadata", {}).setdefault("annotations", {})[ANN_SELECTED_NODE] = v.node
            return await self._write(
                lambda: self.api.replace("PersistentVolumeClaim", v.pvc[0], v.pvc[1], body),
                f"select node for {v.pvc[0]}/{v.pvc[1]}",
            )
        pv = self.cache.store.get("PersistentVolume", ("", v.pv))
        if pv is None:
            return False
        body = pv.to_dict()
        body["spec"]["claimRef"] = {
            "kind": "PersistentVolumeClaim",
            "apiVersion": "v1",
            "namespace": v.pvc[0],
            "name": v.pvc[1],
            "uid": pvc.metadata.uid,
            "resourceVersion": pvc.metadata.resourceVersion,
        }
        body["metadata"].setdefault("annotations", {})[ANN_BOUND_BY_CONTROLLER] = "yes"
        return await self._write(
            lambda: self.api.replace("PersistentVolume", None, v.pv or "", body), f"bind PV {v.pv}"
        )

    async def _reserve_claim(
        self, key: tuple[str, str], allocation: dict[str, Any] | None, consumers: list[dict[str, str]]
    ) -> bool:
        """status.allocation (when new) and the consumers in status.reservedFor, in one status write."""
        claim = self.cache.store.get("ResourceClaim", key)
        if claim is None:
            return False
        status = claim.status
        reserved = [r.to_dict() for r in (status.reservedFor if status is not None else None) or []]
        reserved += [c for c in consumers if c not in reserved]
        patch: dict[str, Any] = {"status": {"reservedFor": reserved}}
        if allocation is not None:
            patch["status"]["allocation"] = _stamped(allocation)
        return await self._write(
            lambda: self.api.patch_status("ResourceClaim", key, patch), f"reserve claim {key[0]}/{key[1]}"
        )

    async def _deallocate_claim(self, key: tuple[str, str]) -> None:
        """DynamicResources' PostFilter write: the claim's status without allocation, reservedFor and devices
        (upstream's UpdateStatus of the claim as its cache had it: a claim changed meanwhile is a conflict
        and stays as it is, the pod's next cycle judges it again)."""
        claim = self.cache.store.get("ResourceClaim", key)
        if claim is None:
            return
        patch = {
            "metadata": {"resourceVersion": claim.metadata.resourceVersion},
            "status": {"allocation": None, "reservedFor": None, "devices": None},
        }
        await self._write(
            lambda: self.api.patch_status("ResourceClaim", key, patch), f"deallocate claim {key[0]}/{key[1]}"
        )

    async def _unreserve_claim(self, u: ClaimUnreservation) -> None:
        """DynamicResources' PodGroupPostFilter write: the PodGroup's entry out of the claim's reservedFor, as
        upstream's strategic merge patch (`$patch: delete` by UID, the claim's UID as precondition)."""
        claim = self.cache.store.get("ResourceClaim", u.claim)
        if claim is None:
            return
        patch = {
            "metadata": {"uid": claim.metadata.uid},
            "status": {"reservedFor": [{"$patch": "delete", "uid": u.consumer["uid"]}]},
        }
        await self._write(
            lambda: self.api.patch_status("ResourceClaim", u.claim, patch, strategic=True),
            f"unreserve claim {u.claim[0]}/{u.claim[1]}",
        )

    async def _bind_one(self, b: Binding) -> bool:
        uncertain = False
        for attempt in range(6):
            try:
                async with self._writes:
                    status = await self.api.bind(b.pod, b.node)
            except httpx.TransportError:
                uncertain = True  # the request may have reached the server before the connection broke
                await asyncio.sleep(min(5.0, 0.2 * 2**attempt))
                continue
            if status.code == 201:
                return True
            if status.code == 409 and uncertain:
                current = await self.api.get("Pod", *b.pod)
                return bool(current.ok and current.body["spec"].get("nodeName") == b.node)
            if status.code in RETRIABLE:
                await asyncio.sleep(min(5.0, 0.2 * 2**attempt))
                continue
            log.warning("bind %s/%s to %s: %s %s", *b.pod, b.node, status.code, status.reason)
            return False
        return False

    def _below_min_count(self, members: list[Binding], failed: set[tuple[str, str]]) -> bool:
        """Would a gang of this cycle be bound below its minCount without the failed pods? A composite tree's
        cycle binds several groups: one of them short is enough to undo the whole cycle, as it was admitted
        whole."""
        store = self.cache.store
        groups: set[tuple[str, str]] = set()
        for b in members:
            pod = store.get("Pod", b.pod)
            if pod is not None and pod.spec.schedulingGroup is not None:
                groups.add((b.pod[0], pod.spec.schedulingGroup.podGroupName))
        minimum: dict[tuple[str, str], int] = {}
        for group in groups:
            pg = store.get("PodGroup", group)
            if pg is not None and pg.spec.schedulingPolicy.gang is not None:
                minimum[group] = int(pg.spec.schedulingPolicy.gang.minCount)
        if not minimum:
            return False
        bound = dict.fromkeys(minimum, 0)
        for p in store.list("Pod"):
            sg = p.spec.schedulingGroup
            member_of = (p.metadata.namespace, sg.podGroupName) if sg is not None else None
            key = (p.metadata.namespace, p.metadata.name)
            if member_of in bound and p.spec.nodeName and key not in failed:
                bound[member_of] += 1
        return any(bound[g] < minimum[g] for g in minimum)

    async def _unbind(self, b: Binding) -> None:
        """A bound pod cannot be unbound: delete it at once (it never ran; its controller makes another)."""
        pod = self.cache.store.get("Pod", b.pod)
        uid = pod.metadata.uid if pod is not None else None
        async with self._writes:
            status = await self.api.delete_pod(b.pod, grace_seconds=0, uid=uid)
        if not status.ok and status.code != 404:
            log.error("rollback: delete %s/%s: %s %s", *b.pod, status.code, status.reason)

    # --- conditions, nominations, evictions, events ---------------------------------------------------------
    async def _write(self, request: Callable[[], Coroutine[Any, Any, ApiStatus]], what: str) -> bool:
        """Send `request()`, again while the API server is unreachable or overloaded (it may be restarting),
        for about 30 s. True if it was written (or its object is gone)."""
        for attempt in range(8):
            try:
                async with self._writes:
                    status = await request()
            except httpx.TransportError as e:
                log.warning("%s: %s (attempt %d)", what, type(e).__name__, attempt + 1)
                await asyncio.sleep(min(8.0, 0.25 * 2**attempt))
                continue
            if status.code in RETRIABLE:
                await asyncio.sleep(min(8.0, 0.25 * 2**attempt))
                continue
            if not status.ok and status.code != 404:
                message = status.body.get("message", "") if isinstance(status.body, dict) else ""
                log.warning("%s: %s %s %s", what, status.code, status.reason, message)
            return status.ok or status.code == 404
        return False

    async def _nominate(self, n: Nomination) -> None:
        """nominatedNodeName, unless the pod got bound meanwhile (the server refuses it on a bound pod)."""
        async with self._writes:
            pod = self.cache.store.get("Pod", n.pod)
            if pod is None or pod.spec.nodeName:
                return
            if (pod.status.nominatedNodeName if pod.status else None) == n.node:
                return  # already says so: a write would change nothing
            patch = {"status": {"nominatedNodeName": n.node}}
            try:
                status = await self.api.patch_status("Pod", n.pod, patch, strategic=True)
            except httpx.TransportError as e:
                log.warning("nominate %s/%s: %s", *n.pod, e)
                return
        if not status.ok and status.code != 404:
            log.warning("nominate %s/%s to %s: %s %s", *n.pod, n.node, status.code, status.reason)

    async def _write_condition(self, change: ConditionChange) -> None:
        c = change.condition
        memo = (change.kind, change.key, c.type)
        obj = self.cache.store.get(change.kind, change.key)
        if obj is None:
            return
        if (
            c.status != "True"
            and c.type.endswith("InitiallyScheduled")
            and (change.kind, change.key) in self._scheduled
        ):
            return
        conditions = list((obj.status.conditions if obj.status else None) or [])
        existing = next((x for x in conditions if x.type == c.type), None)
        if _same(existing, change) or self._written.get(memo) == (c.status, c.reason, c.message):
            return
        self._written[memo] = (c.status, c.reason, c.message)
        since = _rfc3339(dt.datetime.now(dt.UTC))
        if existing is not None and existing.status == c.status and existing.lastTransitionTime is not None:
            # The status did not change, so neither did the time.
            since = _rfc3339(existing.lastTransitionTime)
        entry: dict[str, Any] = {
            "type": c.type,
            "status": c.status,
            "reason": c.reason or None,
            "message": c.message,
            "lastTransitionTime": since,
        }
        if change.kind != "Pod":
            # metav1.Condition: reason is required.
            entry["reason"] = c.reason or c.status
            entry["observedGeneration"] = obj.metadata.generation
        # Pod, PodGroup and CompositePodGroup conditions all merge by type (patchMergeKey "type"), so each
        # write carries its own condition only and two writes on one object in flight cannot undo each other.
        patch = {"status": {"conditions": [entry]}}

        def request() -> Coroutine[Any, Any, ApiStatus]:
            return self.api.patch_status(change.kind, change.key, patch, strategic=True)

        what = f"condition {c.type} on {change.kind} {change.key[0]}/{change.key[1]}"
        if not await self._write(request, what):
            self._written.pop(memo, None)  # not written: the next cycle's decision may try again

    async def _write_gated(self, change: ConditionChange) -> None:
        """Why a pod waits at PreEnqueue, written only if it still waits a moment later: the members of a gang
        arrive in a burst and the gate of most of them lifts within it, so most such writes would be stale."""
        await asyncio.sleep(GATED_DELAY)
        if self._gated_pending.get(change.key) is not change:
            return  # superseded by a later condition for this pod
        del self._gated_pending[change.key]
        pod = self.cache.store.get("Pod", change.key)
        if pod is not None and not pod.spec.nodeName:
            await self._write_condition(change)

    async def _evict(self, e: Eviction, condition: ConditionChange | None) -> None:
        """DisruptionTarget, then DELETE with the pod's own grace period, as kube-scheduler does
        (pkg/scheduler/util DeletePod). Not the Eviction API: the preemption already weighed
        PodDisruptionBudgets (it spares protected victims where it can, as upstream does), and the Eviction
        API would overwrite the condition with reason EvictionByEvictionAPI, so the victim would no longer
        read as terminating by preemption and the preemptor, retried, would preempt again."""
        pod = self.cache.store.get("Pod", e.pod)
        if pod is not None and pod.metadata.deletionTimestamp is not None:
            return  # graceful deletion already started: upstream sends no second call either
        if condition is not None:
            await self._write_condition(condition)
        async with self._writes:
            status = await self.api.delete_pod(e.pod)
        self.metrics.evictions.inc("ok" if status.ok or status.code == 404 else "failed")
        if not status.ok and status.code != 404:
            log.warning("evict %s/%s: %s %s", *e.pod, status.code, status.reason)

    async def _event(self, notice: Notice) -> None:
        # The same event about the same object again within EVENT_REPEAT seconds is dropped: a gang that keeps
        # failing would otherwise add one FailedScheduling event per member per attempt (upstream's event
        # correlator aggregates them likewise).
        now = time.monotonic()
        last = self._last_event.get(notice.object)
        if last is not None and last[0] == (notice.reason, notice.message) and now - last[1] < EVENT_REPEAT:
            return
        if len(self._last_event) > 100_000:  # objects come and go: forget them all now and then
            self._last_event.clear()
        self._last_event[notice.object] = ((notice.reason, notice.message), now)
        kind, _, rest = notice.object.partition(" ")
        namespace, _, name = rest.rpartition("/")
        regarding = {"kind": kind, "namespace": namespace, "name": name}
        await self._binds_idle.wait()  # bindings first: an event tells what happened, a binding does it
        async with self._event_writes:
            # Events are best effort, as upstream's broadcaster drops them under pressure.
            with contextlib.suppress(httpx.TransportError):
                status = await self.api.create_event(
                    regarding, notice.type, notice.reason, notice.message, self.scheduler_name, self.instance
                )
                if not status.ok:
                    log.warning(
                        "event %s on %s: %s %s", notice.reason, notice.object, status.code, status.reason
                    )


def _stamped(allocation: dict[str, Any]) -> dict[str, Any]:
    """The allocation with `allocationTimestamp` now, as bindClaim sets it when writing an allocation
    (DRADeviceBindingConditions, beta and on in v1.37, with DRAResourceClaimDeviceStatus, GA)."""
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    return {**allocation, "allocationTimestamp": now.strftime("%Y-%m-%dT%H:%M:%SZ")}
