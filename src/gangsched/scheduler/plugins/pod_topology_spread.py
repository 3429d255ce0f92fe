"""PodTopologySpread: DoNotSchedule constraints filter, ScheduleAnyway constraints score (weight 2).
Upstream: plugins/podtopologyspread/{common,filtering,scoring}.go.

Counted pods: those in the pod's own namespace, not terminating, matched by the constraint's selector (an
empty selector counts none). Filter: a node needs the labels of every hard constraint; the domains of a
constraint are the values of its key on the nodes that carry every constraint's key and pass its inclusion
policies (nodeAffinityPolicy Honor: the pod's nodeSelector and required node affinity; nodeTaintsPolicy
Honor: no untolerated NoSchedule/NoExecute taint); a node fails when the matching pods in its domain, plus
one if the pod matches its own selector, exceed the domains' minimum by more than maxSkew (the minimum is 0
while there are fewer domains than minDomains). Score: per feasible node, for each soft constraint,
count x log(domains + 2) + (maxSkew - 1), rounded, then reversed so that the emptiest domain scores 100.

System default constraints (hostname 3, zone 5, ScheduleAnyway; default_spread.py) apply to a pod with no
constraints of its own whose default selector selects something. For them upstream's requireAllTopologies is
false: no feasible node is left out of scoring for lacking a key, a node scores only the constraints whose
key it carries, and nodes without the key form one more domain, the empty value (they count towards the
number of domains, and their pods count for nodes labelled with the empty value).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING

import numpy as np
from msgspec import Struct

from ..labelselector import Selector
from ..podcounts import DomainCounts, PodsView
from ..podtraits import PodTraits, SpreadConstraint
from . import BoolArray, Int64Array, PodContext, Rejections

if TYPE_CHECKING:
    import numpy.typing as npt

NAME = "PodTopologySpread"
WEIGHT = 2
REASON = "node(s) didn't match pod topology spread constraints"
REASON_MISSING_LABEL = REASON + " (missing required label)"
HOSTNAME = "kubernetes.io/hostname"
MAX_NODE_SCORE = 100


def _counted(namespace: str, selector: Selector) -> tuple[Hashable, Callable[[PodTraits], int]]:
    """The counter question and weight of the pods a constraint counts (countPodsMatchSelector)."""

    def counted(t: PodTraits) -> int:
        return int(
            t.namespace == namespace
            and not t.terminating
            and not selector.empty
            and selector.matches(t.labels)
        )

    return (NAME, namespace, selector), counted


def _included(c: SpreadConstraint, pod: PodContext) -> BoolArray:
    ok = np.ones(len(pod.node_affinity_ok), dtype=bool)
    if c.node_affinity_policy == "Honor":
        ok &= pod.node_affinity_ok
    if c.node_taints_policy == "Honor":
        ok &= pod.taints_ok
    return ok


def _with_all_keys(view: PodsView, constraints: list[SpreadConstraint]) -> BoolArray:
    ok = np.ones(len(view.snap), dtype=bool)
    for c in constraints:
        ok &= view.snap.label_codes(c.topology_key) >= 0
    return ok


class _Prepared(Struct):
    """What a constraint needs that does not change while the pod waits: the nodes whose domains count,
    and those domains' codes."""

    constraint: SpreadConstraint
    among: BoolArray
    domain_codes: npt.NDArray[np.intp]
    self_match: int
    unlabelled: BoolArray  # nodes without the constraint's key
    domains: DomainCounts | None = None  # its counts, once asked (the view keeps the same object)
    # The last verdict of a lone hard constraint and the per-domain state it was computed from: while the
    # state holds, the very same rejections are returned (so the evaluator need not recombine them).
    last: tuple[bytes, Rejections] | None = None


def _prepare(view: PodsView, pod: PodContext, when: str) -> list[_Prepared]:
    cached = pod.cache.get((NAME, when))
    if cached is None:
        constraints = [c for c in pod.traits.spread if c.when_unsatisfiable == when]
        if pod.traits.spread_defaulted:  # requireAllTopologies is false
            with_keys = np.ones(len(view.snap), dtype=bool)
        else:
            with_keys = _with_all_keys(view, constraints)
        cached = []
        for c in constraints:
            among = with_keys & _included(c, pod)
            codes = view.snap.label_codes(c.topology_key)
            domain_codes = np.unique(codes[among]).astype(np.intp)
            self_match = int(c.selector.matches(pod.traits.labels))
            cached.append(_Prepared(c, among, domain_codes, self_match, codes < 0))
        pod.cache[(NAME, when)] = cached
    return cached


def _domains(view: PodsView, pod: PodContext, p: _Prepared, i: int) -> DomainCounts:
    if p.domains is None:
        question, weight = _counted(pod.traits.namespace, p.constraint.selector)
        key = (pod.key, "DoNotSchedule", i)
        p.domains = view.domains(question, weight, p.constraint.topology_key, p.among, key)
    return p.domains


def _codes(view: PodsView, pod: PodContext, p: _Prepared, i: int) -> npt.NDArray[np.intp]:
    return _domains(view, pod, p, i).codes


def _too_many(view: PodsView, pod: PodContext, p: _Prepared, i: int) -> BoolArray:
    """Per domain code: would one more pod there exceed maxSkew? (The last slot, for nodes without the
    label, is meaningless.)"""
    c = p.constraint
    sums = _domains(view, pod, p, i).current()
    # minDomains >= 1, so no domain at all also means a minimum of 0
    min_match = 0 if p.domain_codes.size < c.min_domains else int(sums[p.domain_codes].min())
    too_many: BoolArray = sums + p.self_match - min_match > c.max_skew
    return too_many


