"""Per-node counts of placed pods, kept in step with the snapshot's pod log: what the plugins that depend on
other pods (NodePorts, PodTopologySpread, InterPodAffinity) read instead of walking every pod per node.

Upstream computes the same in each pod's PreFilter/PreScore by walking the NodeInfos, and keeps it up to date
within a cycle with AddPod/RemovePod. Here a count is built once per distinct question ("pods in namespace
N matching selector S", "pods using port 9000/TCP", "pods carrying anti-affinity term T") and then follows
the log, so a 1,000-pod gang costs one update per member placed, and members tentatively placed earlier in a
gang's cycle are counted like any other pod until the cycle reverts them.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .podtraits import AffinityTerm, PodTraits
from .snapshot import Snapshot

__all__ = ["ExistingTerms", "PodCounts", "PodsView", "TermKind"]

Int64Array = npt.NDArray[np.int64]
TermKind = (
    str  # "required-affinity", "required-anti-affinity", "preferred-affinity", "preferred-anti-affinity"
)


class PodCounts:
    """`counts[node]` = sum of `weight(traits)` over the pods placed on the node. `version` changes whenever
    the counts do, so that derived arrays can be cached."""

    def __init__(self, snap: Snapshot, weight: Callable[[PodTraits], int]) -> None:
        self.snap = snap
        self.weight = weight
        self._weights: dict[int, int] = {}
        self.version = 0
        self._rebuild()

    def _weight(self, traits: PodTraits) -> int:
        w = self._weights.get(traits.ident)
        if w is None:
            w = self._weights[traits.ident] = self.weight(traits)
        return w

    def _rebuild(self) -> None:
        snap = self.snap
        self.counts: Int64Array = np.zeros(len(snap), dtype=np.int64)
        for key, (node, _) in snap.placed.items():
            traits = snap.traits.get(key)
            if traits is not None and (w := self._weight(traits)):
                self.counts[node] += w
        self.synced = len(snap.pod_log)
        self.generation = snap.generation
        self.version += 1

    def current(self) -> Int64Array:
        snap = self.snap
        if self.generation != snap.generation:
            self._rebuild()
        elif self.synced < len(snap.pod_log):
            changed = False
            for traits, node, sign in snap.pod_log[self.synced :]:
                w = self._weight(traits)
                if w:
                    self.counts[node] += sign * w
                    changed = True
            self.synced = len(snap.pod_log)
            if changed:
                self.version += 1
        return self.counts


@dataclass(frozen=True, slots=True)
class _TermKey:
    kind: TermKind
    term: AffinityTerm


class ExistingTerms:
    """For every (kind, term) that placed pods carry, the per-node number of pods carrying it (times the
    term's weight for preferred terms): what upstream reads from NodeInfo.PodsWithAffinity and
    PodsWithRequiredAntiAffinity."""

    def __init__(self, snap: Snapshot) -> None:
        self.snap = snap
        self.version = 0
        self._rebuild()

    @staticmethod
    def _carried(traits: PodTraits) -> list[tuple[_TermKey, int]]:
        out = [(_TermKey("required-affinity", t), 1) for t in traits.required_affinity]
        out += [(_TermKey("required-anti-affinity", t), 1) for t in traits.required_anti_affinity]
        out += [(_TermKey("preferred-affinity", w.term), w.weight) for w in traits.preferred_affinity]
        out += [
            (_TermKey("preferred-anti-affinity", w.term), w.weight) for w in traits.preferred_anti_affinity
        ]
        return out

    def _add(self, traits: PodTraits, node: int, sign: int) -> None:
        for key, weight in self._carried(traits):
            counts = self.by_term.get(key)
            if counts is None:
                counts = self.by_term[key] = np.zeros(len(self.snap), dtype=np.int64)
            counts[node] += sign * weight

    def _rebuild(self) -> None:
        snap = self.snap
        self.by_term: dict[_TermKey, Int64Array] = {}
        for key, (node, _) in snap.placed.items():
            traits = snap.traits.get(key)
            if traits is not None and traits.carries_terms:
                self._add(traits, node, 1)
        self.synced = len(snap.pod_log)
        self.generation = snap.generation
        self.version += 1

    def current(self) -> dict[_TermKey, Int64Array]:
        snap = self.snap
        if self.generation != snap.generation:
            self._rebuild()
        elif self.synced < len(snap.pod_log):
            for traits, node, sign in snap.pod_log[self.synced :]:
                if traits.carries_terms:
                    self._add(traits, node, sign)
                    self.version += 1
            self.synced = len(snap.pod_log)
        return self.by_term


class PodsView:
    """What the plugins that depend on placed pods read: counters by question, the terms placed pods
    carry, namespace labels, and per-domain totals over a node topology key."""

    def __init__(self, snap: Snapshot, namespace_labels: Callable[[str], Mapping[str, str]]) -> None:
        self.snap = snap
        self.namespace_labels = namespace_labels
        self._counts: dict[Hashable, PodCounts] = {}
        self.existing = ExistingTerms(snap)

    def counts(self, question: Hashable, weight: Callable[[PodTraits], int]) -> Int64Array:
        """Per-node counts for `question` (a hashable naming what `weight` computes), created on first use."""
        counter = self._counts.get(question)
        if counter is None:
            counter = self._counts[question] = PodCounts(self.snap, weight)
        return counter.current()

    def term_matches(self, term: AffinityTerm, traits: PodTraits) -> bool:
        return term.matches(traits.namespace, traits.labels, self.namespace_labels(traits.namespace))

    def term_counts(self, term: AffinityTerm) -> Int64Array:
        """Per node, the placed pods that `term` (of the pod being scheduled) matches."""
        return self.counts(("term", term), lambda t: int(self.term_matches(term, t)))

    def domain_totals(
        self, per_node: Int64Array, key: str, among: npt.NDArray[np.bool_] | None = None
    ) -> Int64Array:
        """For each node, the sum of `per_node` over the nodes sharing its value of label `key` (restricted
        to `among` when given); 0 for nodes without the label."""
        codes = self.snap.label_codes(key)
        size = len(self.snap.label_values.get(key, {}))
        labelled = codes >= 0 if among is None else (codes >= 0) & among
        sums = np.zeros(size + 1, dtype=np.int64)
        np.add.at(sums, codes[labelled], per_node[labelled])
        sums[size] = 0
        return sums[np.where(codes >= 0, codes, size)]
