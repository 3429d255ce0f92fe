"""Which unschedulable roots a freed node can help: gangsched's queueing hint for released room.

Upstream's NodeResourcesFit answers `Queue` to every deletion of a bound pod, so each completion moves every
pod it rejected back to the queue for a full cycle (docs/queue.md). Over a trace that is one cycle per waiting
gang per completion. gangsched bounds it instead. A root whose pending pods share one equivalence class and
that cannot preempt (no running pod has a lower priority) can only be placed if at least `need` pods of that
class fit at once in the free room of the nodes its static filters admit (`Evaluator.room_for`); `need` is
minCount minus its running members for a gang, 1 otherwise. When room is released, the waiting roots of each
class are taken in queue order and woken while the room left could still hold them all: a root needing more
than what is left is passed over, and the walk stops once no waiting root of the class needs that little.
A root still backing off is woken without counting against the room, since upstream lets the roots behind
it take the room meanwhile. A woken root can still fail, when a root of another class, earlier in the queue,
took the room first; its class is then walked again (`rewake`) for the roots the first walk passed over,
leaving out those that failed since the last release: as upstream, each root gets at most one try per
release, and the walk wakes the same roots as waking every one of them would.
Roots the bound does not cover (pods of several classes, composite trees, possible preemption, errors) are
woken by every release, as upstream wakes them.
Under gang-backfill a root may use only the nodes no reservation holds over its expected run, so the walk
also asks the planner whether that room could hold the root (`fits`, Backfill.room_check: the same test as
the scheduler's bound before a cycle) and passes over a root it refuses. Otherwise each release on a
reserved node would wake the whole backlog that fits the free room, one skipped try after another.
With weeks of work waiting, nearly every root is refused (it would still run when a reservation starts),
so the walk would still read the whole backlog at each release. When the planner also says how long a root
may be expected to run and still be let through (`Fits.longest`) and the index knows each root's estimate
(`estimate`), the walk counts beforehand the roots of the class that could be let through (estimate within
that bound, or a reservation of their own) and stops once it has met them all: the same roots are woken.


Contract: not thread-safe; owned by one Scheduler. Entries leave when woken or forgotten.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field

from .podinfo import PodInfo
from .policy import SortKey
from .queue import RootKey

__all__ = ["Fits", "RoomNeed", "RoomWaiters"]


@dataclass(frozen=True, slots=True)
class Fits:
    """The planner's view of the room a waiting root may use (Backfill.room_check). `check(root, like,
    need)`: whether it could hold `need` pods like `like`. `longest(like, need)`, when given: an estimate
    (seconds) such that `check` refuses every root needing `need` pods of that class whose estimate is
    longer, except the roots in `own` (those holding a reservation of their own)."""

    check: Callable[[RootKey, PodInfo, int], bool]
    longest: Callable[[PodInfo, int], float] | None = None
    own: frozenset[RootKey] = frozenset()


@dataclass(frozen=True, slots=True)
class RoomNeed:
    """`need` pods like `like` must fit at once for the root to have a chance."""

    like: PodInfo
    need: int


@dataclass(slots=True)
class _Class:
    like: PodInfo
    # (queue order, seq, root, need, epoch it entered), sorted; entries of woken or forgotten roots are
    # dropped lazily
    entries: list[tuple[SortKey, int, RootKey, int, int]] = field(default_factory=list)
    needs: Counter[int] = field(default_factory=Counter)  # needs of live entries
    estimates: list[float] = field(default_factory=list)  # of live entries, sorted (with `estimate`)


class RoomWaiters:
    def __init__(self, estimate: Callable[[RootKey], float] | None = None) -> None:
        """`estimate(root)`: the run time the planner expects of a root (inf: unknown), fixed while it
        waits; None: walks read every root (no `Fits.longest` bound)."""
        self.estimate = estimate
        self._classes: dict[Hashable, _Class] = {}
        # root -> (class, seq, need, estimate) of its entry
        self._entry: dict[RootKey, tuple[Hashable, int, int, float]] = {}
        self._always: set[RootKey] = set()
        self._seq = 0
        self._epoch = 0  # releases so far: a root that entered in the current epoch failed since the last

    def __len__(self) -> int:
        return len(self._entry) + len(self._always)

    def wait(self, root: RootKey, order: SortKey, need: RoomNeed | None) -> None:
        """`root` (at `order` in the queue) waits for room: bounded by `need`; None: woken by any release."""
        self.forget(root)
        if need is None:
            self._always.add(root)
            return
        self._seq += 1
        cls = need.like.signature
        waiting = self._classes.get(cls)
        if waiting is None:
            waiting = self._classes[cls] = _Class(need.like)
        bisect.insort(waiting.entries, (order, self._seq, root, need.need, self._epoch))
        waiting.needs[need.need] += 1
        estimate = self.estimate(root) if self.estimate is not None else math.inf
        if self.estimate is not None:
            bisect.insort(waiting.estimates, estimate)
        self._entry[root] = (cls, self._seq, need.need, estimate)

    def forget(self, root: RootKey) -> None:
        self._always.discard(root)
        entry = self._entry.pop(root, None)
        if entry is not None:
            cls, _, need, estimate = entry
            waiting = self._classes[cls]
            waiting.needs[need] -= 1
            if not waiting.needs[need]:
                del waiting.needs[need]
            if self.estimate is not None:
                del waiting.estimates[bisect.bisect_left(waiting.estimates, estimate)]

    def clear(self) -> None:
        self._classes.clear()
        self._entry.clear()
        self._always.clear()

    def wake(
        self, room_for: Callable[[PodInfo], int], ready: Callable[[RootKey], bool], fits: Fits | None = None
    ) -> Iterator[RootKey]:
        """Roots the released room may help, leaving the index (callers requeue them). `ready(root)`: its
        backoff is over, so that it would take the room now. `fits.check(root, like, need)`, when given:
        whether the room the root may use (under backfill, outside the reservations it would delay) holds
        `need` pods like `like`; a root it refuses is passed over, as one needing more than the room left
        is."""
        self._epoch += 1
        always, self._always = self._always, set()
        yield from sorted(always)
        for cls in list(self._classes):
            yield from self._wake_class(cls, room_for, ready, fits=fits)

    def rewake(
        self,
        like: PodInfo,
        room_for: Callable[[PodInfo], int],
        ready: Callable[[RootKey], bool],
        fits: Fits | None = None,
    ) -> Iterator[RootKey]:
        """After a root of `like`'s class failed: the roots of that class the last walk passed over that
        the room now left may help (never one that failed since the last release)."""
        if like.signature in self._classes:
            yield from self._wake_class(like.signature, room_for, ready, before=self._epoch, fits=fits)

    def _wake_class(
        self,
        cls: Hashable,
        room_for: Callable[[PodInfo], int],
        ready: Callable[[RootKey], bool],
        before: int | None = None,
        fits: Fits | None = None,
    ) -> Iterator[RootKey]:
        waiting = self._classes[cls]
        if not waiting.needs:
            del self._classes[cls]
            return
        budget = room_for(waiting.like)
        if budget < min(waiting.needs):
            return
        # With a bound by estimates: how many roots of the class `fits` could let through at all
        # (`left`); the walk stops once it has met them. None: no bound, read on.
        longest, own, left = math.inf, frozenset[RootKey](), None
        if fits is not None and fits.longest is not None and self.estimate is not None:
            longest = max(fits.longest(waiting.like, need) for need in waiting.needs)
            own = fits.own
            left = bisect.bisect_right(waiting.estimates, longest)
            left += sum(
                1
                for r in own
                if (e := self._entry.get(r)) is not None and e[0] == cls and not e[3] <= longest
            )
            if not left:
                return
        woken: list[RootKey] = []
        kept: list[tuple[SortKey, int, RootKey, int, int]] = []
        scanned = 0
        for scanned, entry in enumerate(waiting.entries, 1):  # noqa: B007 (scanned is used after the loop)
            _, seq, root, need, epoch = entry
            live = self._entry.get(root)
            if live is None or live[1] != seq:
                continue  # stale
            if left is not None and (live[3] <= longest or root in own):
                left -= 1  # one that could be let through: the last of them ends the walk below
            if (
                need <= budget
                and (before is None or epoch < before)
                and (fits is None or fits.check(root, waiting.like, need))
            ):
                if ready(root):
                    budget -= need
                woken.append(root)
                self.forget(root)
            else:
                kept.append(entry)
            if not waiting.needs or budget < min(waiting.needs) or left == 0:
                break
        waiting.entries[:scanned] = kept
        yield from woken
