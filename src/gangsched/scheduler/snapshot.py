"""The cluster as numpy arrays over nodes: what one scheduling cycle reads and tentatively changes.

Rows of `alloc` / `used` are resources (cpu, memory, pods, ephemeral-storage, then extended resources such as
nvidia.com/gpu, added as they are first seen), columns are nodes, values integer milli-units (pods: count x
1000). Node labels are integer codes per key (-1: label absent), taints are grouped into distinct taint sets
so that a pod's tolerations are checked once per set, not once per node.

Every change to a node's usage is appended to `changed`, so per-pod caches can refresh just those columns;
every pod placed or removed is appended to `pod_log` with its traits, so per-node counters of pods (ports,
label selectors, affinity terms: `podcounts.py`) can follow the same way. Both logs are cleared together
(`clear_logs`), which bumps `generation` so that every follower starts over.
`place` returns its undo, as upstream's AssumeAndReserveInSnapshot returns a revert function.

`version` names what the snapshot counts (pods placed and nominated, resource rows): every change gives a
new one, and an undo made while nothing else changed since its change gives the old one back, so a trial
placement that was reverted leaves the version as it found it. Equal versions of one snapshot mean equal
counts: planners reuse what they computed while the version stands (earliest_starts.py).

Pods nominated to a node by preemption (upstream's nominator) are kept apart from `used`: they hold room only
in the filters of pods of equal or lower priority (`held_for`), one (resources x nodes) array per priority
level, so a pod's check costs a sum over the levels at or above its own, not a pass over pods. Placing a
nominated pod (assume/reserve) takes its nomination away, and the undo gives it back (docs/preemption.md).

Extended resources a DeviceClass serves (`dra_resources`, DRAExtendedResource) are NodeResourcesFit's to skip
on a node whose allocatable does not offer them (noderesources/fit.go shouldDelegateResourceToDRA):
DynamicResources allocates devices for them there instead. Their row holds `DRA_SERVED` on those nodes, room
no request exhausts, so that every fit check, room count and failure message treats them as skipped
without a rule of its own; `dra_served(resource)` names those nodes.
"""

from __future__ import annotations

import contextlib
import itertools
from array import array
from collections.abc import Callable, Iterable
from functools import partial
from itertools import compress
from operator import itemgetter
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
from msgspec import Struct

from ..api.quantity import QuantityError, milli
from .podtraits import PodTraits

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = ["BASE_RESOURCES", "DRA_SERVED", "PodVector", "Snapshot", "Taint", "split_state"]

BASE_RESOURCES = ("cpu", "memory", "pods", "ephemeral-storage")
CPU, MEMORY, PODS = 0, 1, 2
_MORE_THAN_ANY = 1 << 62  # more pods than a node holds: where a minimum over a vector's rows starts
# Quantities beyond this (about 9e12 units: 8 PiB of memory) count as this much, so that no int64 sum in the
# snapshot overflows; validation accepts `1e38Ei` as upstream does.
MAX_MILLI = 2**53
# Allocatable standing for "served by DRA": above any request (MAX_MILLI) even after two such requests are
# counted as used there (a sum of it over nodes is meaningless: see `dra_rows`).
DRA_SERVED = MAX_MILLI * 4
# kubelet's default --max-pods, for Node objects written by hand without allocatable pods.
DEFAULT_MAX_PODS = 110
# Node labels are coded key by key while keys x nodes stays within this many times the labels (Snapshot).
_DENSE_LABELS = 3
# A group of at most this many pods alike is counted in or out node by node (`_shift`): about a microsecond
# a pod, where the bincount path costs tens of microseconds a group whatever its size.
_FEW_PODS = 32
_ABSENT = object()  # a node without the label key
_NO_LABELS: dict[str, str] = {}
_NO_AMOUNTS: dict[str, Any] = {}
_HOSTNAME = "kubernetes.io/hostname"

Int64Array: TypeAlias = "npt.NDArray[np.int64]"
BoolArray: TypeAlias = "npt.NDArray[np.bool_]"


