"""A plan's earliest starts, reused by the next plan while what they read stands (`EarliestStarts`).

Backfill plans often: fair share at most every `interval` after any start or end, depth N whenever a planned
root starts. Most of those plans find the same earliest start for the same root, and finding it (the
running work's arrays, the capacity over every candidate time, a trial placement with the work released by
then taken out) was most of a plan. A plan is a function of what it reads (plan.tie_breaker), so an answer
that must come out the same is taken over rather than computed again.
"""

from __future__ import annotations

import math
import operator
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from .backfill_settings import INFINITE, PlanSettings
from .estimates import Estimate
from .plan import KnownTrial, Reservation, Running, RunningIndex, StartSearch, earliest_start
from .queue import RootKey

if TYPE_CHECKING:
    from .plugins import BoolArray
    from .scheduler import Placer, Scheduler
    from .snapshot import Snapshot

__all__ = ["EarliestStarts"]


@dataclass(slots=True)
class _Found:
    """What one `earliest_start` read (beside the time) and what it found."""

    snap: Snapshot
    version: int  # the snapshot's
    objects: int  # EarliestStarts.objects
    running: Running
    placer: tuple[Any, ...]
    estimate: Estimate
    held: tuple[Reservation, ...]
    settings: PlanSettings
    now: float
    found: Reservation | None
    log: tuple[int, int] | None  # (generation, length) of the RunningIndex log; None: not only running work
    # The root could fit by capacity at no time before this on what the plan saw (-INFINITE: not known).
    fits_from: float
    start_only: bool  # found by a search that read the start alone (its nodes may not be named)
    # StartSearch.usable of the trial that found `found`, as the snapshot at `found.start` stands (carried
    # over with the answer while it does): what a later search needs to take that trial over.
    usable: BoolArray | None = None


def _moved_to(
    found: Reservation,
    root: RootKey,
    running: Running,
    held: Sequence[Reservation],
    now: float,
    changed: set[int] | None = None,
) -> Reservation:
    """An earlier answer, with what it says of the work and reservations in its way read again from now:
    the running work released by its start on its nodes (in order), the reservations it overlaps from now.
    The answer itself when neither changed (most of fair share's plans: a Reservation made again with
    `dataclasses.replace` cost a quarter of such a reuse). `changed`, when given: the nodes of every running
    work that changed since the answer was found (EarliestStarts._changed_until, whose Running is timeless
    then and now); when none is a node of the answer, its blockers stand as they are: every other work keeps
    its RunningWork, its release and its place in the order (the blockers were read again over the few
    hundred running works at nearly every fair-share plan)."""
    nodes = found.nodes  # isdisjoint builds no set: asked of most running works at most fair-share plans
    if changed is not None and nodes.isdisjoint(changed):
        blockers = found.blockers
    else:
        released = int(running.releases.searchsorted(found.start, side="right"))  # without np's wrapper
        blockers = tuple(
            w for w in running.works[:released] if w.root != root and not nodes.isdisjoint(w.nodes)
        )
    ahead = tuple(r.root for r in held if r.holds(now, found.end))
    if blockers == found.blockers and ahead == found.ahead:
        return found
    return replace(found, blockers=blockers, ahead=ahead)


def _placer_reads(place: Placer) -> tuple[Any, ...]:
    """What a trial placement reads of the root itself, beside the snapshot and the objects other than
    pods: its pods (each as the scheduler holds it: a pod updated or relabelled is a new object there) and
    what the placer was told (compared by identity and value: see `EarliestStarts.get`)."""
    pods = tuple(x for pi in place.pods for x in (pi, pi.pod, pi.traits))
    return (place.needs, place.topology_key, place.fixed_domains, place.tree, pods)


