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
from typing import TYPE_CHECKING, TypeAlias

import numpy as np
from msgspec import Struct

from .podtraits import AffinityTerm, PodTraits
from .snapshot import Snapshot

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = ["DomainCounts", "ExistingTerms", "PodCounts", "PodsView", "TermKey", "TermKind", "carried_terms"]

Int64Array: TypeAlias = "npt.NDArray[np.int64]"
BoolArray: TypeAlias = "npt.NDArray[np.bool_]"
# "required-affinity", "required-anti-affinity", "preferred-affinity" or "preferred-anti-affinity"
TermKind = str


class PodCounts:
    """`counts[node]` = sum of `weight(traits)` over the pods placed on the node. `version` changes whenever
    the counts do, so that derived arrays can be cached."""

    def __init__(self, snap: Snapshot, weight: Callable[[PodTraits], int]) -> None:
        self.snap = snap
        self.weight = weight
        self._weights: dict[int, int] = {}
        self.version = 0
        self.epoch = 0  # bumped when the counts are rebuilt: followers of `deltas` start over
        self._rebuild()

    def _weight(self, traits: PodTraits) -> int:
        w = self._weights.get(traits.ident)
        if w is None:
            w = self._weights[traits.ident] = self.weight(traits)
        return w

    def _rebuild(self) -> None:
        snap = self.snap
        self.epoch += 1
        self.deltas: list[tuple[int, int]] = []  # (node, change) since the last rebuild
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
                    self.deltas.append((node, sign * w))
                    changed = True
            self.synced = len(snap.pod_log)
            if changed:
                self.version += 1
        return self.counts


class DomainCounts:
    """`sums[code]` = a PodCounts' counts summed over the nodes labelled `code` for one key (restricted to
    `among`), followed incrementally through the counter's deltas; `sums[size]` is 0, for unlabelled nodes."""

    def __init__(
        self, counter: PodCounts, codes: npt.NDArray[np.int32], size: int, among: BoolArray | None
    ) -> None:
        self.counter = counter
        self.size = size
        self.codes = np.where(codes >= 0, codes, size).astype(np.intp)  # unlabelled nodes -> the zero slot
        self.valid = codes >= 0 if among is None else (codes >= 0) & among
        self.epoch = -1
        self.position = 0
        self.sums: Int64Array = np.zeros(size + 1, dtype=np.int64)

    def current(self) -> Int64Array:
        counter = self.counter
        counter.current()
        if self.epoch != counter.epoch:
            counts = counter.counts
            self.sums = np.bincount(
                self.codes[self.valid], weights=counts[self.valid], minlength=self.size + 1
            ).astype(np.int64)
            self.sums[self.size] = 0
            self.epoch, self.position = counter.epoch, len(counter.deltas)
        elif self.position < len(counter.deltas):
            for node, delta in counter.deltas[self.position :]:
                if self.valid[node]:
                    self.sums[self.codes[node]] += delta
            self.position = len(counter.deltas)
        return self.sums

    def per_node(self) -> Int64Array:
        """For each node, the sum over the nodes of `among` in its domain (0 for nodes without the label)."""
        return self.current()[self.codes]


class TermKey(Struct, frozen=True):
    kind: TermKind
    term: AffinityTerm


def carried_terms(traits: PodTraits) -> list[tuple[TermKey, int]]:
    """The affinity terms a pod carries, with the weight each counts for (1 for required terms)."""
    out = [(TermKey("required-affinity", t), 1) for t in traits.required_affinity]
    out += [(TermKey("required-anti-affinity", t), 1) for t in traits.required_anti_affinity]
    out += [(TermKey("preferred-affinity", w.term), w.weight) for w in traits.preferred_affinity]
    out += [(TermKey("preferred-anti-affinity", w.term), w.weight) for w in traits.preferred_anti_affinity]
    return out


