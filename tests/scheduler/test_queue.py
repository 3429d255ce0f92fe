"""The scheduling queue of roots (queue.py) on its own, against upstream's rules
(pkg/scheduler/backend/queue/scheduling_queue.go): active roots by priority then timestamp, backoff min(1s *
2^(attempts-1), 10s * sqrt(groupSize)), an unschedulable pool that events (or the 5 minute leftover flush)
empty, and roots turned away without an attempt."""

from __future__ import annotations

import pytest

from gangsched.scheduler.policy import QUEUE_POLICIES
from gangsched.scheduler.queue import RootKey, SchedulingQueue, backoff_seconds


def key(name: str) -> RootKey:
    return ("PodGroup", "default", name)


@pytest.mark.parametrize(
    ("attempts", "group_size", "seconds"),
    [
        (0, 1, 0.0),
        (1, 1, 1.0),
        (2, 1, 2.0),
        (4, 1, 8.0),
        (5, 1, 10.0),  # 16 s, capped at 10 s for a single pod
        (5, 4, 16.0),  # a group of 4 may wait up to 20 s
        (6, 4, 20.0),
        (6, 0, 10.0),  # an empty group counts as one pod
        (500, 9, 30.0),  # no overflow for many attempts
    ],
)
def test_backoff(attempts: int, group_size: int, seconds: float) -> None:
    assert backoff_seconds(attempts, group_size) == seconds


def test_active_roots_by_priority_then_timestamp() -> None:
    q = SchedulingQueue()
    q.add(key("late-high"), 10, (5.0, 0))
    q.add(key("early-low"), 1, (1.0, 0))
    q.add(key("early-high"), 10, (2.0, 0))
    q.add(key("early-high"), 99, (2.0, 0))  # already active: nothing changes
    assert [r.key[2] for r in q.in_order()] == ["early-high", "late-high", "early-low"]
    assert [q.pop(0.0).key[2] for _ in range(3)] == ["early-high", "late-high", "early-low"]  # type: ignore[union-attr]
    assert q.pop(0.0) is None
    assert q.pending() == {"in-flight": 3}


def test_a_failed_root_waits_for_an_event_then_its_backoff() -> None:
    q = SchedulingQueue()
    q.add(key("g"), 0, (0.0, 0))
    assert q.pop(0.0) is not None
    q.requeue_failed(key("g"), now=100.0, group_size=1)
    q.requeue_failed(key("absent"), now=100.0, group_size=1)  # not queued: ignored
    assert key("absent") not in q
    assert q.pending() == {"unschedulable": 1}
    assert q.pop(200.0) is None  # no event yet
    assert q.next_ready_at() is None  # nothing waits on time
    q.move_to_active(key("g"))
    assert q.pending() == {"backoff": 1}
    assert q.next_ready_at() == 101.0  # one attempt: 1 s
    assert q.ready_by(key("g"), 101.0) and not q.ready_by(key("g"), 100.5)
    assert not q.ready_by(key("absent"), 1e9)
    root = q.pop(200.0)
    assert root is not None and root.attempts == 1
    q.requeue_failed(key("g"), now=300.0, group_size=1)
    q.move_all_to_active()
    assert q.pop(301.5) is None  # second attempt: 2 s, until 302
    assert q.next_ready_at() == 302.0
    assert q.pop(302.0) is not None


def test_the_unschedulable_pool_is_flushed_after_five_minutes() -> None:
    q = SchedulingQueue()
    q.add(key("g"), 0, (0.0, 0))
    q.pop(0.0)
    q.requeue_failed(key("g"), now=10.0, group_size=1)
    assert q.pop(310.0) is None  # exactly 300 s: not longer than the limit yet
    root = q.pop(310.5)
    assert root is not None and root.key == key("g")


def test_without_a_flush_limit_the_pool_waits_for_events_only() -> None:
    q = SchedulingQueue(max_unschedulable_s=None)
    q.add(key("g"), 0, (0.0, 0))
    q.pop(0.0)
    q.requeue_failed(key("g"), now=0.0, group_size=1)
    assert q.pop(1e6) is None


