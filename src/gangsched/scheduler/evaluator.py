"""Filter and score one pod against every node at once, and pick a node (upstream's SchedulePod).

The plugins are data: FILTERS and SCORES list kube-scheduler v1.37's default profile in its order, with its
weights (pkg/scheduler/apis/config/v1/default_plugins.go), each entry saying when its verdict can change
(`plugins/__init__.py`): static plugins run once per equivalence class of pods (same requests, selector,
node affinity, tolerations, images), resource plugins are refreshed only on the nodes the snapshot's change
log names, and pods-stage plugins (ports, spread, pod affinity) read per-node counters of placed pods that
follow the snapshot's pod log. A 1,000-pod gang of one template therefore costs about as much as one pod per
node touched; pods-stage work is done only for pods that have ports, spread constraints or pod affinity, or
while placed pods carry affinity terms of their own. A Profile can switch plugins off by name.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np
from msgspec import Struct

from .claims_plugins import DRA_NAME, DRA_WEIGHT, PREEMPTIBLE_CLAIM_PLUGINS
from .cycle_rng import TieBreaker
from .domains import DomainBests, DomainSums, NodeValues, retie
from .plugins import (
    BoolArray,
    Int64Array,
    PodContext,
    Rejections,
    balanced_allocation,
    image_locality,
    inter_pod_affinity,
    node_affinity,
    node_name,
    node_ports,
    node_resources_fit,
    node_unschedulable,
    node_volume_limits,
    pod_topology_spread,
    taint_toleration,
    unsupported,
    volume_binding,
    volume_restrictions,
    volume_zone,
)
from .podcounts import PodsView
from .podinfo import PodInfo, PodKey
from .snapshot import PodVector, Snapshot, split_state

if TYPE_CHECKING:
    import numpy.typing as npt

    # built and imported by the scheduler once a pod uses claims (claims_plugins.py)
    from .claims_stage import ClaimsStage

__all__ = [
    "FILTERS",
    "PREFILTERS",
    "SCORES",
    "Evaluator",
    "FilterPlugin",
    "FitFailure",
    "ScorePlugin",
    "ScoringStrategy",
]

ScoringStrategy = str  # "LeastAllocated" (upstream default) or "MostAllocated"
_max = np.maximum.reduce  # ndarray.max without its Python wrapper: find_node calls it for every pod
_MAX_CHANGE_LOG = 200_000
_COLUMN_MEMO = 4096  # node columns a class keeps its scalar fit-and-score for (`_Class.by_column`)
_ROOM_LOG = 32  # room_for refreshes up to this many logged changes node by node, more all at once
_MASKED_KEPT = 16  # room_for's sums kept per class over read-only masks (a philly replay holds 12 at most)
STATIC, RESOURCES, PODS, CLAIMS = "static", "resources", "pods", "claims"


class FilterPlugin(Struct, frozen=True):
    """A filter: `run(snap, spec)` for static ones, `run(view, PodContext)` for pods-stage ones;
    NodeResourcesFit (stage resources) is run by the evaluator on changed columns."""

    name: str
    stage: str
    run: Callable[..., Rejections] | None = None


class ScorePlugin(Struct, frozen=True):
    """A score with its weight: static ones give raw per-node values (`raw(snap, spec)`, None: all zero)
    normalised over the feasible nodes by `normalize`; pods-stage ones give normalised scores of the
    feasible nodes (`run(view, PodContext, feasible)`); resource ones are computed on changed columns."""

    name: str
    weight: int
    stage: str
    raw: Callable[..., Int64Array | None] | None = None
    normalize: Callable[[Int64Array], Int64Array] | None = None
    run: Callable[..., Int64Array | None] | None = None
    # pods-stage: `skips(view, PodContext)` true when `run` would return None (PreScore Skip) whatever nodes
    skips: Callable[..., bool] | None = None


# PreFilters that reject the pod outright (upstream: PreFilter returns Unschedulable, rendered
# `0/N nodes are available: MESSAGE.`); they read only the pod.
PREFILTER_REFUSALS: tuple[tuple[str, Callable[[Any], str | None]], ...] = (
    (node_affinity.NAME, node_affinity.conflict),
    (unsupported.NAME, unsupported.refusal),
)
# PreFilter results that narrow the nodes every filter looks at (reported before any filter's reason).
PREFILTERS: tuple[tuple[str, Callable[[Snapshot, Any], Rejections]], ...] = (
    (node_affinity.NAME, node_affinity.prefilter_nodes),
)
# The default profile's filters, in upstream's order (a node reports the first that rejects it). The volume
# plugins follow NodeResourcesFit; DynamicResources is inserted before DefaultPreemption, so it comes last.
# Claims-stage filters read a pod's PersistentVolumeClaims and ResourceClaims (claims_stage.py).
FILTERS: tuple[FilterPlugin, ...] = (
    FilterPlugin(node_name.NAME, STATIC, node_name.filter_nodes),
    FilterPlugin(node_unschedulable.NAME, STATIC, node_unschedulable.filter_nodes),
    FilterPlugin(taint_toleration.NAME, STATIC, taint_toleration.filter_nodes),
    FilterPlugin(node_affinity.NAME, STATIC, node_affinity.filter_nodes),
    FilterPlugin(node_ports.NAME, PODS, node_ports.filter_nodes),
    FilterPlugin(node_resources_fit.NAME, RESOURCES),
    FilterPlugin(volume_restrictions.NAME, CLAIMS),
    FilterPlugin(node_volume_limits.NAME, CLAIMS),
    FilterPlugin(volume_binding.NAME, CLAIMS),
    FilterPlugin(volume_zone.NAME, CLAIMS),
    FilterPlugin(pod_topology_spread.NAME, PODS, pod_topology_spread.filter_nodes),
    FilterPlugin(inter_pod_affinity.NAME, PODS, inter_pod_affinity.filter_nodes),
    FilterPlugin(DRA_NAME, CLAIMS),
)
SCORES: tuple[ScorePlugin, ...] = (
    ScorePlugin(
        taint_toleration.NAME,
        taint_toleration.WEIGHT,
        STATIC,
        taint_toleration.raw_scores,
        taint_toleration.normalize,
    ),
    ScorePlugin(
        node_affinity.NAME, node_affinity.WEIGHT, STATIC, node_affinity.raw_scores, node_affinity.normalize
    ),
    ScorePlugin(node_resources_fit.NAME, node_resources_fit.WEIGHT, RESOURCES),
    ScorePlugin(
        pod_topology_spread.NAME,
        pod_topology_spread.WEIGHT,
        PODS,
        run=pod_topology_spread.score_nodes,
        skips=pod_topology_spread.score_skips,
    ),
    ScorePlugin(
        inter_pod_affinity.NAME,
        inter_pod_affinity.WEIGHT,
        PODS,
        run=inter_pod_affinity.score_nodes,
        skips=inter_pod_affinity.score_skips,
    ),
    # firstAvailable: nodes where earlier subrequests can be allocated score higher (claims_stage.scores)
    ScorePlugin(DRA_NAME, DRA_WEIGHT, CLAIMS),
    ScorePlugin(balanced_allocation.NAME, balanced_allocation.WEIGHT, RESOURCES),
    ScorePlugin(
        image_locality.NAME,
        image_locality.WEIGHT,
        STATIC,
        image_locality.raw_scores,
        image_locality.normalize,
    ),
)


class FitFailure(Struct):
    """No node fits: per-reason node counts, rendered as upstream's FitError."""

    nodes: int
    histogram: Counter[str] = msgspec.field(default_factory=Counter)
    prefilter_message: str | None = None  # a PreFilter rejected the pod itself

    def message(self) -> str:
        if self.nodes == 0:
            return "no nodes available to schedule pods"
        if self.prefilter_message is not None:
            return f"0/{self.nodes} nodes are available: {self.prefilter_message}."
        parts = sorted(f"{count} {reason}" for reason, count in self.histogram.items())
        tail = f" {', '.join(parts)}." if parts else ""
        return f"0/{self.nodes} nodes are available:{tail}"


