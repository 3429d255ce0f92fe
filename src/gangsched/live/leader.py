"""Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it.

A replica leads while it holds the Lease (holderIdentity) and renews it every `retry_period`. Another replica
takes the Lease only when it has seen the same record unchanged for `lease_duration` (measured on its own
monotonic clock, so clock skew between machines does not matter); every write carries the resourceVersion
read, so two replicas racing for an expired Lease cannot both win (one gets 409 Conflict). A leader that
could not renew for `renew_deadline` (< lease_duration) stops before anyone else may start: two replicas
never schedule at the same time.

    elector = LeaderElector(api, "kube-system", "gangsched", identity)
    await elector.acquire()          # blocks until this replica leads
    await elector.keep()             # returns only by raising LeadershipLost

Contract: one event loop; `keep` raises LeadershipLost, never returns normally.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any

import httpx2 as httpx

from .kube import ApiStatus, KubeApi, micro_time

__all__ = ["LeaderElector", "LeadershipLost"]

log = logging.getLogger(__name__)


class LeadershipLost(Exception):
    """This replica may no longer schedule."""


@dataclass
class _Observed:
    record: tuple[Any, ...]
    at: float


class LeaderElector:
    def __init__(
        self,
        api: KubeApi,
        namespace: str,
        name: str,
        identity: str,
        *,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
    ) -> None:
        if not retry_period < renew_deadline < lease_duration:
            raise ValueError("leader election needs retry_period < renew_deadline < lease_duration")
        self.api = api
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.leading = False
        self._observed: _Observed | None = None
        self._renewed_at = 0.0
        self._last_refusal = ""

    async def acquire(self) -> None:
        while not await self._try():
            await asyncio.sleep(self.retry_period)
        self.leading = True
        log.info("leading as %s (lease %s/%s)", self.identity, self.namespace, self.name)

    async def keep(self) -> None:
        while True:
            await asyncio.sleep(self.retry_period)
            if await self._try():
                continue
            if time.monotonic() - self._renewed_at > self.renew_deadline:
                self.leading = False
                raise LeadershipLost(f"could not renew lease {self.namespace}/{self.name}")

    async def release(self) -> bool:
        """Give the Lease up on a clean shutdown, so that another replica takes over at once: holder cleared
        and a 1 s duration, as client-go's tryRelease (again after a 409 Conflict, with the newer record).
        True if released (or no longer ours to release); the caller bounds the time (live/shutdown.py)."""
        if not self.leading:
            return True
        self.leading = False
        while True:
            got = await self.api.get("Lease", self.namespace, self.name)
            if not got.ok or got.body.get("spec", {}).get("holderIdentity") != self.identity:
                return got.code == 404 or got.ok  # gone, or someone else's already
            body = got.body
            body["spec"] = {**body["spec"], "holderIdentity": None, "leaseDurationSeconds": 1}
            put = await self.api.replace("Lease", self.namespace, self.name, body)
            if put.code != 409:
                if not put.ok:
                    self._refused("release", put)
                return put.ok

    def _spec(self, transitions: int, acquired: str | None) -> dict[str, Any]:
        now = micro_time()
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(1, round(self.lease_duration)),
            "acquireTime": acquired or now,
            "renewTime": now,
            "leaseTransitions": transitions,
        }

    async def _try(self) -> bool:
        """Acquire or renew once; True if this replica holds the Lease afterwards."""
        try:
            return await self._try_once()
        except httpx.TransportError as e:
            log.warning("lease %s/%s: %s", self.namespace, self.name, e)
            return False

    async def _try_once(self) -> bool:
        got = await self.api.get("Lease", self.namespace, self.name)
        if got.code == 404:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": self._spec(0, None),
            }
            made = await self.api.create("Lease", self.namespace, body)
            if made.code not in (201, 409):  # 409: another replica created it first
                self._refused("create", made)
            return self._won(made.code == 201)
        if not got.ok:
            self._refused("get", got)
            return False
        lease = got.body
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity")
        record = (holder, spec.get("renewTime"), spec.get("leaseDurationSeconds"))
        now = time.monotonic()
        if self._observed is None or self._observed.record != record:
            self._observed = _Observed(record, now)
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        if holder and holder != self.identity and now < self._observed.at + duration:
            return False  # someone else holds a Lease that has not expired by our clock
        transitions = int(spec.get("leaseTransitions") or 0) + (0 if holder == self.identity else 1)
        acquired = spec.get("acquireTime") if holder == self.identity else None
        lease["spec"] = self._spec(transitions, acquired)
        # The resourceVersion read travels with the update: a concurrent writer makes this 409.
        put = await self.api.replace("Lease", self.namespace, self.name, lease)
        if put.code not in (200, 409):  # 409: another replica wrote it first
            self._refused("update", put)
        return self._won(put.code == 200)

    def _refused(self, verb: str, status: ApiStatus) -> None:
        """Say why the Lease cannot be had (403: the account may not), once per distinct answer, as
        client-go's leaderelection logs its failures to acquire."""
        message = status.body.get("message", "") if isinstance(status.body, dict) else ""
        said = f"lease {self.namespace}/{self.name}: {verb}: {status.code} {status.reason} {message}".rstrip()
        if said != self._last_refusal:
            self._last_refusal = said
            log.warning("%s", said)

    def _won(self, ok: bool) -> bool:
        if ok:
            self._renewed_at = time.monotonic()
            self._observed = None
        return ok