def _same_placer(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return a[:4] == b[:4] and len(a[4]) == len(b[4]) and all(map(operator.is_, a[4], b[4]))


def _same_held(a: Sequence[Reservation], b: Sequence[Reservation]) -> bool:
    return len(a) == len(b) and all(x == y for x, y in zip(a, b, strict=True))


def _held_nodes(r: Reservation) -> tuple[float, float, frozenset[int]]:
    """All that a trial placement reads of a reservation before it (`plan._free_of`)."""
    return r.start, r.end, r.nodes


class EarliestStarts:
    """The earliest starts a plan found, reused by the next plan while nothing they read has changed: a
    plan is a function of what it reads (the trial placements' ties are the root's own: `tie_breaker`), so
    a root's earliest start is computed again only when the snapshot's counts (`Snapshot.version`), the
    objects other than pods (`objects_changed`), the running work, the root's pods, its estimate or the
    reservations before it changed, or the time moved past what the answer depends on.

    Time: with the same running work (the same `Running`, valid only before the first expected end) no
    work is released between the two plans, so the new plan's candidate times are the old ones from `now`
    on, plus `now` itself, where the snapshot is the one the old plan tried first. So the old answer stands
    if it lay after `now` (or there was none) and the reservations before the root hold the same nodes over
    [now, now + its run) as over the old plan's first interval (then the trial at `now` is the old plan's
    first trial, which failed); with a bounded window, later candidates come into it: never reused. Roots
    whose pods use claims are always planned afresh (the claims stage's allocations are not in the
    snapshot's counts).

    Running work that changed (started, ended, lost pods) changes the snapshot only until it is released:
    with T the latest release, before or after the change, of every root the RunningIndex refreshed since
    the old answer (the root itself not among them), at least `now`, what the snapshot holds at any
    candidate time after T is what the old plan saw then, and those candidates are the old ones. So only
    the candidates up to T are tried afresh (`earliest_start(..., until=T)`); if none fits, the old answer
    stands when it lay after T (its blockers and the reservations ahead read again), else the search goes
    on after T. This needs the snapshot to count the running work and nothing else at both plans
    (`RunningIndex.counts_running_only`): a replay, where fair share replans every `interval` after each
    start or end, mostly around short work that ends long before the head's reservation.

    The reservations before the root may differ too, when every one that differs (held by one plan, not
    by the other: compared by start, end and nodes, all a trial reads of them) has ended by T, T raised to
    its end and its end on the grid if need be. A reservation over [start, end) holds nodes against a trial
    at t only if t < end, so after T the trials get the same node masks, and the candidate times after T
    are the same (a reservation's end is a candidate on the grid, at most T here). This is the plan at
    depth N after a planned root started: its reservation is gone and the root is running work, released
    when the reservation would have ended or later, and the roots planned behind it would otherwise be
    searched afresh (most plans at depth 4 on the philly trace are of this kind).

    Most of those partial searches find nothing, and their capacity check says so at once; but the old
    search often knew it already. Each answer keeps F, a time before which the root could fit by capacity
    at no time on what its plan saw (`StartSearch.fits_from`: the first candidate at which the capacity
    check passes, with no reservation before the root). Free room only grows with time, and at T the
    snapshot holds what the old plan saw then: so when T < F, the root fits by capacity at T no better than
    the old plan did, nor at any candidate before T, and the search up to T finds nothing without being
    made (`bounded`); F stands for the new answer (after T the snapshots are the old ones).
    F counts no reservation, and reservations only take room away: it bounds the new search whatever
    reservations come before the root now.

    When T >= F the search is made, but F still bounds part of it. Work that only started since (or gained
    pods, and releases them no earlier) holds at least as much as before at every time; work that ended or
    lost pods gives room back only before its old release. So with G the latest release of the work that
    may have given room back (RunningIndex.log; -INFINITE when all of it only took room), from G on the
    snapshot at every time holds at least what the old plan saw then, node by node, and the root fits by
    capacity at no candidate in [G, F): those are not tried (`earliest_start(..., unfit=(G, F))`,
    `narrowed`). Fair share's searches up to T are mostly of this kind: short work ended on time (G is its
    release, at most a resolution step away) and other work started, with a release T past the head's
    start, so the search went through every candidate from now to the head's start again.

    The trial there is mostly the old one again: the work that changed runs past the head's start on nodes
    that could take none of its pods then. Each answer keeps the nodes that could take one at its start
    (StartSearch.usable, carried along while the answer stands), and the search is given the old trial with
    the nodes of the work that changed (plan.KnownTrial): it takes the old nodes over when none of those
    nodes could take a pod then, before or now (earliest_start says why that is the same trial). The
    reservations before the root may differ too (at depth N, the roots behind a root that started): the
    nodes of those held by one plan and not the other are given as changed as well, since the trial's node
    mask may differ there, and only there; a node masked out and a node short of room are alike to a trial
    (no fit, no score), so when none of them could take a pod in either search, the trial is the same.
    `tests/sim/test_plan_state.py` checks every reused answer against `earliest_start` run again. Not
    thread-safe; owned by one planner."""

    def __init__(self) -> None:
        self.objects = 0  # bumped whenever an object other than a pod changes
        self.reused = 0  # answers reused whole
        self.partly = 0  # answers tried afresh only up to the latest release of the work that changed
        self.bounded = 0  # of those, answers whose search up to that release the capacity bound spared
        self.narrowed = 0  # of the others, searches that the capacity bound narrowed (work only started)
        self.taken_over = 0  # of the searches up to T, those that took the old trial over (KnownTrial)
        self._found: dict[RootKey, _Found] = {}

    def objects_changed(self) -> None:
        self.objects += 1

    def forget(self, root: RootKey) -> None:
        """What the root's placement reads changed (its PodGroup): its answer is not reused."""
        self._found.pop(root, None)

    def forget_all_but(self, roots: Iterable[RootKey]) -> None:
        """Keep only the answers for `roots` (those of the last plan)."""
        keep = set(roots)
        self._found = {k: f for k, f in self._found.items() if k in keep}

    def get(
        self,
        scheduler: Scheduler,
        root: RootKey,
        place: Placer,
        estimate: Estimate,
        running: Running,
        held: Sequence[Reservation],
        now: float,
        settings: PlanSettings,
        index: RunningIndex | None = None,
        start_only: bool = False,
    ) -> Reservation | None:
        """`earliest_start` of the root, reused when it must be the same; `index` is the RunningIndex that
        gave `running` (without it only unchanged answers are reused); `start_only` as earliest_start's (an
        answer found so is reused only by a caller that reads the start alone too)."""
        snap = scheduler.snapshot()
        reads = _placer_reads(place)
        before = self._found.get(root)
        if before is not None and before.start_only != start_only:
            before = None  # found for a caller that reads other parts of the answer
        if before is not None and self._stands(before, snap, running, reads, estimate, held, now, settings):
            self.reused += 1
            found = before.found
            if found is None:
                return None
            ahead = tuple(r.root for r in held if r.holds(now, found.end))
            return found if ahead == found.ahead else replace(found, ahead=ahead)
        found = None

        def search(
            after: float = -INFINITE,
            until: float = INFINITE,
            unfit: tuple[float, float] = (INFINITE, INFINITE),
            last_first: bool | None = None,
            known: KnownTrial | None = None,
        ) -> StartSearch:
            return earliest_start(
                scheduler,
                root,
                place,
                estimate,
                running,
                held,
                now,
                settings,
                after=after,
                until=until,
                unfit=unfit,
                start_only=start_only,
                last_first=last_first,
                known=known,
            )

        usable: BoolArray | None = None
        changed = self._changed_until(
            before, root, snap, running, reads, estimate, held, now, settings, index
        )
        if before is not None and changed is not None:
            # Only the work refreshed since, all released by `since`, changed: the candidates up to `since`
            # are tried afresh, the old answer stands beyond it.
            since, gave, nodes = changed
            self.partly += 1
            short = False  # nothing fit by capacity up to `since`
            if since < before.fits_from:  # none of them fits by capacity (see the class docstring)
                self.bounded += 1
                fits_from = before.fits_from
            else:
                # From `gave` on, the work that changed only took room: the root fits by capacity in
                # [gave, F) no better than the old plan saw (see the class docstring).
                if gave < before.fits_from:
                    self.narrowed += 1
                # The root fit by capacity at F on what the old plan saw, and F <= T: the capacity at the
                # last candidate is not counted first (it is, to find at once a root that fits nowhere up
                # to T, when F is not known; see _could_fit). The same times either way.
                known = before.fits_from > -INFINITE
                # The old trial, taken over where the work that changed leaves it as it was (earliest_start).
                trial = None
                if before.found is not None and before.usable is not None:
                    trial = KnownTrial(before.found, before.usable, np.fromiter(nodes, np.intp, len(nodes)))
                up_to = search(until=since, unfit=(gave, before.fits_from), last_first=not known, known=trial)
                found, fits_from, usable = up_to.found, up_to.fits_from, up_to.usable
                self.taken_over += up_to.taken_over
                short = fits_from >= INFINITE
                if short:  # nothing fits by capacity up to `since`: not before it, at least
                    fits_from = since
            if found is None and before.found is not None and before.found.start > since:
                # After `since` the snapshot is the one the old trial saw: its usable nodes too.
                found, usable = _moved_to(before.found, root, running, held, now, nodes), before.usable
            elif found is None and before.found is not None:
                beyond = search(after=since)
                found, usable = beyond.found, beyond.usable
                if short:
                    fits_from = beyond.fits_from
        else:
            whole = search()
            found, fits_from, usable = whole.found, whole.fits_from, whole.usable
        if not any(pi.claims for pi in place.pods):
            log = None
            if index is not None and running.timeless and index.counts_running_only():
                log = (index.log_generation, len(index.log))
            self._found[root] = _Found(
                snap,
                snap.version,
                self.objects,
                running,
                reads,
                estimate,
                tuple(held),
                settings,
                now,
                found,
                log,
                fits_from,
                start_only,
                usable,
            )
        else:
            self._found.pop(root, None)
        return found

    def _changed_until(
        self,
        before: _Found | None,
        root: RootKey,
        snap: Snapshot,
        running: Running,
        reads: tuple[Any, ...],
        estimate: Estimate,
        held: Sequence[Reservation],
        now: float,
        settings: PlanSettings,
        index: RunningIndex | None,
    ) -> tuple[float, float, set[int]] | None:
        """When the old answer was found with the snapshot counting running work only, and since then only
        running work and the reservations before the root changed (no other pod, object or setting; the
        root itself not running): T, the latest release, before or after, of the work that changed, and the
        latest end (as is and on the grid) of the reservations held by one plan and not the other, at least
        `now`. Beyond it every candidate time, what the snapshot holds then and the nodes the reservations
        hold against the root are as the old plan saw them. And G, a time from which the work that changed
        holds at least what it held in the old plan (RunningIndex.log: the latest time before which any of
        it may have given room back; -INFINITE: it only took room). And the nodes that work held then or
        holds now, with those of the reservations held by one plan and not the other: the only nodes whose
        snapshot or node mask at a candidate time may differ. None when that does not apply."""
        if (
            before is None
            or index is None
            or before.log is None
            or before.log[0] != index.log_generation
            or not running.timeless
            or not self._same_reads(before, snap, reads, estimate, now, settings)
            or not index.counts_running_only()
        ):
            return None
        since, gave = now, -INFINITE
        nodes: set[int] = set()
        for changed, released, gave_until, held_nodes in index.log[before.log[1] :]:
            if changed == root or released >= INFINITE:
                return None
            since, gave = max(since, released), max(gave, gave_until)
            nodes |= held_nodes
        if not _same_held(before.held, held):
            differ = Counter(map(_held_nodes, before.held))
            differ.subtract(map(_held_nodes, held))
            for (_, end, reserved), count in differ.items():
                if count:
                    if end >= INFINITE:
                        return None
                    since = max(since, end, settings.round_up(end))
                    nodes |= reserved  # masked in one search and maybe not in the other
        return since, gave, nodes

    def _same_reads(
        self,
        before: _Found,
        snap: Snapshot,
        reads: tuple[Any, ...],
        estimate: Estimate,
        now: float,
        settings: PlanSettings,
    ) -> bool:
        """What both kinds of reuse need: the old answer was found on this snapshot with the same objects
        other than pods, settings (an unbounded window), estimate and placer, no later than `now`."""
        return (
            before.snap is snap
            and before.objects == self.objects
            and before.settings == settings
            and math.isinf(settings.window)
            and before.now <= now
            and before.estimate == estimate
            and _same_placer(before.placer, reads)
        )

    def _stands(
        self,
        before: _Found,
        snap: Snapshot,
        running: Running,
        reads: tuple[Any, ...],
        estimate: Estimate,
        held: Sequence[Reservation],
        now: float,
        settings: PlanSettings,
    ) -> bool:
        if not (
            self._same_reads(before, snap, reads, estimate, now, settings)
            and _same_held(before.held, held)
            and before.version == snap.version
            and before.running is running
            and (before.found is None or before.found.start > now)
        ):
            return False
        duration = estimate.seconds if estimate.seconds is not None else INFINITE
        return all(r.holds(now, now + duration) == r.holds(before.now, before.now + duration) for r in held)
