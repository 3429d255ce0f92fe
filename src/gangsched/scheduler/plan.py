"""Planning ahead: when running work is expected to end, and the earliest start of a pending root.

This is the part of Slurm's backfill scheduler that looks into the future (its `node_space` map): running
work is expected to end at its start plus its estimate (estimates.py); a pending root's earliest start is the
first moment, among now and those expected ends (rounded up to `resolution`, within `window`), at which its
own cycle, run on the snapshot with the work ended by then taken out, places it on nodes that no earlier
reservation holds during its run. The nodes that cycle picked are its reservation: concrete nodes, in one
topology domain when the root needs one, since it is the root's own placement code that picks them.

Reservations are whole nodes over [start, start + estimate), as Slurm's backfill reserves nodes
(`_add_reservation` over node bitmaps): a node a reservation holds is not offered to anything that would
still run when the reservation begins. Work that has overrun its estimate is expected to end any moment:
at `now + resolution`. The snapshot is left exactly as found.

Ties between equally good nodes in a trial placement are broken by a generator of the plan's own
(`tie_breaker`), started afresh from the scheduler's seed and the root at each trial, never by the
scheduler's: so the same root placed on the same snapshot takes the same nodes whenever the plan is made,
and a plan is a function of what it reads (the running work, the roots before it, the nodes), not of how
many plans or cycles came before it.
"""

from __future__ import annotations

import bisect
import datetime as dt
import functools
import itertools
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from operator import itemgetter
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .backfill_settings import INFINITE, PlanSettings
from .cycle import Code
from .estimates import LIVE, UNKNOWN, Estimate, History, estimate_of
from .plugins import BoolArray
from .podinfo import PodKey, is_terminal
from .queue import RootKey

if TYPE_CHECKING:
    from .scheduler import Placer, Scheduler
    from .snapshot import Snapshot

__all__ = [
    "INFINITE",
    "KnownTrial",
    "PlanSettings",
    "Reservation",
    "Running",
    "RunningIndex",
    "RunningWork",
    "StartSearch",
    "earliest_start",
    "plan_queue",
    "root_estimate",
    "running_work",
    "started_at",
    "tie_breaker",
]

_LOG_LIMIT = 100_000  # RunningIndex.log starts over beyond this
EPOCH = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)  # the store's time 0 (store.EPOCH)


@dataclass(frozen=True, slots=True)
class RunningWork:
    """A root holding nodes now, and when it is expected to release them (INFINITE: unknown)."""

    root: RootKey
    pods: tuple[PodKey, ...]
    nodes: frozenset[int]
    start: float
    end: float
    estimate: Estimate
    overrun: bool = False  # it has run past its estimate; `end` is then "any moment now"


@dataclass(frozen=True, slots=True)
class Reservation:
    """Nodes held for `root` over [start, end); `blockers` are the running roots whose expected ends it waits
    for on those nodes, `ahead` the reservations it had to avoid. `columns` are `nodes` as a sorted,
    read-only array, made once: every trial placement, capacity check and node mask behind the reservation
    indexes by them, and each made them from the set again."""

    root: RootKey
    start: float
    end: float
    nodes: frozenset[int]
    domain: str | None
    estimate: Estimate
    blockers: tuple[RunningWork, ...] = ()
    ahead: tuple[RootKey, ...] = ()
    columns: npt.NDArray[np.intp] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", _columns(self.nodes))

    def holds(self, node_mask_start: float, node_mask_end: float) -> bool:
        """Whether the reservation overlaps the interval [node_mask_start, node_mask_end)."""
        return self.start < node_mask_end and node_mask_start < self.end


@functools.lru_cache(maxsize=1024)
def _columns(nodes: frozenset[int]) -> npt.NDArray[np.intp]:
    """`nodes` as a sorted, read-only array, kept for the node sets reserved lately: most reservations are
    an earlier one read again from a later plan (`dataclasses.replace`, the same set), and under fair share
    a plan is made at most every `interval` after any start or end. Shared: read-only."""
    columns = np.array(sorted(nodes), dtype=np.intp)
    columns.flags.writeable = False
    return columns


def _seconds(stamp: Any) -> float | None:
    return (stamp - EPOCH).total_seconds() if isinstance(stamp, dt.datetime) else None


def started_at(pod: Any) -> float | None:
    """When the pod took its node: its PodScheduled=True transition, else its status.startTime."""
    status = pod.status
    if status is None:
        return None
    for c in status.conditions or []:
        if c.type == "PodScheduled" and c.status == "True":
            t = _seconds(c.lastTransitionTime)
            if t is not None:
                return t
    return _seconds(status.startTime)


def root_estimate(scheduler: Scheduler, root: RootKey, history: History | None = None) -> Estimate:
    """The estimate of a root's run time (estimates.py): its own pods, Job and PodGroup annotation; for a
    composite tree, the longest of its groups', unknown if any is. The sources are the planner's
    (`BackfillSettings.estimate`), else estimates.LIVE."""
    kind, ns, name = root
    store = scheduler.store
    sources = scheduler.backfill.settings.sources if scheduler.backfill is not None else LIVE
    if kind == "Pod":
        pod = store.get("Pod", (ns, name))
        return estimate_of([pod] if pod is not None else [], store, None, history, sources)
    groups = scheduler.hierarchy.tree_groups(root) if kind == "CompositePodGroup" else [(ns, name)]
    estimates = []
    for group in groups:
        pods = [scheduler.pod(k).pod for k in scheduler.members(group)]
        estimates.append(estimate_of(pods, store, store.get("PodGroup", group), history, sources))
    if not estimates or any(not e.known for e in estimates):
        return Estimate(None)
    return max(estimates, key=lambda e: e.seconds or 0.0)


