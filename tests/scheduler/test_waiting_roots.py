"""waiting.py: the roots a backfill plan orders, kept sorted between plans, read as sorting every queued root
that failed a cycle would give them, however many have started or left (their entries dropped lazily, the
lists compacted once mostly dropped)."""

from __future__ import annotations

import pytest

from gangsched.scheduler.queue import RootKey, SchedulingQueue
from gangsched.scheduler.waiting import WaitingRoots


def _key(i: int) -> RootKey:
    return ("Pod", "ns-a" if i % 3 else "ns-b", f"p{i}")


def _expected(queue: SchedulingQueue, shares: dict[str, float]) -> list[RootKey]:
    """By hand: every queued root with attempts by (-priority, share, creation, arrival)."""
    waiting = [r for r in queue.roots() if r.attempts]
    waiting.sort(key=lambda r: (-r.priority, shares[r.key[1]], r.timestamp, r.seq))
    return [r.key for r in waiting]


@pytest.mark.parametrize("started", [0, 50, 290, 299], ids=["none", "some", "most", "all-but-one"])
def test_the_first_waiting_roots_are_the_sorted_backlog_after_starts_and_returns(started: int) -> None:
    """300 roots of two priorities and namespaces fail (created in an order unlike their arrival); then
    `started` of them start (they leave the queue), every seventh of those comes back as a new root of the
    same name (new arrival) and fails, and every fifth left over fails again; every third left over is
    dropped while still queued and fails again (the same entry anew). At each step the lists read as the
    sorted backlog, whole and its first 5, no list holds more than twice its live roots + 64, and after a
    read every list begins with a live entry."""
    queue = SchedulingQueue(max_unschedulable_s=None)
    waiting = WaitingRoots(queue)
    shares = {"ns-a": 0.5, "ns-b": 0.25}

    def check() -> None:
        want = _expected(queue, shares)
        assert [r.key for r in waiting.first(None, shares.__getitem__)] == want
        assert [r.key for r in waiting.first(5, shares.__getitem__)] == want[:5]
        for group, entries in waiting._groups.items():
            assert len(entries) <= 2 * waiting._live[group] + 64
            # a read cut off the dropped entries each list began with: the next plan does not read them
            assert waiting._is_live(entries[0])

    for i in range(300):
        key = _key(i)
        queue.add(key, priority=i % 2, timestamp=(float((i * 37) % 300), i))
        queue.requeue_failed(key, 0.0, 1)
        waiting.failed(key)
    check()
    for i in range(started):
        key = _key(i)
        queue.remove(key)
        waiting.discard(key)
        if i % 7 == 0:
            queue.add(key, priority=1, timestamp=(400.0 + i, 1000 + i))
            queue.requeue_failed(key, 0.0, 1)
            waiting.failed(key)
    check()
    for i in range(started, 300, 5):
        waiting.failed(_key(i))  # failing again changes nothing
    check()
    for i in range(started, 300, 3):  # dropped while still queued, then failing again: one entry each
        waiting.discard(_key(i))
        waiting.failed(_key(i))
    check()
