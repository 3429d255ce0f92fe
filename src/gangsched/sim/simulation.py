"""A workload replayed through the decision core on a virtual clock: the lifecycle of every job around the
same Scheduler the CLI and live mode use.

    result = Simulation(workload, SimOptions(policy="gang", seed=0)).run()

Per job: submitted (its objects appear in the Store), its pods bound by the Scheduler, each pod starting
after a start-up delay drawn from `SimOptions.startup` (default 0), then progress by its mode (workload.py),
a checkpoint every `checkpoint_s` seconds of progress, and completion: its pods finish (they leave the Store,
which to the Scheduler is what a Succeeded pod is) and their GPUs are free for the roots it can help. Jobs
still running at the end are censored (state `running` or `pending`, never dropped). Failures after
admission and recovery policies are in failures.py.

Preemption victims terminate as on a cluster (`SimOptions.termination_s`, default 30 s, the default grace
period): the Scheduler's eviction marks the pod terminating, and from that instant it makes no progress (its
containers got SIGTERM) while its GPUs stay allocated, in the `terminating` state, until the Store deletes it
`termination_s` later. The loss (work since the last checkpoint) is counted at the eviction, and the
replacement pod is created then, as the Job controller does for a terminating pod. The preemptor waits
meanwhile under the Scheduler's own ongoing-preemption rule; the departure wakes it.

Contract: deterministic for a workload, options and seed. Not thread-safe. The Simulation decides nothing
about placement: every binding comes from Scheduler Decisions applied to the Store.
"""

from __future__ import annotations

import contextlib
import gc
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
from msgspec.structs import replace

from ..api.gates import FeatureGates
from ..scheduler import Profile, Scheduler, Timeline
from ..scheduler.backfill import BackfillSettings
from ..scheduler.policy import queue_policy
from ..scheduler.recovery import WAIT, Recovery, recovering_after, stalled
from ..store import Change, Store
from ..store.claim_controller import sync_claims
from .delays import Delay
from .failures import FailurePlan
from .fairness import ShareLog
from .metrics import GpuLedger
from .workload import SimJob, Workload

__all__ = ["JobRun", "SimOptions", "Simulation"]

PodKey = tuple[str, str]


@contextlib.contextmanager
def _replay_gc() -> Iterator[None]:
    """The cyclic garbage collector paused for a replay, and what exists before it (the workload, the store's
    objects, modules) frozen out of every collection; afterwards the collector is as it was and nothing is
    frozen (gc.unfreeze: what was frozen before the replay too, as entry.py's modules), so that a process
    that replays several times (sweeps, tests) collects what each replay leaves.

    Why paused: a replay keeps most of what it makes (jobs, pods, their statuses, the ledger, the report's
    records), and the collector walks every tracked object it keeps at least twice (young, then middle
    generation) however its thresholds are set. With the first threshold at 50,000 (CPython's is 700) that
    was still 4-5 s of a 60 s replay of the philly trace under fair share or depth 4 (7%). Reference counting
    frees what a replay drops (Decisions, changes, conditions: no cycles among them); the garbage in cycles a
    replay makes is too little to show in its peak RSS (the five philly replays' the same within 2 MiB with
    the collector paused: docs/backfill-speed.md, "The floor every replay pays"), and is collected once it
    ends."""
    enabled = gc.isenabled()
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        # What the replay made and keeps joins the oldest generation as it stands, unwalked: enabled with
        # all of it young, the collector walked it at its first young collection and again at the next
        # middle one (1 s of the philly trace), to find next to nothing (a few hundred objects in cycles,
        # collected with the oldest generation, as what the replay keeps would be anyway).
        gc.freeze()
        if enabled:
            gc.enable()
        gc.unfreeze()