@dataclass(slots=True)
class Running:
    """Running work by expected end, with its pods' usage as arrays (per resource row and column, a pod a
    column), so that what is free at each candidate time is a few numpy operations rather than a loop over
    pods. The columns are in no particular order, and some may belong to no pod (a RunningIndex keeps them
    in place as roots come and go): `pod_release` is INFINITE there, so nothing is ever given back from
    them, and `work_columns` names each work's own. Read-only (shared with the RunningIndex that made it)."""

    works: list[RunningWork]
    releases: npt.NDArray[np.float64]  # per work: its end rounded up to the plan's grid
    work_columns: list[list[int]]  # per work: the columns of its pods
    pod_node: npt.NDArray[np.intp]
    pod_use: npt.NDArray[np.int64]  # [resource row, column]
    pod_release: npt.NDArray[np.float64]  # per column: its work's release; INFINITE for no pod
    # Whether `now` shaped nothing here (every start known, no work overrun): then the same running pods
    # give the same Running at any later time before the first expected end (`still_valid`).
    timeless: bool = False
    # `pod_work` and `roots`, made when first read: a fair-share plan often reads neither (its earliest
    # start reused), and each is a pass over every running root.
    _pod_work: npt.NDArray[np.intp] | None = None
    _roots: frozenset[RootKey] | None = None
    # The RunningIndex that made it and its count of root changes then: while that count stands, the
    # index's roots are `works`' roots, and `runs` looks there rather than building `roots`.
    _index: RunningIndex | None = None
    _index_changes: int = -1
    # `columns_as_lists`' lists, made when first read.
    _node_list: list[int] | None = None
    _use_lists: dict[int, list[int]] = field(default_factory=dict)

    @property
    def pod_work(self) -> npt.NDArray[np.intp]:
        """Per column: the index of its pod's work; -1 for a column no pod holds."""
        if self._pod_work is None:
            self._pod_work = np.full(len(self.pod_node), -1, dtype=np.intp)
            for i, columns in enumerate(self.work_columns):
                self._pod_work[columns] = i
        return self._pod_work

    def columns_as_lists(self, rows: Sequence[int]) -> tuple[list[int], list[list[int]]]:
        """`pod_node` and the rows `rows` of `pod_use`, as Python lists made when first read: the capacity
        check's scalar steps read a few columns each, where a numpy scalar costs more than its conversion."""
        if self._node_list is None:
            self._node_list = self.pod_node.tolist()
        use = self._use_lists
        for row in rows:
            if row not in use:
                use[row] = self.pod_use[row].tolist()
        return self._node_list, [use[row] for row in rows]

    def columns_of(self, root: RootKey) -> list[int]:
        """The columns of the root's running pods."""
        return [
            c
            for w, columns in zip(self.works, self.work_columns, strict=True)
            if w.root == root
            for c in columns
        ]

    @property
    def roots(self) -> frozenset[RootKey]:
        """The roots of `works`."""
        if self._roots is None:
            self._roots = frozenset(w.root for w in self.works)
        return self._roots

    def runs(self, root: RootKey) -> bool:
        """Whether `root` has work here. Asked at each capacity check, mostly of Runnings just assembled,
        where building `roots` (a pass over every running root) cost a tenth of a fair-share search."""
        index = self._index
        if index is not None and index.root_changes == self._index_changes:
            return root in index._roots  # the same roots as `works`', by the count
        return root in self.roots

    def still_valid(self, now: float) -> bool:
        """Would the same running pods at `now` give exactly this?"""
        return self.timeless and (not self.works or self.works[0].end > now)


def _read_only(a: npt.NDArray[Any]) -> npt.NDArray[Any]:
    a.flags.writeable = False
    return a


# A new running root's arrays before its first refresh (shared: a root's arrays are replaced, never written).
_NO_NODES: npt.NDArray[np.intp] = _read_only(np.zeros(0, dtype=np.intp))
_NO_USE: npt.NDArray[np.int64] = _read_only(np.zeros((0, 0), dtype=np.int64))


@dataclass(slots=True)
class _RunningRoot:
    """What a running root's pods say, apart from the time: `work` is its RunningWork when its start is
    known (else it starts "now" at each plan), `release` that work's end on the plan's grid."""

    pods: dict[PodKey, None]  # in the order they were seen running
    estimate: Estimate = UNKNOWN
    nodes: frozenset[int] = frozenset()
    work: RunningWork | None = None
    release: float = INFINITE
    pod_node: npt.NDArray[np.intp] = field(default_factory=lambda: _NO_NODES)  # read-only, shared
    pod_use: npt.NDArray[np.int64] = field(default_factory=lambda: _NO_USE)
    ns_use: dict[str, npt.NDArray[np.int64]] = field(default_factory=dict)  # pod_use summed per namespace
    columns: list[int] = field(default_factory=list)  # its pods' columns in the RunningIndex's _PodColumns


