"""The scheduling queue of roots (standalone pods, PodGroups, root CompositePodGroups), as upstream's
pkg/scheduler/backend/queue/scheduling_queue.go.

A root is in exactly one place: active (ready to try, ordered by priority then timestamp), backoff (tried and
failed; ready again at `ready_at`), unschedulable (failed; waits for an event that may help) or absent.
Gating (PreEnqueue) is decided by the scheduler, which simply does not add a gated root.
A root left in the unschedulable pool longer than `max_unschedulable_s` (upstream's
podMaxInUnschedulablePodsDuration, 5 min) is moved back at the next `pop`, as upstream's periodic
flushUnschedulableEntitiesLeftover does: a safety net for events no hint foresaw (docs/queue.md).
Time is passed in (a virtual clock in the CLI and the simulator, wall time live), never read here.
"""

from __future__ import annotations

import heapq
import math

from msgspec import Struct

from .policy import QUEUE_POLICIES, QueuePolicy, SortKey

__all__ = ["QueuedRoot", "RootKey", "SchedulingQueue", "backoff_seconds"]

RootKey = tuple[str, str, str]  # (kind, namespace, name)

INITIAL_BACKOFF = 1.0
MAX_BACKOFF = 10.0
MAX_UNSCHEDULABLE_SECONDS = 300.0  # DefaultPodMaxInUnschedulablePodsDuration


def backoff_seconds(attempts: int, group_size: int) -> float:
    """min(1s * 2^(attempts-1), 10s * sqrt(groupSize)), as upstream's backoff."""
    if attempts <= 0:
        return 0.0
    return float(
        min(INITIAL_BACKOFF * 2 ** min(attempts - 1, 60), MAX_BACKOFF * math.sqrt(max(group_size, 1)))
    )


class QueuedRoot(Struct, gc=False):
    # (Not tracked by the garbage collector, which halves the cost of making one: nothing it holds refers
    # back to it.)
    key: RootKey
    priority: int
    timestamp: tuple[float, int]
    attempts: int = 0
    ready_at: float = 0.0
    state: str = "active"
    seq: int = 0
    unschedulable_since: float = 0.0
    runtime: float = math.inf  # known run time (s), for gang-sjf (inf under policies that never read it)
    policy: QueuePolicy = QUEUE_POLICIES["gang"]
    # `sort_key()` once computed (None: not yet). Of what it reads only the priority ever changes, and only
    # `SchedulingQueue.add` changes it, dropping this: every root pushed and popped reads it several times.
    kept_sort_key: SortKey | None = None

    def sort_key(self) -> SortKey:
        key = self.kept_sort_key
        if key is None:
            key = self.policy.sort_key(self.priority, self.runtime, self.timestamp, self.seq)
            self.kept_sort_key = key
        return key


