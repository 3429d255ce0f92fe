"""Virtual time for the decision core: one clock shared by the Store and the Scheduler, timed events, and the
loop that interleaves them with scheduling cycles, on simpy's `peek` / `step` / `run(until)`.

    timeline = Timeline(store, scheduler)
    timeline.at(60.0, lambda: store.add(pod))      # something that happens to the world at t = 60 s
    timeline.run(until=3600.0)                     # events and cycles in time order, stop before t = 3600 s

Order at one instant: every event due at `now` fires first (by priority, then the order they were scheduled),
then cycles run while a root is ready; only then does time move on, to the next event or the end of a backoff,
whichever comes first. Cycles take no virtual time. `run_until_stable` is `run()` with no events: it returns
when no root is ready and none is backing off (roots waiting in the unschedulable pool wait for an event, and
the periodic flush does not count as one there: it could only repeat a failed cycle).

Contract: single-threaded; deterministic for the same store, scheduler seed and events. Live mode does not use
this loop (its clock is the wall clock and its events come from informers) but drives the same Scheduler.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable
from functools import partial
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from ..store.store import Store
    from .scheduler import Scheduler

__all__ = ["Event", "Timeline", "VirtualClock", "run_until_stable"]


class VirtualClock:
    """Seconds of virtual time; callable, so it serves wherever a `Callable[[], float]` clock is expected."""

    __slots__ = ("now",)

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class Event(NamedTuple):
    """Something that happens to the world at `time`; lower `priority` first among events at one time, then
    the order they were scheduled (`seq` is unique, so `action` is never compared)."""

    time: float
    priority: int
    seq: int
    action: Callable[[], None]


class Timeline:
    """Drives `scheduler` over `store` in virtual time. Mutates the store (events, applied Decisions)."""

    def __init__(self, store: Store, scheduler: Scheduler, *, start: float = 0.0) -> None:
        self.store = store
        self.scheduler = scheduler
        self.clock = VirtualClock(start)
        store.clock = self.clock  # conditions are stamped with the virtual time
        scheduler.clock = self.clock
        self._events: list[Event] = []
        self._seq = 0
        self._idle = False  # the scheduler has nothing ready at `now` (reset by any event or decision)

    @property
    def now(self) -> float:
        return self.clock.now

    def at(self, time: float, action: Callable[[], None], priority: int = 0) -> None:
        """Schedule `action` at `time` (not before now)."""
        self._seq += 1
        heapq.heappush(self._events, Event(max(time, self.clock.now), priority, self._seq, action))

    def at_each(self, actions: Iterable[tuple[float, Callable[[], None]]], priority: int = 0) -> None:
        """Schedule every (time, action) of `actions` as `at` would, one after the other: the same times and
        the same order among them and with every other event. But only the earliest of them not fired yet
        is in the heap at any time, the next one pushed as it fires: a replay schedules every job's
        submission at the start, and a heap of 82,000 events costs each push and pop of the run about twice
        the levels, each read from memory far apart, of one holding those in flight."""
        now, first = self.clock.now, self._seq
        stream = [Event(max(t, now), priority, first + i, a) for i, (t, a) in enumerate(actions, 1)]
        self._seq += len(stream)
        stream.sort(reverse=True)  # seq is unique: actions are never compared; popped from the end
        if stream:
            self._feed(stream)

    def _feed(self, stream: list[Event]) -> None:
        """Push the earliest event of `stream` (`at_each`), to push the next when it fires."""
        e = stream.pop()
        heapq.heappush(self._events, e._replace(action=partial(self._fed, stream, e.action)))

    def _fed(self, stream: list[Event], action: Callable[[], None]) -> None:
        if stream:
            self._feed(stream)
        action()

    def peek(self) -> float:
        """When the next thing happens: now if a cycle or event is due, inf when nothing ever will."""
        now = self.clock.now
        if self._events and self._events[0].time <= now:
            return now
        gone = self.store.next_termination_at()  # an evicted pod that finishes terminating frees its room
        if gone is not None and gone <= now:
            return now
        if not self._idle:
            return now
        nxt = min(self._events[0].time if self._events else math.inf, math.inf if gone is None else gone)
        ready = self.scheduler.queue.next_ready_at()
        return min(nxt, ready) if ready is not None else nxt

    def step(self) -> bool:
        """Fire one due event or run one cycle, or else move the clock to the next thing; False when there
        is nothing left to do at all."""
        now = self.clock.now
        events = self._events
        if events and events[0].time <= now:
            heapq.heappop(events).action()
            self._idle = False
            return True
        gone = self.store.next_termination_at()
        if gone is not None and gone <= now:
            self.store.finish_terminations(now)
            self._idle = False
            return True
        if not self._idle:
            decision = self.scheduler.schedule_one(now)
            if decision is not None:
                self.store.apply(decision)
                return True
            self._idle = True
        nxt = self.peek()
        if nxt == math.inf:
            return False
        self.clock.now = max(now, nxt)
        self._idle = False  # a backoff ended (or the store was changed from outside): try again
        return True

    def run(
        self, until: float | None = None, events: Iterable[tuple[float, Callable[[], None]]] = ()
    ) -> float:
        """Schedule `events` (time, action), then step until `until` (events at `until` do not fire) or until
        nothing is left; returns the time reached (`until` when given)."""
        for time, action in events:
            self.at(time, action)
        limit = math.inf if until is None else until
        while self.peek() < limit:
            if not self.step():
                break
        if until is not None:
            self.clock.now = max(self.now, until)
        return self.now


def run_until_stable(store: Store, scheduler: Scheduler, *, max_cycles: int = 10_000_000) -> float:
    """Schedule and apply until nothing can change; returns the virtual time reached (backoffs waited,
    terminating pods gone)."""
    timeline = Timeline(store, scheduler)
    start = scheduler.cycles
    while timeline.step():
        if scheduler.cycles - start > max_cycles:
            raise RuntimeError(f"scheduler did not settle within {max_cycles} cycles")
    return timeline.now