@dataclass(slots=True)
class _PodColumns:
    """Every running pod's node, usage and release (its work's end on the plan's grid; INFINITE when not
    known), a column each, kept in place: a root's pods take free columns and give them back when the root
    is refreshed, and a free column's release is INFINITE. A plan used to lay every root's arrays out in the
    order of the works, and each start or end copied them all (two concatenations of a few hundred pods,
    most of a refresh); the capacity check sums what each pod gives back by time and node, in any order.
    Arrays handed out to a Running are copied before the next change, never changed under it."""

    node: npt.NDArray[np.intp] = field(default_factory=lambda: np.zeros(0, dtype=np.intp))
    use: npt.NDArray[np.int64] = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))
    release: npt.NDArray[np.float64] = field(default_factory=lambda: np.zeros(0, dtype=np.float64))
    free: list[int] = field(default_factory=list)
    handed_out: bool = False

    def clear(self, rows: int) -> None:
        self.node = np.zeros(0, dtype=np.intp)
        self.use = np.zeros((rows, 0), dtype=np.int64)
        self.release = np.zeros(0, dtype=np.float64)
        self.free = []
        self.handed_out = False

    def _own(self) -> None:
        if self.handed_out:
            self.node, self.use, self.release = self.node.copy(), self.use.copy(), self.release.copy()
            self.handed_out = False

    def take(self, entry: _RunningRoot, release: float) -> None:
        """Columns for the entry's pods (`entry.columns`), holding its arrays and `release`."""
        k = len(entry.pod_node)
        self._own()
        if len(self.free) < k:
            n = len(self.node)
            m = max(2 * n, n + k, 64)
            node, use = np.zeros(m, dtype=np.intp), np.zeros((len(self.use), m), dtype=np.int64)
            node[:n], use[:, :n] = self.node, self.use
            grown = np.full(m, INFINITE, dtype=np.float64)
            grown[:n] = self.release
            self.node, self.use, self.release = node, use, grown
            self.free.extend(range(m - 1, n - 1, -1))
        free = self.free
        if k == 1:  # most roots are one pod: plain indexing, a tenth of a fancy index's cost
            c = free.pop()
            entry.columns = [c]
            self.node[c] = entry.pod_node[0]
            self.use[:, c] = entry.pod_use[:, 0]
            self.release[c] = release
            return
        columns = entry.columns = [free.pop() for _ in range(k)]
        self.node[columns] = entry.pod_node
        self.use[:, columns] = entry.pod_use
        self.release[columns] = release

    def give_back(self, entry: _RunningRoot) -> None:
        if entry.columns:
            self._own()
            if len(entry.columns) == 1:
                self.release[entry.columns[0]] = INFINITE
            else:
                self.release[entry.columns] = INFINITE
            self.free.extend(entry.columns)
            entry.columns = []


@dataclass(slots=True)
class _ByEnd:
    """The running roots whose start is known, by (expected end, root): the order of a plan's running work,
    kept sorted as roots change. `works`, `releases` and `columns` repeat the entries' own, so that a plan
    copies a list rather than reading every entry; `release_array` is `releases` as an array, replaced at
    each change (a plan used to build it from the list: a few hundred floats at every fair-share plan), never
    written in place: a Running handed out earlier keeps what it read. The pods' arrays are kept apart, in
    columns of no order (_PodColumns)."""

    keys: list[tuple[float, RootKey]] = field(default_factory=list)
    entries: list[_RunningRoot] = field(default_factory=list)
    works: list[RunningWork] = field(default_factory=list)
    releases: list[float] = field(default_factory=list)
    columns: list[list[int]] = field(default_factory=list)  # of each entry's pods
    release_array: npt.NDArray[np.float64] = field(default_factory=lambda: np.zeros(0, dtype=np.float64))

    def clear(self) -> None:
        for kept in (self.keys, self.entries, self.works, self.releases, self.columns):
            kept.clear()
        self.release_array = np.zeros(0, dtype=np.float64)

    def add(self, entry: _RunningRoot, work: RunningWork) -> None:
        i = bisect.bisect_left(self.keys, (work.end, work.root))
        self.keys.insert(i, (work.end, work.root))
        self.entries.insert(i, entry)
        self.works.insert(i, work)
        self.releases.insert(i, entry.release)
        self.columns.insert(i, entry.columns)
        arr = self.release_array
        self.release_array = np.concatenate([arr[:i], np.array([entry.release], dtype=np.float64), arr[i:]])

    def remove(self, work: RunningWork) -> None:
        i = bisect.bisect_left(self.keys, (work.end, work.root))
        del self.keys[i], self.entries[i], self.works[i], self.releases[i], self.columns[i]
        self.release_array = np.concatenate([self.release_array[:i], self.release_array[i + 1 :]])


