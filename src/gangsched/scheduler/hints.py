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
(`estimate`), only the roots of the class that could be let through (estimate within that bound, or a
reservation of their own) are read at all: each class keeps its roots in lists by (need, estimate band),
each in queue order, and the walk merges, in queue order, the lists whose need the room could hold and whose
band starts within the bound, passing over the few roots of the last band that run longer. The same roots
are woken in the same order as by a walk over every root, since the planner refuses all the others.


Contract: not thread-safe; owned by one Scheduler. Entries leave when woken or forgotten.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections import Counter
from collections.abc import Callable, Hashable, Iterator

from msgspec import Struct, field

from .podinfo import PodInfo
from .policy import SortKey
from .queue import RootKey

__all__ = ["Fits", "RoomNeed", "RoomWaiters"]


class Fits(Struct, frozen=True):
    """The planner's view of the room a waiting root may use (Backfill.room_check). `check(root, like,
    need)`: whether it could hold `need` pods like `like`. `longest(like, need)`, when given: an estimate
    (seconds) such that `check` refuses every root needing `need` pods of that class whose estimate is
    longer, except the roots in `own` (those holding a reservation of their own). It never grows with
    `need` (room short of some pods is short of more), so a walk asks it for the least need of the class:
    that bound covers every need."""

    check: Callable[[RootKey, PodInfo, int], bool]
    longest: Callable[[PodInfo, int], float] | None = None
    own: frozenset[RootKey] = frozenset()


class RoomNeed(Struct, frozen=True):
    """`need` pods like `like` must fit at once for the root to have a chance."""

    like: PodInfo
    need: int


_Entry = tuple[SortKey, int, RootKey, int, int]  # (queue order, seq, root, need, epoch it entered)
_BANDS_PER_DOUBLING = 4  # estimate bands a quarter of a doubling wide: few roots of a band run longer


def _band(estimate: float) -> float:
    """The estimate band of a root (its lower end is at most its estimate; inf: unknown)."""
    if estimate == math.inf:
        return math.inf
    band = float(math.floor(_BANDS_PER_DOUBLING * math.log2(max(estimate, 1.0))))
    return band - 1 if _band_start(band) > estimate else band  # never above it through rounding


def _band_start(band: float) -> float:
    """The shortest estimate a band holds (a lower bound: band 0 holds everything under 2^(1/4) s)."""
    return math.inf if band == math.inf else 0.0 if band <= 0 else 2.0 ** (band / _BANDS_PER_DOUBLING)


def _last_band_within(longest: float) -> float:
    """The highest band whose start is at most `longest` (-inf: none; inf: every band). Band starts grow
    with the band, so a band's start is within `longest` exactly when the band is at most this one: a walk
    compares band numbers rather than computing each band's start."""
    if longest < 0:
        return -math.inf
    if longest == math.inf:
        return math.inf
    band = float(math.floor(_BANDS_PER_DOUBLING * math.log2(max(longest, 1.0))))
    while _band_start(band + 1) <= longest:  # through rounding of the logarithm, either way
        band += 1
    while band > 0 and _band_start(band) > longest:
        band -= 1
    return band


class _Class(Struct):
    like: PodInfo
    # Sorted by queue order; entries of woken or forgotten roots are dropped lazily (stale when read).
    entries: list[_Entry] = field(default_factory=list)
    needs: Counter[int] = field(default_factory=Counter)  # needs of live entries
    least: int = 0  # the least of `needs` (0: none), asked at every release and every root a walk reads
    # With `estimate`: the live entries in lists by (need, estimate band), each sorted by queue order, so
    # that a walk bounded by estimates reads only the roots that could be let through. Entries leave their
    # band at once: short roots are woken soon, so their bands would be mostly stale entries.
    bands: dict[tuple[int, float], list[_Entry]] = field(default_factory=dict)
    live: int = 0  # live entries: `entries` is compacted when mostly stale


