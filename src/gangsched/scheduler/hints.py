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


Contract: not thread-safe; owned by one Scheduler. Entries leave when woken or forgotten.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field

from .podinfo import PodInfo
from .policy import SortKey
from .queue import RootKey

__all__ = ["Fits", "RoomNeed", "RoomWaiters"]

# (root, a pod of its class, pods needed) -> whether the room that root may use could hold them
Fits = Callable[[RootKey, PodInfo, int], bool]


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


class RoomWaiters:
    def __init__(self) -> None:
        self._classes: dict[Hashable, _Class] = {}
        self._entry: dict[RootKey, tuple[Hashable, int, int]] = {}  # root -> (class, seq, need) of its entry
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
        self._entry[root] = (cls, self._seq, need.need)

    def forget(self, root: RootKey) -> None:
        self._always.discard(root)
        entry = self._entry.pop(root, None)
        if entry is not None:
            cls, _, need = entry
            needs = self._classes[cls].needs
            needs[need] -= 1
            if not needs[need]:
                del needs[need]

    def clear(self) -> None:
        self._classes.clear()
        self._entry.clear()
        self._always.clear()

    def wake(
        self, room_for: Callable[[PodInfo], int], ready: Callable[[RootKey], bool], fits: Fits | None = None
    ) -> Iterator[RootKey]:
        """Roots the released room may help, leaving the index (callers requeue them). `ready(root)`: its
        backoff is over, so that it would take the room now. `fits(root, like, need)`, when given: whether
        the room the root may use (under backfill, outside the reservations it would delay) holds `need`
        pods like `like`; a root it refuses is passed over, as one needing more than the room left is."""
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
        woken: list[RootKey] = []
        kept: list[tuple[SortKey, int, RootKey, int, int]] = []
        scanned = 0
        for scanned, entry in enumerate(waiting.entries, 1):  # noqa: B007 (scanned is used after the loop)
            _, seq, root, need, epoch = entry
            if self._entry.get(root, (None, -1))[1] != seq:
                continue  # stale
            if (
                need <= budget
                and (before is None or epoch < before)
                and (fits is None or fits(root, waiting.like, need))
            ):
                if ready(root):
                    budget -= need
                woken.append(root)
                self.forget(root)
            else:
                kept.append(entry)
            if not waiting.needs or budget < min(waiting.needs):
                break
        waiting.entries[:scanned] = kept
        yield from woken
