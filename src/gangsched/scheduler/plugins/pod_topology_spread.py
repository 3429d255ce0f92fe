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

System default constraints (hostname 3, zone 5, ScheduleAnyway) take their selector from the Services,
ReplicationControllers, ReplicaSets and StatefulSets that select the pod; gangsched reads none of those kinds,
so for its input that selector is always empty and upstream skips the defaults the same way.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from ..labelselector import Selector
from ..podcounts import PodsView
from ..podtraits import PodTraits, SpreadConstraint
from . import BoolArray, Int64Array, PodContext, Rejections

NAME = "PodTopologySpread"
WEIGHT = 2
REASON = "node(s) didn't match pod topology spread constraints"
REASON_MISSING_LABEL = REASON + " (missing required label)"
HOSTNAME = "kubernetes.io/hostname"
MAX_NODE_SCORE = 100


def matching_pods(view: PodsView, namespace: str, selector: Selector) -> Int64Array:
    """Per node, the pods a constraint counts (upstream's countPodsMatchSelector)."""

    def counted(t: PodTraits) -> int:
        return int(
            t.namespace == namespace
            and not t.terminating
            and not selector.empty
            and selector.matches(t.labels)
        )

    return view.counts((NAME, namespace, selector), counted)


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


def _domain_sums(
    view: PodsView, c: SpreadConstraint, counts: Int64Array, among: BoolArray
) -> tuple[Int64Array, BoolArray]:
    """(matching pods per value code, whether the code is a domain) over the nodes `among`."""
    codes = view.snap.label_codes(c.topology_key)
    size = len(view.snap.label_values.get(c.topology_key, {}))
    sums = np.zeros(size, dtype=np.int64)
    np.add.at(sums, codes[among], counts[among])
    present = np.zeros(size, dtype=bool)
    present[codes[among]] = True
    return sums, present


def filter_nodes(view: PodsView, pod: PodContext) -> Rejections:
    hard = [c for c in pod.traits.spread if c.when_unsatisfiable == "DoNotSchedule"]
    if not hard:
        return []  # PreFilter: Skip
    n = len(view.snap)
    with_keys = _with_all_keys(view, hard)
    missing = np.zeros(n, dtype=bool)
    skewed = np.zeros(n, dtype=bool)
    decided = np.zeros(n, dtype=bool)
    for c in hard:
        codes = view.snap.label_codes(c.topology_key)
        counts = matching_pods(view, pod.traits.namespace, c.selector)
        sums, present = _domain_sums(view, c, counts, with_keys & _included(c, pod))
        domains = int(present.sum())
        # minDomains >= 1, so no domain at all also means a minimum of 0
        min_match = 0 if domains < c.min_domains else int(sums[present].min())
        self_match = int(c.selector.matches(pod.traits.labels))
        in_domain = (
            np.where(codes >= 0, sums[np.maximum(codes, 0)], 0) if sums.size else np.zeros(n, dtype=np.int64)
        )
        no_label = (codes < 0) & ~decided
        too_skewed = (codes >= 0) & (in_domain + self_match - min_match > c.max_skew) & ~decided
        missing |= no_label
        skewed |= too_skewed
        decided |= no_label | too_skewed
    return [
        (mask, reason) for mask, reason in ((missing, REASON_MISSING_LABEL), (skewed, REASON)) if mask.any()
    ]


def score_nodes(view: PodsView, pod: PodContext, feasible: npt.NDArray[np.intp]) -> Int64Array | None:
    """Normalised scores (0..100) of the `feasible` nodes, or None when the pod has no soft constraint."""
    soft = [c for c in pod.traits.spread if c.when_unsatisfiable == "ScheduleAnyway"]
    if not soft or feasible.size == 0:
        return None
    with_keys = _with_all_keys(view, soft)
    kept = with_keys[feasible]  # feasible nodes without every key are ignored: they score 0
    raw = np.zeros(feasible.size, dtype=np.float64)
    for c in soft:
        codes = view.snap.label_codes(c.topology_key)
        counts = matching_pods(view, pod.traits.namespace, c.selector)
        if c.topology_key == HOSTNAME:
            size = int(kept.sum())
            count = counts[feasible]
        else:
            sums, _ = _domain_sums(view, c, counts, with_keys & _included(c, pod))
            size = int(np.unique(codes[feasible[kept]]).size)
            count = np.where(kept, sums[np.maximum(codes[feasible], 0)] if sums.size else 0, 0)
        raw += count * math.log(size + 2) + (c.max_skew - 1)
    scores = np.floor(raw + 0.5).astype(np.int64)  # Go's math.Round for non-negative values
    if not kept.any():
        return np.zeros(feasible.size, dtype=np.int64)
    top, low = int(scores[kept].max()), int(scores[kept].min())
    top = max(top, 0)
    if top == 0:
        return np.where(kept, MAX_NODE_SCORE, 0).astype(np.int64)
    return np.where(kept, MAX_NODE_SCORE * (top + low - scores) // top, 0).astype(np.int64)