class RoomWaiters:
    def __init__(self, estimate: Callable[[RootKey], float] | None = None) -> None:
        """`estimate(root)`: the run time the planner expects of a root (inf: unknown), fixed while it
        waits; None: walks read every root (no `Fits.longest` bound)."""
        self.estimate = estimate
        self._classes: dict[Hashable, _Class] = {}
        # root -> (class, seq, need, estimate, entry, band of the estimate) of its entry
        self._entry: dict[RootKey, tuple[Hashable, int, int, float, _Entry, float]] = {}
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
        entry = (order, self._seq, root, need.need, self._epoch)
        bisect.insort(waiting.entries, entry)
        waiting.needs[need.need] += 1
        if not waiting.least or need.need < waiting.least:
            waiting.least = need.need
        waiting.live += 1
        estimate, band = math.inf, math.inf
        if self.estimate is not None:
            estimate = self.estimate(root)
            band = _band(estimate)
            bisect.insort(waiting.bands.setdefault((need.need, band), []), entry)
        self._entry[root] = (cls, self._seq, need.need, estimate, entry, band)
        self._compact(waiting)

    def forget(self, root: RootKey) -> None:
        self._always.discard(root)
        entry = self._entry.pop(root, None)
        if entry is not None:
            cls, _, need, _, queued, band_id = entry
            waiting = self._classes[cls]
            waiting.needs[need] -= 1
            if not waiting.needs[need]:
                del waiting.needs[need]
                if need == waiting.least:
                    waiting.least = min(waiting.needs, default=0)
            waiting.live -= 1
            if self.estimate is not None:
                key = (need, band_id)
                band = waiting.bands[key]
                del band[bisect.bisect_left(band, queued)]
                if not band:
                    del waiting.bands[key]

    def _is_live(self, entry: _Entry) -> bool:
        live = self._entry.get(entry[2])
        return live is not None and live[1] == entry[1]

    def _compact(self, waiting: _Class) -> None:
        """Drop the stale entries of a class (woken or forgotten roots), kept lazily until they outnumber
        the live ones (not during a walk, which reads them)."""
        if len(waiting.entries) <= 2 * waiting.live + 64:
            return
        waiting.entries = [e for e in waiting.entries if self._is_live(e)]

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
        fits: Callable[[], Fits | None] | None = None,
    ) -> Iterator[RootKey]:
        """After a root of `like`'s class failed: the roots of that class the last walk passed over that
        the room now left may help (never one that failed since the last release). `fits()` makes the
        planner's view for the walk (as `wake`'s `fits`), asked only once the room could hold a root of the
        class at all: a root fails for want of room, so nearly every rewake ends there (18,345 of 19,509 on
        the first 20,000 philly jobs at depth 4), and the view costs a pass over the reservations."""
        waiting = self._classes.get(like.signature)
        if waiting is None:
            return
        if waiting.least and room_for(waiting.like) < waiting.least:
            return  # the walk would stop before its first root (`_wake_class`)
        view = fits() if fits is not None else None
        yield from self._wake_class(like.signature, room_for, ready, before=self._epoch, fits=view)

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
        if budget < waiting.least:
            return
        if fits is not None and fits.longest is not None and self.estimate is not None:
            longest = fits.longest(waiting.like, waiting.least)  # the largest over the needs
            if longest < math.inf:
                yield from self._wake_bounded(waiting, longest, fits, budget, ready, before)
                return
        woken: list[RootKey] = []
        kept: list[_Entry] = []
        scanned = 0
        for scanned, entry in enumerate(waiting.entries, 1):  # noqa: B007 (scanned is used after the loop)
            _, seq, root, need, epoch = entry
            live = self._entry.get(root)
            if live is None or live[1] != seq:
                continue  # stale
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
            if not waiting.least or budget < waiting.least:
                break
        waiting.entries[:scanned] = kept
        self._compact(waiting)
        yield from woken

    def _wake_bounded(
        self,
        waiting: _Class,
        longest: float,
        fits: Fits,
        budget: int,
        ready: Callable[[RootKey], bool],
        before: int | None,
    ) -> Iterator[RootKey]:
        """The walk when the planner refuses every root expected to run longer than `longest` (except those
        holding a reservation, `fits.own`): it reads, in queue order, only the roots of the bands that start
        within that bound and whose need the room could hold, plus the class's roots of `own`; every other
        root would be refused or could not fit, so the same roots are woken as by reading them all."""
        # The lists are read in place, merged by a heap of each list's next entry, rather than copied whole:
        # a walk reads a few roots (3 on average over the full philly trace at depth 4) of lists that hold
        # hundreds. A root woken below leaves its band at once (`forget` deletes its entry, the one read),
        # so that list's next entry is then at the same index; the lists of `own` are copies (their roots'
        # bands are not read), and move on by one.
        last = _last_band_within(longest)
        lists: list[list[_Entry]] = []
        heads: list[tuple[_Entry, int, int]] = []  # (next entry of a list, the list's number, its index)
        for (need, band_id), band in waiting.bands.items():
            if need <= budget and band_id <= last:
                heads.append((band[0], len(lists), 0))  # never empty: an emptied band is deleted
                lists.append(band)
        banded = len(lists)  # lists[:banded] are the index's own bands
        own = sorted(
            live[4]
            for root in fits.own
            if (live := self._entry.get(root)) is not None
            and live[0] == waiting.like.signature
            and not (live[2] <= budget and live[5] <= last)  # its band is not read
        )
        if own:
            heads.append((own[0], len(lists), 0))
            lists.append(own)
        heapq.heapify(heads)  # entries differ in their sequence number: never compared further
        woken: list[RootKey] = []
        while heads:
            (_, seq, root, need, epoch), number, index = heads[0]
            live = self._entry.get(root)
            left = False
            if (
                live is not None
                and live[1] == seq
                and (live[3] <= longest or root in fits.own)  # else refused: it runs longer than the bound
                and need <= budget
                and (before is None or epoch < before)
                and fits.check(root, waiting.like, need)
            ):
                if ready(root):
                    budget -= need
                woken.append(root)
                self.forget(root)
                left = number < banded  # its entry left this very list
            listed = lists[number]
            index = index if left else index + 1
            if index < len(listed):
                heapq.heapreplace(heads, (listed[index], number, index))
            else:
                heapq.heappop(heads)
            if not waiting.least or budget < waiting.least:
                break
        self._compact(waiting)
        yield from woken
