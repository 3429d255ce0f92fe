"""Which unschedulable roots a freed node can help: gangsched's queueing hint for released room.

Upstream's NodeResourcesFit answers `Queue` to every deletion of a bound pod, so each completion moves every
pod it rejected back to the queue for a full cycle (docs/queue.md). Over a trace that is one cycle per waiting
gang per completion. gangsched bounds it instead: a root whose pending pods share one equivalence class and
that cannot preempt (no running pod has a lower priority) can only be placed if at least `need` pods of that
class fit at once in the free capacity of the nodes its static filters admit (`Evaluator.room_for`), where
`need` is minCount minus its running members for a gang and 1 otherwise. That count only grows when room is
released, so a release wakes exactly the roots whose bound it now meets, smallest need first; the others keep
waiting without a cycle. Roots the bound does not cover (mixed classes, composite trees, possible preemption,
errors) are woken by every release, as upstream wakes them.

Contract: not thread-safe; owned by one Scheduler. Entries are dropped when woken or forgotten.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass

from .podinfo import PodInfo
from .queue import RootKey

__all__ = ["RoomNeed", "RoomWaiters"]


@dataclass(frozen=True, slots=True)
class RoomNeed:
    """`need` pods like `like` must fit at once for the root to have a chance."""

    like: PodInfo
    need: int


class RoomWaiters:
    def __init__(self) -> None:
        self._by_class: dict[Hashable, list[tuple[int, int, RootKey]]] = {}
        self._like: dict[Hashable, PodInfo] = {}
        self._entry: dict[RootKey, int] = {}  # root -> seq of its live entry (older heap entries are stale)
        self._always: set[RootKey] = set()
        self._seq = 0

    def __len__(self) -> int:
        return len(self._entry) + len(self._always)

    def wait(self, root: RootKey, need: RoomNeed | None) -> None:
        """`root` failed and waits for room: bounded by `need`, or woken by any release when None."""
        self.forget(root)
        if need is None:
            self._always.add(root)
            return
        self._seq += 1
        cls = need.like.signature
        self._like.setdefault(cls, need.like)
        heapq.heappush(self._by_class.setdefault(cls, []), (need.need, self._seq, root))
        self._entry[root] = self._seq

    def forget(self, root: RootKey) -> None:
        self._entry.pop(root, None)
        self._always.discard(root)

    def clear(self) -> None:
        self._by_class.clear()
        self._like.clear()
        self._entry.clear()
        self._always.clear()

    def wake(self, room_for: Callable[[PodInfo], int]) -> Iterator[RootKey]:
        """Roots that released room may help; they leave the index."""
        always, self._always = self._always, set()
        yield from sorted(always)
        for cls in list(self._by_class):
            heap = self._by_class[cls]
            while heap and self._entry.get(heap[0][2]) != heap[0][1]:
                heapq.heappop(heap)  # stale: the root was woken otherwise, or failed again since
            if not heap:
                del self._by_class[cls]
                self._like.pop(cls, None)
                continue
            room = room_for(self._like[cls])
            while heap and heap[0][0] <= room:
                _, seq, root = heapq.heappop(heap)
                if self._entry.get(root) == seq:
                    del self._entry[root]
                    yield root
