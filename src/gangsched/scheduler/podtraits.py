"""What other pods' filters and scores read from a pod: namespace, labels, host ports, pod (anti-)affinity
terms and topology spread constraints, compiled once and interned (pods of one template share one object).

Upstream keeps the same per pod in its PodInfo (`framework.NewPodInfo`: RequiredAffinityTerms,
RequiredAntiAffinityTerms, PreferredAffinityTerms, PreferredAntiAffinityTerms) and NodeInfo.UsedPorts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
from msgspec import Struct

from .labelselector import NOTHING, Requirement, Selector, compile_selector

__all__ = [
    "AffinityTerm",
    "HostPort",
    "PodTraits",
    "SpreadConstraint",
    "WeightedTerm",
    "pod_traits",
    "system_default_constraints",
]

HostPort = tuple[str, str, int]  # (hostIP, protocol, hostPort), sanitized as upstream's HostPortInfo
BIND_ALL = "0.0.0.0"


class AffinityTerm(Struct, frozen=True):
    """A PodAffinityTerm as upstream's fwk.AffinityTerm: the namespaces default to the owner's own when
    neither `namespaces` nor `namespaceSelector` is given; matchLabelKeys / mismatchLabelKeys are merged into
    the selector from the owner's labels, as kube-apiserver does when the pod is created."""

    namespaces: frozenset[str]
    namespace_selector: Selector
    selector: Selector
    topology_key: str

    def matches(self, namespace: str, labels: Mapping[str, str], ns_labels: Mapping[str, str]) -> bool:
        if namespace in self.namespaces or self.namespace_selector.matches(ns_labels):
            return self.selector.matches(labels)
        return False


class WeightedTerm(Struct, frozen=True):
    term: AffinityTerm
    weight: int


class SpreadConstraint(Struct, frozen=True):
    """A topologySpreadConstraint with upstream's defaults: minDomains 1, nodeAffinityPolicy Honor,
    nodeTaintsPolicy Ignore; matchLabelKeys merged into the selector from the pod's labels."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    selector: Selector
    min_domains: int
    node_affinity_policy: str
    node_taints_policy: str


class PodTraits(Struct, frozen=True, eq=False):
    """Interned: equal traits are the same object (compared and hashed by identity), with a small integer
    `ident` for caches. Made only by `pod_traits`."""

    ident: int
    namespace: str
    labels: Mapping[str, str]
    terminating: bool
    host_ports: tuple[HostPort, ...]
    required_affinity: tuple[AffinityTerm, ...]
    required_anti_affinity: tuple[AffinityTerm, ...]
    preferred_affinity: tuple[WeightedTerm, ...]
    preferred_anti_affinity: tuple[WeightedTerm, ...]
    spread: tuple[SpreadConstraint, ...] = ()
    # The spread constraints are the system defaults (default_spread.py): scoring does not require nodes to
    # carry every key (upstream's requireAllTopologies is false for them).
    spread_defaulted: bool = False
    # Whether other pods' scheduling must look at this pod's own affinity terms (any of the four above): read
    # for every pod placed or tried (the snapshot's pod log, the evaluator's pods-stage check), so worked
    # out once per interned traits (by `pod_traits`) rather than on every read.
    carries_terms: bool = False


def _label_keys(keys: list[str] | None, operator: str, labels: Mapping[str, str]) -> tuple[Requirement, ...]:
    return tuple(Requirement(k, operator, frozenset([labels[k]])) for k in keys or [] if k in labels)


def _term(raw: Any, namespace: str, labels: Mapping[str, str]) -> AffinityTerm:
    selector = compile_selector(raw.labelSelector)
    if raw.labelSelector is not None:  # a nil selector matches nothing; the API server leaves it so
        selector = selector.with_requirements(
            _label_keys(raw.matchLabelKeys, "In", labels)
            + _label_keys(raw.mismatchLabelKeys, "NotIn", labels)
        )
    names = list(raw.namespaces or [])
    if not names and raw.namespaceSelector is None:
        names = [namespace]
    ns_selector = compile_selector(raw.namespaceSelector) if raw.namespaceSelector is not None else NOTHING
    return AffinityTerm(frozenset(names), ns_selector, selector, raw.topologyKey or "")


def _host_ports(spec: Any) -> tuple[HostPort, ...]:
    """upstream's util.GetHostPorts: ports with a hostPort of restartable init containers and containers."""
    containers = [c for c in spec.initContainers or [] if c.restartPolicy == "Always"]
    containers += list(spec.containers or [])
    out = []
    for c in containers:
        for p in c.ports or []:
            if p.hostPort and p.hostPort > 0:
                out.append((p.hostIP or BIND_ALL, p.protocol or "TCP", int(p.hostPort)))
    return tuple(out)