class RunningIndex:
    """The running work, kept between plans: a plan reads it in time proportional to the running roots, and
    only pods that changed since the last read (`pod_changed`) are looked at again, where reading every
    running pod's root, start and usage at every plan cost most of a plan. `reset` forgets everything
    (objects that map pods to roots changed). Reads the scheduler's snapshot; not thread-safe.

    Contract: `get(now)` returns what `running_work` defines: every root with bound, unfinished pods on known
    nodes, by expected end, then by root."""

    def __init__(
        self,
        scheduler: Scheduler,
        settings: PlanSettings,
        history: History | None = None,
        estimates: dict[RootKey, Estimate] | None = None,
    ) -> None:
        self.scheduler = scheduler
        self.settings = settings
        self.history = history
        self.estimates = estimates if estimates is not None else {}
        self._snap: Snapshot | None = None
        self._rows = -1
        self._root_of: dict[PodKey, RootKey] = {}  # running pod -> its root
        self._roots: dict[RootKey, _RunningRoot] = {}
        self._dirty: dict[PodKey, None] = {}
        self._all = True
        self._last: Running | None = None
        self._moved = True  # running pods changed since `_last` was assembled
        self._ns_use: dict[str, npt.NDArray[np.int64]] = {}  # every running pod's use, per namespace
        self._vectors: dict[tuple[tuple[int, int], ...], npt.NDArray[np.int64]] = {}  # rows as a column
        self.usage_changes = 0  # bumped whenever `_ns_use` may have changed (readers cache what they derive)
        # Every root refreshed, in the order refreshed, as (root, the latest of its release before and after
        # (INFINITE: none known), a time before which the change may have given room back: -INFINITE when
        # it only took room, at every time (see `_refresh`), the nodes its pods held before or hold after);
        # `log_generation` moves when the log starts over (a reset, or it grew long).
        self.log: list[tuple[RootKey, float, float, frozenset[int]]] = []
        self.log_generation = 0
        # Roots whose start is known, by expected end; the others start "now" at each plan.
        self._by_end = _ByEnd()
        self._columns = _PodColumns()  # every running pod's node, usage and release
        self._startless: dict[RootKey, None] = {}
        self.root_changes = 0  # bumped whenever `_roots` may have changed (Running.runs)

    def pod_changed(self, key: PodKey) -> None:
        self._dirty[key] = None

    def reset(self) -> None:
        self._all = True

    def _running_root(self, key: PodKey, snap: Snapshot) -> RootKey | None:
        """The root of `key` if it is a running pod the snapshot counts, else None."""
        if key not in snap.placed:
            return None
        try:
            pi = self.scheduler.pod(key)
        except KeyError:
            return None  # held for a pod the scheduler does not track
        if pi.pod.spec.nodeName and not is_terminal(pi.pod):
            return self.scheduler.root_of(pi)
        return None

    def get(self, now: float) -> Running:
        self._sync()
        last = self._last
        if last is not None and not self._moved and last.still_valid(now):
            return last
        self._last, self._moved = self._assemble(now), False
        return self._last

    def counts_running_only(self) -> bool:
        """Whether the snapshot counts the running pods here and nothing else (no pod of another kind
        placed, none nominated): then what it counts changes only as the running work does."""
        self._sync()
        snap = self._snap
        return snap is not None and not snap.nominated and len(self._root_of) == len(snap.placed)

    def namespace_use(self) -> dict[str, npt.NDArray[np.int64]] | None:
        """What each namespace's placed pods hold, per resource row, when every pod the snapshot counts is
        a running pod here (else None: the caller must count the snapshot's pods itself)."""
        self._sync()
        if self._snap is None or len(self._root_of) != len(self._snap.placed):
            return None
        return self._ns_use

    def _sync(self) -> None:
        """Look again at the pods that changed (all of them after `reset`); `_moved` when any did."""
        snap = self.scheduler.snapshot()
        if not self._dirty and not self._all and snap is self._snap and len(snap.resources) == self._rows:
            return  # nothing changed since the last read (a plan asks three or four times)
        if snap is not self._snap or len(snap.resources) != self._rows:
            self._all = True
        touched: dict[RootKey, None] = {}
        lost: set[RootKey] = set()  # roots that lost a pod here
        changed = self._all
        if self._all:
            self._all, self._snap, self._rows = False, snap, len(snap.resources)
            self._root_of.clear()
            self._roots.clear()
            self._dirty.clear()
            self._ns_use = {}
            self._vectors = {}  # the rows may have changed
            self.usage_changes += 1
            self.log.clear()
            self.log_generation += 1
            self._by_end.clear()
            self._columns.clear(len(snap.resources))
            self._startless.clear()
            keys: Iterable[PodKey] = list(snap.placed)  # the placed pods only: the pending can be many more
        else:
            keys, self._dirty = self._dirty, {}
        for key in keys:
            root = self._running_root(key, snap)
            old = self._root_of.get(key)
            if old is not None:
                touched[old] = None
                if old != root:
                    del self._roots[old].pods[key]
                    del self._root_of[key]
                    lost.add(old)
            if root is not None:
                touched[root] = None
                if old != root:
                    self._root_of[key] = root
                    self._roots.setdefault(root, _RunningRoot({})).pods[key] = None
        for root in touched:
            self._refresh(root, snap, root in lost)
        if changed or touched:
            self._moved = True
            self.root_changes += 1

    def _refresh(self, root: RootKey, snap: Snapshot, lost: bool = False) -> None:
        """Read the root's running pods again (`lost`: one of them left it) and log the change."""
        entry = self._roots.get(root)
        if entry is None:
            return
        self.usage_changes += 1
        if len(self.log) > _LOG_LIMIT:
            self.log.clear()
            self.log_generation += 1
        # Its release before: none if it is new here, unknown (INFINITE) if its start was unknown.
        released = (
            entry.release if entry.work is not None else INFINITE if root in self._startless else -INFINITE
        )
        for ns, use in entry.ns_use.items():
            self._ns_use[ns] -= use
        if entry.work is not None:
            self._by_end.remove(entry.work)
        self._columns.give_back(entry)
        self._startless.pop(root, None)
        if not entry.pods:
            del self._roots[root]
            self.log.append((root, released, released, entry.nodes))
            return
        old_node, old_use, old_nodes = entry.pod_node, entry.pod_use, entry.nodes
        estimate = self.estimates.get(root)
        if estimate is None:
            estimate = self.estimates[root] = root_estimate(self.scheduler, root, self.history)
        pod_of = self.scheduler.pod
        starts = [t for key in entry.pods if (t := started_at(pod_of(key).pod)) is not None]
        placed = [snap.placed[key] for key in entry.pods]
        nodes = [node for node, _ in placed]
        entry.pod_node = np.array(nodes, dtype=np.intp)
        # Each pod's usage as a column of the rows, read once per distinct vector (a gang's pods mostly
        # share one, and jobs repeat a few shapes): the same integers as writing each row of each pod.
        vectors = self._vectors
        cols = []
        for _, vec in placed:
            col = vectors.get(vec.rows)
            if col is None:
                col = vectors[vec.rows] = np.zeros(len(snap.resources), dtype=np.int64)
                for row, v in vec.rows:
                    col[row] = v
                col.flags.writeable = False
            cols.append(col)
        first = cols[0]
        alike = all(c is first for c in cols)
        if len(cols) == 1:  # most roots: a view of the kept column (read-only, never written here)
            entry.pod_use = first[:, None]
        else:
            entry.pod_use = np.repeat(first[:, None], len(cols), axis=1) if alike else np.stack(cols, axis=1)
        # Summed per namespace, a namespace's columns at once (a root's pods share one namespace, mostly;
        # fair share reads these sums at every plan, and every start and end is refreshed before it). Pods
        # alike in one namespace sum to one column times their count: the same int64 sums.
        ns = next(iter(entry.pods))[0]
        if all(key[0] == ns for key in entry.pods):
            k = len(cols)
            entry.ns_use = {ns: first if k == 1 else first * k if alike else entry.pod_use.sum(axis=1)}
        else:
            columns: dict[str, list[int]] = {}
            for j, (pod_ns, _) in enumerate(entry.pods):
                columns.setdefault(pod_ns, []).append(j)
            entry.ns_use = {pod_ns: entry.pod_use[:, js].sum(axis=1) for pod_ns, js in columns.items()}
        for pod_ns, use in entry.ns_use.items():
            total = self._ns_use.get(pod_ns)
            if total is None:
                self._ns_use[pod_ns] = use.copy()
            else:
                total += use  # in place, as an end takes it out: no reader keeps the array
        entry.estimate, entry.nodes = estimate, frozenset(nodes)
        entry.work, entry.release = None, INFINITE
        if starts:
            start = min(starts)
            end = start + estimate.seconds if estimate.seconds is not None else INFINITE
            entry.work = RunningWork(root, tuple(entry.pods), entry.nodes, start, end, estimate)
            entry.release = self.settings.round_up(end)
            self._columns.take(entry, entry.release)
            self._by_end.add(entry, entry.work)
        else:
            self._columns.take(entry, INFINITE)  # its release is known only when a plan reads it
            self._startless[root] = None
        latest = max(released, entry.release) if entry.work is not None else INFINITE
        # It only took room when it lost no pod, the pods it had hold what they held (they come first, in
        # the order seen) and it releases them no earlier: then at every time it holds at least what it
        # held. Else it may have given room back before `latest`, when its pods were released before.
        k = len(old_node)
        took = (
            not lost
            and entry.release >= released
            and (
                k == 0
                or (
                    np.array_equal(entry.pod_node[:k], old_node)
                    and np.array_equal(entry.pod_use[:, :k], old_use)
                )
            )
        )
        self.log.append((root, latest, -INFINITE if took else latest, old_nodes | entry.nodes))

    def _assemble(self, now: float) -> Running:
        roots, by_end, columns = self._roots, self._by_end, self._columns
        overrun = bisect.bisect_right(by_end.keys, now, key=itemgetter(0))  # expected to have ended by now
        columns.handed_out = True
        if not overrun and not self._startless:  # in order already, every column's release known
            return Running(
                list(by_end.works),
                by_end.release_array,
                list(by_end.columns),
                columns.node,
                columns.use,
                columns.release,
                True,
                _index=self,
                _index_changes=self.root_changes,
            )
        kept = list(
            zip(by_end.works[overrun:], by_end.releases[overrun:], by_end.entries[overrun:], strict=True)
        )
        release = columns.release.copy()  # the late roots' columns are released otherwise here
        late = [root for _, root in by_end.keys[:overrun]] + list(self._startless)
        for root in late:
            entry = roots[root]
            work = entry.work
            if work is None:  # no start known: it starts now
                seconds = entry.estimate.seconds
                end = now + seconds if seconds is not None else INFINITE
                work = RunningWork(root, tuple(entry.pods), entry.nodes, now, end, entry.estimate)
            if work.end <= now:  # overrun: expected to end any moment now
                work = replace(work, end=now + self.settings.resolution, overrun=True)
            kept.append((work, self.settings.round_up(work.end), entry))
            release[entry.columns] = kept[-1][1]
        kept.sort(key=lambda w: (w[0].end, w[0].root))
        return Running(
            [w for w, _, _ in kept],
            np.array([r for _, r, _ in kept], dtype=np.float64),
            [e.columns for _, _, e in kept],
            columns.node,
            columns.use,
            release,
            False,
            _index=self,
            _index_changes=self.root_changes,
        )