@dataclass(frozen=True, slots=True)
class SimOptions:
    policy: str = "gang"
    seed: int = 0
    until: float | None = None  # None: until nothing more can happen
    startup: Delay = field(default_factory=Delay)
    checkpoint_s: float | None = None  # seconds of progress between checkpoints; None: no checkpoints
    gates: FeatureGates = field(default_factory=FeatureGates)
    failures: FailurePlan = field(default_factory=FailurePlan)
    recovery: Recovery = WAIT
    backfill: BackfillSettings | None = None  # reservations (any policy); gang-backfill alone: depth 1
    estimate: str = "oracle"  # what the planner is told of run times (estimates.SOURCES)
    termination_s: float = 30.0  # an evicted pod holds its resources this long (the grace period)


@dataclass(slots=True, eq=False)
class JobRun:
    """A job's state during the run. `work` is seconds of progress at full rate, as of `last`."""

    job: SimJob
    pods: dict[PodKey, str | None]  # pod -> node while bound
    running: set[PodKey] = field(default_factory=set)
    finished: set[PodKey] = field(default_factory=set)  # basic members done
    work: float = 0.0
    member_work: dict[PodKey, float] = field(default_factory=dict)  # basic: per member
    last: float = 0.0
    rate: float = 0.0
    version: int = 0  # completion events of older versions are void
    admitted: float | None = None  # enough members bound to make progress
    start: float | None = None  # first progress
    end: float | None = None
    restarts: int = 0
    replacements: int = 0  # pods created in place of lost ones (their names: <pod>-r<N>)
    below_since: float | None = None  # fell below minCount after progress (recovery)
    recovering: int = 0  # after a loss under wait / release-after: no progress until this many run again
    waiting: tuple[float, int] | None = None  # (GPUs per pod, pods needed at once) while it waits for room
    states: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)  # GPUs per ledger state, last counted
    bound: int = 0  # members bound (pods whose value in `pods` is a node)


def _controllers_make_claims(spec: Any) -> bool:
    """Whether a pod or PodGroup spec needs claims a controller creates: resourceClaims (from templates)
    or a pod's generic ephemeral volumes."""
    volumes = getattr(spec, "volumes", None) or []  # a PodGroup has none
    return bool(spec.resourceClaims) or any(v.ephemeral is not None for v in volumes)


