"""Per-domain sums of a per-node quantity (free capacity for a pod class, requested cpu...), kept in step
with the snapshot's change log, so that scoring every topology placement costs O(domains) per group."""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Hashable
from operator import add, sub
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

import numpy as np

from .snapshot import Snapshot

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = ["FEW", "DomainBests", "DomainSums", "NodeValues", "retie"]

Int64Array: TypeAlias = "npt.NDArray[np.int64]"
Columns: TypeAlias = "npt.NDArray[np.intp]"

# Up to this many changed nodes are refreshed one by one in scalar code: a group's few nodes cost less so
# than in a dozen numpy calls on tiny arrays (numpy's per-call overhead dominates below ~50 elements).
FEW = 16


class NodeValues(Protocol):
    """The rows of a per-node quantity, computed two ways that give the same integers: `many` for a block
    of nodes (rows x nodes), `one` for a single node (one int per row)."""

    def many(self, cols: Columns) -> Int64Array: ...

    def one(self, col: int) -> list[int]: ...


class DomainSums:
    """`columns[i]` = sum over the nodes whose value of `key` is the i-th in value order (the order of
    `snap.domains(key)`, which is that of the placements over all nodes) of `values.many(nodes)[:, node]`,
    one Python int per row. `column[code]` is the column of a label code.

    The sums are kept as Python ints, a list per column, because their users read and write them a column
    at a time (the domain a group changed): a list's item costs a fraction of an int64 array's cell, and a
    column's rows are added in one `map`. A column's list is replaced, never changed, so a list read stays
    as it was read. `array` gives them as an int64 array for a pass over many columns.

    The values must depend only on the snapshot's per-node state, so that a node's value changes only when
    the node appears in the change log."""

    def __init__(self, snap: Snapshot, key: str, values: NodeValues) -> None:
        self.snap = snap
        ordered = snap.domains(key)[2]
        self.size = len(ordered)
        self.column: list[int] = [0] * self.size
        for i, (_, code) in enumerate(ordered):
            self.column[code] = i
        codes = snap.label_codes(key)
        # each node's column, -1 for a node without the key
        self._node_column: list[int] = [self.column[code] if code >= 0 else -1 for code in codes.tolist()]
        self.node_column = np.array(self._node_column, dtype=np.intp)
        self.values = values
        # Columns whose sums changed, in order, for the results kept per column by the sums' users
        # (`derived`): they read the log from where they left it, and start over when `rebuilds` moves.
        self.touched: list[int] = []
        self.rebuilds = 0
        self.derived: dict[Hashable, Any] = {}
        self._rebuild()

    def _rebuild(self) -> None:
        every = self.values.many(np.arange(len(self.snap), dtype=np.intp))
        # each node's values as a list (what `values.one` gives): a few nodes are compared and updated in
        # scalar code
        self.per_node: list[list[int]] = every.T.tolist()
        labelled = np.flatnonzero(self.node_column >= 0)
        self.rows = every.shape[0]
        self.columns: list[list[int]] = self._summed(labelled, every[:, labelled]).T.tolist()
        self.synced, self.generation = len(self.snap.changed), self.snap.generation
        self.touched.clear()
        self.rebuilds += 1

    def _summed(self, cols: Columns, values: Int64Array) -> Int64Array:
        """`values` (rows x `cols`, labelled nodes only) summed per column, exact in int64."""
        sums = np.zeros((values.shape[0], self.size), dtype=np.int64)
        # one unbuffered add for every row at once (nodes of one domain add up), through transposed views
        np.add.at(sums.T, self.node_column[cols], values.T)
        return sums

    def array(self, columns: list[int] | None = None) -> Int64Array:
        """The sums of `columns` (all when None) as an int64 array, rows x columns."""
        kept = self.columns
        picked = kept if columns is None else [kept[column] for column in columns]
        return np.array(picked, dtype=np.int64).reshape(len(picked), self.rows).T

    def current(self) -> list[list[int]]:
        changed = self.snap.changed
        if self.generation != self.snap.generation:  # the log was cleared: start over
            self._rebuild()
        elif self.synced < len(changed):
            pending = set(changed[self.synced :])
            if len(pending) <= FEW:
                self._refresh_few(pending)
            else:
                cols = np.fromiter(pending, dtype=np.intp)
                cols = cols[self.node_column[cols] >= 0]
                new = self.values.many(cols)
                per_node, columns = self.per_node, self.columns
                old = np.array([per_node[col] for col in cols.tolist()], np.int64).T
                delta = self._summed(cols, new - old)
                for col, values in zip(cols.tolist(), new.T.tolist(), strict=True):
                    per_node[col] = values
                touched = set(self.node_column[cols].tolist())
                for column in touched:
                    columns[column] = list(map(add, columns[column], delta[:, column].tolist()))
                self.touched.extend(touched)
            self.synced = len(changed)
        return self.columns

    def column_sums(self, column: int) -> list[int]:
        """The sums of `column` as Python ints (the kept list: not to be changed)."""
        return self.columns[column]

    def _refresh_few(self, cols: set[int]) -> None:
        per_node, node_column, one = self.per_node, self._node_column, self.values.one
        delta: dict[int, list[int]] = {}  # column -> change of its sums (a group's nodes share a domain)
        for col in cols:
            column = node_column[col]
            if column < 0:
                continue
            new, old = one(col), per_node[col]
            if new == old:
                continue
            per_node[col] = new
            before = delta.get(column)
            change = list(map(sub, new, old))
            delta[column] = change if before is None else list(map(add, before, change))
        columns = self.columns
        for column, change in delta.items():
            columns[column] = list(map(add, columns[column], change))
        self.touched.extend(delta)