def _spread(spec: Any, labels: Mapping[str, str]) -> tuple[SpreadConstraint, ...]:
    out = []
    for c in spec.topologySpreadConstraints or []:
        selector = compile_selector(c.labelSelector)
        # upstream's filterTopologySpreadConstraints merges matchLabelKeys whatever the selector; the API
        # server merged them already when it could, and requirements given twice select the same pods.
        selector = selector.with_requirements(_label_keys(c.matchLabelKeys, "In", labels))
        out.append(
            SpreadConstraint(
                max_skew=int(c.maxSkew),
                topology_key=c.topologyKey,
                when_unsatisfiable=c.whenUnsatisfiable,
                selector=selector,
                min_domains=int(c.minDomains) if c.minDomains is not None else 1,
                node_affinity_policy=c.nodeAffinityPolicy or "Honor",
                node_taints_policy=c.nodeTaintsPolicy or "Ignore",
            )
        )
    return tuple(out)


_HOSTNAME = "kubernetes.io/hostname"
_ZONE = "topology.kubernetes.io/zone"
# plugin.go systemDefaultConstraints, in its order.
_SYSTEM_DEFAULTS = ((_HOSTNAME, 3), (_ZONE, 5))


def system_default_constraints(selector: Selector) -> tuple[SpreadConstraint, ...]:
    """The system default constraints with `selector`, upstream's defaults for the other fields."""
    return tuple(
        SpreadConstraint(
            max_skew=skew,
            topology_key=key,
            when_unsatisfiable="ScheduleAnyway",
            selector=selector,
            min_domains=1,
            node_affinity_policy="Honor",
            node_taints_policy="Ignore",
        )
        for key, skew in _SYSTEM_DEFAULTS
    )


_INTERNED: dict[tuple[bytes, Selector | None], PodTraits] = {}
_INTERN_LIMIT = 100_000


def pod_traits(pod: Any, default_selector: Selector | None = None) -> PodTraits:
    """The interned traits of a pod (typed lightkube Pod, defaulted). A pod without spread constraints of
    its own gets the system default constraints with `default_selector` when that selects something
    (default_spread.py builds it from the objects that select the pod)."""
    meta, spec = pod.metadata, pod.spec
    defaulted = (
        not spec.topologySpreadConstraints and default_selector is not None and not default_selector.empty
    )
    if not defaulted:
        default_selector = None
    namespace = meta.namespace or "default"
    labels = dict(meta.labels or {})
    terminating = meta.deletionTimestamp is not None
    affinity = spec.affinity
    pa = affinity.podAffinity if affinity is not None else None
    paa = affinity.podAntiAffinity if affinity is not None else None
    ports = [(c.ports, c.restartPolicy) for c in (spec.initContainers or [])] + [
        c.ports for c in spec.containers or []
    ]
    key = (
        msgspec.json.encode(
            (namespace, sorted(labels.items()), terminating, ports, pa, paa, spec.topologySpreadConstraints)
        ),
        default_selector,
    )
    cached = _INTERNED.get(key)
    if cached is not None:
        return cached
    if len(_INTERNED) >= _INTERN_LIMIT:
        _INTERNED.clear()  # idents stay unique: they keep counting (see below)
    required_affinity = (
        tuple(_term(t, namespace, labels) for t in (pa.requiredDuringSchedulingIgnoredDuringExecution or []))
        if pa is not None
        else ()
    )
    required_anti_affinity = (
        tuple(_term(t, namespace, labels) for t in (paa.requiredDuringSchedulingIgnoredDuringExecution or []))
        if paa is not None
        else ()
    )
    preferred_affinity = (
        tuple(
            WeightedTerm(_term(t.podAffinityTerm, namespace, labels), int(t.weight))
            for t in (pa.preferredDuringSchedulingIgnoredDuringExecution or [])
        )
        if pa is not None
        else ()
    )
    preferred_anti_affinity = (
        tuple(
            WeightedTerm(_term(t.podAffinityTerm, namespace, labels), int(t.weight))
            for t in (paa.preferredDuringSchedulingIgnoredDuringExecution or [])
        )
        if paa is not None
        else ()
    )
    traits = PodTraits(
        ident=_next_ident(),
        namespace=namespace,
        labels=labels,
        terminating=terminating,
        host_ports=_host_ports(spec),
        required_affinity=required_affinity,
        required_anti_affinity=required_anti_affinity,
        preferred_affinity=preferred_affinity,
        preferred_anti_affinity=preferred_anti_affinity,
        spread=system_default_constraints(default_selector)
        if default_selector is not None
        else _spread(spec, labels),
        spread_defaulted=default_selector is not None,
        carries_terms=bool(
            required_affinity or required_anti_affinity or preferred_affinity or preferred_anti_affinity
        ),
    )
    _INTERNED[key] = traits
    return traits


_COUNTER = [0]


def _next_ident() -> int:
    _COUNTER[0] += 1
    return _COUNTER[0]