class ExistingTerms:
    """Which (kind, term) pairs placed pods carry, and how many pods carry each: what upstream reads from
    NodeInfo.PodsWithAffinity and PodsWithRequiredAntiAffinity. Per-node counts of a term's carriers come
    from `PodsView.carriers(key)`."""

    def __init__(self, snap: Snapshot) -> None:
        self.snap = snap
        self._rebuild()

    def _add(self, traits: PodTraits, sign: int) -> None:
        for key, _ in carried_terms(traits):
            left = self.carried.get(key, 0) + sign
            if left:
                self.carried[key] = left
            else:
                self.carried.pop(key, None)

    def _rebuild(self) -> None:
        snap = self.snap
        self.carried: dict[TermKey, int] = {}
        for key in snap.placed:
            traits = snap.traits.get(key)
            if traits is not None and traits.carries_terms:
                self._add(traits, 1)
        self.synced = len(snap.pod_log)
        self.generation = snap.generation

    def current(self) -> list[TermKey]:
        snap = self.snap
        if self.generation != snap.generation:
            self._rebuild()
        elif self.synced < len(snap.pod_log):
            for traits, _, sign in snap.pod_log[self.synced :]:
                if traits.carries_terms:
                    self._add(traits, sign)
            self.synced = len(snap.pod_log)
        return list(self.carried)


class PodsView:
    """What the plugins that depend on placed pods read: counters by question, the terms placed pods
    carry, namespace labels, and per-domain totals over a node topology key."""

    def __init__(self, snap: Snapshot, namespace_labels: Callable[[str], Mapping[str, str]]) -> None:
        self.snap = snap
        self.namespace_labels = namespace_labels
        self._counts: dict[Hashable, PodCounts] = {}
        self._domains: dict[Hashable, DomainCounts] = {}
        self._matches: dict[tuple[AffinityTerm, int], bool] = {}
        self.existing = ExistingTerms(snap)

    def counter(self, question: Hashable, weight: Callable[[PodTraits], int]) -> PodCounts:
        """The counter for `question` (a hashable naming what `weight` computes), created on first use."""
        counter = self._counts.get(question)
        if counter is None:
            counter = self._counts[question] = PodCounts(self.snap, weight)
        return counter

    def counts(self, question: Hashable, weight: Callable[[PodTraits], int]) -> Int64Array:
        """Per-node counts for `question`, current."""
        return self.counter(question, weight).current()

    def domains(
        self,
        question: Hashable,
        weight: Callable[[PodTraits], int],
        key: str,
        among: BoolArray | None = None,
        among_key: Hashable = None,
    ) -> DomainCounts:
        """Per-domain sums of `question`'s counts for label `key`, over the nodes `among` (all labelled nodes
        when None; `among_key` names that mask, which must not change for the same name)."""
        name = (question, key, among_key)
        domains = self._domains.get(name)
        if domains is None:
            codes = self.snap.label_codes(key)
            size = len(self.snap.label_values.get(key, {}))
            domains = self._domains[name] = DomainCounts(self.counter(question, weight), codes, size, among)
        return domains

    def term_matches(self, term: AffinityTerm, traits: PodTraits) -> bool:
        cached = self._matches.get((term, traits.ident))
        if cached is None:
            ns_labels = self.namespace_labels(traits.namespace)
            cached = self._matches[(term, traits.ident)] = term.matches(
                traits.namespace, traits.labels, ns_labels
            )
        return cached

    def term_domains(self, term: AffinityTerm) -> DomainCounts:
        """Per domain of the term's key, the placed pods that `term` (of the pod being scheduled) matches."""
        return self.domains(("term", term), lambda t: int(self.term_matches(term, t)), term.topology_key)

    def carrier_domains(self, key: TermKey) -> DomainCounts:
        """Per domain of the term's key, the placed pods carrying the term (times its weight)."""

        def carried(t: PodTraits) -> int:
            return sum(w for k, w in carried_terms(t) if k == key)

        return self.domains(("carried", key), carried, key.term.topology_key)