class DomainBests:
    """Per domain of one topology key, the best value of a per-node row over the domain's nodes and the
    nodes that have it, in node order: what find_node picks among when a group's candidates are one whole
    domain (a placement over all nodes), so that a pod need not gather and scan the domain's nodes for a
    maximum that one placement rarely moves.

    `row` is an evaluator class's fit-and-score row, which its owner keeps current with the snapshot's change
    log (it is refreshed before every read): a node's value changes only when the node appears in the log,
    so each domain's best is brought in step there, as the evaluator's `_retie` does for the best over all
    nodes. A domain's best is found again (from `row`) when a value rises above it, when no tie is left,
    or when more than FEW nodes changed since the last read."""

    def __init__(self, snap: Snapshot, key: str, row: Int64Array) -> None:
        self.snap, self.row = snap, row
        self._cells = row.data  # the row's values as Python ints, one node at a time
        perm, starts, ordered = snap.domains(key)
        bounds = [*starts.tolist(), len(perm)]
        # each label code's nodes in node order (the permutation's runs are stable-sorted)
        self.cols: list[Columns] = [perm[bounds[code] : bounds[code + 1]] for code in range(len(ordered))]
        self._node_code: list[int] = snap.label_codes(key).tolist()
        self._best: dict[int, tuple[int, array[int]]] = {}  # label code -> (top, ties): kept ones only
        self.synced, self.generation = len(snap.changed), snap.generation

    def best(self, code: int) -> tuple[int, array[int]]:
        """(the best of `row` over the nodes of label code `code`, those nodes with it, in node order)."""
        self._sync()
        kept = self._best.get(code)
        if kept is None:
            cols = self.cols[code]
            values = self.row[cols]
            top = int(values.max())
            kept = self._best[code] = (top, array("q", cols[values == top].astype(np.int64).tobytes()))
        return kept

    def _sync(self) -> None:
        snap, changed = self.snap, self.snap.changed
        if self.generation != snap.generation or len(changed) - self.synced > FEW:
            self._best.clear()  # found again per domain when read: cheaper than following many changes
        elif len(changed) > self.synced:
            cells, node_code, kept_bests = self._cells, self._node_code, self._best
            fresh = changed[self.synced :]  # usually the one node the previous pod went to
            for col in fresh if len(fresh) == 1 else set(fresh):
                code = node_code[col]
                kept = kept_bests.get(code)
                if kept is not None and not retie(kept[0], kept[1], col, cells[col]):
                    del kept_bests[code]
        self.synced, self.generation = len(changed), snap.generation


def retie(top: int, ties: array[int], col: int, value: int) -> bool:
    """Bring `ties` (the nodes, in node order, whose value is `top`, the best) in step with node `col`'s
    new `value`; False when the best must be found again (a value above it, or no tie left)."""
    if value > top:
        return False
    i = bisect_left(ties, col)
    present = i < len(ties) and ties[i] == col
    if value == top and not present:
        ties.insert(i, col)
    elif value < top and present:
        del ties[i]
    return bool(ties)
