"""Reservations and backfill (queue policy `gang-backfill`): big gangs start in bounded time, small work
still fills the gaps.

Slurm's backfill scheduler, applied to roots (see docs/backfill.md for its rules and sources):
1. The plan. At once when a planned root started or left or a root failed with fewer than `depth` planned,
   and at most every `interval` seconds (Slurm's bf_interval) after work ended before its estimate, a
   reservation's start came without its root (an overrun), or, with aging or fair share, anything started
   or ended (see `touch` and `refresh`), the waiting roots that have already failed a cycle are
   taken in order of effective priority (priority + aging, then creation). Each gets its earliest start
   around the reservations made before it (plan.py). The first `depth` of them keep that start as a
   reservation of concrete nodes (depth 1: EASY backfill; None: every one, conservative); one that can
   start now is also woken for a cycle, and its nodes are held until it has taken them.
2. Backfill. Any root's cycle runs on the nodes no reservation holds before the root is expected to end
   (now + its estimate; no estimate: forever), so it starts only where it delays no reservation. A root's own
   reservation never holds against itself.
3. Preemption obeys the same rule: a preemption whose preemptor would take nodes a reservation holds before
   the preemptor's expected end is not carried out.
4. Slip: when a replan moves a reservation later, the slip is recorded with its cause (work that overran its
   estimate on the reserved nodes, or reservations now ahead of it).
5. Aging: effective priority = priority + min(cap, rate x hours waited), so a starved root eventually heads
   the plan and gets the reservation.
6. Fair share (optional): within one effective priority, roots of the namespace with the smallest weighted
   dominant share (DRF) of what runs now come first in the plan, so they get the reservations.

State is kept between cycles; nothing here writes to the store or emits a Decision.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..store.change import Change
from .backfill_settings import BackfillSettings
from .earliest_starts import EarliestStarts
from .estimates import Estimate, History, estimate_of, owner_of
from .hints import Fits
from .plan import (
    EPOCH,
    INFINITE,
    Reservation,
    Running,
    RunningIndex,
    RunningWork,
    root_estimate,
    started_at,
)
from .plugins import BoolArray
from .podinfo import PodInfo, is_terminal
from .queue import QueuedRoot, RootKey
from .snapshot import PODS
from .waiting import WaitingRoots

if TYPE_CHECKING:
    from .scheduler import Scheduler

__all__ = ["Backfill", "BackfillSettings", "Slip"]

_MASKS_KEPT = 64  # `allowed`'s node masks kept at most (each is one bool per node)


@dataclass(frozen=True, slots=True)
class Slip:
    """A reservation moved later at time `at`: from `old_start` to `new_start`, because of `causes`."""

    root: RootKey
    at: float
    old_start: float
    new_start: float
    causes: tuple[str, ...]


def _name(root: RootKey) -> str:
    return f"{root[0]} {root[1]}/{root[2]}"


@dataclass(slots=True)
class _WalkMasks:
    """The reservations a release walk reads (those not ended), by start, and the node masks outside the
    first n of them but `own`'s (read-only, made when first asked)."""

    held: list[Reservation]  # by start
    starts: list[float]
    keys: list[RootKey]
    masks: dict[tuple[int, RootKey | None], BoolArray] = field(default_factory=dict)


