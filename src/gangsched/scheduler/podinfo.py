"""What the scheduler needs to know about a pod, computed once per pod."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import msgspec
from msgspec import Struct

from .labelselector import Selector
from .plugins.image_locality import pod_images
from .plugins.unsupported import refusal
from .podtraits import PodTraits, pod_traits
from .resources import nonzero_requests, pod_requests

__all__ = ["TERMINAL_PHASES", "PodInfo", "PodKey", "is_terminal", "pod_info", "uses_claims"]

PodKey = tuple[str, str]
TERMINAL_PHASES = ("Succeeded", "Failed")


def is_terminal(pod: Any) -> bool:
    """A Succeeded or Failed pod holds nothing: kube-scheduler's pod informer leaves it out."""
    return pod.status is not None and pod.status.phase in TERMINAL_PHASES


class PodInfo(Struct, eq=False, gc=False):
    """A pod as scheduled: identity, priority, requests and an equivalence signature. Not tracked by the
    garbage collector (every pod has one): the pod and the values it holds never refer back to it.

    Pods with the same `signature` get the same filter and score results on the same snapshot, so a group of
    identical workers is evaluated once per node change rather than once per pod.
    """

    key: PodKey
    pod: Any
    order: int
    priority: int
    requests: dict[str, int]
    nonzero: tuple[int, int]
    signature: Hashable
    group: tuple[str, str] | None
    scheduler_name: str
    preemption_policy: str
    traits: PodTraits  # what other pods' filters and scores read from it (podtraits.py)
    claims: bool = False  # uses PersistentVolumeClaims or ResourceClaims: the claims stage filters it

    @property
    def node_name(self) -> str | None:
        node: str | None = self.pod.spec.nodeName
        return node or None

    @property
    def name(self) -> str:
        return f"{self.key[0]}/{self.key[1]}"


def _signature(spec: Any, requests: dict[str, int], nonzero: tuple[int, int]) -> Hashable:
    """Everything the static and resource filters and scores read from a pod, as a hashable value (what
    the pods-stage plugins read is in its traits, and the claims stage reads volumes and devices pod by
    pod, apart from the class)."""
    affinity = spec.affinity.nodeAffinity if spec.affinity else None
    return (
        tuple(sorted(requests.items())),
        nonzero,  # equal requests may still score apart: a container that omits cpu scores as 100m
        tuple(sorted((spec.nodeSelector or {}).items())),
        msgspec.json.encode(affinity) if affinity is not None else None,
        msgspec.json.encode(spec.tolerations) if spec.tolerations else None,
        spec.nodeName or None,
        tuple(pod_images(spec)[0]),  # ImageLocality
        refusal(spec),  # fields not evaluated yet: the pod is refused
    )


def uses_claims(spec: Any) -> bool:
    """Whether the pod uses PersistentVolumeClaims (named, or a generic ephemeral volume's), inline in-tree
    volumes NodeVolumeLimits counts once migrated to CSI or VolumeRestrictions compares, or ResourceClaims:
    the claims stage checks it."""
    return bool(spec.resourceClaims) or any(
        v.persistentVolumeClaim is not None
        or v.ephemeral is not None
        or v.azureDisk is not None
        or v.cinder is not None
        or v.portworxVolume is not None
        or v.gcePersistentDisk is not None
        or v.awsElasticBlockStore is not None
        or v.iscsi is not None
        or v.rbd is not None
        for v in spec.volumes or []
    )


_REQUESTS_CACHE: dict[bytes, tuple[dict[str, int], tuple[int, int]]] = {}
_REQUESTS_CACHE_SIZE = 4096


def _requests(spec: Any) -> tuple[dict[str, int], tuple[int, int]]:
    """(requests, non-zero cpu/memory) of a pod spec. Pods of one template ask for the same, so the result
    is kept per encoding of the fields it depends on (the caller must not mutate the returned dict)."""
    key = msgspec.json.encode(
        (
            [c.resources for c in spec.containers or []],
            [(c.resources, c.restartPolicy) for c in spec.initContainers or []],
            spec.overhead,
            spec.resources,
        )
    )
    cached = _REQUESTS_CACHE.get(key)
    if cached is None:
        if len(_REQUESTS_CACHE) >= _REQUESTS_CACHE_SIZE:
            _REQUESTS_CACHE.clear()
        cached = (pod_requests(spec), nonzero_requests(spec))
        _REQUESTS_CACHE[key] = cached
    return cached