class _Class:
    """What the evaluator keeps for one equivalence class of pods. A plain slotted class: made when the
    module is imported without compiling methods from source (a slotted dataclass's take about a millisecond),
    and its fields are set in every refresh at the cost of a slot's (a mutable msgspec Struct's setattr
    costs several times more)."""

    __slots__ = (
        "by_column",
        "domain_bests",
        "domain_sums",
        "generation",
        "key",
        "masked",
        "masked_cells",
        "prefilter_rejections",
        "refusal",
        "rejections_by_plugin",
        "spec",
        "states",
        "static_cells",
        "static_ok",
        "static_scores",
        "synced",
        "ties",
        "top",
        "vec",
    )

    def __init__(
        self,
        *,
        key: Hashable,
        vec: PodVector,
        static_ok: BoolArray,
        prefilter_rejections: Rejections,
        rejections_by_plugin: dict[str, Rejections],
        static_scores: list[tuple[ScorePlugin, Int64Array]],
        masked: Int64Array,
        synced: int,
        spec: Any,
        refusal: str | None = None,
    ) -> None:
        self.key = key  # the pods' equivalence signature
        self.vec = vec
        self.static_ok = static_ok
        self.prefilter_rejections = prefilter_rejections
        self.rejections_by_plugin = rejections_by_plugin  # static filters' rejections
        self.static_scores = static_scores  # raw values of static scores that are not all zero
        self.masked = masked  # resource + balance score where the pod fits, -1 where it does not
        self.synced = synced
        self.spec = spec
        self.refusal = refusal  # a PreFilter's rejection of the pod itself: no node is feasible
        self.generation = -1  # the snapshot's log generation `synced` counts in (a cleared log: start over)
        # The best of `masked` and the nodes that have it, in node order (`_best`), kept in step with the
        # column-by-column refreshes; None: to be found again. An array of machine integers: 8 bytes a
        # node, as `masked` (a list of ints would take 36), with insertion and deletion in C.
        self.top: int | None = None
        self.ties: array[int] = array("q")
        # The scalar refresh's fit-and-score by node column (allocatable, used and non-zero used amounts:
        # all that NodeResourcesFit and BalancedAllocation read): nodes of one kind at one usage get the
        # same value, and the pods of a template fill nodes in the same few steps, so most refreshes find
        # it here.
        self.by_column: dict[tuple[int, ...], int] = {}
        # Each node's Snapshot.state as the scalar refresh last read it, for nodes the class's static filters
        # admit (None: not read since the last refresh through numpy); kept only once `state` is asked.
        self.states: list[tuple[int, ...] | None] | None = None
        # The best of `masked` per domain of a topology key (find_node's `domain`), by key.
        self.domain_bests: dict[str, DomainBests] = {}
        # Per-domain sums of a per-node quantity of the class (topology placement's room), by key.
        self.domain_sums: dict[str, DomainSums] = {}
        # `static_ok` and `masked` as memoryviews over the same memory, for the scalar refresh of a few
        # columns: indexing one gives or takes a Python bool or int, where indexing the array makes a numpy
        # scalar and costs several times more.
        self.static_cells: memoryview = static_ok.data
        self.masked_cells: memoryview = masked.data

    def state(self, snap: Snapshot, col: int) -> tuple[int, ...]:
        """`snap.state(col)`, as the class's last refresh of node `col` read it when the class is current
        with the change log: every node changed since that read was then read again after its change (or
        the reads were dropped). Topology placement's per-domain sums read the nodes a group changed right
        after the class was brought in step with them."""
        states = self.states
        if states is None:  # from now on
            self.states = [None] * len(snap)
        elif self.synced == len(snap.changed) and self.generation == snap.generation:
            state = states[col]
            if state is not None:
                return state
        return snap.state(col)

    @property
    def static_rejections(self) -> Rejections:
        """Every static rejection, PreFilter's first, then the filters' in table order."""
        out = list(self.prefilter_rejections)
        for rejections in self.rejections_by_plugin.values():
            out += rejections
        return out