def running_work(
    scheduler: Scheduler,
    now: float,
    settings: PlanSettings,
    history: History | None = None,
    estimates: dict[RootKey, Estimate] | None = None,
) -> Running:
    """Every root with bound, unfinished pods on known nodes, by expected end (then by root); work whose
    start is unknown starts now, work past its expected end is expected to end at `now + resolution`.
    `estimates` caches roots' estimates between calls (a running root's does not change). A planner that
    reads it again and again keeps a RunningIndex instead."""
    return RunningIndex(scheduler, settings, history, estimates).get(now)


def tie_breaker(seed: int, root: RootKey) -> np.random.Generator:
    """The generator a plan's trial placements of `root` break ties with (kube-scheduler picks at random
    among nodes that score the same; so does the cycle, from the scheduler's generator): seeded by the
    scheduler's seed and the root's kind, namespace and name only. `earliest_start` starts it afresh for
    each trial, so that a trial's choice of nodes depends on the snapshot and the node mask alone."""
    kind, ns, name = root
    return np.random.default_rng([seed, zlib.crc32(f"{kind}\0{ns}\0{name}".encode())])


@functools.lru_cache(maxsize=256)
def _fresh_tie_breaker(seed: int, root: RootKey) -> tuple[np.random.Generator, Mapping[str, Any]]:
    """`tie_breaker(seed, root)` and its state as made, kept for the roots planned lately: seeding a
    generator (a SeedSequence hashed into PCG64's state) cost more than a tenth of a plan's earliest start,
    and putting a kept state back gives the same draws. Shared: each trial puts the state back first."""
    ties = tie_breaker(seed, root)
    return ties, ties.bit_generator.state


def _free_of(reservations: Iterable[Reservation], start: float, end: float, n: int) -> BoolArray:
    mask = np.ones(n, dtype=bool)
    for r in reservations:
        if r.holds(start, end):
            mask[r.columns] = False
    return mask


def _counts_capacity(place: Placer) -> bool:
    """Whether the capacity check (`_could_fit`) applies to the root: pods of one equivalence class, not a
    tree. Else every candidate time gets a trial."""
    return not place.tree and len({pi.signature for pi in place.pods}) == 1