def split_state(state: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """A node's `Snapshot.state` as (allocatable, used, non-zero used cpu and memory): one row each per
    resource, then the two non-zero rows."""
    rows = (len(state) - 2) // 2
    return state[:rows], state[rows : 2 * rows], state[2 * rows :]


class Taint(Struct, frozen=True):
    key: str
    value: str
    effect: str


class PodVector(Struct, frozen=True):
    """What a pod takes from a node: (row, milli) pairs plus non-zero cpu/memory for scoring, and its cpu
    and memory requests again (0 when it asks for none), as the scores read them for every node they try."""

    rows: tuple[tuple[int, int], ...]
    nonzero_cpu: int
    nonzero_mem: int
    cpu: int
    memory: int


def _allocatable(raw: dict[str, Any]) -> dict[str, int]:
    """A node's allocatable amounts (`raw`, as the node states them) in milli-units."""
    out: dict[str, int] = {}
    for name, value in raw.items():
        try:
            out[name] = min(milli(value), MAX_MILLI)
        except QuantityError:
            continue  # validation reports it; the node simply offers none of it
    out.setdefault("pods", DEFAULT_MAX_PODS * 1000)
    return out


def _allocatables(statuses: list[Any]) -> tuple[list[dict[str, int]], list[int]]:
    """The nodes' kinds of allocatable amounts (`_allocatable`), in order of first appearance, and each
    node's kind, given the nodes' `status`. A node is compared with the one before it first (a comparison
    of two small dicts): nodes of one kind usually come together, and looking a kind up builds and hashes
    a tuple of its items, several times dearer (5,000 nodes: 9.6 -> 2.0 ms of CPU)."""
    seen: dict[tuple[tuple[str, Any], ...], int] = {}
    kinds: list[dict[str, int]] = []
    kind_of: list[int] = []
    previous: dict[str, Any] | None = None
    kind = 0
    for status in statuses:
        raw = (status.allocatable or status.capacity or _NO_AMOUNTS) if status else _NO_AMOUNTS
        if raw != previous:
            previous = raw
            key = tuple(raw.items())
            found = seen.get(key)
            if found is None:
                found = seen[key] = len(kinds)
                kinds.append(_allocatable(raw))
            kind = found
        kind_of.append(kind)
    return kinds, kind_of


class Snapshot:
    """Node state for scheduling. Mutated only through `place` / `remove` (and their undos)."""

    def __init__(self, nodes: Iterable[Any], dra_resources: Iterable[str] = ()) -> None:
        nodes = list(nodes)
        self.version = 0  # what the snapshot counts (module docstring)
        self._versions = 0  # versions handed out
        self.dra_resources = frozenset(dra_resources)
        self._dra_served: dict[int, BoolArray] = {}  # row -> nodes where DRA serves the resource
        self.node_names: list[str] = [node.metadata.name for node in nodes]
        n = len(nodes)
        self.index: dict[str, int] = dict(zip(self.node_names, range(n), strict=True))
        self.resources: list[str] = list(BASE_RESOURCES)
        self.rindex: dict[str, int] = {r: i for i, r in enumerate(self.resources)}
        # Each field the snapshot reads of every node is read once: a pass over 5,000 nodes costs some 0.3 ms.
        specs = [node.spec for node in nodes]
        statuses = [node.status for node in nodes]
        kinds, kind_of = _allocatables(statuses)
        for a in kinds:
            for r in a:
                self._row(r, grow=False)
        # Each kind's amounts in a column, spread over the nodes of that kind in one numpy call (an assignment
        # per kind and resource converted each kind's list of nodes to an array again: 6M instructions).
        by_kind = np.zeros((len(self.resources), len(kinds)), dtype=np.int64)
        for k, a in enumerate(kinds):
            for r, v in a.items():
                by_kind[self.rindex[r], k] = v
        self.alloc: Int64Array = by_kind.take(np.array(kind_of, dtype=np.intp), axis=1)
        for r in self.dra_resources & set(self.rindex):
            self._serve_by_dra(self.rindex[r])
        self.used: Int64Array = np.zeros_like(self.alloc)
        self.nonzero_used: Int64Array = np.zeros((2, n), dtype=np.int64)
        self._row_views()
        self.unschedulable: BoolArray = np.zeros(n, dtype=bool)
        # nodes without a spec (no field set) are passed over in C
        self.unschedulable[[j for j in compress(range(n), specs) if specs[j].unschedulable]] = True
        self._init_labels(nodes)
        self._init_taints(specs)
        self._init_images(statuses)
        self.changed: list[int] = []
        self.pod_log: list[tuple[PodTraits, int, int]] = []  # (traits, node, +1 placed / -1 removed)
        self.generation = 0
        # The traits of every pod ever placed here (kept after removal, so that undos can put them back).
        self.traits: dict[tuple[str, str], PodTraits] = {}
        self.carriers = 0  # placed pods whose own affinity terms other pods' cycles must read
        # pod key -> (node index, vector) for every pod counted in `used` (bound, assumed or reserved).
        self.placed: dict[tuple[str, str], tuple[int, PodVector]] = {}
        # pod key -> (node index, vector, priority) for pending pods nominated to a node; not in `used`.
        self.nominated: dict[tuple[str, str], tuple[int, PodVector, int]] = {}
        self._held: dict[int, Int64Array] = {}  # priority -> requests nominated at that priority, per node
        self._held_pods: dict[int, int] = {}  # priority -> how many pods are nominated at that priority
        self._held_for: dict[int, tuple[npt.NDArray[np.intp], Int64Array]] = {}  # cache of held_for
        self._below: dict[tuple[tuple[int, int], ...], BoolArray] = {}  # cache of allocatable_below

    # --- versions ----------------------------------------------------------------------------------------
    def _new_version(self) -> int:
        self._versions += 1
        self.version = self._versions
        return self.version

    def _undone(self, before: int, after: int, lifo: bool) -> None:
        """An undo of the change from version `before` to `after` is done: the version is `before` again
        when nothing else had changed since (`lifo`: the version was `after` when the undo began; the counts
        are then those of `before`), else a new one."""
        if lifo:
            self.version = before
        else:
            self._new_version()

    # --- resources -------------------------------------------------------------------------------------
    def _row(self, resource: str, grow: bool = True) -> int:
        row = self.rindex.get(resource)
        if row is None:
            row = len(self.resources)
            self.resources.append(resource)
            self.rindex[resource] = row
            if grow:  # a resource no node offers: a row of zeros, so pods asking for it never fit
                zeros = np.zeros((1, self.alloc.shape[1]), dtype=np.int64)
                self.alloc = np.vstack([self.alloc, zeros])
                self.used = np.vstack([self.used, zeros])
                self._row_views()
                self._held = {p: np.vstack([a, zeros]) for p, a in self._held.items()}
                self._held_for.clear()
                self._below.clear()
                if resource in self.dra_resources:
                    self._serve_by_dra(row)
                self._new_version()
        return row

    def _row_views(self) -> None:
        """Memoryviews of each row of `alloc`, `used` and `nonzero_used`, sharing their memory, for the
        scalar code that reads or changes one node at a time (`place`, `remove`, `column`): indexing one
        gives or takes a Python int, where indexing the array makes a numpy scalar and costs several times
        more (a pod placed changes five amounts, a refresh reads ten). Made again whenever the arrays are."""
        self._alloc_rows = [row.data for row in self.alloc]
        self._used_rows = [row.data for row in self.used]
        self._nonzero_rows = [row.data for row in self.nonzero_used]
        self._state_rows = self._alloc_rows + self._used_rows + self._nonzero_rows

    def _serve_by_dra(self, row: int) -> None:
        served = self.alloc[row] == 0
        self._dra_served[row] = served
        self.alloc[row, served] = DRA_SERVED

    def dra_rows(self) -> set[int]:
        """Rows whose allocatable stands for DRA on some nodes: not a capacity to add up."""
        return set(self._dra_served)

    def dra_served(self, resource: str) -> BoolArray:
        """Nodes where DynamicResources serves `resource` (one of `dra_resources`): no allocatable of it."""
        return self._dra_served[self._row(resource)]

    def vector(self, requests: dict[str, int], nonzero: tuple[int, int]) -> PodVector:
        rows = [(self._row(r), min(v, MAX_MILLI)) for r, v in requests.items() if v and r != "pods"]
        rows.append((PODS, 1000))
        by_row = dict(rows)
        return PodVector(
            tuple(sorted(rows)),
            min(nonzero[0], MAX_MILLI),
            min(nonzero[1], MAX_MILLI),
            by_row.get(CPU, 0),
            by_row.get(MEMORY, 0),
        )

    # --- labels and taints -----------------------------------------------------------------------------
    def _init_labels(self, nodes: list[Any]) -> None:
        """A column of value codes per label key (-1 where a node lacks the key), each key's values coded in
        order of first appearance, node by node. Built key by key, each column in one pass over the nodes
        (5,000 nodes with 7 labels each: 5 ms of CPU, 8 ms walked pair by pair); when most keys are on few
        nodes that would cost keys x nodes, so then the pairs are walked. The nodes' names are distinct (a
        store's nodes), so each node's code in metadata.name is its index, and so it is in the hostname
        label when no node sets that label."""
        self._numeric: dict[str, npt.NDArray[np.float64]] = {}
        self._domains: dict[
            str, tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], list[tuple[str, int]]]
        ] = {}
        names = self.node_names
        given = [(node.metadata.labels or _NO_LABELS) for node in nodes]
        keys = dict.fromkeys(itertools.chain.from_iterable(given))  # in order of first appearance
        self.label_values: dict[str, dict[str, int]] = {}
        self.labels: dict[str, npt.NDArray[np.int32]] = {}
        if keys and len(keys) * len(nodes) > _DENSE_LABELS * sum(map(len, given)):  # (no keys: no sum)
            self._walk_labels(given, names)
            return
        if len(self.index) == len(names):  # metadata.name, for matchFields
            self.label_values["metadata.name"] = dict(self.index)
            self.labels["metadata.name"] = np.arange(len(names), dtype=np.int32)
        else:
            self._add_label_column("metadata.name", names)
        if _HOSTNAME in keys:
            self._add_label_column(
                _HOSTNAME, [labels.get(_HOSTNAME, n) for labels, n in zip(given, names, strict=True)]
            )
        else:  # the same codes and column, shared: read only, as every label's
            self.label_values[_HOSTNAME] = self.label_values["metadata.name"]
            self.labels[_HOSTNAME] = self.labels["metadata.name"]
        for key in keys:
            if key not in self.labels:
                self._add_label_column(key, [labels.get(key, _ABSENT) for labels in given])

    def _add_label_column(self, key: str, values: list[Any]) -> None:
        present = dict.fromkeys(values)
        present.pop(_ABSENT, None)
        codes = self.label_values[key] = dict(zip(present, range(len(present)), strict=True))
        # through C: each value's code (-1: absent) as a machine integer, then the array over that buffer
        lookup: dict[Any, int] = {**codes, _ABSENT: -1}
        column = array("i", map(lookup.__getitem__, values))
        self.labels[key] = np.frombuffer(column, dtype=np.int32) if column else np.zeros(0, dtype=np.int32)

    def _walk_labels(self, given: list[Any], names: list[str]) -> None:
        """`_init_labels` pair by pair: the same codes, at a cost that follows the labels alone."""
        columns: dict[str, list[int]] = {}
        n = len(given)
        for j, name in enumerate(names):
            labels = dict(given[j])
            labels.setdefault(_HOSTNAME, name)
            labels["metadata.name"] = name
            for key, value in labels.items():
                codes = self.label_values.setdefault(key, {})
                code = codes.setdefault(value, len(codes))
                column = columns.get(key)
                if column is None:  # (not setdefault: its default list would be built for every label)
                    column = columns[key] = [-1] * n
                column[j] = code
        self.labels.update((k, np.array(v, dtype=np.int32)) for k, v in columns.items())

    def label_codes(self, key: str) -> npt.NDArray[np.int32]:
        codes = self.labels.get(key)
        return codes if codes is not None else np.full(len(self.node_names), -1, dtype=np.int32)

    def domains(self, key: str) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], list[tuple[str, int]]]:
        """For summing per value of `key` exactly in int64: (node permutation grouping labelled nodes by
        code, start offset of each code's run in it, (value, code) pairs sorted by value). Cached."""
        cached = self._domains.get(key)
        if cached is None:
            codes = self.label_codes(key)
            labelled = np.flatnonzero(codes >= 0)
            perm = labelled[np.argsort(codes[labelled], kind="stable")]
            n_codes = len(self.label_values.get(key, {}))
            starts = np.searchsorted(codes[perm], np.arange(n_codes)).astype(np.intp)
            ordered = sorted(self.label_values.get(key, {}).items())
            cached = (perm, starts, ordered)
            self._domains[key] = cached
        return cached

    def label_numeric(self, key: str) -> npt.NDArray[np.float64]:
        """Label values parsed as integers (NaN where absent or not an integer), for Gt / Lt."""
        cached = self._numeric.get(key)
        if cached is None:
            table = np.full(len(self.label_values.get(key, {})) + 1, np.nan)
            for value, code in self.label_values.get(key, {}).items():
                with contextlib.suppress(ValueError):
                    table[code] = int(value)
            cached = table[self.label_codes(key)]  # code -1 picks the trailing NaN
            self._numeric[key] = cached
        return cached

    def _init_taints(self, specs: list[Any]) -> None:
        """The distinct taint sets of the nodes (given their `spec`), in order of first appearance, and each
        node's set."""
        if not any(spec.taints for spec in compress(specs, specs)):  # the usual case: one set, empty
            self.taint_sets: list[tuple[Taint, ...]] = [()] if specs else []
            self.taint_set_of: npt.NDArray[np.int32] = np.zeros(len(specs), dtype=np.int32)
            return
        sets: dict[tuple[Taint, ...], int] = {}
        ids = []
        for spec in specs:
            given = spec.taints if spec is not None else None
            # most nodes have none: they go without a generator and tuple() each (5,000 nodes: 1.8 -> 0.4 ms)
            taints = tuple(Taint(t.key, t.value or "", t.effect) for t in given) if given else ()
            ids.append(sets.setdefault(taints, len(sets)))
        self.taint_sets = list(sets)
        self.taint_set_of = np.array(ids, dtype=np.int32)

    def _init_images(self, statuses: list[Any]) -> None:
        """Image name -> (nodes holding it, its size as the first of them reports it), as upstream's cache
        keeps ImageStateSummary per name from node.status.images (given the nodes' `status`)."""
        held: dict[str, tuple[list[int], int]] = {}
        listed: list[Any] = [status.images if status is not None else None for status in statuses]
        for j in compress(range(len(listed)), listed):  # in C: most nodes list no images
            images = listed[j]
            for image in images:
                for name in image.names or []:
                    entry = held.setdefault(name, ([], int(image.sizeBytes or 0)))
                    if not entry[0] or entry[0][-1] != j:
                        entry[0].append(j)
        self.images: dict[str, tuple[npt.NDArray[np.intp], int]] = {
            name: (np.array(idx, dtype=np.intp), size) for name, (idx, size) in held.items()
        }

    # --- nominated pods ----------------------------------------------------------------------------------
    def nominate(self, key: tuple[str, str], node: int, vec: PodVector, priority: int) -> None:
        """`key` (pending) holds `vec` on `node` for pods of priority <= `priority`; replaces any earlier
        nomination of it."""
        self.unnominate(key)
        held = self._held.get(priority)
        if held is None:
            held = self._held[priority] = np.zeros_like(self.alloc)
        for row, v in vec.rows:
            held[row, node] += v
        self._held_pods[priority] = self._held_pods.get(priority, 0) + 1
        self.nominated[key] = (node, vec, priority)
        self._held_for.clear()
        self._new_version()

    def unnominate(self, key: tuple[str, str]) -> tuple[int, PodVector, int] | None:
        """Drop `key`'s nomination; returns what it was (None if it had none)."""
        entry = self.nominated.pop(key, None)
        if entry is None:
            return None
        node, vec, priority = entry
        held = self._held[priority]
        for row, v in vec.rows:
            held[row, node] -= v
        self._held_pods[priority] -= 1
        if not self._held_pods[priority]:
            del self._held[priority], self._held_pods[priority]
        self._held_for.clear()
        self._new_version()
        return entry

    def held_for(
        self, priority: int, key: tuple[str, str] | None = None
    ) -> tuple[npt.NDArray[np.intp], Int64Array]:
        """What nominated pods of priority >= `priority` other than `key` hold, as (node indexes, requests
        on those nodes: resources x len(nodes)) - upstream's addGENominatedPods, for every node at once."""
        cached = self._held_for.get(priority)
        if cached is None:
            levels = [a for p, a in self._held.items() if p >= priority]
            total = np.sum(levels, axis=0) if levels else np.zeros((len(self.resources), 0), dtype=np.int64)
            cols = np.flatnonzero(total.any(axis=0)) if levels else np.zeros(0, dtype=np.intp)
            cached = (cols, total[:, cols] if levels else total)
            self._held_for[priority] = cached
        own = self.nominated.get(key) if key is not None else None
        if own is None or own[2] < priority:
            return cached
        cols, held = cached[0], cached[1].copy()
        at = int(np.searchsorted(cols, own[0]))
        for row, v in own[1].rows:
            held[row, at] -= v
        return cols, held

    def held_on(self, node: int, priority: int, key: tuple[str, str] | None = None) -> Int64Array | None:
        """`held_for` on one node (a column over resources), or None when nothing is held there."""
        cols, held = self.held_for(priority, key)
        if not cols.size:
            return None
        at = int(np.searchsorted(cols, node))
        return held[:, at] if at < cols.size and cols[at] == node else None

    # --- usage ---------------------------------------------------------------------------------------------
    def clear_logs(self) -> None:
        """Drop both change logs; every follower sees the new generation and rebuilds."""
        self.changed.clear()
        self.pod_log.clear()
        self.generation += 1

    def _log_pod(self, traits: PodTraits | None, node: int, sign: int) -> None:
        if traits is not None:
            self.pod_log.append((traits, node, sign))
            if traits.carries_terms:
                self.carriers += sign

    def place(
        self, key: tuple[str, str], node: int, vec: PodVector, traits: PodTraits | None = None
    ) -> Callable[[], None]:
        """Count `key` on `node` (with its `traits`, or those it was placed with before), ending its
        nomination as upstream's assume does; returns the undo, which gives the nomination back."""
        before = self.version
        if traits is None:
            traits = self.traits.get(key)
        else:
            self.traits[key] = traits
        nomination = self.unnominate(key) if self.nominated else None
        self._log_pod(traits, node, 1)
        used, nonzero = self._used_rows, self._nonzero_rows
        for row, v in vec.rows:
            used[row][node] += v
        nonzero[0][node] += vec.nonzero_cpu
        nonzero[1][node] += vec.nonzero_mem
        self.placed[key] = (node, vec)
        self.changed.append(node)
        # A partial, not a closure: the closure's cells made every read of `self` and `key` here a cell's.
        return partial(self._unplace, key, nomination, before, self._new_version())

    def _unplace(
        self, key: tuple[str, str], nomination: tuple[int, PodVector, int] | None, before: int, after: int
    ) -> None:
        """`place`'s undo."""
        lifo = self.version == after
        self.remove(key)
        if nomination is not None:
            self.nominate(key, *nomination)
        self._undone(before, after, lifo)

    def remove(self, key: tuple[str, str]) -> Callable[[], None]:
        """Stop counting `key` (no-op if not placed); returns the undo."""
        entry = self.placed.pop(key, None)
        if entry is None:
            return lambda: None
        node, vec = entry
        before = self.version
        self._log_pod(self.traits.get(key), node, -1)
        used, nonzero = self._used_rows, self._nonzero_rows
        for row, v in vec.rows:
            used[row][node] -= v
        nonzero[0][node] -= vec.nonzero_cpu
        nonzero[1][node] -= vec.nonzero_mem
        self.changed.append(node)
        after = self._new_version()

        def undo() -> None:
            lifo = self.version == after
            self.place(key, node, vec)
            self._undone(before, after, lifo)

        return undo

    def remove_many(self, keys: Iterable[tuple[str, str]]) -> Callable[[], None]:
        """`remove` for many keys at once (those not placed are skipped); returns the undo.

        Preemption takes every lower-priority pod out before its one simulation: thousands of pods, so the
        arithmetic is done per distinct vector with one bincount over nodes rather than per pod (`_shift`).
        A planner's trial takes out the work released by its time: a dozen pods, at every trial.
        """
        entries = {key: entry for key in keys if (entry := self.placed.pop(key, None)) is not None}
        if not entries:
            return lambda: None
        before = self.version
        self._log_pods(entries, -1)
        self._shift(entries, -1)
        after = self._new_version()

        def undo() -> None:
            lifo = self.version == after
            self.placed.update(entries)
            self._log_pods(entries, 1)
            self._shift(entries, 1)
            self._undone(before, after, lifo)

        return undo

    def _log_pods(self, entries: dict[tuple[str, str], tuple[int, PodVector]], sign: int) -> None:
        """`_log_pod` for each of `entries`, in order, in one pass (a call per pod cost as much as the rest
        of a planner's trial removal)."""
        traits_of = self.traits.get
        logged = [(t, node, sign) for key, (node, _) in entries.items() if (t := traits_of(key)) is not None]
        self.pod_log.extend(logged)
        self.carriers += sign * sum(1 for t, _, _ in logged if t.carries_terms)

    def _shift(self, entries: dict[tuple[str, str], tuple[int, PodVector]], sign: int) -> None:
        """Add (`sign` 1) or take out (-1) the entries' usage, a group of pods per distinct vector, each
        group's nodes logged as changed (once each, in the order of the set). A group of few pods is counted
        node by node through the rows' memoryviews, a large one with a bincount over all nodes (a dozen numpy
        calls over every node per group); the same integers either way."""
        nodes_by_vec: dict[int, list[int]] = {}
        vecs: dict[int, PodVector] = {}
        for node, vec in entries.values():
            nodes_by_vec.setdefault(id(vec), []).append(node)
            vecs[id(vec)] = vec
        n = len(self.node_names)
        used, nonzero = self._used_rows, self._nonzero_rows
        for vid, nodes in nodes_by_vec.items():
            vec = vecs[vid]
            if len(nodes) <= _FEW_PODS:
                cpu, mem = sign * vec.nonzero_cpu, sign * vec.nonzero_mem
                amounts = [(used[row], sign * v) for row, v in vec.rows]
                for node in nodes:
                    for amount, v in amounts:
                        amount[node] += v
                    nonzero[0][node] += cpu
                    nonzero[1][node] += mem
            else:
                count = np.bincount(np.asarray(nodes, dtype=np.intp), minlength=n)
                for row, v in vec.rows:
                    self.used[row] += sign * v * count
                self.nonzero_used[0] += sign * vec.nonzero_cpu * count
                self.nonzero_used[1] += sign * vec.nonzero_mem * count
            self.changed.extend(set(nodes))

    def state(self, col: int) -> tuple[int, ...]:
        """Node `col`'s allocatable and used amounts per resource row, then its non-zero used cpu and memory,
        as one tuple of Python ints: what the resource filters and scores read of a node, for scalar code
        that reads a few nodes (arithmetic on numpy scalars costs several times more), and a key that nodes
        in the same state share. Read through C (itemgetter over the rows' memoryviews): a comprehension per
        array cost a frame each, and a pod's cycle reads the node the previous pod went to."""
        return (*map(itemgetter(col), self._state_rows),)

    def allocatable_below(self, rows: tuple[tuple[int, int], ...]) -> BoolArray:
        """Nodes whose allocatable of some row in `rows` ((row, amount) pairs) is below the amount: a
        function of `alloc` alone, which changes only as nodes come and go (a new snapshot) or a resource row
        is added (the cache is emptied then), so it is kept per `rows` (read-only)."""
        below = self._below.get(rows)
        if below is None:
            below = np.zeros(len(self), dtype=bool)
            for row, v in rows:
                below |= self.alloc[row] < v
            below.flags.writeable = False
            self._below[rows] = below
        return below

    def column(self, col: int) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """`state` split (`split_state`)."""
        return split_state(self.state(col))

    def holds(self, col: int, vec: PodVector) -> int:
        """How many more pods taking `vec` node `col`'s free amounts hold (0 when over-committed), in scalar
        code: the per-node count a topology placement sums, for the few nodes a group changed. `vec.rows`
        always has the pods row."""
        alloc, used = self._alloc_rows, self._used_rows
        count = _MORE_THAN_ANY
        for row, v in vec.rows:  # a plain loop: min() over a generator costs more than the rows it reads
            fits = (alloc[row][col] - used[row][col]) // v
            if fits < count:
                count = fits
        return count if count > 0 else 0

    def scored_amounts(self, col: int) -> tuple[int, int, int, int]:
        """Node `col`'s allocatable cpu and memory and its non-zero requested cpu and memory: what
        MostAllocated reads of a node, as Python ints."""
        alloc, nonzero = self._alloc_rows, self._nonzero_rows
        return alloc[CPU][col], alloc[MEMORY][col], nonzero[0][col], nonzero[1][col]

    def __len__(self) -> int:
        return len(self.node_names)
