"""Queue policies: the order in which waiting roots get a cycle, and whether a later root may overtake one
that cannot be placed. A Profile holds one (`Profile(queue_policy=queue_policy("gang-sjf"))`, `--policy`).

| name               | order                                   | a later root that fits may overtake |
|--------------------|-----------------------------------------|--------------------------------------|
| `gang`             | priority, then creation (upstream v1.37) | yes                                  |
| `gang-strict-fifo` | priority, then creation                  | no: only the head is ever tried      |
| `gang-sjf`         | priority, then known run time, creation  | yes                                  |
| `pod-by-pod`       | priority, then creation; no groups       | yes (GenericWorkload off)            |
| `gang-backfill`    | priority, then creation                  | only where it delays no reservation  |

`gang-backfill` is `gang` plus reservations and backfill (backfill.py, docs/backfill.md), with the settings in
`Profile.backfill` (default: depth 1, EASY backfill).

Run times come from the `gangsched.io/duration` annotation (api/duration.py); a root without one sorts after
every root with one under `gang-sjf`.
"""

from __future__ import annotations

import math
from typing import Protocol

from msgspec import Struct

__all__ = ["QUEUE_POLICIES", "OrderPolicy", "QueuePolicy", "SortKey", "queue_policy"]

# (-priority, run time or 0, creation seconds, creation order, seq): flat rather than with the timestamp as a
# pair inside, which orders the same; the queue's heap compares thousands of them a second, and a nested tuple
# is compared again at each level (equality to find where they differ, then order).
SortKey = tuple[int, float, float, int, int]


class QueuePolicy(Protocol):
    """Queue order and overtaking. `sort_key` must be a total order (it ends with the root's sequence number);
    `strict_fifo` roots are tried only when first in that order; `groups=False` schedules pod by pod."""

    @property
    def name(self) -> str: ...
    @property
    def strict_fifo(self) -> bool: ...
    @property
    def groups(self) -> bool: ...
    @property
    def by_runtime(self) -> bool: ...  # whether `sort_key` reads the run time (else roots are not asked)

    def sort_key(self, priority: int, runtime: float, timestamp: tuple[float, int], seq: int) -> SortKey: ...


class OrderPolicy(Struct, frozen=True):
    """Priority, then (with `by_runtime`) the known run time, then creation; the four named policies."""

    name: str
    strict_fifo: bool = False
    groups: bool = True
    by_runtime: bool = False

    def sort_key(self, priority: int, runtime: float, timestamp: tuple[float, int], seq: int) -> SortKey:
        known = runtime if self.by_runtime and not math.isnan(runtime) else math.inf
        return (-priority, known if self.by_runtime else 0.0, timestamp[0], timestamp[1], seq)


_: QueuePolicy = OrderPolicy("gang")  # conformance, as upstream declares `var _ FilterPlugin = &Fit{}`

QUEUE_POLICIES: dict[str, QueuePolicy] = {
    p.name: p
    for p in (
        OrderPolicy("gang"),
        OrderPolicy("gang-strict-fifo", strict_fifo=True),
        OrderPolicy("gang-sjf", by_runtime=True),
        OrderPolicy("pod-by-pod", groups=False),
        OrderPolicy("gang-backfill"),
    )
}


def queue_policy(name: str) -> QueuePolicy:
    """The policy called `name`; ValueError naming the known ones otherwise."""
    try:
        return QUEUE_POLICIES[name]
    except KeyError:
        raise ValueError(f"unknown queue policy {name!r} (known: {', '.join(QUEUE_POLICIES)})") from None
