"""`gangsched run`: the decision core as a secondary scheduler on a real cluster.

1. (With --leader-elect) wait until this replica holds the Lease; lose it and the process exits.
2. Informers list every kind the scheduler reads into one Store (live/informer.py, live/cache.py).
3. The same Scheduler as the CLI and the simulator is built on that Store, for pods naming our schedulerName.
4. Recovery: gangs found bound below their minCount with members still pending (a previous incarnation died
   while binding) are left to the first scheduling pass, which counts their bound members and places the rest
   if it can (finishing loses no work). Any still below minCount once that pass is done have their bound
   members deleted: holding part of a gang is the deadlock gang scheduling exists to prevent. Gangs that were
   whole once (PodGroupInitiallyScheduled True) and lost members since are left to the recovery policy.
5. Loop: `schedule_one(now)`; each Decision goes to the Applier (live/applier.py) without waiting for it; when
   the queue is idle, the recovery policy looks at the gangs that changed (live/recovery.py: members failed,
   deleted, or on a node NotReady or gone; a restart or release deletes the members still bound), then the
   loop waits for a change from the informers, the next backoff to end or the next release to fall due.
6. SIGTERM/SIGINT: one budget (SHUTDOWN_BUDGET) for the whole shutdown, as kube-scheduler stops and its leader
   election releases the Lease on cancel (client-go's ReleaseOnCancel): scheduling stops, the informers stop,
   the writes in flight finish or are abandoned (cancelled; each is one HTTP request the server applies whole
   or not at all, and a gang left bound below minCount is finished or rolled back by whichever replica
   schedules next, step 4), then the Lease is released with the time kept for it, then the connections close.
   Each stage is logged with its duration; a watchdog ends the process if the stages overrun the budget.
   The budget counts from the signal: its handler runs even while a long cycle holds the event loop.

    asyncio.run(run(RunOptions(kubeconfig="~/.kube/config")))   # None: in-cluster, else $KUBECONFIG
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import time
import uuid
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from ..api.gates import FeatureGates
from ..scheduler import Decision, Profile, Scheduler
from ..scheduler.backfill import BackfillSettings
from ..scheduler.estimates import History
from ..scheduler.policy import queue_policy
from ..scheduler.recovery import WAIT, Recovery
from ..store.store import EPOCH, Store
from .applier import EVENT_WRITES, Applier
from .cache import LiveCache
from .dashboard import DashboardView, render_dashboard
from .informer import Informer
from .kube import KubeApi
from .leader import LeaderElector
from .metrics import Gauge, Metrics, Page, StateCounter, serve_http
from .recovery import GangRecovery
from .shutdown import ShutdownBudget, Watchdog, settle, within

__all__ = ["INFORMER_KINDS", "LiveScheduler", "RunOptions", "run"]

log = logging.getLogger("gangsched.live")
INFORMER_KINDS = (
    "PriorityClass",
    "Node",
    "Namespace",  # labels that pod affinity terms' namespaceSelector match
    # what the claims stage reads (templates are the resourceclaim controller's business, not ours)
    "StorageClass",
    "CSINode",
    "CSIDriver",
    "CSIStorageCapacity",
    "VolumeAttachment",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "DeviceClass",
    "ResourceSlice",
    "DeviceTaintRule",
    "ResourceClaim",
    # what PodTopologySpread's system default constraints take their selector from
    "Service",
    "ReplicationController",
    "ReplicaSet",
    "StatefulSet",
    "Workload",
    "CompositePodGroup",
    "PodGroup",
    "PodDisruptionBudget",
    "Pod",
)
IDLE_WAIT = 1.0
# Seconds from SIGTERM to the end of the shutdown: stopping, the writes in flight, the Lease's release and the
# connections together (issue 15's bound). The Lease's release gets the last LEASE_RELEASE_TIME of it, the
# connections' close the last CLOSE_TIME; the writes what is left before them. WATCHDOG_GRACE after the budget
# the process exits whatever is still running (a step that blocks the event loop itself).
SHUTDOWN_BUDGET = 5.0
LEASE_RELEASE_TIME = 1.5
CLOSE_TIME = 0.5
WATCHDOG_GRACE = 2.0


@dataclass(frozen=True, slots=True)
class RunOptions:
    """What `gangsched run` was told (flags over --config file, see live/config.py)."""

    kubeconfig: str | None = None
    scheduler_name: str = "gangsched"
    gates: FeatureGates = field(default_factory=FeatureGates)
    leader_elect: bool = False
    lease_namespace: str = "kube-system"
    lease_name: str = "gangsched"
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    metrics_port: int | None = None
    bind_address: str = "127.0.0.1"
    seed: int = 0
    api_concurrency: int = 16
    scoring: str = "LeastAllocated"
    placement_limit: bool = False
    backfill: BackfillSettings | None = None
    explain_pending: bool = False
    queue_policy: str = "gang"
    recovery: Recovery = WAIT

    def profile(self) -> Profile:
        return Profile(
            scheduler_names=frozenset({self.scheduler_name}),
            scoring=self.scoring,
            placement_limit=self.placement_limit,
            backfill=self.backfill,
            explain_pending=self.explain_pending,
            queue_policy=queue_policy(self.queue_policy),
            recovery=self.recovery,
        )


def _wall_clock() -> float:
    """Seconds since the Store's epoch: conditions the Store stamps get the real time."""
    return time.time() - EPOCH.timestamp()


