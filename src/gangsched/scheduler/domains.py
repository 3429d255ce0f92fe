"""Per-domain sums of a per-node quantity (free capacity for a pod class, requested cpu...), kept in step
with the snapshot's change log, so that scoring every topology placement costs O(domains) per group."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from .snapshot import Snapshot

__all__ = ["DomainSums"]

Int64Array = npt.NDArray[np.int64]
Columns = npt.NDArray[np.intp]


class DomainSums:
    """`sums[..., code]` = sum over the nodes labelled `code` for `key` of `values_of(nodes)[..., node]`,
    exact in int64; `values_of` may return one row per node or several (rows x nodes).

    `values_of` must depend only on the snapshot's per-node state, so that a node's value changes only when
    the node appears in the change log."""

    def __init__(self, snap: Snapshot, key: str, values_of: Callable[[Columns], Int64Array]) -> None:
        self.snap = snap
        self.codes = snap.label_codes(key)
        self.values_of = values_of
        self.size = len(snap.label_values.get(key, {}))
        self._rebuild()

    def _rebuild(self) -> None:
        self.per_node: Int64Array = self.values_of(np.arange(len(self.snap), dtype=np.intp))
        labelled = np.flatnonzero(self.codes >= 0)
        self.sums: Int64Array = np.zeros((*self.per_node.shape[:-1], self.size), dtype=np.int64)
        self._add(labelled, self.per_node[..., labelled])
        self.synced = len(self.snap.changed)

    def _add(self, cols: Columns, delta: Int64Array) -> None:
        # one unbuffered add for every row at once (nodes of one domain add up), through transposed views
        np.add.at(self.sums.T, self.codes[cols], delta.T)

    def current(self) -> Int64Array:
        changed = self.snap.changed
        if self.synced > len(changed):  # the log was cleared: start over
            self._rebuild()
        elif self.synced < len(changed):
            # Usually the handful of nodes the last group went to: a set beats np.unique there.
            cols = np.fromiter(set(changed[self.synced :]), dtype=np.intp)
            cols = cols[self.codes[cols] >= 0]
            new = self.values_of(cols)
            self._add(cols, new - self.per_node[..., cols])
            self.per_node[..., cols] = new
            self.synced = len(changed)
        return self.sums