def _lone_rejections(view: PodsView, pod: PodContext, p: _Prepared, too_many: BoolArray) -> Rejections:
    """The rejections of a pod's only hard constraint, given its per-domain verdict."""
    too_skewed = too_many[_codes(view, pod, p, 0)] & ~p.unlabelled
    return [
        (mask, reason)
        for mask, reason in ((p.unlabelled, REASON_MISSING_LABEL), (too_skewed, REASON))
        if mask.any()
    ]


def _lone_verdict(view: PodsView, pod: PodContext, p: _Prepared) -> Rejections:
    """`_lone_rejections`, the very same list while the per-domain verdict is unchanged (usually the case
    from one pod to the next): no per-node work then, here or in the evaluator."""
    too_many = _too_many(view, pod, p, 0)
    state = too_many.tobytes()
    if p.last is None or p.last[0] != state:
        p.last = (state, _lone_rejections(view, pod, p, too_many))
    return p.last[1]


def filter_nodes(view: PodsView, pod: PodContext) -> Rejections:
    hard = _prepare(view, pod, "DoNotSchedule")
    if not hard:
        return []  # PreFilter: Skip
    if len(hard) == 1:  # the usual case: no bookkeeping of which constraint failed a node first
        return _lone_verdict(view, pod, hard[0])
    n = len(view.snap)
    missing = np.zeros(n, dtype=bool)
    skewed = np.zeros(n, dtype=bool)
    decided = np.zeros(n, dtype=bool)
    for i, p in enumerate(hard):
        no_label = p.unlabelled & ~decided
        too_skewed = _too_many(view, pod, p, i)[_codes(view, pod, p, i)] & ~p.unlabelled & ~decided
        missing |= no_label
        skewed |= too_skewed
        decided |= no_label | too_skewed
    return [
        (mask, reason) for mask, reason in ((missing, REASON_MISSING_LABEL), (skewed, REASON)) if mask.any()
    ]


def score_skips(view: PodsView, pod: PodContext) -> bool:
    """PreScore Skip: the pod has no soft constraint, so `score_nodes` gives None."""
    return not _prepare(view, pod, "ScheduleAnyway")


def score_nodes(view: PodsView, pod: PodContext, feasible: npt.NDArray[np.intp]) -> Int64Array | None:
    """Normalised scores (0..100) of the `feasible` nodes, or None when the pod has no soft constraint."""
    soft = _prepare(view, pod, "ScheduleAnyway")
    if not soft or feasible.size == 0:
        return None
    if pod.traits.spread_defaulted:
        kept = np.ones(feasible.size, dtype=bool)
    else:  # others are ignored: they score 0
        kept = _with_all_keys(view, [p.constraint for p in soft])[feasible]
    raw = np.zeros(feasible.size, dtype=np.float64)
    for i, p in enumerate(soft):
        c = p.constraint
        codes = view.snap.label_codes(c.topology_key)
        question, weight = _counted(pod.traits.namespace, c.selector)
        labelled = codes[feasible] >= 0
        if c.topology_key == HOSTNAME:
            size = int(kept.sum())
            count = view.counts(question, weight)[feasible]
        else:
            domains = view.domains(question, weight, c.topology_key, p.among, (pod.key, "ScheduleAnyway", i))
            count = np.where(kept, domains.per_node()[feasible], 0)
            if pod.traits.spread_defaulted:
                size, count = _with_unlabelled_domain(view, pod, p, feasible, count, question, weight)
            else:
                size = int(np.unique(codes[feasible[kept]]).size)
        # a node scores only the constraints whose key it carries (kept nodes carry them all otherwise)
        raw += np.where(labelled, count * math.log(size + 2) + (c.max_skew - 1), 0.0)
    scores = np.floor(raw + 0.5).astype(np.int64)  # Go's math.Round for non-negative values
    if not kept.any():
        return np.zeros(feasible.size, dtype=np.int64)
    top, low = max(int(scores[kept].max()), 0), int(scores[kept].min())
    if top == 0:
        return np.where(kept, MAX_NODE_SCORE, 0).astype(np.int64)
    return np.where(kept, MAX_NODE_SCORE * (top + low - scores) // top, 0).astype(np.int64)


def _with_unlabelled_domain(
    view: PodsView,
    pod: PodContext,
    p: _Prepared,
    feasible: npt.NDArray[np.intp],
    count: Int64Array,
    question: Hashable,
    weight: Callable[[PodTraits], int],
) -> tuple[int, Int64Array]:
    """Upstream's initPreScoreState without requireAllTopologies reads a missing label as the value "":
    the number of domains counts it once, and the pods on unlabelled nodes (of `among`) count for the nodes
    whose label is the empty string. Returns (number of domains, per feasible node counts)."""
    key = p.constraint.topology_key
    codes = view.snap.label_codes(key)
    empty_code = view.snap.label_values.get(key, {}).get("")
    feasible_codes = codes[feasible]
    if empty_code is not None:
        feasible_codes = np.where(feasible_codes < 0, empty_code, feasible_codes)
    size = int(np.unique(feasible_codes).size)
    if empty_code is not None:
        unlabelled = (codes < 0) & p.among
        extra = int(view.counts(question, weight)[unlabelled].sum())
        count = np.where(codes[feasible] == empty_code, count + extra, count)
    return size, count
