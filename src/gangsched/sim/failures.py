"""Failures after admission, and what the Profile's recovery policy (scheduler/recovery.py) does about them.

Injected at given times or at rates (cluster-wide Poisson processes, drawn from the run's seeded generator):
- `start`: a member fails to start (its pod ends before it ever runs);
- `exit`: a running member exits mid-run;
- `node`: a node fails with every pod on it, and comes back after `node_repair_s` (never when None).
The Scheduler's own evictions (preemption) are losses too, counted as preemptions, at the eviction: a victim
that terminates makes no progress from then on (simulation.py).

A lost member takes the work since the last checkpoint with it when its job cannot go on (a gang or
elastic job below minCount; under `restart` always): that work, times the job's GPUs, is `lost`. A lost pod
is replaced by a new pending pod (`<name>-r<N>`), as the Job controller does; under `restart`, and under
`release-after` once the gang has stayed below minCount for T seconds, the whole group is created again.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import msgspec

from ..scheduler.recovery import MEMBER, RESTART, STALL, after_loss, release_at
from ..store.store import EPOCH

if TYPE_CHECKING:
    from .simulation import JobRun, PodKey, Simulation

__all__ = ["FailureEvent", "FailureInjector", "FailurePlan", "checkpointed"]

KINDS = ("start", "exit", "node")


@dataclass(frozen=True, slots=True)
class FailureEvent:
    """At `time`: `kind` hits `target` (a pod name for start/exit, a node name for node)."""

    time: float
    kind: str
    target: str

    @classmethod
    def parse(cls, text: str) -> FailureEvent:
        """`TIME:KIND:TARGET`, e.g. `3600:exit:train-a-0` or `7200:node:node-0003`."""
        parts = text.split(":", 2)
        try:
            if len(parts) == 3 and parts[1] in KINDS and parts[2]:
                return cls(float(parts[0]), parts[1], parts[2])
        except ValueError:
            pass
        raise ValueError(f"invalid failure {text!r}: expected TIME:start|exit|node:TARGET")


@dataclass(frozen=True, slots=True)
class FailurePlan:
    events: tuple[FailureEvent, ...] = ()
    start_failure_p: float = 0.0  # probability that a member fails to start
    exit_per_h: float = 0.0  # cluster-wide rate of running members exiting
    node_per_h: float = 0.0  # cluster-wide rate of node failures
    node_repair_s: float | None = 3600.0


class FailureInjector:
    """Applies a FailurePlan to a Simulation and carries out its recovery policy."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.plan = sim.options.failures
        self.recovery = sim.scheduler.profile.recovery
        self.lost_gpu_s = 0.0
        self.failures = 0
        self.preemptions = 0
        # Every pod the Scheduler evicted: (time, pod, its job, GPU-seconds of progress that loss threw away).
        self.evicted: list[tuple[float, PodKey, JobRun, float]] = []
        self._fail_at_start: set[str] = {e.target for e in self.plan.events if e.kind == "start"}
        self._down: dict[str, Any] = {}

    # --- scheduling the failures ----------------------------------------------------------------------------
    def schedule(self) -> None:
        timeline = self.sim.timeline
        for event in self.plan.events:
            if event.kind == "exit":
                timeline.at(event.time, partial(self._exit_named, event.target), priority=2)
            elif event.kind == "node":
                timeline.at(event.time, partial(self._node_fails, event.target), priority=2)
        if self.plan.exit_per_h > 0:
            self._next(self.plan.exit_per_h, self._exit_random)
        if self.plan.node_per_h > 0:
            self._next(self.plan.node_per_h, self._node_random)

    def _next(self, per_h: float, action: Any) -> None:
        sim = self.sim
        if sim.options.until is None and all(r.end is not None for r in sim.runs) and sim.runs:
            return  # nothing left to fail: let the run end
        gap = float(sim.rng.exponential(3600.0 / per_h))

        def fire() -> None:
            action()
            self._next(per_h, action)

        if self._work_left() or sim.options.until is not None:
            sim.timeline.at(sim.now + gap, fire, priority=2)

    def _work_left(self) -> bool:
        sim = self.sim
        return len(sim.runs) < len(sim.workload.jobs) or any(r.end is None for r in sim.runs)

    # --- the failures ---------------------------------------------------------------------------------------
    def fails_to_start(self, run: JobRun, key: PodKey) -> bool:
        """Called as a member would start: True if it fails instead (then it has been handled)."""
        if key[1] in self._fail_at_start:
            self._fail_at_start.discard(key[1])  # once: its replacement has another name anyway
        elif not (self.plan.start_failure_p > 0 and self.sim.rng.random() < self.plan.start_failure_p):
            return False
        self.failures += 1
        self.lost_member(run, key, preempted=False)
        return True

    def _exit_named(self, pod: str) -> None:
        for run in self.sim.runs:
            for key in run.running:
                if key[1] == pod:
                    self.failures += 1
                    self.lost_member(run, key, preempted=False)
                    return

    def _exit_random(self) -> None:
        running = sorted(k for r in self.sim.runs for k in r.running)
        if running:
            self._exit_named(running[int(self.sim.rng.integers(len(running)))][1])

    def _node_random(self) -> None:
        up = sorted(n for n in self.sim.node_index if n not in self._down)
        if up:
            self._node_fails(up[int(self.sim.rng.integers(len(up)))])

    def _node_fails(self, name: str) -> None:
        sim = self.sim
        node = sim.store.get("Node", ("", name))
        if node is None:
            return
        self.failures += 1
        sim.ledger.advance(sim.now)
        sim.kill_terminating(name)
        for run in list(sim.runs):
            for key, where in list(run.pods.items()):
                if where == name:
                    self.lost_member(run, key, preempted=False)
        self._down[name] = node
        sim.store.delete("Node", ("", name))
        sim.ledger.node_down(sim.node_index[name])
        if self.plan.node_repair_s is not None:
            sim.timeline.at(sim.now + self.plan.node_repair_s, lambda: self._node_back(name), priority=2)

    def _node_back(self, name: str) -> None:
        sim = self.sim
        sim.ledger.advance(sim.now)
        sim.ledger.node_up(sim.node_index[name])
        sim.store.add(self._down.pop(name))

    # --- losing a member, and recovering --------------------------------------------------------------------
    def lost_member(self, run: JobRun, key: PodKey, *, preempted: bool, obj: Any = None) -> None:
        """`key` of `run` is gone (failed, or evicted by the Scheduler when `preempted`; `obj`: the pod as
        it was, when it has already left the Store)."""
        sim = self.sim
        if run.end is not None or key not in run.pods:
            return  # finished, or already replaced (a restart took the whole group with the first loss)
        sim.ledger.advance(sim.now)
        sim.accrue(run)
        obj = obj if obj is not None else sim.store.get("Pod", key)
        was_running = key in run.running
        running_before = len(run.running)
        lost_before = self.lost_gpu_s
        sim.remove_pod(run, key)
        job = run.job
        action = after_loss(
            self.recovery,
            gang=job.progress != "basic",
            started=run.start is not None,
            running=len(run.running),
            min_count=job.min_count,
        )
        if action == MEMBER:
            saved = self._lose(run, run.member_work.pop(key, 0.0), job.gpus_per_pod)
            new = self._replace(run, key, obj)
            if new is not None and saved:
                run.member_work[new] = saved
        elif action == RESTART:
            run.work = self._lose(run, run.work, job.gpus)
            self._count_eviction(run, key, preempted, lost_before)
            self._restart(run)
            return
        else:
            if was_running and run.rate > 0 and action == STALL:
                run.work = self._lose(run, run.work, job.gpus)
                run.recovering = running_before  # no progress until the replacements run
            self._replace(run, key, obj)
        self._count_eviction(run, key, preempted, lost_before)
        sim.state_changed(run)

    def _count_eviction(self, run: JobRun, key: PodKey, preempted: bool, lost_before: float) -> None:
        if preempted:
            self.preemptions += 1
            self.evicted.append((self.sim.now, key, run, self.lost_gpu_s - lost_before))

    def _lose(self, run: JobRun, work: float, gpus: float) -> float:
        """Count the work since the last checkpoint as lost (times `gpus`); returns the work saved."""
        saved = checkpointed(work, self.sim.options.checkpoint_s)
        self.lost_gpu_s += max(work - saved, 0.0) * gpus
        return saved

    def _replace(self, run: JobRun, key: PodKey, obj: Any) -> PodKey | None:
        """A new pending pod in place of `key`, as the Job controller creates one; returns its key."""
        del run.pods[key]
        if obj is None:
            return None
        sim = self.sim
        base = key[1].split("-r", 1)[0]
        run.replacements += 1
        name = f"{base}-r{run.replacements}"
        meta = msgspec.structs.replace(
            obj.metadata,
            name=name,
            uid=None,
            resourceVersion=None,
            creationTimestamp=_stamp(sim.now),
            deletionTimestamp=None,  # the replacement of a terminating victim is a new, live pod
        )
        spec = msgspec.structs.replace(obj.spec, nodeName=None)
        pod = msgspec.structs.replace(obj, metadata=meta, spec=spec, status=None)
        new = (key[0], name)
        run.pods[new] = None
        sim.new_pod(run, pod)
        return new

    def _restart(self, run: JobRun) -> None:
        """The whole group again: every member deleted and created anew (pending), from the checkpoint."""
        sim = self.sim
        sim.ledger.advance(sim.now)  # the states up to now are integrated before any of them changes
        run.restarts += 1
        objects = {k: sim.store.get("Pod", k) for k in run.pods}
        template = next((o for o in objects.values() if o is not None), None)
        for key in list(run.pods):
            sim.remove_pod(run, key)
        run.running.clear()
        old = list(run.pods)
        run.pods.clear()
        for key in old:
            self._replace_with(run, key, objects.get(key) or template)
        run.below_since = None
        run.recovering = 0
        sim.state_changed(run)

    def _replace_with(self, run: JobRun, key: PodKey, obj: Any) -> None:
        run.pods[key] = None
        self._replace(run, key, obj)

    def after_update(self, run: JobRun) -> None:
        """Start or stop the release-after clock when the job falls below minCount after progress."""
        if run.job.progress == "basic" or run.end is not None:
            return
        below = run.start is not None and run.rate == 0 and run.bound > 0
        if not below:
            run.below_since = None
            return
        if run.below_since is None:
            deadline = release_at(self.recovery, self.sim.now)
            if deadline is None:
                return  # this policy never releases
            run.below_since = self.sim.now
            since = run.below_since
            self.sim.timeline.at(
                deadline,
                lambda: self._release_if_still_below(run, since),
                priority=2,
            )

    def _release_if_still_below(self, run: JobRun, since: float) -> None:
        if run.below_since == since and run.end is None:
            self._restart(run)


def _stamp(now: float) -> dt.datetime:
    return EPOCH + dt.timedelta(seconds=now)


def checkpointed(work: float, every: float | None) -> float:
    """Work saved by the last checkpoint taken every `every` seconds of progress (none: nothing saved)."""
    if not every:
        return 0.0
    return math.floor(work / every + 1e-9) * every