class Simulation:
    """One run. `run()` once; then read `runs`, `ledger`, `end`, `scheduler.cycles`."""

    def __init__(
        self,
        workload: Workload,
        options: SimOptions = SimOptions(),
        *,
        on_progress: Callable[[float, int], None] | None = None,
    ) -> None:
        self.workload = workload
        self.options = options
        self.on_progress = on_progress
        self.rng = np.random.default_rng(options.seed)
        self.store = Store(termination_seconds=options.termination_s, claim_controller=True)
        self.store.add_all(workload.cluster)
        self._workload_claims = options.gates.enabled("DRAWorkloadResourceClaims")
        backfill = options.backfill
        if backfill is None and options.policy == "gang-backfill":
            backfill = BackfillSettings()
        profile = Profile(
            queue_policy=queue_policy(options.policy),
            max_unschedulable_s=None,  # every event is known here: a flush could only repeat a failed cycle
            recovery=options.recovery,
            backfill=replace(backfill, estimate=options.estimate) if backfill is not None else None,
        )
        self.scheduler = Scheduler(self.store, options.gates, seed=options.seed, profile=profile)
        self.timeline = Timeline(self.store, self.scheduler)
        self._clock = self.timeline.clock  # `now` is read at every event: one attribute, not two properties
        nodes = [n for n in workload.cluster if n.kind == "Node"]
        self.node_index = {n.metadata.name: i for i, n in enumerate(nodes)}
        per_node = [float((n.status.allocatable or {}).get(workload.gpu_resource, 0)) for n in nodes]
        self.ledger = GpuLedger(np.array(per_node) / workload.gpu_scale)
        self.shares = ShareLog()  # per namespace: GPUs held and jobs waiting, for fairness (fairness.py)
        self.runs: list[JobRun] = []
        self._by_pod: dict[PodKey, JobRun] = {}
        self._leaving: dict[PodKey, tuple[int, float]] = {}  # terminating victims: (node index, GPUs held)
        # Every name a job's roots ever had (its PodGroup, its pods, their replacements): to tell whose
        # reservation, ETA or preemption a scheduler's record is about, also after the job ended.
        self.job_of: dict[tuple[str, str], JobRun] = {}
        self.preemptions = 0
        self.failures_injected = 0
        self.end = 0.0
        self.store.subscribe(self._on_change)
        from .failures import FailureInjector  # the injector reads JobRun; imported here to avoid a cycle

        self.injector = FailureInjector(self)

    # --- the loop -------------------------------------------------------------------------------------------
    def run(self) -> Simulation:
        limit = math.inf if self.options.until is None else self.options.until
        steps = 0
        timeline = self.timeline
        with _replay_gc():
            # Fed with the collector paused too: an event and a partial per job, which the collector
            # walked in young collections and, on the philly trace, in two full ones (0.5 s).
            timeline.at_each(
                ((job.submit, partial(self._submit, job)) for job in self.workload.jobs), priority=1
            )
            self.injector.schedule()
            # Without `until` the peek is skipped: it says inf exactly when `step` finds nothing to do.
            while (limit == math.inf or timeline.peek() < limit) and timeline.step():
                steps += 1
                if steps % 4096 == 0:
                    self.store.events.clear()  # the simulation reads no Events; keep memory flat
                    if self.on_progress is not None:
                        self.on_progress(timeline.now, sum(1 for r in self.runs if r.end is not None))
        self.end = self.options.until if self.options.until is not None else timeline.now
        self.ledger.close(self.end)
        for run in self.runs:
            self._accrue(run, self.end)
        return self

    @property
    def now(self) -> float:
        return self._clock.now

    # --- lifecycle ------------------------------------------------------------------------------------------
    def _submit(self, job: SimJob) -> None:
        self.ledger.advance(self.now)
        run = JobRun(job, {(job.namespace, name): None for name in job.pod_names}, last=self.now)
        self.runs.append(run)
        for key in run.pods:
            self._by_pod[key] = run
            self.job_of[key] = run
        if job.group is not None:
            self.job_of[(job.namespace, job.group)] = run
        objects = job.make()
        pods = [o for o in objects if o.kind == "Pod"]
        now: list[Any] = [o for o in objects if o.kind != "Pod"]
        for i, pod in enumerate(pods):
            offset = job.pod_offsets[i] if i < len(job.pod_offsets) else 0.0
            if offset > 0:
                self.timeline.at(self.now + offset, partial(self._create, run, pod), priority=1)
            else:
                now.append(pod)
        self._add(now)
        self._update(run)

    def _create(self, run: JobRun, pod: Any) -> None:
        self._add([pod])

    def _add(self, objects: list[Any]) -> None:
        """Create a job's objects, then, as the resourceclaim and ephemeral volume controllers would once
        they see them, the claims their templates and generic ephemeral volumes call for."""
        self.store.add_all(objects)
        consumers = (o for o in objects if o.kind in ("Pod", "PodGroup") and o.spec is not None)
        if any(_controllers_make_claims(o.spec) for o in consumers):
            sync_claims(self.store, workload_claims=self._workload_claims, objects=objects)

    def _on_change(self, change: Change) -> None:
        if change.kind != "Pod":
            return
        if change.action == "delete" and change.key in self._leaving:
            node, gpus = self._leaving.pop(change.key)  # a terminated victim is gone: its GPUs are free
            self.ledger.advance(self.now)
            self.ledger.left(node, gpus)
            return
        run = self._by_pod.get(change.key)
        if run is None:
            return
        if change.action == "bind":
            self._bound(run, change.key, change.obj.spec.nodeName)
        elif run.pods.get(change.key) is not None and (
            change.action == "delete" or change.obj.metadata.deletionTimestamp is not None
        ):  # evicted by the Scheduler: gone at once, or terminating from now on
            self.injector.lost_member(run, change.key, preempted=True, obj=change.obj)

    def _bound(self, run: JobRun, key: PodKey, node: str) -> None:
        self.ledger.advance(self.now)
        run.pods[key] = node
        run.bound += 1
        self.ledger.take(self.node_index[node], run.job.gpus_per_pod)
        self.shares.held(self.now, run.job.namespace, run.job.gpus_per_pod)
        delay = self.options.startup.draw(self.rng)
        if delay > 0:
            self.timeline.at(self.now + delay, partial(self._started, run, key, node), priority=0)
        else:
            self._started(run, key, node)
            return
        self._update(run)

    def _started(self, run: JobRun, key: PodKey, node: str) -> None:
        if run.pods.get(key) != node or run.end is not None:
            return  # the pod failed or was replaced while starting
        self.ledger.advance(self.now)
        if self.injector.fails_to_start(run, key):
            return
        self._accrue(run, self.now)  # the time before it ran is no member's work
        run.running.add(key)
        if run.job.progress == "basic":
            run.member_work.setdefault(key, 0.0)
        self._update(run)

    def accrue(self, run: JobRun) -> None:
        self._accrue(run, self.now)

    def _accrue(self, run: JobRun, now: float) -> None:
        """Add the work done since `run.last` at the current rate."""
        if run.job.progress == "basic":
            for key in run.running:
                run.member_work[key] = run.member_work.get(key, 0.0) + (now - run.last)
        else:
            run.work += run.rate * (now - run.last)
        run.last = now

    def _rate(self, run: JobRun) -> float:
        job = run.job
        running = len(run.running)
        if job.progress == "basic":
            return 1.0 if running else 0.0
        if stalled(running=running, min_count=job.min_count, recovering=run.recovering):
            return 0.0
        return 1.0 if job.progress == "gang" else running / job.size

    def _update(self, run: JobRun) -> None:
        """Re-derive rate, GPU states and the completion event after any change to `run` (at `now`)."""
        now = self.now
        self._accrue(run, now)
        run.recovering = recovering_after(running=len(run.running), recovering=run.recovering)
        run.rate = self._rate(run)
        if run.rate > 0 and run.start is None:
            run.start = now
        job = run.job
        if run.admitted is None and (run.bound >= job.min_count if job.progress != "basic" else run.bound):
            run.admitted = now
        new = self._states(run)
        if new != run.states:
            self.ledger.shift(run.states, new)
            run.states = new
        waiting = self._waiting(run)
        if waiting != run.waiting:
            self.ledger.waiting(run.waiting, waiting)
            if (run.waiting is None) != (waiting is None):
                self.shares.backlog(now, job.namespace, 1 if waiting is not None else -1)
            run.waiting = waiting
        self.injector.after_update(run)
        run.version += 1
        if job.duration is None or run.end is not None:
            return
        if job.progress == "basic":
            for key in sorted(run.running):
                left = job.duration - run.member_work.get(key, 0.0)
                version = run.version
                self.timeline.at(now + max(left, 0.0), partial(self._member_done, run, key, version))
        elif run.rate > 0:
            version = run.version
            left = max(job.duration - run.work, 0.0) / run.rate
            self.timeline.at(now + left, partial(self._complete, run, version))

    def _states(self, run: JobRun) -> tuple[float, float, float, float]:
        """GPUs of `run` in each ledger state (metrics.STATES order)."""
        g = run.job.gpus_per_pod
        starting = (run.bound - len(run.running)) * g
        running = len(run.running) * g
        if run.rate > 0 or run.job.progress == "basic":
            return (running, starting, 0.0, 0.0)
        if run.start is not None:
            return (0.0, starting, 0.0, running)
        return (0.0, starting, running, 0.0)

    def _waiting(self, run: JobRun) -> tuple[float, int] | None:
        """What the job waits for, if it waits for room: pods of its size needed at once."""
        job = run.job
        if run.end is not None:
            return None
        if len(run.pods) == run.bound:
            return None
        if job.progress != "basic" and run.bound < job.min_count:
            return (job.gpus_per_pod, job.min_count - run.bound)
        return (job.gpus_per_pod, 1)

    def _member_done(self, run: JobRun, key: PodKey, version: int) -> None:
        if version != run.version or key not in run.running:
            return
        self.ledger.advance(self.now)
        self._accrue(run, self.now)
        run.running.discard(key)
        run.finished.add(key)
        self._release(run, [key])
        del run.pods[key]  # done: neither bound nor waiting
        if len(run.finished) == run.job.size:
            run.end = self.now
        self._update(run)

    def _complete(self, run: JobRun, version: int) -> None:
        if version != run.version:
            return
        self.ledger.advance(self.now)
        self._accrue(run, self.now)
        run.end = self.now
        run.running.clear()
        self._release(run, [k for k, node in run.pods.items() if node is not None])
        for key, node in run.pods.items():
            if node is None:
                self._forget_pending(run, key)  # members beyond minCount never placed
        if run.job.group is not None:
            self.store.delete("PodGroup", (run.job.namespace, run.job.group))
        self._update(run)

    def _release(self, run: JobRun, keys: list[PodKey]) -> None:
        """Pods that finish leave the Store (a Succeeded pod is a deleted one to the Scheduler)."""
        for key in keys:
            node = run.pods.get(key)
            if node is None:
                continue
            run.pods[key] = None
            run.bound -= 1
            self.ledger.give(self.node_index[node], run.job.gpus_per_pod)
            self.shares.held(self.now, run.job.namespace, -run.job.gpus_per_pod)
            del self._by_pod[key]  # our own deletion: not a loss
            self.store.delete("Pod", key)

    def _forget_pending(self, run: JobRun, key: PodKey) -> None:
        if key in self._by_pod:
            del self._by_pod[key]
            self.store.delete("Pod", key)

    # --- used by failures.py --------------------------------------------------------------------------------
    def state_changed(self, run: JobRun) -> None:
        self._update(run)

    def new_pod(self, run: JobRun, obj: Any) -> None:
        """Add a replacement pod for `run` (its key is already in `run.pods`, unbound)."""
        key = (obj.metadata.namespace, obj.metadata.name)
        self._by_pod[key] = run
        self.job_of[key] = run
        self.store.add(obj)
        self._update(run)

    def remove_pod(self, run: JobRun, key: PodKey) -> None:
        """Take a bound or pending member away (a failure, a release by a recovery policy, or an eviction:
        a terminating pod leaves the job now but holds its GPUs until the Store deletes it)."""
        node = run.pods.get(key)
        run.running.discard(key)
        if node is not None:
            run.pods[key] = None
            run.bound -= 1
            # The namespace's share ends with the job's hold on the pod (a terminating victim still holds
            # its node's GPUs, as the ledger counts, but no longer for its job).
            self.shares.held(self.now, run.job.namespace, -run.job.gpus_per_pod)
            self._by_pod.pop(key, None)
            obj = self.store.get("Pod", key)
            if obj is not None and obj.metadata.deletionTimestamp is not None:
                self._leaving[key] = (self.node_index[node], run.job.gpus_per_pod)
                self.ledger.terminating(run.job.gpus_per_pod)
                return
            self.ledger.give(self.node_index[node], run.job.gpus_per_pod)
            self.store.delete("Pod", key)
        else:
            self._forget_pending(run, key)

    def kill_terminating(self, node: str) -> None:
        """A failed node takes its terminating pods with it: they are gone now."""
        index = self.node_index[node]
        for key in [k for k, (n, _) in self._leaving.items() if n == index]:
            self.store.delete("Pod", key)  # the delete event gives the GPUs back (_on_change)