class SchedulingQueue:
    """Priority queue of roots with backoff and an unschedulable pool. Not thread-safe."""

    def __init__(
        self,
        *,
        max_unschedulable_s: float | None = MAX_UNSCHEDULABLE_SECONDS,
        policy: QueuePolicy = QUEUE_POLICIES["gang"],
    ) -> None:
        """`max_unschedulable_s=None`: no periodic flush (a closed simulation, where every event is known).
        `policy`: the order of roots; under strict FIFO only the first root in that order is ever popped."""
        self.policy = policy
        self._roots: dict[RootKey, QueuedRoot] = {}
        self._active: list[tuple[SortKey, RootKey]] = []
        self._all: list[tuple[SortKey, RootKey]] = []  # every root in order (strict FIFO's head)
        self._backoff: list[tuple[float, int, RootKey]] = []
        self._unschedulable: list[tuple[float, int, RootKey]] = []  # (since, seq, key), stale entries skipped
        self._seq = 0
        # Roots in the unschedulable pool: what move_all_to_active visits (it runs on every store event
        # that may help, with thousands of roots queued).
        self._parked: set[RootKey] = set()
        self.max_unschedulable_s = max_unschedulable_s
        self.priority_changes = 0  # of roots already queued (planners that keep roots by priority follow it)

    def __contains__(self, key: RootKey) -> bool:
        return key in self._roots

    def get(self, key: RootKey) -> QueuedRoot | None:
        return self._roots.get(key)

    def add(
        self, key: RootKey, priority: int, timestamp: tuple[float, int], runtime: float = math.inf
    ) -> None:
        """Make `key` active (new roots), keeping attempts and timestamp of a root already known."""
        root = self._roots.get(key)
        if root is None:  # a new root (every root comes here once): never tried, so active at once
            self._seq += 1
            root = QueuedRoot(key, priority, timestamp, seq=self._seq, runtime=runtime, policy=self.policy)
            self._roots[key] = root
            if self.policy.strict_fifo:
                heapq.heappush(self._all, (root.sort_key(), key))
            heapq.heappush(self._active, (root.sort_key(), key))
            return
        if root.state == "active":
            return
        reordered = root.priority != priority
        self.priority_changes += reordered
        if reordered:
            root.priority, root.kept_sort_key = priority, None
        self._parked.discard(key)
        if reordered and self.policy.strict_fifo:
            heapq.heappush(self._all, (root.sort_key(), key))
        if root.attempts:
            self._to_backoff(root)
        else:
            root.state = "active"
            heapq.heappush(self._active, (root.sort_key(), key))

    def _to_backoff(self, root: QueuedRoot) -> None:
        self._parked.discard(root.key)
        root.state = "backoff"
        heapq.heappush(self._backoff, (root.ready_at, root.seq, root.key))

    def remove(self, key: RootKey) -> None:
        self._roots.pop(key, None)  # stale heap entries are skipped on pop
        self._parked.discard(key)

    def requeue_failed(self, key: RootKey, now: float, group_size: int, keep_timestamp: bool = True) -> None:
        """After a failed attempt: the root waits in the unschedulable pool for a helpful event."""
        root = self._roots.get(key)
        if root is None:
            return
        root.attempts += 1
        root.ready_at = now + backoff_seconds(root.attempts, group_size)
        root.state = "unschedulable"
        self._parked.add(key)
        root.unschedulable_since = now
        if self.max_unschedulable_s is not None:
            heapq.heappush(self._unschedulable, (now, root.seq, key))

    def ready_by(self, key: RootKey, now: float) -> bool:
        """True if `key`'s backoff is over at `now` (it would be tried as soon as it is moved)."""
        root = self._roots.get(key)
        return root is not None and root.ready_at <= now

    def move_to_active(self, key: RootKey) -> None:
        """An event that may help `key`: from the unschedulable pool to backoff (or active once ready)."""
        root = self._roots.get(key)
        if root is not None and root.state == "unschedulable":
            self._to_backoff(root)

    def park(self, key: RootKey) -> None:
        """Back to the unschedulable pool without counting an attempt (it was not tried: upstream's
        PreEnqueue turned it away)."""
        root = self._roots.get(key)
        if root is not None:
            root.state = "unschedulable"
            self._parked.add(key)

    def activate(self, key: RootKey) -> None:
        """Straight to active, whatever its backoff: the event it waited for has come (the last victims of
        its preemption are gone), so waiting longer would only leave the room it made unused."""
        root = self._roots.get(key)
        if root is not None and root.state in ("unschedulable", "backoff"):
            self._parked.discard(key)
            root.state = "active"
            heapq.heappush(self._active, (root.sort_key(), key))

    def move_all_to_active(self) -> None:
        for key in sorted(self._parked, key=lambda k: self._roots[k].seq):  # in queue order, as before
            self._to_backoff(self._roots[key])

    def _flush_backoff(self, now: float) -> None:
        while self._backoff and self._backoff[0][0] <= now:
            ready_at, _, key = heapq.heappop(self._backoff)
            root = self._roots.get(key)
            if root is not None and root.state == "backoff" and root.ready_at == ready_at:
                root.state = "active"
                heapq.heappush(self._active, (root.sort_key(), key))

    def _flush_unschedulable_leftover(self, now: float) -> None:
        """Roots unschedulable for longer than max_unschedulable_s go back to backoff (or active)."""
        limit = self.max_unschedulable_s
        if limit is None:
            return
        while self._unschedulable and now - self._unschedulable[0][0] > limit:
            since, _, key = heapq.heappop(self._unschedulable)
            root = self._roots.get(key)
            if root is not None and root.state == "unschedulable" and root.unschedulable_since == since:
                self._to_backoff(root)

    def head(self) -> QueuedRoot | None:
        """The first root in policy order whatever its state (strict FIFO only: None otherwise)."""
        while self._all:
            sort_key, key = self._all[0]
            root = self._roots.get(key)
            if root is not None and root.sort_key() == sort_key:
                return root
            heapq.heappop(self._all)
        return None

    def pop(self, now: float) -> QueuedRoot | None:
        """The most important ready root, or None. Under strict FIFO: the head, if it is ready."""
        if self._unschedulable:  # (most pops, with every root tried once at most: neither call)
            self._flush_unschedulable_leftover(now)
        if self._backoff:
            self._flush_backoff(now)
        if self.policy.strict_fifo:
            head = self.head()
            if head is None or head.state != "active":
                return None
            head.state = "in-flight"
            return head
        while self._active:
            sort_key, key = heapq.heappop(self._active)
            root = self._roots.get(key)
            if root is not None and root.state == "active" and root.sort_key() == sort_key:
                root.state = "in-flight"
                return root
        return None

    def next_ready_at(self) -> float | None:
        """When the earliest root in backoff becomes ready; None if none is waiting on time."""
        if self.policy.strict_fifo:
            head = self.head()
            return head.ready_at if head is not None and head.state == "backoff" else None
        while self._backoff:
            ready_at, _, key = self._backoff[0]
            root = self._roots.get(key)
            if root is not None and root.state == "backoff" and root.ready_at == ready_at:
                return ready_at
            heapq.heappop(self._backoff)
        return None

    def roots(self) -> list[QueuedRoot]:
        """Every root the queue holds, in any state (for planners and `explain`)."""
        return list(self._roots.values())

    def in_order(self) -> list[QueuedRoot]:
        """Every root in the queue, in the order they are tried (priority, then timestamp), whatever their
        state: a root in backoff or unschedulable takes this place once it is active again."""
        return sorted(self.roots(), key=QueuedRoot.sort_key)

    def pending(self) -> dict[str, int]:
        """Roots per state, for metrics and tests."""
        out: dict[str, int] = {}
        for r in self._roots.values():
            out[r.state] = out.get(r.state, 0) + 1
        return out