class LiveScheduler:
    """Informers + Scheduler + Applier over one API server. `start()` then `loop()`; `stop()` to finish."""

    def __init__(self, api: KubeApi, options: RunOptions, metrics: Metrics) -> None:
        self.api = api
        self.options = options
        self.metrics = metrics
        self.store = Store(clock=_wall_clock)
        self.cache = LiveCache(self.store)
        self.informers = [Informer(api, kind, self.cache) for kind in INFORMER_KINDS]
        self.scheduler: Scheduler | None = None
        self.applier: Applier | None = None
        self.recovery: GangRecovery | None = None
        self.synced = False
        self._tasks: list[asyncio.Task[None]] = []
        self._incomplete: dict[tuple[str, str], int] = {}

    async def start(self) -> None:
        self._tasks = [asyncio.create_task(i.run(), name=f"informer-{i.kind}") for i in self.informers]
        await asyncio.gather(*(i.synced.wait() for i in self.informers))
        self.scheduler = Scheduler(
            self.store, self.options.gates, seed=self.options.seed, profile=self.options.profile()
        )
        self.cache.nominated = self.scheduler.nominated_node  # other writers' nominatedNodeName changes pass
        if self.scheduler.backfill is not None:
            self.scheduler.backfill.history = History()  # live: estimates from the owners' past runs too
        self.scheduler.sync()
        self.applier = Applier(
            self.api,
            self.cache,
            self.scheduler,
            self.metrics,
            scheduler_name=self.options.scheduler_name,
            max_writes=self.options.api_concurrency,
        )
        self.recovery = GangRecovery(
            self.store, self.scheduler.profile.recovery, scheduler_name=self.options.scheduler_name
        )
        self.recovery.observe(self.scheduler.clock())  # the gangs admitted before this process started
        self._incomplete = {g: n for g, (bound, n) in self.gangs_below_min_count().items() if bound}
        if self._incomplete:
            log.warning(
                "recovery: %d gang(s) bound below minCount at start; finishing them if the first pass can, "
                "else deleting their bound members",
                len(self._incomplete),
            )
        self._attach_gauges()
        self.synced = True
        log.info("synced: %s", {k: self.store.count(k) for k in INFORMER_KINDS})

    def informer_tasks(self) -> list[asyncio.Task[None]]:
        return list(self._tasks)

    async def stop(self, budget: ShutdownBudget, keep: float = 0.0) -> None:
        """Stop the informers, then let the writes in flight finish until `keep` seconds before the budget's
        end and abandon the rest. Each stage logged with its duration."""
        with budget.stage("informers stopped") as notes:
            for task in self._tasks:
                task.cancel()
            if abandoned := await settle(self._tasks, budget.left(keep)):
                notes.append(f"{abandoned} did not unwind: abandoned")
        if self.applier is not None:
            with budget.stage("writes in flight") as notes:
                finished, abandoned = await self.applier.shutdown(budget.left(keep))
                notes.append(f"{finished} finished, {abandoned} abandoned")

    # --- the loop -------------------------------------------------------------------------------------------
    async def loop(self) -> None:
        scheduler, applier, recovery = self.scheduler, self.applier, self.recovery
        assert scheduler is not None and applier is not None and recovery is not None
        while True:
            now = scheduler.clock()  # the Store's wall clock: the queue's times and the conditions' agree
            cycles = scheduler.cycles
            started = time.perf_counter()
            decision = scheduler.schedule_one(now)
            if decision is not None:
                if scheduler.cycles != cycles:
                    self.metrics.cycle_seconds.observe(time.perf_counter() - started)
                    self.metrics.attempts.inc(self._result(decision))
                if decision.evictions:
                    self.metrics.preemptions.inc("group" if self._preempting_group(decision) else "pod")
                applier.apply(decision)
                await asyncio.sleep(0)  # let the informers and the writes in flight run
                continue
            if self._incomplete:
                await applier.drain()
                await self._recover()
                continue
            for action in recovery.observe(now):
                self.metrics.recoveries.inc(action.kind)
                applier.delete_members(action.delete, action.notice)
            ready = scheduler.queue.next_ready_at()
            release = recovery.next_release_at()
            due = min((t for t in (ready, release) if t is not None), default=None)
            timeout = IDLE_WAIT if due is None else min(IDLE_WAIT, max(0.0, due - now))
            self.cache.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.cache.changed.wait(), timeout)

    @staticmethod
    def _result(decision: Decision) -> str:
        if decision.bindings:
            return "scheduled"
        reasons = {c.condition.reason for c in decision.conditions}
        if "SchedulerError" in reasons or "Invalid" in reasons:
            return "error"
        return "unschedulable"

    @staticmethod
    def _preempting_group(decision: Decision) -> bool:
        return any(c.kind in ("PodGroup", "CompositePodGroup") for c in decision.conditions)

    # --- recovery -------------------------------------------------------------------------------------------
    def gangs_below_min_count(self) -> dict[tuple[str, str], tuple[list[tuple[str, str]], int]]:
        """Gangs with members pending for us and fewer bound members than minCount: group -> (bound member
        keys, minCount). Pods being deleted do not count."""
        members: dict[tuple[str, str], tuple[list[tuple[str, str]], list[tuple[str, str]]]] = {}
        for pod in self.store.list("Pod"):
            sg = pod.spec.schedulingGroup
            if sg is None or not sg.podGroupName or pod.metadata.deletionTimestamp is not None:
                continue
            bound, pending = members.setdefault((pod.metadata.namespace, sg.podGroupName), ([], []))
            key = (pod.metadata.namespace, pod.metadata.name)
            if pod.spec.nodeName:
                bound.append(key)
            elif (pod.spec.schedulerName or "default-scheduler") == self.options.scheduler_name:
                pending.append(key)
        out: dict[tuple[str, str], tuple[list[tuple[str, str]], int]] = {}
        for group, (bound, pending) in members.items():
            pg = self.store.get("PodGroup", group)
            gang = pg.spec.schedulingPolicy.gang if pg is not None else None
            if _initially_scheduled(pg):
                continue  # it was whole once: members lost since are the recovery policy's (live/recovery.py)
            if gang is not None and pending and len(bound) < int(gang.minCount):
                out[group] = (bound, int(gang.minCount))
        return out

    async def _recover(self) -> None:
        """After the first pass: delete the bound members of gangs it could not finish."""
        incomplete, self._incomplete = self._incomplete, {}
        still = self.gangs_below_min_count()
        assert self.applier is not None
        for group in incomplete:
            if group not in still:
                log.info("recovery: gang %s/%s finished", *group)
                continue
            bound, min_count = still[group]
            log.warning(
                "recovery: gang %s/%s has %d of %d members bound and cannot be finished: deleting them",
                *group,
                len(bound),
                min_count,
            )
            self.metrics.rollbacks.inc("recovery")
            for key in bound:
                pod = self.store.get("Pod", key)
                uid = pod.metadata.uid if pod is not None else None
                await self.api.delete_pod(key, grace_seconds=0, uid=uid)

    # --- metrics --------------------------------------------------------------------------------------------
    def _attach_gauges(self) -> None:
        scheduler = self.scheduler
        assert scheduler is not None

        def queue_depth() -> dict[str, float]:
            depth = {state: 0.0 for state in ("active", "backoff", "unschedulable", "in-flight")}
            depth.update({k: float(v) for k, v in scheduler.queue.pending().items()})
            return depth

        def pending_gangs() -> dict[str, float]:
            waiting = {
                (p.metadata.namespace, p.spec.schedulingGroup.podGroupName)
                for p in self.store.list("Pod")
                if not p.spec.nodeName
                and p.spec.schedulingGroup is not None
                and p.spec.schedulerName == self.options.scheduler_name
            }
            gangs = sum(
                1
                for g in waiting
                if (pg := self.store.get("PodGroup", g)) is not None and pg.spec.schedulingPolicy.gang
            )
            return {"": float(gangs)}

        def pending_pods() -> dict[str, float]:
            queues = ("active", "backoff", "unschedulable", "gated", "incomplete", "in-flight")
            by_queue = dict.fromkeys(queues, 0.0)
            for where in scheduler.waiting_pods().values():
                by_queue[where] = by_queue.get(where, 0.0) + 1
            return by_queue

        def in_flight() -> dict[str, float]:
            return {"": float(self.applier.in_flight() if self.applier else 0)}

        def below_min_count() -> list[tuple[tuple[str, ...], float]]:
            if self.recovery is None:
                return []
            return [(group, gpu_s) for group, gpu_s in self.recovery.held_below_min_count(scheduler.clock())]

        def stalled() -> dict[str, float]:
            gangs = self.recovery.gangs.values() if self.recovery is not None else ()
            return {"": float(sum(1 for g in gangs if g.below_since is not None))}

        self.metrics.state_counters.append(
            StateCounter(
                "gangsched_gpu_seconds_below_min_count",
                "GPU-seconds held by gangs without progress after losing members after admission (below "
                "minCount, or waiting for the lost members' replacements), by gang: what the recovery "
                "policy keeps allocated (the simulator's below_min).",
                ("namespace", "podgroup"),
                below_min_count,
            )
        )
        self.metrics.gauges += [
            Gauge(
                "gangsched_gangs_below_min_count",
                "Admitted gangs now held without progress after losing members.",
                "",
                stalled,
            ),
            Gauge("gangsched_queue_depth", "Roots in the scheduling queue by state.", "state", queue_depth),
            Gauge("gangsched_pending_gangs", "Gangs with members of ours not yet bound.", "", pending_gangs),
            Gauge(
                "gangsched_pending_pods",
                "Pods of ours not yet bound, by where they wait (kube-scheduler's scheduler_pending_pods).",
                "queue",
                pending_pods,
            ),
            Gauge("gangsched_writes_in_flight", "API writes not yet answered.", "", in_flight),
        ]