def _best(c: _Class) -> tuple[int, array[int]]:
    """(the best of `c.masked`, the nodes that have it in node order): kept from the last call unless a
    refresh invalidated it, so that a pod need not scan every node for a maximum that one placement rarely
    moves."""
    if c.top is None:
        masked = c.masked
        c.top = int(_max(masked)) if masked.size else -1
        c.ties = array("q", (masked == c.top).nonzero()[0].astype(np.int64).tobytes())
    return c.top, c.ties


class _MaskedSum(Struct, eq=False):
    """A `_Room`'s sum over one read-only mask, which it holds so that the mask's id stays its own, with the
    mask's cells as Python bools: each count that changes reads one cell of every kept mask, where a numpy
    scalar read costs several times a list's."""

    mask: BoolArray
    cells: list[bool]
    total: int


class _Room(Struct, eq=False):
    """How many pods of one class the free capacity of each node holds (0 where its static filters refuse
    them) and their sum, current with the snapshot's change log up to `synced` in `generation`. The counts
    are kept twice: as Python ints (`per_node`, read and written one node at a time) and as an array
    (`array`, for the sums over a mask that backfill asks for many times per release). `masked` keeps the
    sums over the masks asked for most (by id: each entry holds its mask, so that the id stays its own),
    refreshed with the counts: backfill's bound before a cycle asks for the same few masks (the nodes no
    reservation holds) at every failed cycle, and summing over a mask cost 3 us each time."""

    per_node: list[int]
    array: npt.NDArray[np.int64]
    total: int
    synced: int
    generation: int
    masked: dict[int, _MaskedSum] = msgspec.field(default_factory=dict)


class _PodsLayer(Struct, eq=False):
    """Pods-stage verdicts for one class and one set of traits, valid for one state of the pod log."""

    context: PodContext
    rejections_by_plugin: dict[str, Rejections]
    ok: BoolArray
    synced: tuple[int, int] = (-1, -1)
    all_ok: bool = True  # no pods-stage filter rejects any node (`ok` is all True)