@dataclass(slots=True)
class Backfill:
    """The reservations of one scheduler and the rules that protect them. Not thread-safe."""

    scheduler: Scheduler
    settings: BackfillSettings
    history: History | None = None
    reservations: dict[RootKey, Reservation] = field(default_factory=dict)
    slips: list[Slip] = field(default_factory=list)
    first_eta: dict[RootKey, float] = field(default_factory=dict)
    planned_at: float = -math.inf
    dirty: bool = True  # the plan is wrong now: redo it before the next cycle
    changed: bool = True  # work started or ended since the plan: redo it once `interval` has passed
    _first_seen: dict[RootKey, float] = field(default_factory=dict)
    _estimates: dict[RootKey, Estimate] = field(default_factory=dict)
    _planned: set[RootKey] = field(default_factory=set)  # the roots the last plan gave a start
    _late: dict[RootKey, float] = field(default_factory=dict)  # work that ended past its estimate, when
    # The running work, kept up to date between plans from the pods that changed (`touch`): reading every
    # running pod at every plan cost most of a plan.
    _running: RunningIndex | None = None
    _waiting: WaitingRoots = field(init=False)  # the roots a plan orders (waiting.py)
    # The last plan's earliest starts, reused while nothing they read changed (earliest_starts.py).
    _starts: EarliestStarts = field(default_factory=EarliestStarts)
    # The last `dominant_shares`, with the snapshot and the running work's usage count it was read from.
    _shares: tuple[Any, tuple[int, int], dict[str, float]] | None = None
    # `_offered`'s rows and totals, with the allocatable array they were read from.
    _offered_from: tuple[Any, int, list[tuple[int, float]]] | None = None
    # `allowed`'s masks by the node count and the nodes of the reservations that hold: a mask is a function
    # of these alone, so it is kept across plans (a fair-share plan, made at most every `interval` after any
    # start or end, mostly keeps the same nodes reserved); emptied when it grows past _MASKS_KEPT.
    _masks: dict[tuple[Any, ...], BoolArray] = field(default_factory=dict)
    # `room_check`'s reservations in its way, by start, and the node masks outside the first n of them (but
    # a root's own), by the reservations not ended (their ids, the reservations kept beside), until the next
    # plan: every release asks, and between plans the same reservations stand.
    _walk_masks: dict[tuple[int, ...], _WalkMasks] = field(default_factory=dict)
    # The earliest start among `reservations` (INFINITE: none), set wherever they change: `refresh`, asked
    # before every cycle, compared it with every reservation's start.
    _first_start: float = INFINITE

    def __post_init__(self) -> None:
        self._waiting = WaitingRoots(self.scheduler.queue)

    # --- what changes the plan ---------------------------------------------------------------------------
    def touch(self, change: Change | None = None) -> None:
        """Work started or ended, or roots came. Until the next plan the reservations stand: work started
        since respects them, work that ends when expected frees what the plan already counted free. So only
        work that ends before its expected end (room the plan did not count on) calls for a plan, at the
        latest `interval` later; so does any change when the plan's order moves with time or shares (aging,
        fair share). Overruns are caught when a reservation's start has come (`refresh`). With a
        `history`, a pod that ends after running records its run time under its owner (a root's estimate
        is made when the planner first needs it and again when the root starts)."""
        if change is None or change.kind != "Pod":
            if change is not None:
                self.objects_changed(change.kind, change.action, change)
            self.changed = True
            return
        pod, old = change.obj, change.old
        if self._running is not None and (pod.spec.nodeName or (old is not None and old.spec.nodeName)):
            self._running.pod_changed(change.key)  # it may have started, moved or ended
        ended = change.action == "delete" or is_terminal(pod)
        was_running = (old if old is not None else pod).spec.nodeName and not (
            old is not None and is_terminal(old)
        )
        if not (ended and was_running):
            self.changed |= self._order_moves
            return
        started = started_at(pod)
        now = self.scheduler.store.clock()
        if self._order_moves or self._ended_early(pod, started, now):
            self.changed = True
        if self.history is not None:
            owner = owner_of(pod)
            if (
                owner is None
                and pod.spec.schedulingGroup is not None
                and pod.spec.schedulingGroup.podGroupName
            ):
                owner = ("PodGroup", pod.metadata.namespace or "", pod.spec.schedulingGroup.podGroupName)
            if started is not None and owner is not None:
                self.history.record(owner, now - started)

    def objects_changed(self, kind: str, action: str = "update", change: Change | None = None) -> None:
        """An object other than a pod changed: running pods may map to other roots now, and any trial
        placement may read it. Not so a PodGroup in no tree, before or after (`change` tells): it is its
        pods' root either way (hierarchy.root_of_group), and only its own root's placement reads it, so
        only that root's earliest start is forgotten. Gangs come and go with their PodGroups, and each
        change read every running pod again and searched every earliest start afresh (on the first 20,000
        philly jobs under fair share, 106 such changes: a fifth of the running work's refreshes). A node
        added or deleted builds a snapshot whose node numbers may differ, so the reservations' nodes mean
        nothing until the next plan, made before the next cycle (a node's update keeps the numbers)."""
        if kind == "PodGroup" and change is not None and not self._in_tree(change):
            self._starts.forget(("PodGroup", *change.key))
            return
        if self._running is not None:
            self._running.reset()
        self._starts.objects_changed()
        if kind == "Node" and action != "update" and self.reservations:
            self.reservations = {}
            self._first_start = INFINITE
            self.dirty = True

    def _in_tree(self, change: Change) -> bool:
        """Whether the changed PodGroup had or has a parent CompositePodGroup (as the hierarchy reads it)."""
        parent_of = self.scheduler.hierarchy.parent_of
        return any(obj is not None and parent_of(obj) is not None for obj in (change.obj, change.old))

    def running(self, now: float) -> Running:
        """The running work at `now` (plan.running_work)."""
        return self._index().get(now)

    def _index(self) -> RunningIndex:
        if self._running is None:
            self._running = RunningIndex(self.scheduler, self.settings.plan, self.history, self._estimates)
        return self._running

    @property
    def _order_moves(self) -> bool:
        """Whether the plan's order changes with time or with what runs (aging, fair share)."""
        s = self.settings
        return (s.aging_rate > 0 and s.aging_cap > 0) or s.fair_share is not None

    def _ended_early(self, pod: Any, started: float | None, now: float) -> bool:
        """Did the pod's work end a resolution step or more before its estimate said (or without one)?
        Work that ended after its expected end is remembered as late, a cause of the slips it made."""
        try:
            root = self.scheduler.root_of(
                self.scheduler.pod((pod.metadata.namespace or "", pod.metadata.name))
            )
        except KeyError:
            return True
        estimate = self._estimates.pop(root, None)
        if estimate is None:
            estimate = (
                estimate_of([pod], self.scheduler.store, None, self.history, self.settings.sources)
                if root[0] == "Pod"
                else root_estimate(self.scheduler, root, self.history)
            )
        if estimate.seconds is None or started is None:
            return True  # unknown: it may have freed room the plan did not count on
        expected = started + estimate.seconds
        if now > expected and self.reservations:
            self._late[root] = now
        return now < expected - self.settings.resolution

    def forget(self, root: RootKey) -> None:
        """The root started or left: its reservation is released and the next head gets one at once."""
        self._waiting.discard(root)
        if self.reservations.pop(root, None) is not None or root in self._planned:
            self.dirty = True
            self._first_start = min((r.start for r in self.reservations.values()), default=INFINITE)
        self._planned.discard(root)
        self._estimates.pop(root, None)

    def failed(self, root: RootKey) -> None:
        """The root's cycle failed: if it was not planned while fewer than `depth` roots are (at least the
        head, even at depth 0, for its ETA), replan before the next cycle, so that the head is protected at
        once rather than an interval later."""
        self._waiting.failed(root)
        depth = self.settings.depth
        if root not in self._planned and (depth is None or len(self._planned) < max(depth, 1)):
            self.dirty = True

    # --- order ---------------------------------------------------------------------------------------------
    def submitted(self, root: QueuedRoot, now: float) -> float:
        """When the root was submitted (creation time, else when the plan first saw it), in store seconds."""
        created = root.timestamp[0]
        if created > 0:
            return created - EPOCH.timestamp()
        return self._first_seen.setdefault(root.key, now)

    def effective_priority(self, root: QueuedRoot, now: float) -> float:
        s = self.settings
        waited_h = max(0.0, now - self.submitted(root, now)) / 3600.0
        return root.priority + min(s.aging_cap, s.aging_rate * waited_h)

    def order(self, now: float, limit: int | None = None) -> Iterator[QueuedRoot]:
        """Roots that failed a cycle and still wait, by effective priority, then (with fair share) their
        namespace's weighted dominant share, then creation, then arrival; only the first `limit` when given
        (a plan looks at `max_job_test`: a partial sort of the backlog, the same roots in the same order).
        Without aging they are read lazily off the sorted waiting roots, as the plan goes (see
        WaitingRoots.first: nothing may fail or leave until the plan is done)."""
        shares = self.dominant_shares() if self.settings.fair_share is not None else {}
        aging = self.settings.aging_rate > 0 and self.settings.aging_cap > 0
        if not aging:  # the order does not move with time: read it off the sorted waiting roots
            return self._waiting.first(limit, lambda ns: shares.get(ns, 0.0))
        waiting = [r for r in self.scheduler.queue.roots() if r.attempts > 0]

        def key(r: QueuedRoot) -> tuple[Any, ...]:
            return (-self.effective_priority(r, now), shares.get(r.key[1], 0.0), r.timestamp, r.seq)

        if limit is not None and limit < len(waiting):
            return iter(heapq.nsmallest(limit, waiting, key=key))
        return iter(sorted(waiting, key=key))

    def dominant_shares(self) -> dict[str, float]:
        """Each namespace's dominant resource share (DRF: Ghodsi et al., NSDI 2011) of what its running pods
        hold, over every resource the nodes offer except the pod count, divided by its weight."""
        snap = self.scheduler.snapshot()
        weights = dict(self.settings.fair_share or ())
        n_rows, offered = self._offered(snap)
        # The running work's index holds these sums when every placed pod is running work (a replay);
        # else (pods assumed but not bound yet, pods of no known root) they are counted here. The shares
        # from the index's sums are kept until they or the snapshot change.
        index = self._index()
        kept = index.namespace_use()
        used: dict[str, list[int]] = {}
        from_index = kept is not None and all(len(u) >= n_rows for u in kept.values())
        if from_index and kept is not None:
            last = self._shares
            if last is not None and last[0] is snap and last[1] == (index.usage_changes, n_rows):
                return last[2]
            used = {ns: u[:n_rows].tolist() for ns, u in kept.items()}
        else:
            for (ns, _), (_, vec) in snap.placed.items():
                row_use = used.setdefault(ns, [0] * n_rows)
                for row, v in vec.rows:
                    if row < n_rows:
                        row_use[row] += v
        # Python ints over Python floats: the same float quotients as numpy's int64 / float64 gave. No
        # quotient is below 0.0 (usage and totals are not), so starting the maximum there changes none.
        shares = {}
        for ns, u in used.items():
            share = 0.0
            for row, total in offered:
                if (q := u[row] / total) > share:
                    share = q
            shares[ns] = share / weights.get(ns, 1.0)
        self._shares = (snap, (index.usage_changes, n_rows), shares) if from_index else None
        return shares

    def _offered(self, snap: Any) -> tuple[int, list[tuple[int, float]]]:
        """The snapshot's resource rows and, for the rows a dominant share counts (offered by some node, not
        the pod count, not served by DRA), each with the cluster's total allocatable. They change only with
        the allocatable, which a snapshot replaces (a row added: `vstack`) rather than changes in place
        (snapshot.py), so they are kept by the `alloc` array they were read from: a fair-share plan read
        them at every plan (one at most every `interval` after any start or end)."""
        kept = self._offered_from
        if kept is not None and kept[0] is snap.alloc:
            return kept[1], kept[2]
        total = snap.alloc.sum(axis=1).tolist()
        served = snap.dra_rows()  # devices, not allocatable: no capacity to share out
        offered = [
            (row, float(t)) for row, t in enumerate(total) if t > 0 and row != PODS and row not in served
        ]
        self._offered_from = (snap.alloc, len(total), offered)
        return len(total), offered

    def estimate(self, root: RootKey) -> Estimate:
        cached = self._estimates.get(root)
        if cached is None:
            cached = root_estimate(self.scheduler, root, self.history)
            self._estimates[root] = cached
        return cached

    def expected_seconds(self, root: RootKey) -> float:
        """The root's estimate in seconds; inf when unknown."""
        seconds = self.estimate(root).seconds
        return INFINITE if seconds is None else seconds

    # --- the plan ------------------------------------------------------------------------------------------
    def replan(self, now: float) -> None:
        """Make the reservations afresh (step 1 of the module docstring) and record slips. The planner's
        trial placements break ties with a generator of their own (plan.tie_breaker), never the
        scheduler's, so that how often plans are made changes no cycle's choice of node, and a plan depends
        only on what it reads."""
        s = self.settings
        settings = s.plan
        old = self.reservations
        # Built when a root needs it (often none waits), but at every plan with history estimates: a running
        # root's estimate is fixed when a plan first sees it running, and history moves between plans.
        running = self.running(now) if self.history is not None else None
        held: list[Reservation] = []
        # Depth 0 keeps no reservation but still plans the head, so that its ETA is known (explain, and
        # ETA accuracy in a replay) under any policy.
        planned: set[RootKey] = set()
        looked: list[RootKey] = []
        for queued in self.order(now, s.max_job_test):
            if s.depth is not None and len(planned) >= max(s.depth, 1):
                break
            place = self.scheduler.placer(queued.key)
            if place is None:
                continue
            if running is None:
                running = self.running(now)
            looked.append(queued.key)
            estimate = self.estimate(queued.key)
            # Depth 0 reads only the start (the ETA): the nodes it would take need not be found.
            r = self._starts.get(
                self.scheduler,
                queued.key,
                place,
                estimate,
                running,
                held,
                now,
                settings,
                self._running,
                start_only=s.depth == 0,
            )
            if r is None:
                continue
            planned.add(queued.key)
            self.first_eta.setdefault(queued.key, r.start)
            if s.depth == 0:
                continue
            before = old.get(queued.key)
            if before is not None and r.start > before.start + 1e-9:
                causes = self._causes(before, r, self.running(now).works)
                self.slips.append(Slip(queued.key, now, before.start, r.start, causes))
            if r.start <= now:
                # It fits now: give it its cycle, and hold its nodes until then, or roots before it in queue
                # order (priority without aging) would take them first.
                self.scheduler.queue.move_to_active(queued.key)
            held.append(r)
        self.reservations = {r.root: r for r in held}
        self._first_start = min((r.start for r in held), default=INFINITE)
        self._walk_masks.clear()
        self._planned = planned
        self._starts.forget_all_but(looked)
        self.planned_at, self.dirty, self.changed = now, False, False
        self._late.clear()

    def _causes(self, before: Reservation, after: Reservation, running: list[RunningWork]) -> tuple[str, ...]:
        """Why a reservation moved later: work it waited for that ran past its estimate (still running past
        it, or gone only after its expected end), or reservations that came ahead of it."""
        still = {w.root: w for w in running}
        late = [
            b
            for b in before.blockers
            if (b.root in still and still[b.root].overrun) or (b.root not in still and b.root in self._late)
        ]
        causes = [
            f"{_name(b.root)} ran past its estimate of {b.estimate.seconds or 0:.0f}s"
            f" (expected to end at t={b.end:.0f}s)"
            for b in late
        ]
        causes += [f"reservation of {_name(a)} ahead of it" for a in after.ahead if a not in before.ahead]
        return tuple(causes) or ("the nodes it waits for are expected later than planned",)

    def refresh(self, now: float) -> None:
        """Replan when the plan is wrong (dirty), or at most every `interval` when room came early or the
        order moved (changed) or a reservation's start has come without its root starting (an overrun).
        The scheduler calls it before every cycle, whether a root comes or not."""
        due = now >= self.planned_at + self.settings.interval and (self.changed or self._first_start <= now)
        if self.dirty or due:
            self.replan(now)

    # --- the rules -----------------------------------------------------------------------------------------
    def allowed(self, root: RootKey, now: float) -> BoolArray | None:
        """Nodes root `root` may use now without delaying any other root's reservation; None: every node.
        Reads the plan as it stands (`refresh` makes it)."""
        reservations = self.reservations
        if not reservations or (len(reservations) == 1 and root in reservations):
            return None  # no other root's reservation
        est = self.estimate(root).seconds
        end = now + est if est is not None else INFINITE
        # Every cycle asks, and the same few sets of reserved nodes hold, between plans and mostly across
        # them: their masks are kept (read-only, so that no caller can change a kept one), by the node
        # count and the nodes of the reservations that hold (`Reservation.holds`, inlined: every cycle).
        n = len(self.scheduler.snapshot())
        key = (n, *(r.nodes for k, r in reservations.items() if k != root and r.start < end and now < r.end))
        kept = self._masks.get(key)
        if kept is not None:
            return kept
        mask = np.ones(n, dtype=bool)
        for k, r in reservations.items():
            if k != root and r.holds(now, end):
                mask[r.columns] = False
        mask.flags.writeable = False
        if len(self._masks) >= _MASKS_KEPT:
            self._masks.clear()
        self._masks[key] = mask
        return mask

    def room_check(self, now: float) -> Fits | None:
        """The hint's view of backfill (hints.py): whether the room that a waiting root may use now (the
        nodes `allowed` leaves it) could hold `need` pods of its class: the same test as the scheduler's
        room bound before a cycle, so that a release does not wake a root whose room is all reserved,
        only for the bound to send it back. None without reservations (every node is allowed). Valid while
        the snapshot and the plan stand (one walk); rooms are counted once per class and set of
        reservations in the way, and the reservations' order and node masks are kept until the next plan."""
        if not self.reservations:
            return None
        ev = self.scheduler.evaluator()
        n_nodes = len(ev.snap)
        # A reservation holds against a root running over [now, end) when it starts before `end` (and has
        # not ended): with the reservations by start, those are a prefix, found by bisection.
        live = tuple(r for r in self.reservations.values() if now < r.end)
        walk = self._walk_masks.get(ids := (n_nodes, *map(id, live)))
        if walk is None:
            held = sorted(live, key=lambda r: (r.start, r.root))
            walk = self._walk_masks[ids] = _WalkMasks(held, [r.start for r in held], [r.root for r in held])
        starts, keys, masks, held = walk.starts, walk.keys, walk.masks, walk.held
        rooms: dict[tuple[Any, int, RootKey | None], int] = {}

        first = starts[0] if starts else INFINITE
        estimates, reserved = self._estimates, self.reservations

        def fits(root: RootKey, like: PodInfo, need: int) -> bool:
            # Asked for each root a walk reaches (millions over a long backlog): kept to dict look-ups.
            estimate = estimates.get(root)
            est = (estimate if estimate is not None else self.estimate(root)).seconds
            end = now + est if est is not None else INFINITE
            if end <= first:
                return True  # it ends before any reservation starts
            n = bisect.bisect_left(starts, end)
            own = root if root in reserved and root in keys[:n] else None  # never against itself
            if n == 1 and own is not None:
                return True
            return room(like, n, own) >= need

        def room(like: PodInfo, n: int, own: RootKey | None) -> int:
            """Room for pods like `like` outside the first `n` reservations (but `own`'s)."""
            counted = rooms.get((like.signature, n, own))
            if counted is None:
                mask = masks.get((n, own))
                if mask is None:
                    mask = np.ones(n_nodes, dtype=bool)
                    for r in held[:n]:
                        if r.root != own:
                            mask[r.columns] = False
                    mask.flags.writeable = False
                    masks[n, own] = mask
                counted = rooms[like.signature, n, own] = ev.room_for(like, mask)
            return counted

        def longest(like: PodInfo, need: int) -> float:
            # The room outside the first n reservations shrinks as n grows: with t the first n at which it
            # is short of `need`, `fits` refuses (unless it holds a reservation) a root ending after the t-th
            # start, that is one whose estimate is longer than that start minus now (plus a margin for
            # rounding: a bound may let more through, never fewer).
            for n in range(1, len(starts) + 1):
                if room(like, n, None) < need:
                    return starts[n - 1] - now + 1e-6 * (abs(starts[n - 1]) + 1.0)
            return INFINITE

        return Fits(fits, longest, frozenset(reserved))

    def delayed_by(self, root: RootKey, nodes: Iterable[int], now: float) -> RootKey | None:
        """The reservation that `root` taking `nodes` now would delay (for preemption), or None."""
        taken = set(nodes)
        est = self.estimate(root).seconds
        end = now + est if est is not None else INFINITE
        for k, r in self.reservations.items():
            if k != root and r.holds(now, end) and r.nodes & taken:
                return k
        return None
