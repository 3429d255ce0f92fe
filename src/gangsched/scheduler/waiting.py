"""The roots a backfill plan orders: those that failed a cycle and still wait, kept sorted between plans.

A plan takes the first `max_job_test` of them by (priority, then with fair share their namespace's weighted
dominant share, then creation, then arrival). Sorting the whole backlog at every plan cost a pass over every
queued root; here the roots are kept in lists by (priority, namespace), each sorted by (creation, arrival),
which do not change while a root waits. A plan orders the lists (a handful) by priority and share and reads
the first roots off them, merging lists whose priority and share are equal: the same roots in the same
order as sorting them all (arrival is unique, so the order is total).

Entries are added when a root fails a cycle (`failed`; failing again after being queued anew replaces its
entry) and dropped when it leaves (`discard`), or found stale when read: a root no longer queued, or queued
anew and not failed since. A dropped entry stays in its list, passed over when read (only the entry object a
root's record names is its live one), until its list is mostly dropped entries: deleting it at once moved
the rest of a list of thousands of waiting roots at every start (1% of a full philly replay). But a plan
reads the lists from the front, and the roots that start are mostly the plan's own heads, there: the dropped
entries a list begins with are cut off when a plan reads it (`_front`), or every plan would read past up to
thousands of them (40% of a full philly replay at depth 4, where every start of a planned root replans).
A change of a waiting root's priority (SchedulingQueue.priority_changes) rebuilds the lists from the queue.
Not thread-safe; owned by one Backfill.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Iterator

from .queue import QueuedRoot, RootKey, SchedulingQueue

__all__ = ["WaitingRoots"]

_Group = tuple[int, str]  # (priority, namespace)
_Entry = tuple[tuple[float, int], int, RootKey]  # (creation timestamp, arrival seq, root)


class WaitingRoots:
    def __init__(self, queue: SchedulingQueue) -> None:
        self.queue = queue
        self._groups: dict[_Group, list[_Entry]] = {}  # live entries and dropped ones not compacted yet
        self._live: dict[_Group, int] = {}  # live entries per list
        self._where: dict[RootKey, tuple[_Group, _Entry]] = {}  # each root's live entry (that very object)
        self._priority_changes = queue.priority_changes
        self._stale: list[RootKey] = []  # entries `first` found stale, dropped at its next read

    def failed(self, key: RootKey) -> None:
        """`key` failed a cycle: it waits (again) from now on, under its present priority."""
        root = self.queue.get(key)
        if root is None or not root.attempts:
            return
        group, entry = (root.priority, key[1]), (root.timestamp, root.seq, key)
        if self._where.get(key) == (group, entry):
            return
        self.discard(key)
        bisect.insort(self._groups.setdefault(group, []), entry)
        self._live[group] = self._live.get(group, 0) + 1
        self._where[key] = (group, entry)

    def discard(self, key: RootKey) -> None:
        """`key` no longer waits: its entry is dropped (left in its list until the list is compacted)."""
        where = self._where.pop(key, None)
        if where is None:
            return
        group = where[0]
        live = self._live[group] - 1
        if not live:
            del self._groups[group], self._live[group]
            return
        self._live[group] = live
        entries = self._groups[group]
        if len(entries) > 2 * live + 64:
            self._groups[group] = [e for e in entries if self._is_live(e)]

    def _is_live(self, entry: _Entry) -> bool:
        where = self._where.get(entry[2])
        return where is not None and where[1] is entry

    def _rebuild(self) -> None:
        self._groups.clear()
        self._live.clear()
        self._where.clear()
        for root in self.queue.roots():
            self.failed(root.key)
        self._priority_changes = self.queue.priority_changes

    def first(self, limit: int | None, share: Callable[[str], float]) -> Iterator[QueuedRoot]:
        """The first `limit` waiting roots (all when None) by (-priority, share(namespace), creation,
        arrival), as `sorted` over every queued root with attempts would give them, read lazily: a plan
        at depth 1 mostly reads one or two of its `max_job_test`, and reading all of them (a queue look-up
        each) was most of a fair-share plan's order. The lists must not change while it is read (nothing
        fails or leaves during a plan); stale entries met are dropped at the next read."""
        self._drop_stale()
        if self._priority_changes != self.queue.priority_changes:
            self._rebuild()
        order = sorted(self._groups, key=lambda g: (-(g[0] + 0.0), share(g[1])))
        given = 0
        i = 0
        while i < len(order) and (limit is None or given < limit):
            head = (-(order[i][0] + 0.0), share(order[i][1]))
            j = i + 1
            while j < len(order) and (-(order[j][0] + 0.0), share(order[j][1])) == head:
                j += 1
            lists = [self._front(g) for g in order[i:j]]
            merged: Iterator[_Entry] = iter(lists[0]) if len(lists) == 1 else heapq.merge(*lists)
            for entry in merged:
                if not self._is_live(entry):
                    continue  # dropped
                key = entry[2]
                root = self.queue.get(key)
                if root is None or not root.attempts:  # left, or queued anew and not failed since
                    self._stale.append(key)
                    continue
                yield root
                given += 1
                if limit is not None and given >= limit:
                    return
            i = j

    def _front(self, group: _Group) -> list[_Entry]:
        """The group's list, its leading dropped entries cut off (the rest move once, by one memmove)."""
        entries = self._groups[group]
        dropped = 0
        while dropped < len(entries) and not self._is_live(entries[dropped]):
            dropped += 1
        if dropped:
            del entries[:dropped]
        return entries

    def _drop_stale(self) -> None:
        stale, self._stale = self._stale, []
        for key in stale:
            root = self.queue.get(key)
            if root is None or not root.attempts:  # still stale: it may have failed again since
                self.discard(key)