class Evaluator:
    """Finds nodes for pods on one Snapshot. Not thread-safe; reads the snapshot, never changes it."""

    def __init__(
        self,
        snap: Snapshot,
        rng: TieBreaker,
        scoring: ScoringStrategy = "LeastAllocated",
        *,
        disabled: frozenset[str] = frozenset(),
        namespace_labels: Callable[[str], Mapping[str, str]] = lambda _: {},
    ):
        if scoring not in ("LeastAllocated", "MostAllocated"):
            raise ValueError(f"unknown scoring strategy {scoring!r}")
        self.snap = snap
        self.rng = rng
        self._disabled = disabled
        self.filters = tuple(f for f in FILTERS if f.name not in disabled)
        self.prefilters = tuple(p for p in PREFILTERS if p[0] not in disabled)
        self.scores = tuple(s for s in SCORES if s.name not in disabled)
        weights = {s.name: s.weight for s in self.scores}
        self._fit_enabled = any(f.name == node_resources_fit.NAME for f in self.filters)
        self._fit_weight = weights.get(node_resources_fit.NAME, 0)
        self._balance_weight = weights.get(balanced_allocation.NAME, 0)
        self._pods_filters = tuple(f for f in self.filters if f.stage == PODS)
        self._pods_scores = tuple(s for s in self.scores if s.stage == PODS)
        self.view = PodsView(snap, namespace_labels)
        self._layers: dict[tuple[Hashable, int], _PodsLayer] = {}
        self._resource_score = (
            node_resources_fit.least_allocated
            if scoring == "LeastAllocated"
            else node_resources_fit.most_allocated
        )
        self._classes: dict[Hashable, _Class] = {}
        # The class last looked up and the signature object it was looked up by: the pods of a template share
        # one signature object (pod_info's cache), and a signature is a tuple, whose hash is computed again
        # at every dict lookup (a few thousand instructions).
        self._last_signature: Hashable = None
        self._last_class: _Class | None = None
        self._rooms: dict[Hashable, _Room] = {}  # room_for's counts per class, kept current like classes
        self._labelled: dict[str, BoolArray] = {}
        self.root_placements: dict[str, list[Any]] = {}  # topology key -> placements over all nodes
        self._last_mask: BoolArray | None = None
        self._last_scope: npt.NDArray[np.intp] = np.zeros(0, dtype=np.intp)
        # Volume and device filters (claims_stage.py), set by the scheduler that knows the store; the
        # last claims verdict (pod, rejections by plugin) for the failure message.
        self.claims: ClaimsStage | None = None
        self._claims_on = any(f.stage == CLAIMS for f in self.filters)
        self._dra_scored = any(s.name == DRA_NAME for s in self.scores)
        self._claims_verdict: tuple[PodKey, dict[str, Rejections]] | None = None
        self._failure_memo: tuple[Hashable, FitFailure] | None = None  # the last `_failure` (its key, result)

    def _dynamic(self, c: _Class, cols: npt.NDArray[np.intp] | slice | set[int]) -> None:
        """Refresh fit and score on `cols`. A handful of columns (the usual case: the node the previous pod
        went to) is cheaper in scalar code than in numpy calls; both paths compute the same integers."""
        snap = self.snap
        fit_on, fit_w, bal_w = self._fit_enabled, self._fit_weight, self._balance_weight
        if not isinstance(cols, set):
            fit = (
                c.static_ok[cols] & node_resources_fit.fits(snap, c.vec, cols)
                if fit_on
                else c.static_ok[cols]
            )
            score = self._resource_score(snap, c.vec, cols) * fit_w + (
                balanced_allocation.score(snap, c.vec, cols) * bal_w
            )
            c.masked[cols] = np.where(fit, score, -1)
            c.top = None
            if c.states is not None:
                c.states = [None] * len(snap)
            return
        for col in cols:
            self._refresh_column(c, col)

    def _refresh_column(self, c: _Class, col: int) -> None:
        """`_dynamic` on one column, in scalar code: the node's fit-and-score for the class, kept by node
        state (`c.by_column`), and the class's best and ties brought in step: a value above the best, or no
        tie left, leaves them to be found again (`_best`), as does a best already to be found again."""
        if not c.static_cells[col]:
            value = -1
        else:
            by_column = c.by_column
            if len(by_column) > _COLUMN_MEMO:
                by_column.clear()
            # The node's amounts as Python ints: arithmetic on numpy scalars costs several times more.
            state = self.snap.state(col)
            states = c.states
            if states is not None:
                states[col] = state
            kept = by_column.get(state)
            if kept is None:
                kept = by_column[state] = self._fit_and_score(state, c.vec)
            value = kept
        c.masked_cells[col] = value
        top = c.top
        if top is not None and not retie(top, c.ties, col, value):
            c.top = None

    def _fit_and_score(self, state: tuple[int, ...], vec: PodVector) -> int:
        """NodeResourcesFit's verdict and the resource scores (weighted) of a node in `state`
        (Snapshot.state): -1 where the pod does not fit."""
        alloc, used, nonzero_used = split_state(state)
        if self._fit_enabled and not node_resources_fit.fits_one(alloc, used, vec):
            return -1
        most = self._resource_score is node_resources_fit.most_allocated
        return node_resources_fit.score_one(alloc, nonzero_used, vec, most) * self._fit_weight + (
            balanced_allocation.score_one(alloc, used, vec) * self._balance_weight
        )

    def _class(self, pi: PodInfo) -> _Class:
        snap = self.snap
        if len(snap.changed) > _MAX_CHANGE_LOG or len(snap.pod_log) > _MAX_CHANGE_LOG:
            snap.clear_logs()
        c = self._known_class(pi.signature)
        if c is None:
            c = self._new_class(pi)
            self._classes[pi.signature] = c
        self._sync(c)
        return c

    def _known_class(self, signature: Hashable) -> _Class | None:
        """The class of pods of `signature`, None when none was made yet."""
        if signature is self._last_signature:
            return self._last_class
        c = self._classes.get(signature)
        if c is not None:  # classes are never dropped: the pair stays true
            self._last_signature, self._last_class = signature, c
        return c

    def _sync(self, c: _Class) -> None:
        """Bring the class's fit and score in step with the snapshot's change log."""
        snap = self.snap
        changed = snap.changed
        synced = c.synced
        if synced < 0 or c.generation != snap.generation:
            self._dynamic(c, slice(None))
        elif synced == len(changed) - 1:  # the usual case: the node the previous pod went to
            self._refresh_column(c, changed[synced])
        elif synced < len(changed):
            pending = changed[synced:]
            if len(pending) <= 8:
                self._dynamic(c, set(pending))
            else:
                self._dynamic(c, np.unique(np.asarray(pending, dtype=np.intp)))
        c.synced, c.generation = len(changed), snap.generation

    def _new_class(self, pi: PodInfo) -> _Class:
        snap, spec = self.snap, pi.pod.spec
        refusal = next(
            (m for name, check in PREFILTER_REFUSALS if name not in self._disabled and (m := check(spec))),
            None,
        )
        prefiltered: Rejections = []
        for _, prefilter in self.prefilters:  # nodes PreFilter leaves out get only its reason
            prefiltered += prefilter(snap, spec)
        by_plugin = {
            f.name: f.run(snap, spec) for f in self.filters if f.stage == STATIC and f.run is not None
        }
        static_ok = np.full(len(snap), refusal is None, dtype=bool)
        for mask, _ in prefiltered + [r for rs in by_plugin.values() for r in rs]:
            static_ok &= ~mask
        static_scores = []
        for s in self.scores:
            if s.stage == STATIC and s.raw is not None and (raw := s.raw(snap, spec)) is not None:
                static_scores.append((s, raw))
        return _Class(
            key=pi.signature,
            vec=snap.vector(pi.requests, pi.nonzero),
            static_ok=static_ok,
            prefilter_rejections=prefiltered,
            rejections_by_plugin=by_plugin,
            static_scores=static_scores,
            masked=np.full(len(snap), -1, dtype=np.int64),
            synced=-1,
            spec=spec,
            refusal=refusal,
        )

    @property
    def fits_resources(self) -> bool:
        """Whether NodeResourcesFit filters: a node short of a resource a pod asks for is then no fit."""
        return self._fit_enabled

    def reads_other_pods(self, pi: PodInfo) -> bool:
        """Whether a pods-stage plugin has anything to check for `pi` (else PreFilter and PreScore would all
        Skip): it has host ports, spread constraints or pod affinity, or placed pods carry affinity terms."""
        traits = pi.traits
        if not (self._pods_filters or self._pods_scores):
            return False
        return bool(traits.host_ports or traits.spread or traits.carries_terms or self.snap.carriers)

    def reads_placed_pods(self, pi: PodInfo) -> tuple[bool, bool]:
        """Whether a filter that a gang's preemption asks again when it puts victims back reads other placed
        pods for `pi`: (on `pi`'s own node, on any node). Pods-stage plugins read every node (spread and pod
        affinity count whole domains); NodeVolumeLimits reads the node's attached volumes. Not
        VolumeRestrictions: in upstream's dry run the victims are out when its PreFilter runs, so a
        ReadWriteOncePod claim has no other user, the plugin Skips, and neither its AddPod nor its Filter runs
        when a victim holding the claim is put back (podgrouppreemption.go reprieveVictim,
        volume_restrictions.go PreFilter): the holder is always spared, as kube-scheduler v1.37.2 does."""
        if self.reads_other_pods(pi):
            return (True, True)
        if not self._claims_apply(pi):
            return (False, False)
        assert self.claims is not None
        return (self.claims.reads_node_pods(pi), False)

    def _pods_layer(self, pi: PodInfo, c: _Class) -> _PodsLayer | None:
        """The pod's pods-stage verdicts, current with the pod log; None when `reads_other_pods` is false."""
        traits = pi.traits
        if not self.reads_other_pods(pi):
            return None
        key = (c.key, traits.ident)
        layer = self._layers.get(key)
        if layer is None:
            snap, spec = self.snap, c.spec
            affinity_ok = np.ones(len(snap), dtype=bool)
            for mask, _ in node_affinity.filter_nodes(snap, spec):
                affinity_ok &= ~mask
            taints_ok = np.ones(len(snap), dtype=bool)
            for mask, _ in taint_toleration.filter_nodes(snap, spec):
                taints_ok &= ~mask
            context = PodContext(key, traits, spec, affinity_ok, taints_ok)
            layer = self._layers[key] = _PodsLayer(context, {}, np.ones(len(snap), dtype=bool))
        state = (self.snap.generation, len(self.snap.pod_log))
        if layer.synced != state:
            before = layer.rejections_by_plugin
            layer.rejections_by_plugin = {
                f.name: f.run(self.view, layer.context) for f in self._pods_filters if f.run
            }
            # Plugins return the very same lists while their verdict holds: then so does `ok`.
            if any(
                rejections is not (prev := before.get(name)) and (rejections or prev)
                for name, rejections in layer.rejections_by_plugin.items()
            ):
                layer.ok = np.ones(len(self.snap), dtype=bool)
                layer.all_ok = True
                for rejections in layer.rejections_by_plugin.values():
                    for mask, _ in rejections:
                        layer.ok &= ~mask
                        layer.all_ok = False
            layer.synced = state
        return layer

    def domain_sums(
        self, c: _Class, key: str, values: Callable[[Snapshot, _Class], NodeValues]
    ) -> DomainSums:
        """The DomainSums of topology key `key` of a per-node quantity of class `c`, created on first use
        (of the NodeValues that `values(snapshot, c)` makes) and then kept on the class: looked up by key
        alone, without hashing the class's signature for every group."""
        sums = c.domain_sums.get(key)
        if sums is None:
            sums = c.domain_sums[key] = DomainSums(self.snap, key, values(self.snap, c))
        return sums

    def labelled(self, key: str) -> BoolArray:
        """Nodes that carry label `key` (the same array object on every call)."""
        mask = self._labelled.get(key)
        if mask is None:
            mask = self.snap.label_codes(key) >= 0
            self._labelled[key] = mask
        return mask

    def equivalence_class(self, pi: PodInfo) -> _Class:
        """The pod's class, refreshed: static verdict (`static_ok`), vector (`vec`), fit and score."""
        return self._class(pi)

    def static_class(self, pi: PodInfo) -> _Class:
        """The pod's class for what does not move with the snapshot's usage (`static_ok`, `vec`): its fit
        and score columns may be stale (`equivalence_class` refreshes them)."""
        return self._classes.get(pi.signature) or self._class(pi)

    def room_for(self, pi: PodInfo, nodes: BoolArray | None = None) -> int:
        """How many pods like `pi` the free capacity could hold at once, over the nodes its static filters
        admit (and, when given, `nodes` allows: the candidates of a cycle): an upper bound on what any
        cycle on those nodes can place (inter-pod rules, nominated pods and topology only lower it).

        Every release asks it for each class waiting, so the per-node counts are kept and refreshed only on
        the nodes the snapshot's change log names since the last call (usually one or two)."""
        snap = self.snap
        changed = snap.changed
        # Kept by the class's key, its signature: a class is made before its counts and never dropped, so
        # it is looked up only when the counts move (most calls of a walk find them current).
        room = self._rooms.get(pi.signature)
        if room is None or room.generation != snap.generation or len(changed) > room.synced + _ROOM_LOG:
            c = self.static_class(pi)
            room = self._rooms[c.key] = self._room_everywhere(c)
        elif room.synced < len(changed):
            c = self._classes[pi.signature]
            per_node, array, masked = room.per_node, room.array, room.masked
            static_cells, holds, vec = c.static_cells, snap.holds, c.vec
            for col in set(changed[room.synced :]):
                # `_room_everywhere` on one node, in scalar code (the same integers: `Snapshot.holds` reads
                # the node's free amounts through memoryviews, where a numpy column costs several times more).
                count = holds(col, vec) if static_cells[col] else 0
                delta = count - per_node[col]
                if delta:
                    room.total += delta
                    per_node[col] = array[col] = count
                    for summed in masked.values():
                        if summed.cells[col]:
                            summed.total += delta
            room.synced = len(changed)
        if nodes is None:
            return room.total
        kept = room.masked.get(id(nodes))
        if kept is not None:
            return kept.total
        total = int(room.array[nodes].sum())
        if not nodes.flags.writeable and nodes.base is None:  # a mask that cannot change: its sum is kept
            if len(room.masked) >= _MASKED_KEPT:
                room.masked.clear()
            room.masked[id(nodes)] = _MaskedSum(nodes, nodes.tolist(), total)
        return total

    def _room_everywhere(self, c: _Class) -> _Room:
        snap = self.snap
        room: npt.NDArray[np.int64] = np.zeros(len(snap), dtype=np.int64)
        for i, (row, v) in enumerate(c.vec.rows):
            fits = (snap.alloc[row] - snap.used[row]) // v
            room = fits if i == 0 else np.minimum(room, fits)
        array = np.where(c.static_ok, np.maximum(room, 0), 0).astype(np.int64)
        per_node = array.tolist()
        return _Room(per_node, array, sum(per_node), len(snap.changed), snap.generation)

    def vector(self, pi: PodInfo) -> PodVector:
        """What `pi` takes from a node. Never builds its class: a bound pod's spec names its node, and a
        class built from it would carry NodeName's verdict to the pending pods of its template."""
        cached = self._classes.get(pi.signature)
        return cached.vec if cached is not None else self.snap.vector(pi.requests, pi.nonzero)

    def _scope(self, candidates: BoolArray) -> npt.NDArray[np.intp]:
        """Indexes of the candidate nodes; a cycle passes the same mask for every pod, so keep the last."""
        if candidates is not self._last_mask:
            self._last_mask, self._last_scope = candidates, np.flatnonzero(candidates)
        return self._last_scope

    def _nominated_node(
        self, pi: PodInfo, masked: npt.NDArray[np.int64], candidates: BoolArray | None
    ) -> int | None:
        """Upstream's evaluateNominatedNode: a pod nominated by preemption takes its nominated node, unscored,
        whenever it still fits there - so the room preemption made for it is the room it gets."""
        held = self.snap.nominated.get(pi.key)
        name = pi.pod.status.nominatedNodeName if pi.pod.status is not None else None
        node = held[0] if held is not None else (self.snap.index.get(name) if name else None)
        if node is None or masked[node] < 0 or (candidates is not None and not candidates[node]):
            return None
        return node

    def _held_back(self, pi: PodInfo) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.int64]]:
        """Nodes where nominated pods of equal or higher priority hold room against `pi`, and that room."""
        return self.snap.held_for(pi.priority, pi.key)

    def _with_nominated(self, pi: PodInfo, c: _Class) -> npt.NDArray[np.int64]:
        """The class's fit-and-score row for `pi`, with the nodes where it fits only by taking room that a
        nominated pod of equal or higher priority holds marked unfit (RunFilterPluginsWithNominatedPods;
        scores ignore nominated pods, as upstream's do)."""
        if not self.snap.nominated:
            return c.masked
        cols, held = self._held_back(pi)
        if not cols.size:
            return c.masked
        free = self.snap.alloc[:, cols] - self.snap.used[:, cols] - held
        ok = np.ones(cols.size, dtype=bool)
        for row, v in c.vec.rows:
            ok &= free[row] >= v
        if ok.all():
            return c.masked
        masked = c.masked.copy()
        masked[cols[~ok]] = -1
        return masked

    def find_node(
        self, pi: PodInfo, candidates: BoolArray | None = None, domain: tuple[str, int] | None = None
    ) -> int | FitFailure:
        """The best node for `pi` among `candidates` (all nodes when None), or why there is none. `domain`
        (key, label code), when given, says that `candidates` are exactly the nodes with that code of
        that key: the best among them is then kept per domain (DomainBests) instead of found again.

        Ties are broken by the generator among the tied nodes in node order, whether or not a candidate
        mask restricts them, so the same state and seed give the same node."""
        c = self._class(pi)
        layer = self._pods_layer(pi, c)
        claims_ok = self._claims_filter(pi, c) if pi.claims else None
        fit = self._with_nominated(pi, c)
        nominated = self._nominated_node(pi, fit, candidates)
        if (
            nominated is not None
            and (layer is None or layer.ok[nominated])
            and (claims_ok is None or claims_ok[nominated])
        ):
            return nominated
        only_resources = (
            (layer is None or (layer.all_ok and self._pods_scores_skip(layer)))
            and not c.static_scores
            and not (claims_ok is not None and self._dra_scored)
        )
        if only_resources and fit is c.masked and claims_ok is None:
            node = self._pick_by_resources(c, candidates, domain)
            return self._failure(c, None, candidates, pi) if node is None else node
        scope = None if candidates is None else self._scope(candidates)
        masked = fit if scope is None else fit[scope]
        if claims_ok is not None:
            masked = np.where(claims_ok if scope is None else claims_ok[scope], masked, -1)
        claims_scored = claims_ok is not None and self._dra_scored
        if only_resources:
            # Only the resource scores count, on the class's row less the nodes nominated pods or claims
            # rule out: the best of `masked`, ties broken as `_pick_by_resources` does (same count of tied
            # nodes, in node order).
            top = _max(masked) if masked.size else -1
            best = (masked == top).nonzero()[0].tolist()
            if top < 0:
                return self._failure(c, None, candidates, pi)
            pick = int(best[0] if len(best) == 1 else best[self.rng.integers(len(best))])
            return pick if scope is None else int(scope[pick])
        feasible = masked >= 0
        if layer is not None:
            feasible &= layer.ok if scope is None else layer.ok[scope]
        idx = feasible.nonzero()[0]
        if idx.size == 0:
            return self._failure(c, layer, candidates, pi)
        nodes = idx if scope is None else scope[idx]
        total = masked[idx].copy()
        for plugin, scores in self._plugin_scores(c, layer, nodes):
            total += plugin.weight * scores
        if claims_scored and self.claims is not None:
            dra = self.claims.scores(pi, nodes)
            if dra is not None:
                total += DRA_WEIGHT * dra
        best = (total == _max(total)).nonzero()[0]
        return int(nodes[best[0] if best.size == 1 else best[self.rng.integers(best.size)]])

    def _pick_by_resources(
        self, c: _Class, candidates: BoolArray | None, domain: tuple[str, int] | None
    ) -> int | None:
        """The node find_node picks for a pod of class `c` that only the resource scores rank and that every
        node the class fits admits (no pods-stage verdict, nomination or claim narrows `c.masked`): the best
        of `c.masked` among `candidates` (`domain`: see find_node), ties broken by the generator among the
        tied nodes in node order; None when no candidate fits."""
        if domain is not None:
            # the same best and ties, in node order, as a scan of the domain's nodes finds
            top, ties = self._domain_best(c, domain)
        elif candidates is None:
            top, ties = _best(c)
        else:
            scope = self._scope(candidates)
            masked = c.masked[scope]
            top = _max(masked) if masked.size else -1
            if top < 0:
                return None
            best = (masked == top).nonzero()[0].tolist()
            return int(scope[best[0] if len(best) == 1 else best[self.rng.integers(len(best))]])
        if top < 0:
            return None
        return ties[0] if len(ties) == 1 else ties[self.rng.integers(len(ties))]

    def reserve_alike(
        self,
        pods: Sequence[PodInfo],
        start: int,
        candidates: BoolArray | None,
        domain: tuple[str, int] | None,
        placed: list[tuple[PodInfo, int]],
        undo: list[Callable[[], None]],
    ) -> int:
        """Place and reserve `pods[start:]` in turn as find_node and reserve would, while they are alike
        `pods[start - 1]`, the pod find_node just placed and the caller reserved; appends to `placed` and
        `undo`, returns how many it placed. It stops before the first pod that is not alike or that fits
        nowhere (find_node then says why).

        Alike: of the same class and traits, without claims or a nominated node of its own, for a class
        that only the resource scores rank and whose row nothing narrows: no pods-stage plugin reads other
        pods for it, no pod holds a nomination. For each such pod find_node would take its resource-scores
        path (`_pick_by_resources`) on the class's row brought in step with the node the previous pod went
        to, and placing it changes nothing else find_node reads: it carries no affinity terms
        (`snap.carriers` stays) and ends no nomination (there is none). So a gang of one template skips,
        pod after pod, the class lookup and the pods-stage, claims and nomination checks."""
        first, snap = pods[start - 1], self.snap
        c = self._known_class(first.signature)
        if (
            c is None
            or c.static_scores
            or snap.nominated
            or first.claims
            or self.reads_other_pods(first)
            # find_node would clear the logs first (`_class`)
            or len(snap.changed) + len(pods) > _MAX_CHANGE_LOG
            or len(snap.pod_log) + len(pods) > _MAX_CHANGE_LOG
        ):
            return 0
        signature, traits, vec = first.signature, first.traits, c.vec
        count = 0
        for i in range(start, len(pods)):
            pi = pods[i]
            status = pi.pod.status
            if (
                pi.traits is not traits
                or (pi.signature is not signature and pi.signature != signature)
                or pi.claims
                or (status is not None and status.nominatedNodeName)
            ):
                break
            self._sync(c)
            node = self._pick_by_resources(c, candidates, domain)
            if node is None:
                break
            undo.append(snap.place(pi.key, node, vec, traits))
            placed.append((pi, node))
            count += 1
        return count

    def _domain_best(self, c: _Class, domain: tuple[str, int]) -> tuple[int, array[int]]:
        """The best of the class's (current) `masked` over the nodes of `domain` (key, label code) and the
        nodes that have it, in node order, kept per class and key."""
        key, code = domain
        bests = c.domain_bests.get(key)  # on the class: no hash of its signature for every pod
        if bests is None or bests.row is not c.masked:
            bests = c.domain_bests[key] = DomainBests(self.snap, key, c.masked)
        return bests.best(code)

    def _pods_scores_skip(self, layer: _PodsLayer) -> bool:
        """Whether every pods-stage score plugin skips the pod (PreScore Skip): they would add nothing."""
        return all(
            plugin.skips is not None and plugin.skips(self.view, layer.context)
            for plugin in self._pods_scores
        )

    def _claims_filter(self, pi: PodInfo, c: _Class) -> BoolArray | None:
        """Nodes that pass the claims-stage filters among those the other filters leave; None when the
        stage is off. The rejections are kept for the failure message."""
        if self.claims is None or not self._claims_on:
            return None
        n = len(self.snap)
        if self.claims.prefilter(pi).error is not None:
            self._claims_verdict = (pi.key, {})
            return np.zeros(n, dtype=bool)
        static_ok = self.claims.static(pi)
        # Not narrowed by the pods-stage verdict: PodTopologySpread and InterPodAffinity come after the
        # volume plugins, and the failure message reports each node's first rejection in table order.
        others = (c.masked >= 0) & static_ok
        by_plugin: dict[str, Rejections] = dict(self.claims.dynamic(pi, others))
        ok = static_ok.copy()
        for rejections in by_plugin.values():
            for mask, _ in rejections:
                ok &= ~mask
        self._claims_verdict = (pi.key, by_plugin)
        return ok

    def claims_feasible(self, pi: PodInfo) -> BoolArray | None:
        """Nodes where the claims stage leaves `pi` a chance whatever the rest (None: no claims). Its
        UnschedulableAndUnresolvable rejections (PreFilter, bound PVs' node affinity and zones, VolumeBinding,
        DynamicResources) are final; a ReadWriteOncePod conflict or a CSI attach limit (Unschedulable
        upstream) may be lifted by evicting pods, so preemption tries those nodes and asks `fit_reasons`."""
        if not self._claims_apply(pi):
            return None
        assert self.claims is not None
        if self.claims.prefilter(pi).error is not None:
            return np.zeros(len(self.snap), dtype=bool)
        ok = self.claims.static(pi)
        for name, rejections in self.claims.dynamic(pi, ok.copy()):
            if name not in PREEMPTIBLE_CLAIM_PLUGINS:
                for mask, _ in rejections:
                    ok &= ~mask
        return ok

    def claims_to_deallocate(self, pi: PodInfo, group: Any = None) -> list[tuple[str, str]]:
        """After `pi` fit nowhere: its allocated ResourceClaims that DynamicResources' PostFilter may
        deallocate (ClaimsStage.to_deallocate; with `group`, those its PodGroupPostFilter may deallocate
        for that PodGroup), judged on the nodes where every filter before DynamicResources passes as the
        snapshot stands. Empty for a pod without claims, at no cost."""
        if not self._claims_apply(pi):
            return []
        assert self.claims is not None
        c = self._class(pi)
        layer = self._pods_layer(pi, c)
        reached = (c.masked >= 0) & self.claims.static(pi)
        if layer is not None:
            reached &= layer.ok
        return self.claims.to_deallocate(pi, reached, group)

    def holds_allocated_claim(self, pi: PodInfo) -> bool:
        """Whether `pi` uses a ResourceClaim allocated in the store (ClaimsStage.any_allocated) or has a stale
        special claim: what DynamicResources' PostFilter may free after a failed cycle."""
        if not self._claims_apply(pi):
            return False
        assert self.claims is not None
        return self.claims.any_allocated(pi) or bool(self.claims.stale_special(pi))

    def special_claim_to_delete(self, pi: PodInfo) -> list[tuple[str, str]]:
        """After `pi` fit nowhere: its special claim for extended resources left from an earlier cycle, which
        DynamicResources' PostFilter deletes (ClaimsStage.stale_special)."""
        if not self._claims_apply(pi):
            return []
        assert self.claims is not None
        return self.claims.stale_special(pi)

    def _claims_apply(self, pi: PodInfo) -> bool:
        return bool(pi.claims and self.claims is not None and self._claims_on)

    def reserve(self, pi: PodInfo, node: int) -> Callable[[], None]:
        """Count `pi` on `node` and take its volumes and devices there (assume, reserve); returns the undo."""
        undo_place = self.snap.place(pi.key, node, self.vector(pi), pi.traits)
        if not self._claims_apply(pi):
            return undo_place
        assert self.claims is not None
        undo_claims = self.claims.reserve(pi, node)

        def undo() -> None:
            undo_claims()
            undo_place()

        return undo

    def fit_reasons(self, pi: PodInfo, node: int) -> list[str]:
        """Why `pi` does not fit on `node` as the snapshot stands (every filter, pods-stage ones included),
        in upstream's words; empty when it fits. Preemption's dry runs ask this after taking pods out. Of the
        claims stage only the rejections evicting pods can lift are asked (ReadWriteOncePod users, CSI
        attachments: both read the pods placed in the snapshot); preemption tries no node where another
        claims plugin rejects the pod (`claims_feasible`)."""
        c = self._class(pi)
        layer = self._pods_layer(pi, c)
        if c.masked[node] < 0 or (layer is not None and not bool(layer.ok[node])):
            only = np.zeros(len(self.snap), dtype=bool)
            only[node] = True
            failure = self._failure(c, layer, only, pi)
            return [failure.prefilter_message] if failure.prefilter_message else list(failure.histogram)
        if self._claims_apply(pi):
            assert self.claims is not None
            only = np.zeros(len(self.snap), dtype=bool)
            only[node] = True
            for name, rejections in self.claims.dynamic(pi, only):
                for mask, reason in rejections:
                    if name in PREEMPTIBLE_CLAIM_PLUGINS and mask[node]:
                        return [reason]
        return []

    def _plugin_scores(
        self, c: _Class, layer: _PodsLayer | None, nodes: npt.NDArray[np.intp]
    ) -> list[tuple[ScorePlugin, Int64Array]]:
        """Normalised (0..100) scores of the static and pods-stage score plugins on the feasible `nodes`;
        plugins that would score every node 0 (PreScore Skip) are left out."""
        out = []
        for plugin, raw in c.static_scores:
            assert plugin.normalize is not None
            out.append((plugin, plugin.normalize(raw[nodes])))
        if layer is not None:
            for plugin in self._pods_scores:
                assert plugin.run is not None
                scores = plugin.run(self.view, layer.context, nodes)
                if scores is not None:
                    out.append((plugin, scores))
        return out

    def node_scores(self, pi: PodInfo) -> dict[str, dict[str, int]]:
        """Per static and pods-stage score plugin, each feasible node's normalised score (before weights):
        what upstream's per-plugin NormalizeScore results are, for tests and explanations."""
        c = self._class(pi)
        layer = self._pods_layer(pi, c)
        feasible = c.masked >= 0
        if layer is not None:
            feasible &= layer.ok
        nodes = np.flatnonzero(feasible)
        names = self.snap.node_names
        return {
            plugin.name: {names[n]: int(v) for n, v in zip(nodes, values, strict=True)}
            for plugin, values in self._plugin_scores(c, layer, nodes)
        }

    def _failure(
        self, c: _Class, layer: _PodsLayer | None, candidates: BoolArray | None, pi: PodInfo
    ) -> FitFailure:
        """Per node, the reason of the first filter that rejects it, in table order (NodeResourcesFit
        reports every resource short on a node, counting the room nominated pods hold against `pi`); a
        PreFilter's refusal of the pod instead, if any."""
        snap = self.snap
        memo_key = None
        if layer is None and candidates is None and not snap.nominated and not pi.claims:
            # Then the verdict reads only the class and the nodes' free room, which the change log's length
            # in its generation identifies: the pods of a queue behind a full cluster, failing one after
            # another with nothing changed, get the histogram the first of them got.
            memo_key = (c.key, snap.generation, len(snap.changed))
            if self._failure_memo is not None and self._failure_memo[0] == memo_key:
                memo = self._failure_memo[1]
                return FitFailure(memo.nodes, Counter(memo.histogram), memo.prefilter_message)
        considered = np.ones(len(snap), dtype=bool) if candidates is None else candidates.copy()
        failure = FitFailure(int(considered.sum()), prefilter_message=c.refusal)
        verdict = self._claims_verdict
        claims = verdict[1] if verdict is not None and verdict[0] == pi.key and pi.claims else None
        if claims is not None and self.claims is not None:
            failure.prefilter_message = failure.prefilter_message or self.claims.prefilter(pi).error
            static = self.claims.prefilter(pi).static
        if failure.prefilter_message is not None:
            return failure
        remaining = considered.copy()

        def reject(rejections: Rejections) -> None:
            nonlocal remaining
            for mask, reason in rejections:
                hit = remaining & mask
                if hit.any():
                    failure.histogram[reason] += int(hit.sum())
                    remaining &= ~hit

        reject(c.prefilter_rejections)
        for f in self.filters:
            if f.stage == STATIC:
                reject(c.rejections_by_plugin.get(f.name, []))
            elif f.stage == PODS:
                reject(layer.rejections_by_plugin.get(f.name, []) if layer is not None else [])
            elif f.stage == CLAIMS:
                if claims is not None:
                    reject(static.get(f.name, []) + claims.get(f.name, []))
            else:
                free = snap.alloc - snap.used
                if snap.nominated:
                    cols, held = self._held_back(pi)
                    free[:, cols] -= held
                short_any = np.zeros(len(snap), dtype=bool)
                for row, v in c.vec.rows:
                    short = remaining & (free[row] < v)
                    if short.any():
                        reason = node_resources_fit.insufficient(snap, row)
                        failure.histogram[reason] += int(short.sum())
                        short_any |= short
                remaining &= ~short_any
        if memo_key is not None:
            self._failure_memo = (memo_key, FitFailure(failure.nodes, Counter(failure.histogram)))
        return failure
