"""InterPodAffinity: required pod affinity / anti-affinity of the pod and required anti-affinity of placed
pods filter; preferred terms of both sides and placed pods' required affinity score (weight 2).
Upstream: plugins/interpodaffinity/{filtering,scoring}.go, fwk.AffinityTerm in kube-scheduler/framework.

A term matches a pod when the pod's namespace is in the term's namespaces (its owner's own by default) or
the term's namespaceSelector matches the labels of the pod's Namespace, and the term's selector matches the
pod's labels. Counts are per topology domain: the value of the term's topologyKey on a node.
Filter, per node, first failure wins:
- affinity (`node(s) didn't match pod affinity rules`): the node carries every term's key, and in its domain
  of each term sit pods matching all the terms; or no pod anywhere matches them all and the pod matches its
  own terms (the first of a group may go anywhere with the keys);
- anti-affinity (`node(s) didn't match pod anti-affinity rules`): no pod matching a term in the node's domain;
- existing pods (`node(s) didn't satisfy existing pods anti-affinity rules`): no placed pod's required
  anti-affinity term matches this pod within that placed pod's domain.
Score: sum over domains of the node of the preferred weights (affinity +, anti-affinity -) of matching pods
both ways, plus HardPodAffinityWeight (1) per placed pod whose required affinity matches this pod;
normalised (s - min) x 100 / (max - min) over the feasible nodes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..podcounts import PodsView, TermKey
from ..podtraits import AffinityTerm, PodTraits
from . import Int64Array, PodContext, Rejections

if TYPE_CHECKING:
    import numpy.typing as npt

NAME = "InterPodAffinity"
WEIGHT = 2
HARD_POD_AFFINITY_WEIGHT = 1  # InterPodAffinityArgs default
REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
MAX_NODE_SCORE = 100


def _affinity_ok(view: PodsView, pod: PodTraits, terms: tuple[AffinityTerm, ...]) -> npt.NDArray[np.bool_]:
    def matches_all(t: PodTraits) -> int:
        return int(all(view.term_matches(term, t) for term in terms))

    has_keys = np.ones(len(view.snap), dtype=bool)
    pods_exist = np.ones(len(view.snap), dtype=bool)
    anywhere = False
    for term in terms:
        domains = view.domains((NAME, "all", terms), matches_all, term.topology_key)
        has_keys &= view.snap.label_codes(term.topology_key) >= 0
        pods_exist &= domains.per_node() > 0
        anywhere = anywhere or bool(domains.current().any())
    first_of_group = not anywhere and all(view.term_matches(term, pod) for term in terms)
    return has_keys & (pods_exist | first_of_group)


def filter_nodes(view: PodsView, pod: PodContext) -> Rejections:
    traits = pod.traits
    existing = [
        key
        for key in (view.existing.current() if view.snap.carriers else [])
        if key.kind == "required-anti-affinity" and view.term_matches(key.term, traits)
    ]
    if not (traits.required_affinity or traits.required_anti_affinity or existing):
        return []  # PreFilter: Skip
    n = len(view.snap)
    out: Rejections = []
    decided = np.zeros(n, dtype=bool)
    if traits.required_affinity:
        bad = ~_affinity_ok(view, traits, traits.required_affinity)
        if bad.any():
            out.append((bad, REASON_AFFINITY))
            decided |= bad
    if traits.required_anti_affinity:
        blocked = np.zeros(n, dtype=bool)
        for term in traits.required_anti_affinity:
            blocked |= view.term_domains(term).per_node() > 0
        blocked &= ~decided
        if blocked.any():
            out.append((blocked, REASON_ANTI_AFFINITY))
            decided |= blocked
    blocked = np.zeros(n, dtype=bool)
    for key in existing:
        blocked |= view.carrier_domains(key).per_node() > 0
    blocked &= ~decided
    if blocked.any():
        out.append((blocked, REASON_EXISTING_ANTI_AFFINITY))
    return out


_EXISTING_SIGN = {
    "required-affinity": HARD_POD_AFFINITY_WEIGHT,
    "preferred-affinity": 1,
    "preferred-anti-affinity": -1,
}


def _existing_scored(view: PodsView, traits: PodTraits) -> list[tuple[TermKey, int]]:
    """The terms placed pods carry that score this pod, with their factor."""
    return [
        (key, factor)
        for key in (view.existing.current() if view.snap.carriers else [])
        if (factor := _EXISTING_SIGN.get(key.kind)) is not None and view.term_matches(key.term, traits)
    ]


def score_skips(view: PodsView, pod: PodContext) -> bool:
    """PreScore Skip: no preferred term of the pod and no placed pod's term scores it (`score_nodes`
    gives None)."""
    traits = pod.traits
    return not (traits.preferred_affinity or traits.preferred_anti_affinity or _existing_scored(view, traits))


def score_nodes(view: PodsView, pod: PodContext, feasible: npt.NDArray[np.intp]) -> Int64Array | None:
    traits = pod.traits
    existing = _existing_scored(view, traits)
    if not (traits.preferred_affinity or traits.preferred_anti_affinity or existing) or feasible.size == 0:
        return None  # PreScore: Skip
    total = np.zeros(len(view.snap), dtype=np.int64)
    for weighted, sign in [(w, 1) for w in traits.preferred_affinity] + [
        (w, -1) for w in traits.preferred_anti_affinity
    ]:
        total += sign * weighted.weight * view.term_domains(weighted.term).per_node()
    for key, factor in existing:
        total += factor * view.carrier_domains(key).per_node()
    raw = total[feasible]
    low, high = int(raw.min()), int(raw.max())
    if high == low:
        return np.zeros(feasible.size, dtype=np.int64)
    return (MAX_NODE_SCORE * ((raw - low) / (high - low))).astype(np.int64)