def test_re_adding_a_failed_root_keeps_its_backoff_and_takes_its_new_priority() -> None:
    q = SchedulingQueue()
    q.add(key("a"), 0, (0.0, 0))
    q.add(key("b"), 5, (1.0, 0))
    q.pop(0.0)
    q.pop(0.0)
    q.requeue_failed(key("a"), now=0.0, group_size=1)
    q.requeue_failed(key("b"), now=0.0, group_size=1)
    q.add(key("a"), 9, (0.0, 0))
    q.add(key("b"), 5, (1.0, 0))
    assert q.pending() == {"backoff": 2}
    assert q.pop(0.5) is None
    assert [q.pop(1.0).key[2], q.pop(1.0).key[2]] == ["a", "b"]  # type: ignore[union-attr]


def test_a_parked_root_was_not_tried_and_an_activated_one_skips_its_backoff() -> None:
    q = SchedulingQueue()
    q.add(key("parked"), 0, (0.0, 0))
    q.add(key("failed"), 0, (1.0, 0))
    q.pop(0.0)
    q.pop(0.0)
    q.park(key("parked"))
    q.park(key("absent"))
    q.requeue_failed(key("failed"), now=0.0, group_size=1)
    assert q.pending() == {"unschedulable": 2}
    assert q.pop(0.0) is None
    q.move_all_to_active()
    parked = q.pop(0.0)  # no attempt counted: no backoff
    assert parked is not None and parked.key == key("parked") and parked.attempts == 0
    assert q.pop(0.0) is None  # the failed one backs off for 1 s
    q.activate(key("failed"))
    q.activate(key("absent"))
    assert q.pop(0.0) is not None


def test_a_removed_root_is_never_popped() -> None:
    q = SchedulingQueue()
    q.add(key("a"), 0, (0.0, 0))
    q.add(key("b"), 0, (1.0, 0))
    q.remove(key("a"))
    assert key("a") not in q and key("b") in q
    assert [r.key for r in q.in_order()] == [key("b")]
    assert q.pop(0.0).key == key("b")  # type: ignore[union-attr]
    assert q.pop(0.0) is None


def test_a_root_that_left_the_pool_is_not_moved_again_by_later_events() -> None:
    """move_all_to_active visits the unschedulable pool only: a root that left it (moved, activated,
    removed) is not sent back to backoff by the next event, even while it is being tried."""
    q = SchedulingQueue()
    for name in ("moved", "activated", "removed"):
        q.add(key(name), 0, (0.0, 0))
        q.pop(0.0)
    q.requeue_failed(key("moved"), now=0.0, group_size=1)
    q.move_to_active(key("moved"))
    q.park(key("activated"))
    q.activate(key("activated"))
    q.park(key("removed"))
    q.remove(key("removed"))
    assert q.pop(5.0) is not None and q.pop(5.0) is not None  # both in flight
    q.move_all_to_active()
    assert q.pending() == {"in-flight": 2}


def test_a_parked_root_added_again_leaves_the_pool() -> None:
    q = SchedulingQueue()
    q.add(key("g"), 0, (0.0, 0))
    q.pop(0.0)
    q.park(key("g"))
    q.add(key("g"), 0, (0.0, 0))  # an event re-adds it: active again, no attempt counted
    assert q.pop(0.0) is not None
    q.move_all_to_active()
    assert q.pending() == {"in-flight": 1}


def test_stale_backoff_entries_do_not_wake_a_root_that_moved_on() -> None:
    """A root activated before its backoff ended, or removed while backing off, leaves an entry behind
    in the backoff heap; when that time comes the entry is skipped."""
    q = SchedulingQueue()
    q.add(key("activated"), 0, (0.0, 0))
    q.add(key("removed"), 0, (1.0, 0))
    q.pop(0.0)
    q.pop(0.0)
    for name in ("activated", "removed"):
        q.requeue_failed(key(name), now=0.0, group_size=1)
        q.move_to_active(key(name))
    q.activate(key("activated"))
    q.remove(key("removed"))
    assert q.pop(0.0) is not None  # the activated root, now in flight
    assert q.pop(5.0) is None
    assert q.pending() == {"in-flight": 1}


def test_under_strict_fifo_the_head_in_flight_blocks_the_rest() -> None:
    q = SchedulingQueue(policy=QUEUE_POLICIES["gang-strict-fifo"])
    q.add(key("a"), 0, (0.0, 0))
    q.add(key("b"), 0, (1.0, 0))
    assert q.pop(0.0).key == key("a")  # type: ignore[union-attr]
    assert q.pop(0.0) is None  # a is being tried: nothing overtakes it
    assert q.pending() == {"in-flight": 1, "active": 1}
    q.remove(key("a"))
    assert q.pop(0.0).key == key("b")  # type: ignore[union-attr]