def _initially_scheduled(pg: Any) -> bool:
    """The group's PodGroupInitiallyScheduled condition is True: it had minCount members bound (the Applier
    writes it once they all are)."""
    conditions = (pg.status.conditions if pg is not None and pg.status else None) or []
    return any(c.type == "PodGroupInitiallyScheduled" and c.status == "True" for c in conditions)


async def _unless_stopped(step: Coroutine[Any, Any, None], stopping: asyncio.Event) -> bool:
    """Run `step` to its end (True; its exception is raised) unless `stopping` is set first (False)."""
    task = asyncio.create_task(step)
    stop_wait = asyncio.create_task(stopping.wait())
    await asyncio.wait({task, stop_wait}, return_when=asyncio.FIRST_COMPLETED)
    stop_wait.cancel()
    if not task.done():
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return False
    task.result()
    return True


async def run(options: RunOptions, *, watchdog: bool = True) -> int:
    """Run until SIGTERM/SIGINT (exit 0) or a lost Lease (exit 1); the shutdown takes SHUTDOWN_BUDGET at most.
    `watchdog`: run() is the whole process, so once the shutdown begins it may end the process if that has not
    ended WATCHDOG_GRACE after the budget, and a second signal ends it at once (off in tests)."""
    # Connections: the writes, events, one watch per informer, and a few for the Lease and recovery. More
    # would not be faster: the HTTP/1.1 pool's bookkeeping grows with connections x queued requests.
    connections = options.api_concurrency + EVENT_WRITES + len(INFORMER_KINDS) + 4
    api = KubeApi.from_kubeconfig(options.kubeconfig, max_connections=connections)
    metrics = Metrics()
    identity = f"{socket.gethostname()}_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    elector = (
        LeaderElector(
            api,
            options.lease_namespace,
            options.lease_name,
            identity,
            lease_duration=options.lease_duration,
            renew_deadline=options.renew_deadline,
            retry_period=options.retry_period,
        )
        if options.leader_elect
        else None
    )
    live = LiveScheduler(api, options, metrics)

    stopping = asyncio.Event()

    def ready() -> bool:
        # Ready to do its part: schedule (informers synced), or, as a standby, wait for the Lease. Not
        # "leading": a PodDisruptionBudget counts only ready pods, and would then never let the standby or
        # the leader be evicted. Not ready once stopping (kube-scheduler's readyz shutdown check).
        return not stopping.is_set() and (live.synced or (elector is not None and not elector.leading))

    def leading() -> dict[str, float]:
        return {"": 1.0 if elector is None or elector.leading else 0.0}

    metrics.gauges.append(
        Gauge(
            "gangsched_leader_election_master_status",
            "1 while this replica schedules (holds the Lease, or runs without leader election), else 0 "
            "(component-base's leader_election_master_status).",
            "",
            leading,
        )
    )

    def dashboard() -> str:
        view = DashboardView(
            live.store,
            live.scheduler if live.synced else None,
            options.scheduler_name,
            leading=elector is None or elector.leading,
            recovery=live.recovery if live.synced else None,
        )
        return render_dashboard(view)

    server = (
        await serve_http(
            metrics,
            port=options.metrics_port,
            ready=ready,
            host=options.bind_address,
            pages=(Page("/", dashboard),),
        )
        if options.metrics_port
        else None
    )
    loop = asyncio.get_running_loop()
    ender = Watchdog(SHUTDOWN_BUDGET + WATCHDOG_GRACE) if watchdog else None
    signalled: list[float] = []

    def on_signal(signum: int, frame: object) -> None:
        # A plain handler rather than loop.add_signal_handler: it runs between two bytecodes even while a
        # long cycle holds the loop, so the budget and the watchdog count from the signal itself.
        if signalled and ender is not None:
            os._exit(1)  # a second signal ends it at once, as component-base's SetupSignalHandler
        signalled.append(time.monotonic())
        if ender is not None:
            ender.arm(0)
        loop.call_soon_threadsafe(stopping.set)

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    code = 0
    running: set[asyncio.Task[Any]] = set()  # the loop, the Lease's renewal: stopped by the shutdown first
    try:
        # Waiting for the Lease or the first lists (an API server unreachable) ends on SIGTERM too.
        if elector is not None and not await _unless_stopped(elector.acquire(), stopping):
            return 0
        if not await _unless_stopped(live.start(), stopping):
            return 0
        log.info("scheduling pods with schedulerName %s", options.scheduler_name)
        running |= {asyncio.create_task(live.loop()), asyncio.create_task(stopping.wait())}
        if elector is not None:
            running.add(asyncio.create_task(elector.keep()))
        # An informer ends only on an error it cannot retry (or a bug in what it feeds): without it the cache
        # would go stale, so the process exits and a restart recovers from the API server.
        done, _ = await asyncio.wait({*running, *live.informer_tasks()}, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            if not task.cancelled() and task.exception() is not None:
                log.error("stopping", exc_info=task.exception())
                code = 1
    finally:
        if ender is not None:
            ender.arm(code)  # already armed by a signal; else a lost Lease or a failed informer
        await _shut_down(running, live, elector if code == 0 else None, server, api, signalled[:1])
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return code


async def _shut_down(
    running: set[asyncio.Task[Any]],
    live: LiveScheduler,
    elector: LeaderElector | None,
    server: asyncio.Server | None,
    api: KubeApi,
    signalled: list[float],
) -> None:
    """Everything after the loop within SHUTDOWN_BUDGET from the signal (`signalled`, when there was one;
    see step 6 of the module's docstring): `running` (the loop, the Lease's renewal) is stopped first.
    `elector`: the Lease to release (None after an error: a replica that lost it or failed has nothing to
    give up)."""
    budget = ShutdownBudget(SHUTDOWN_BUDGET, *signalled)
    if signalled:
        log.info("shutdown: %.0f s budget from the signal, %.2f s ago", budget.seconds, budget.elapsed())
    else:
        log.info("shutdown: %.0f s budget", budget.seconds)
    if server is not None:
        server.close()  # no page render competes with the shutdown for the loop
    keep = CLOSE_TIME + (LEASE_RELEASE_TIME if elector is not None and elector.leading else 0.0)
    with budget.stage("scheduling stopped") as notes:
        for task in running:
            task.cancel()
        if await settle(running, budget.left(keep)):
            notes.append("did not unwind: abandoned")
    await live.stop(budget, keep)
    if elector is not None and elector.leading:
        with budget.stage("lease") as notes:
            try:
                released = await within(elector.release(), budget.left(CLOSE_TIME))
                notes.append("released" if released else "not released: it expires on its own")
            except TimeoutError:
                notes.append("release abandoned: it expires on its own")
            except Exception as e:  # the API server is unreachable: the Lease expires on its own
                notes.append(f"release failed ({type(e).__name__}: {e}): it expires on its own")
    with budget.stage("connections closed") as notes:
        try:
            await within(api.close(), budget.left())
        except TimeoutError:
            notes.append("abandoned")
        except Exception as e:  # nothing is left to do with them
            notes.append(f"{type(e).__name__}: {e}")
    log.info("shutdown: done in %.2f s", budget.elapsed())