def _capacity_decides(scheduler: Scheduler, place: Placer, counts: bool | None = None) -> bool:
    """Whether the root's trial placement succeeds at exactly the times `_could_fit` gives, so that a caller
    that reads only the start (`earliest_start(..., start_only=True)`) needs no trial. So it is for pods of
    one equivalence class (`_counts_capacity`) without a topology key, at least `needs` of them, none using
    claims or read by a pods-stage plugin (`Evaluator.reads_other_pods`: no host port, spread, pod affinity,
    and no placed pod carrying affinity terms), while no pod is nominated. Then each pod of the cycle
    (cycle.run_group_cycle) fits exactly the nodes its class's static verdict admits (PreFilter refusals
    included) and, with NodeResourcesFit on, whose free amount of every resource it asks is at least what it
    asks; the trial's node mask leaves out the nodes reservations hold, as the capacity check does. A node
    that takes k such pods takes k - 1 after one is placed, so the cycle places min(pods, the capacity
    summed over nodes) of them whatever nodes its ties pick, and succeeds exactly when the capacity check
    counts `needs` (without NodeResourcesFit it places every pod on any admitted node: it succeeds too).
    The same conditions let topology.py's fast path judge a placement by its counts."""
    if place.tree or place.topology_key is not None or len(place.pods) < place.needs:
        return False
    if not (_counts_capacity(place) if counts is None else counts):
        return False
    ev = scheduler.evaluator()
    return not ev.snap.nominated and not any(pi.claims or ev.reads_other_pods(pi) for pi in place.pods)