class _FromSpec(Struct, frozen=True):
    """What `pod_info` derives from the pod's spec alone."""

    priority: int
    requests: dict[str, int]  # shared: never mutated
    nonzero: tuple[int, int]
    signature: Hashable
    scheduler_name: str
    preemption_policy: str
    claims: bool


_SPEC_CACHE: dict[bytes, _FromSpec] = {}
_SPEC_CACHE_SIZE = 4096


def _from_spec(spec: Any, key: bytes) -> _FromSpec:
    """`_FromSpec` of `spec`, kept per `key`: the spec's encoding less its schedulingGroup (`pod_info`)."""
    cached = _SPEC_CACHE.get(key)
    if cached is None:
        if len(_SPEC_CACHE) >= _SPEC_CACHE_SIZE:
            _SPEC_CACHE.clear()
        requests, nonzero = _requests(spec)
        cached = _FromSpec(
            priority=spec.priority or 0,
            requests=requests,
            nonzero=nonzero,
            signature=_signature(spec, requests, nonzero),
            scheduler_name=spec.schedulerName or "default-scheduler",
            preemption_policy=spec.preemptionPolicy or "PreemptLowerPriority",
            claims=uses_claims(spec),
        )
        _SPEC_CACHE[key] = cached
    return cached


# What `pod_info` takes from its caches, by what it reads of a pod: its spec (by its encoding: `_FromSpec`,
# and ports, pod affinity and spread constraints for `pod_traits`), namespace, labels and whether it is
# terminating, and the default selector (`pod_traits`). `pod_traits` finds a pod's traits by an encoding of
# those parts of its own, which costs twice as much as `_from_spec`'s lookup (12,000 instructions a pod);
# with the spec's encoding made already, a tuple of the rest finds both at once (a lookup apart for the
# traits cost 2,000 instructions a pod).
_PodKey = tuple[bytes, str | None, tuple[tuple[str, str], ...], bool, Selector | None]
_POD_CACHE: dict[_PodKey, tuple[_FromSpec, PodTraits]] = {}
_POD_CACHE_SIZE = 4096


def pod_info(
    pod: Any, order: int, use_groups: bool = True, default_selector: Selector | None = None
) -> PodInfo:
    """PodInfo for a defaulted, valid pod; `use_groups=False` ignores schedulingGroup (gate off);
    `default_selector` feeds PodTopologySpread's system default constraints (podtraits.pod_traits)."""
    spec = pod.spec
    meta = pod.metadata
    # The spec's encoding less its schedulingGroup (which only names the group, read apart): the pods of one
    # template, in one gang or many, share it. The group is taken out of the spec while it is encoded and put
    # back: a copy of the spec without it (`msgspec.structs.replace`) cost as much as the encoding. (Inline:
    # every pod comes here, and a function of its own cost about 900 instructions a pod more.)
    group_ref = spec.schedulingGroup
    if group_ref is None:
        spec_key = msgspec.json.encode(spec)
    else:
        spec.schedulingGroup = None
        try:
            spec_key = msgspec.json.encode(spec)
        finally:
            spec.schedulingGroup = group_ref
    labels = meta.labels
    key = (
        spec_key,
        meta.namespace,
        tuple(sorted(labels.items())) if labels else (),
        meta.deletionTimestamp is not None,
        default_selector,
    )
    found = _POD_CACHE.get(key)
    if found is None:
        if len(_POD_CACHE) >= _POD_CACHE_SIZE:
            _POD_CACHE.clear()
        found = _POD_CACHE[key] = (_from_spec(spec, spec_key), pod_traits(pod, default_selector))
    derived, traits = found
    group = None
    if use_groups and group_ref is not None and group_ref.podGroupName:
        group = (meta.namespace, group_ref.podGroupName)
    return PodInfo(
        key=(meta.namespace, meta.name),
        pod=pod,
        order=order,
        priority=derived.priority,
        requests=derived.requests,
        nonzero=derived.nonzero,
        signature=derived.signature,
        group=group,
        scheduler_name=derived.scheduler_name,
        preemption_policy=derived.preemption_policy,
        traits=traits,
        claims=derived.claims,
    )
