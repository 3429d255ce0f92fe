"""NodeAffinity: nodeSelector and required node affinity filter; preferred terms score (weight 2)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..snapshot import Snapshot
from . import BoolArray, Rejections

if TYPE_CHECKING:
    import numpy.typing as npt

NAME = "NodeAffinity"
WEIGHT = 2
REASON = "node(s) didn't match Pod's node affinity/selector"
PREFILTER_REASON = f"node(s) didn't satisfy plugin(s) [{NAME}]"
CONFLICT = "pod affinity terms conflict"  # errReasonConflict


def _requirement(snap: Snapshot, key: str, op: str, values: list[str]) -> BoolArray:
    codes = snap.label_codes(key)
    known = snap.label_values.get(key, {})
    if op in ("In", "NotIn"):
        wanted = [known[v] for v in values if v in known]
        hit = np.isin(codes, wanted) if wanted else np.zeros(len(codes), dtype=bool)
        return hit if op == "In" else ~hit
    if op == "Exists":
        return codes >= 0
    if op == "DoesNotExist":
        return codes < 0
    if op in ("Gt", "Lt"):
        try:
            bound = int(values[0])
        except (IndexError, ValueError):
            return np.zeros(len(codes), dtype=bool)
        numeric = snap.label_numeric(key)
        with np.errstate(invalid="ignore"):
            return numeric > bound if op == "Gt" else numeric < bound
    return np.zeros(len(codes), dtype=bool)


def term_matches(snap: Snapshot, term: Any) -> BoolArray:
    """A NodeSelectorTerm: all expressions and fields must hold; an empty term matches nothing."""
    exprs = list(term.matchExpressions or [])
    fields = list(term.matchFields or [])
    if not exprs and not fields:
        return np.zeros(len(snap), dtype=bool)
    ok = np.ones(len(snap), dtype=bool)
    for e in exprs:
        ok &= _requirement(snap, e.key, e.operator, list(e.values or []))
    for f in fields:
        ok &= _requirement(snap, "metadata.name", f.operator, list(f.values or []))
    return ok


def _pinned_names(spec: Any) -> set[str] | None:
    """The node names the required terms pin (matchFields metadata.name In, intersected within a term, united
    across terms), or None when some term pins none (every node stays eligible) or there are no terms."""
    na = spec.affinity.nodeAffinity if spec.affinity else None
    required = na.requiredDuringSchedulingIgnoredDuringExecution if na else None
    names: set[str] | None = None
    for term in (required.nodeSelectorTerms or []) if required is not None else []:
        pinned: set[str] | None = None
        for f in term.matchFields or []:
            if f.key == "metadata.name" and f.operator == "In":
                pinned = set(f.values or []) if pinned is None else pinned & set(f.values or [])
        if pinned is None:
            return None  # a term without a name pin: every node stays eligible (terms are ORed)
        names = pinned if names is None else names | pinned
    return names


def conflict(spec: Any) -> str | None:
    """PreFilter's refusal when every term pins node names and no name is left (each term's pins conflict):
    upstream's UnschedulableAndUnresolvable `pod affinity terms conflict`, before any filter runs."""
    names = _pinned_names(spec)
    return CONFLICT if names is not None and not names else None


def prefilter_nodes(snap: Snapshot, spec: Any) -> Rejections:
    """PreFilter: when every required term pins node names (matchFields metadata.name In), only those nodes
    are filtered at all; upstream reports the others as PREFILTER_REASON, before any filter's reason."""
    names = _pinned_names(spec)
    if not names:  # no pins at all, or conflicting ones (refused by `conflict`)
        return []
    outside = np.ones(len(snap), dtype=bool)
    outside[[snap.index[n] for n in names if n in snap.index]] = False
    return [(outside, PREFILTER_REASON)] if outside.any() else []


def filter_nodes(snap: Snapshot, spec: Any) -> Rejections:
    ok = np.ones(len(snap), dtype=bool)
    for key, value in (spec.nodeSelector or {}).items():
        ok &= _requirement(snap, key, "In", [value])
    na = spec.affinity.nodeAffinity if spec.affinity else None
    required = na.requiredDuringSchedulingIgnoredDuringExecution if na else None
    if required is not None:
        any_term = np.zeros(len(snap), dtype=bool)
        for term in required.nodeSelectorTerms or []:
            any_term |= term_matches(snap, term)
        ok &= any_term
    return [] if ok.all() else [(~ok, REASON)]


def raw_scores(snap: Snapshot, spec: Any) -> npt.NDArray[np.int64] | None:
    """Per node, the summed weight of matching preferred terms; None when the pod has none."""
    na = spec.affinity.nodeAffinity if spec.affinity else None
    terms = (na.preferredDuringSchedulingIgnoredDuringExecution or []) if na else []
    if not terms:
        return None
    total = np.zeros(len(snap), dtype=np.int64)
    for t in terms:
        if t.weight:
            total += np.where(term_matches(snap, t.preference), t.weight, 0)
    return total


def normalize(weights: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """DefaultNormalizeScore: the highest summed weight among the feasible nodes scores 100."""
    top = weights.max() if weights.size else 0
    return weights * 100 // top if top > 0 else np.zeros(weights.shape, dtype=np.int64)