def _could_fit(
    scheduler: Scheduler,
    root: RootKey,
    place: Placer,
    times: npt.NDArray[np.float64],
    running: Running,
    reservations: Sequence[Reservation],
    duration: float,
    chunk: int = 4,
    last_first: bool = True,
    usable: dict[float, BoolArray] | None = None,
    counts: bool | None = None,
) -> Iterator[float]:
    """The times (in order) at which the root could fit: exact capacity arithmetic for pods of one
    equivalence class (greedy placement of identical pods fits min(pods, sum over nodes of how many each
    node takes), as topology.py's fast path uses), every time otherwise. Only these times get a real cycle.

    Counted one candidate after another, as the caller asks for more: a plan takes the first time whose
    trial succeeds, mostly the first to third candidate (the root new to a depth-4 plan on the full philly
    trace: 154 candidates on average, the first fit at the third on the median), and what changes from one
    candidate to the next is the few nodes of the work released between them. So the count per node at the
    first candidate is made with numpy, and each later candidate recounts, in scalar code, only the nodes
    its released work gives back to, keeping the sum (per domain with a topology key) in place; the
    reservations that overlap the root's run from a candidate take their nodes' counts out of that sum.
    Everything is read before the first time is given, so the trials that run between the times (which
    change the snapshot and put it back) change nothing here.

    Free room only grows with time (work is released, none added), so the last candidate has the most on
    every node: when the root does not fit then, even with no reservation in its way, it fits at no time.
    With `last_first`, once the first `chunk` candidates gave no time, the last one is counted (with numpy,
    every release at once) and the walk ends when the root does not fit there: it gives the same times
    either way, and earliest_start asks for it only in a search bounded by `until`, where most roots that
    fit nowhere are found. An unbounded search's last candidate is the end of all running work of known end,
    where nearly every root fits (80 of 7,868 such searches fit nowhere), so the count was nearly always
    wasted there.

    `usable`, when given, gets for each time given the nodes that could take one of the root's pods then
    (reservations' nodes left out), before the time is given (earliest_start's trial reuse)."""
    if not (_counts_capacity(place) if counts is None else counts) or not len(times):
        yield from times.tolist()
        return
    ev = scheduler.evaluator()
    snap = ev.snap
    c = ev.static_class(place.pods[0])  # its static verdict and vector: the usage is counted here
    rows = [row for row, _ in c.vec.rows]
    need = [v for _, v in c.vec.rows]
    n_times = len(times)
    # A work's pods give back their usage at the first candidate time at or after its release (works are in
    # order of release): the works given back by candidate k are those before `upto[k]`.
    upto = np.searchsorted(running.releases, times, side="right").tolist()
    works: Sequence[Sequence[int]] = running.work_columns
    if running.runs(root):  # its own running pods give nothing back to it
        works = [() if w.root == root else cs for w, cs in zip(running.works, works, strict=True)]
    pod_node, pod_use = running.pod_node, running.pod_use
    # The candidates a reservation overlaps (it holds nodes over [start, end), the root would run over
    # [t, t + duration)) are a run of them: `span < end` holds up to some candidate, `start < span +
    # duration` from some candidate on, both sums and comparisons as the arrays' own (IEEE doubles).
    after = (times + duration).tolist()
    spans = times.tolist()
    held = [
        (bisect.bisect_right(after, r.start), bisect.bisect_left(spans, r.end), r.columns)
        for r in reservations
    ]
    refused = ~c.static_ok
    domain_of: list[int] | None = None  # with a topology key: each node's domain
    n_domains = 1
    if place.topology_key is not None:
        codes = snap.label_codes(place.topology_key)
        allowed = codes >= 0
        if place.fixed_domains:
            values = snap.label_values.get(place.topology_key, {})
            allowed &= np.isin(codes, [values[d] for d in place.fixed_domains if d in values])
        domain_of = np.where(allowed, codes, 0).tolist()
        n_domains = max(int(codes.max()) + 1, 1)
        refused = refused | ~allowed  # nodes outside every allowed domain take none of the pods

    def released(first: int, last: int) -> list[int]:
        """The columns of the works given back after candidate `first - 1` and by candidate `last`."""
        return [col for cs in works[(upto[first - 1] if first else 0) : upto[last]] for col in cs]

    # What is free at the first candidate: the room now plus what the work released by then gives back.
    free = snap.alloc[rows] - snap.used[rows]  # [row, node]
    columns = released(0, 0)
    if columns:
        for i, row in enumerate(rows):
            np.add.at(free[i], pod_node[columns], pod_use[row, columns])
    no_pods = np.flatnonzero(refused)
    cap = _pods_per_node(free[None, :, :], need, no_pods)[0].tolist()  # how many pods each node takes
    ok = (~refused).tolist()
    room = free.tolist()
    node_of, use_of = running.columns_as_lists(rows)
    sums = [0] * n_domains
    if domain_of is None:
        sums[0] = sum(cap)
    else:
        for node, count in enumerate(cap):
            sums[domain_of[node]] += count
    masks: dict[tuple[int, ...], list[int]] = {}  # the nodes held against the root, by the reservations

    found = False
    for k in range(n_times):
        if k:
            changed = set()
            for col in released(k, k):
                node = node_of[col]
                for node_room, use in zip(room, use_of, strict=True):
                    node_room[node] += use[col]
                changed.add(node)
            for node in changed:
                count = 0
                if ok[node]:  # _pods_per_node's count, in scalar code (the same integers)
                    count = room[0][node] // need[0]
                    for i in range(1, len(need)):
                        count = min(count, room[i][node] // need[i])
                    count = max(count, 0)
                sums[0 if domain_of is None else domain_of[node]] += count - cap[node]
                cap[node] = count
        active = tuple(i for i, (first, end, _) in enumerate(held) if first <= k < end)
        out = masks.get(active)
        if out is None:
            out = masks[active] = sorted({n for i in active for n in held[i][2].tolist()})
        left = sums
        if out:
            left = sums.copy()
            for node in out:
                left[0 if domain_of is None else domain_of[node]] -= cap[node]
        if max(left) >= place.needs:
            found = True
            if usable is not None:
                takes = np.array(cap, dtype=np.int64) > 0
                takes[out] = False
                usable[spans[k]] = takes
            yield spans[k]
        elif last_first and not found and k == chunk - 1 and k < n_times - 1:
            # The last candidate (see above): the room now, plus every release after this candidate.
            last = np.array(room, dtype=np.int64)
            columns = released(k + 1, n_times - 1)
            if columns:
                for i, row in enumerate(rows):
                    np.add.at(last[i], pod_node[columns], pod_use[row, columns])
            most = _pods_per_node(last[None, :, :], need, no_pods)[0]
            if domain_of is not None:
                per_domain = np.zeros(n_domains, dtype=np.int64)
                np.add.at(per_domain, domain_of, most)
                most = per_domain
            if (most.sum() if domain_of is None else most.max()) < place.needs:
                return


def _pods_per_node(
    room: npt.NDArray[np.int64], need: Sequence[int], refused: npt.NDArray[np.intp]
) -> npt.NDArray[np.int64]:
    """How many of the root's pods each node takes at each time: `room` is [time, row, node], `need` the
    pod's amount per row (every pod asks for a pod slot: one row at least); nodes the static filters refuse
    take none. Row by row, each divided by a scalar (dividing by a broadcast column cost twice as much)."""
    cap: npt.NDArray[np.int64] = room[:, 0, :] // need[0] if need[0] != 1 else room[:, 0, :].copy()
    for i in range(1, len(need)):
        np.minimum(cap, room[:, i, :] // need[i] if need[i] != 1 else room[:, i, :], out=cap)
    np.maximum(cap, 0, out=cap)
    if len(refused):
        cap[:, refused] = 0
    return cap


@dataclass(frozen=True, slots=True)
class StartSearch:
    """What one `earliest_start` found: the earliest start (None: none), and `fits_from`, the first
    candidate time at which the root could fit by capacity, whether or not its trial succeeded (INFINITE:
    none), which EarliestStarts keeps as a bound; -INFINITE (not known) when reservations were given or
    the capacity check does not apply (`_counts_capacity`)."""

    found: Reservation | None
    fits_from: float
    # The nodes that could take one of the root's pods at `found.start` (the capacity check's view, the
    # reservations' nodes left out), when its trial read no more than that of the nodes it did not take
    # (see earliest_start's `usable`): what a later search needs to take the trial over (KnownTrial).
    usable: BoolArray | None = None
    taken_over: bool = False  # `found` is a KnownTrial's, taken over without a trial


@dataclass(frozen=True, slots=True)
class KnownTrial:
    """A trial an earlier search made at `found.start`, which placed the root on `found.nodes`: `usable` is
    that search's StartSearch.usable, `changed` the nodes whose snapshot or node mask at that time may
    differ since (the nodes of the work that changed: RunningIndex.log; and of the reservations before the
    root held by one search and not the other). A search given it takes the trial over at that time rather
    than making it, when no node of `changed` could take one of the root's pods then, in the earlier search
    or in this one (see earliest_start)."""

    found: Reservation
    usable: BoolArray
    changed: npt.NDArray[np.intp]


def earliest_start(
    scheduler: Scheduler,
    root: RootKey,
    place: Placer,
    estimate: Estimate,
    running: Running,
    reservations: Sequence[Reservation],
    now: float,
    settings: PlanSettings,
    *,
    after: float = -INFINITE,
    until: float = INFINITE,
    unfit: tuple[float, float] = (INFINITE, INFINITE),
    start_only: bool = False,
    last_first: bool | None = None,
    known: KnownTrial | None = None,
) -> StartSearch:
    """The first time in [now, now + window] at which `place` fits the root around `reservations`, with the
    nodes it then takes (`StartSearch.found`); None if it fits at no such time (or only with work of unknown
    end gone). With `after` / `until`, only the candidate times in (after, until] are tried (EarliestStarts).
    `unfit` = [a, b): the caller knows that the root fits by capacity at no time in it (EarliestStarts), so
    those candidates are neither counted nor tried; `fits_from` is then the first of the others.
    `start_only`: the caller reads the start alone (a plan of depth 0, which reserves nothing): where the
    capacity check decides the trial (`_capacity_decides`), its first time is the start, no trial is made,
    and the reservation found names no nodes and no blockers.
    `last_first`: whether the capacity check counts the last candidate first (`_could_fit`: the same times
    either way); None: only in a search bounded by `until`.
    `known`: a trial an earlier search made with the same estimate and pods, on the same snapshot object
    counting only running work, around reservations that differ from these only on nodes of
    `known.changed` (EarliestStarts). Its nodes are taken over for the trial at its time when no node of
    `known.changed` could take one of the root's pods then, neither now nor in the earlier search, and both
    trials read of such nodes only that (see `usable` below): a node masked out by a reservation and one
    short of room are alike to the cycle (no fit, no score, not among the ties). Then every other node is
    in the same state and mask in both searches at that time, so each pod of the cycle finds the same
    nodes fit, with the same scores, and the tie-breaker, started afresh, draws the same node among the
    same ties; the nodes it takes are among those, so the next pod finds the same again.
    Most of fair share's partial searches are of this kind: short work started on nodes the head's
    reservation does not hold and runs past its start, on nodes that cannot take a pod of the head then.

    Candidate times are now and the (rounded) expected ends of running work and of reservations. Ties are
    broken by `tie_breaker`, started afresh at each trial; the scheduler's own generator is neither read nor
    advanced. The snapshot is left as found."""
    snap = scheduler.snapshot()
    ev = scheduler.evaluator()
    duration = estimate.seconds if estimate.seconds is not None else INFINITE
    horizon = now + settings.window
    ends = [settings.round_up(r.end) for r in reservations if r.end < INFINITE]
    # The releases are in order: only those in [now, until] and within the window can be candidates.
    releases = running.releases
    lo = int(releases.searchsorted(now, side="left"))
    hi = int(releases.searchsorted(min(horizon, until), side="right"))
    # Sorted and without repeats, as np.unique would give them, without its cost (a fresh search made it on
    # a few hundred releases at each plan): the releases are in order and not before `now`, so only the
    # reservations' ends, when there are any, need a sort.
    times = np.concatenate([np.array([now, *ends], dtype=np.float64), releases[lo:hi]])
    if ends:
        times.sort()
    first_of_its_value = np.empty(len(times), dtype=bool)
    first_of_its_value[0] = True
    np.not_equal(times[1:], times[:-1], out=first_of_its_value[1:])
    times = times[first_of_its_value]
    # In order: those in [now, min(horizon, until)], finite and after `after` are one run of them.
    times = times[
        max(times.searchsorted(now, "left"), times.searchsorted(after, "right")) : min(
            times.searchsorted(min(horizon, until), "right"), times.searchsorted(INFINITE, "left")
        )
    ]
    if unfit[0] < unfit[1]:
        times = times[(times < unfit[0]) | (times >= unfit[1])]
    # By default the last candidate is counted first only for a search bounded by `until` (see _could_fit).
    if last_first is None:
        last_first = until < INFINITE
    counts = _counts_capacity(place)  # read once per search: a set over the root's pods, and so on
    decides = counts and _capacity_decides(scheduler, place, counts)
    # The trial reads of a node that none of the root's pods fits only that it fits none when the capacity
    # check decides it (every pod placed by its resource fit and scores, its class's static verdict and
    # scores, on the nodes of the mask) with NodeResourcesFit on: a node where the check counts no pod is
    # then one where the cycle finds no fit (masked out, refused statically or short of some resource) and
    # scores nothing. Only then are the nodes that could take a pod kept (`usable`: see `known`).
    usable: dict[float, BoolArray] | None = {} if decides and ev.fits_resources else None
    could = _could_fit(
        scheduler,
        root,
        place,
        times,
        running,
        reservations,
        duration,
        last_first=last_first,
        usable=usable,
        counts=counts,
    )
    first = next(could, None)
    fits_from = -INFINITE
    if not reservations and counts:
        fits_from = INFINITE if first is None else first
    if first is None:
        return StartSearch(None, fits_from)
    if start_only and decides:
        ahead = tuple(r.root for r in reservations if r.holds(now, first + duration))
        found = Reservation(root, first, first + duration, frozenset(), None, estimate, (), ahead)
        return StartSearch(found, fits_from)
    undo: list[Callable[[], None]] = []
    gone: list[RunningWork] = []
    next_work = 0
    taken_over = False
    ties, fresh = _fresh_tie_breaker(scheduler.seed, root)
    cycle_rng, ev.rng = ev.rng, ties
    try:
        for t in itertools.chain([first], could):
            batch: list[PodKey] = []
            released = int(running.releases.searchsorted(t, side="right"))  # releases are in order
            for work in running.works[next_work:released]:
                if work.root != root:
                    batch.extend(work.pods)
                    gone.append(work)
            next_work = max(next_work, released)
            if (
                known is not None
                and usable is not None
                and t == known.found.start
                and not usable[t][known.changed].any()
                and not known.usable[known.changed].any()
            ):
                nodes, domain = known.found.nodes, known.found.domain  # the same trial (see above)
                taken_over = True
            else:
                if batch:
                    undo.append(snap.remove_many(batch))
                ties.bit_generator.state = fresh
                result = place(_free_of(reservations, t, t + duration, len(snap)))
                if result.code != Code.SUCCESS:
                    continue
                nodes = frozenset(node for _, node in result.placed)
                result.revert()
                domain = getattr(result, "domain", None)
            blockers = tuple(w for w in gone if w.nodes & nodes)
            ahead = tuple(r.root for r in reservations if r.holds(now, t + duration))
            found = Reservation(root, t, t + duration, nodes, domain, estimate, blockers, ahead)
            return StartSearch(found, fits_from, None if usable is None else usable[t], taken_over)
        return StartSearch(None, fits_from)
    finally:
        ev.rng = cycle_rng
        while undo:
            undo.pop()()


def plan_queue(
    scheduler: Scheduler,
    order: Sequence[RootKey],
    now: float,
    settings: PlanSettings,
    *,
    history: History | None = None,
    running: Running | None = None,
) -> dict[RootKey, Reservation | None]:
    """Conservative plan of `order` (pending roots, most important first): each root's earliest start
    around the nodes every root before it holds, whether that root starts now or later (what Slurm's
    `squeue --start` shows under conservative backfill). Roots with nothing to place are left out."""
    if running is None:
        running = running_work(scheduler, now, settings, history)
    plan: dict[RootKey, Reservation | None] = {}
    held: list[Reservation] = []
    for root in order:
        place = scheduler.placer(root)
        if place is None:
            continue
        r = earliest_start(
            scheduler, root, place, root_estimate(scheduler, root, history), running, held, now, settings
        ).found
        plan[root] = r
        if r is not None:
            held.append(r)
    return plan
