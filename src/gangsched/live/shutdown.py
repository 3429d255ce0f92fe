"""Bounded shutdown: one deadline for every stage after SIGTERM, steps abandoned when they overrun it.

kube-scheduler stops on SIGTERM without waiting for its bindings in flight (their context is cancelled), and
client-go's leader election then releases the Lease (ReleaseOnCancel, bounded by RenewDeadline). gangsched
does the same within one budget; see live/runner.py for the stages.

    budget = ShutdownBudget(5.0)
    with budget.stage("writes in flight") as notes:          # logs "shutdown: writes in flight in 0.12 s"
        abandoned = await settle(tasks, budget.left(keep=2.0))
    released = await within(elector.release(), budget.left())   # TimeoutError: abandoned

Contract: `settle` and `within` return at most CANCEL_GRACE after the time they are given; what they abandon
is cancelled, never waited for beyond that.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import threading
import time
from collections.abc import Awaitable, Iterable, Iterator
from typing import Any, TypeVar

__all__ = ["CANCEL_GRACE", "ShutdownBudget", "Watchdog", "settle", "within"]

log = logging.getLogger("gangsched.live")
T = TypeVar("T")
CANCEL_GRACE = 0.1  # seconds an abandoned step gets to unwind once cancelled


class ShutdownBudget:
    """A deadline `seconds` from `started` (now by default). `left(keep)` is the time a stage may take so
    that `keep` seconds remain for the stages after it; `stage(name)` logs the stage's duration, with what
    was appended to the list it yields, when the stage ends."""

    def __init__(self, seconds: float, started: float | None = None) -> None:
        self.seconds = seconds
        self.started = time.monotonic() if started is None else started  # time.monotonic()'s clock
        self.deadline = self.started + seconds

    def left(self, keep: float = 0.0) -> float:
        return max(0.0, self.deadline - keep - time.monotonic())

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[list[str]]:
        began = time.monotonic()
        notes: list[str] = []
        try:
            yield notes
        finally:
            said = f" ({'; '.join(notes)})" if notes else ""
            log.info("shutdown: %s in %.2f s%s", name, time.monotonic() - began, said)


async def settle(tasks: Iterable[asyncio.Future[Any]], seconds: float) -> int:
    """Wait up to `seconds` for `tasks` to end; cancel those still running and give them CANCEL_GRACE to
    unwind. Returns how many were abandoned so (0: all ended in time)."""
    pending = {t for t in tasks if not t.done()}
    if pending and seconds > 0:
        _, pending = await asyncio.wait(pending, timeout=seconds)
    if not pending:
        return 0
    for task in pending:
        task.cancel()
    await asyncio.wait(pending, timeout=CANCEL_GRACE)
    return len(pending)


async def within(step: Awaitable[T], seconds: float) -> T:
    """`step`'s result if it ends within `seconds` (its exception is raised); else it is abandoned and
    TimeoutError raised. Unlike asyncio.wait_for, never waits for the abandoned step beyond CANCEL_GRACE."""
    task = asyncio.ensure_future(step)
    if await settle((task,), seconds):
        raise TimeoutError(f"abandoned after {seconds:.1f} s")
    return task.result()


class Watchdog:
    """Ends the process `seconds` after `arm(code)` unless it has ended by then: the last resort for a step
    that blocks the event loop itself (a long scheduling cycle, a render), which the deadlines above cannot
    interrupt. Its thread starts waiting at once, so that `arm` only sets an Event: safe from a signal
    handler, which may interrupt the main thread anywhere. A daemon thread: it never keeps the process
    alive."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.code = 0
        self._armed = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="shutdown-watchdog", daemon=True)
        self._thread.start()

    def arm(self, code: int = 0) -> None:
        if not self._armed.is_set():
            self.code = code
            self._armed.set()

    def _watch(self) -> None:
        self._armed.wait()
        time.sleep(self.seconds)
        log.error("shutdown: not finished %.1f s after it began; exiting now", self.seconds)
        logging.shutdown()  # flush the logs: os._exit skips it
        sys.stderr.flush()
        os._exit(self.code)
