"""The filters that read a pod's PersistentVolumeClaims and ResourceClaims, run as one stage of the evaluator:
VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone and DynamicResources.

Contract, for one snapshot of nodes and one generation of storage and device objects (the scheduler builds a
new stage when any of them changes):
- `prefilter(pi)`: the pod's claims resolved, or the PreFilter message that stops it everywhere;
- `static(pi)`: rejections that hold for the whole generation (bound PVs' node affinity and zones), which
  preemption cannot lift;
- `dynamic(pi, nodes)`: rejections that depend on what is placed or reserved (ReadWriteOncePod users, CSI
  attach counts, PVs and devices taken earlier in this cycle), per plugin in upstream's order, and which of
  them preemption cannot lift (VolumeBinding, DynamicResources: UnschedulableAndUnresolvable upstream; the
  ReadWriteOncePod and attach-limit rejections, `PREEMPTIBLE_CLAIM_PLUGINS` in claims_plugins.py, are
  Unschedulable: evicting pods may lift them);
- `reserve(pi, node)`: choose the PVs and allocate the devices on the chosen node and keep them taken until
  the returned undo runs (a failed gang cycle reverts them with its placements);
- `decided(pod)`: the VolumeBindings and ClaimReservations for the Decision once the pod binds;
- `on_change(change)`: keep in step with the store: storage objects rebuild the volume catalog, slices,
  classes and DeviceTaintRules the device catalog, a claim's allocation moves its devices from pending to
  allocated.

Upstream: pkg/scheduler/framework/plugins/{volumebinding,volumezone,volumerestrictions,nodevolumelimits,
dynamicresources}; see docs/volumes-and-devices.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from lightkube.models import core_v1

from .claims import ClaimState, ClaimUse, PodClaims, pod_claims
from .claims_plugins import DRA_NAME
from .decision import ClaimReservation, VolumeBinding
from .devices import Allocation, AllocationError, DeviceCatalog, allocate, allocate_simple, simple_request
from .extended import (
    EXTENDED_CLAIM_ANNOTATION,
    STALE_CLAIM,
    dra_requests,
    is_special_for,
    special_claim,
    special_claim_name,
    special_requests,
)
from .plugins import BoolArray, Rejections
from .plugins import node_volume_limits as limits
from .plugins import volume_binding as binding
from .plugins import volume_restrictions as restrictions
from .plugins import volume_zone as zone
from .plugins.node_affinity import term_matches
from .podinfo import PodInfo, PodKey
from .snapshot import Snapshot
from .volumes import STORAGE_KINDS, PodVolumes, Reservations, VolumeCatalog, pod_claim_names, pod_volumes

__all__ = ["ClaimsStage", "PodClaimState"]

FIRST_AVAILABLE_MAX = 8  # resourceapi.FirstAvailableDeviceRequestMaxSize
CANNOT_ALLOCATE = "cannot allocate all claims"
NOT_ON_NODE = "resourceclaim not available on the node"
# Upstream's filter order: these four come right after NodeResourcesFit, DynamicResources after
# InterPodAffinity.
VOLUME_PLUGINS = (restrictions.NAME, limits.NAME, binding.NAME, zone.NAME)


@dataclass(slots=True)
class ExtendedNeed:
    """The pod's extended resources DeviceClasses serve (DRAExtendedResource, extended.py), found at
    PreFilter: on each node DynamicResources allocates devices for those the node's allocatable does not
    offer, as one special claim with the pod's own claims."""

    resources: dict[str, int]  # resource -> pod request (milli-units)
    stale: tuple[str, str] | None  # the pod's special claim left from an earlier cycle, if any
    # per set of resources DRA serves on a node (bit i: i-th of sorted `resources`): the special claim with
    # the pod's request mappings, None when no device is needed there
    variants: dict[int, tuple[Any, tuple[dict[str, str], ...]] | None] = field(default_factory=dict)


@dataclass(slots=True)
class PodClaimState:
    """A pod's PreFilter results for this stage."""

    error: str | None
    volumes: PodVolumes
    claims: PodClaims
    attachable: dict[str, str] = field(default_factory=dict)
    inline: dict[str, str] = field(default_factory=dict)  # inline in-tree volumes migrated to CSI
    disks: list[Any] = field(default_factory=list)  # inline disks VolumeRestrictions compares
    static: dict[str, Rejections] = field(default_factory=dict)
    extended: ExtendedNeed | None = None


def _is_pod(ref: Any, meta: Any, resource: str = "pods") -> bool:
    """Whether a reservedFor entry names this pod (or the object of `resource` with this `meta`): by UID as
    upstream; objects read from files without UIDs are told apart by name."""
    if meta.uid:
        return bool(ref.uid == meta.uid)
    return bool(ref.resource == resource and not ref.uid and ref.name == meta.name)


class ClaimsStage:
    """Volume and device filters over one Snapshot. Not thread-safe."""

    def __init__(
        self,
        store: Any,
        snap: Snapshot,
        pods: Mapping[PodKey, PodInfo],
        *,
        workload_claims: bool,
    ) -> None:
        self.store = store
        self.snap = snap
        self.pods = pods
        self.workload_claims = workload_claims
        self.volumes = VolumeCatalog(store)
        self.devices = DeviceCatalog(store, snap)
        self.pv_nodes = binding.PVNodes(snap)
        self.reservations = Reservations()
        self.claim_state = ClaimState(self.devices.use)
        self._states: dict[PodKey, PodClaimState] = {}
        # special claims in the store by (namespace, owning pod name): findExtendedResourceClaim's candidates
        self._specials: dict[tuple[str, str], set[tuple[str, str]]] = {}
        for claim in store.list("ResourceClaim"):
            self._index_special((claim.metadata.namespace or "", claim.metadata.name), claim, True)
        self._users: dict[tuple[str, str], set[PodKey]] | None = None
        self._found: tuple[PodKey | None, dict[int, list[Allocation]]] = (
            None,
            {},
        )  # last Filter's allocations

    # --- keeping in step with the store -------------------------------------------------------------------
    def on_change(self, kind: str, key: tuple[str, str], obj: Any, old: Any) -> None:
        """A stored object changed (`obj` is None on deletion)."""
        self._states.clear()
        if kind in STORAGE_KINDS:
            self.volumes = VolumeCatalog(self.store)
            if kind == "PersistentVolume":
                self.pv_nodes = binding.PVNodes(self.snap)
                if obj is not None and obj.spec.claimRef is not None:
                    self.reservations.taken.pop(key[1], None)  # bound now: no longer only assumed
        elif kind in ("DeviceClass", "ResourceSlice", "DeviceTaintRule"):
            self.devices = DeviceCatalog(self.store, self.snap)
            self.claim_state = ClaimState(self.devices.use)  # nothing is pending between cycles
        elif kind == "ResourceClaim":
            self.devices.claim_changed(key, obj)
            self._index_special(key, obj if obj is not None else old, obj is not None)
            if obj is not None and obj.status is not None and obj.status.allocation is not None:
                self.claim_state.settled(key)
                owner = self._special_owner(obj)
                if owner is not None:  # live: the API server named it, the cycle's pending used our name
                    self.claim_state.settled((key[0], special_claim_name(owner, key[0])))
        elif kind == "Pod":
            self._users = None

    @staticmethod
    def _special_owner(claim: Any) -> str | None:
        """The controlling pod's name of a special claim for extended resources; None for other claims."""
        if claim is None or (claim.metadata.annotations or {}).get(EXTENDED_CLAIM_ANNOTATION) != "true":
            return None
        return next(
            (r.name for r in claim.metadata.ownerReferences or [] if r.controller and r.kind == "Pod"), None
        )

    def _index_special(self, key: tuple[str, str], claim: Any, present: bool) -> None:
        owner = self._special_owner(claim)
        if owner is not None:
            keys = self._specials.setdefault((key[0], owner), set())
            if present:
                keys.add(key)
            else:
                keys.discard(key)

    # --- PreFilter ------------------------------------------------------------------------------------------
    def prefilter(self, pi: PodInfo) -> PodClaimState:
        state = self._states.get(pi.key)
        if state is None:
            state = self._states[pi.key] = self._prefilter(pi)
        return state

    def _prefilter(self, pi: PodInfo) -> PodClaimState:
        pod = pi.pod
        volumes = pod_volumes(self.volumes, pod)
        group = self.store.get("PodGroup", pi.group) if pi.group is not None else None
        claims = pod_claims(pod, group, lambda k: self.store.get("ResourceClaim", k), self.workload_claims)
        error = volumes.error or claims.error
        if error is None:
            for use in claims.uses:
                if self._allocation_of(use.key) is None:
                    error = self._missing_class(use.claim)
                    if error:
                        break
        state = PodClaimState(error, volumes, claims)
        need = dra_requests(pi.requests, self.devices.extended) if self.devices.extended else {}
        if need:
            meta = pod.metadata
            stale = next(
                (
                    key
                    for key in sorted(self._specials.get((pi.key[0], meta.name), ()))
                    if (c := self.store.get("ResourceClaim", key)) is not None
                    and is_special_for(c, meta.name, meta.uid or "")
                ),
                None,
            )
            state.extended = ExtendedNeed(need, stale)
        if error is None and volumes.bound:
            state.static[binding.NAME] = binding.bound_rejections(self.pv_nodes, volumes)
            state.static[zone.NAME] = zone.filter_nodes(self.snap, volumes)
        state.inline = {**limits.inline_attachable(pod), **limits.migrated_attachable(self.volumes, pod)}
        state.disks = restrictions.disk_volumes(pod.spec)
        if error is None and (volumes.bound or volumes.delay or state.inline):
            state.attachable = {**limits.attachable(self.volumes, pod), **state.inline}
        return state

    def _missing_class(self, claim: Any) -> str | None:
        """PreFilter checks every request's device class exists, however the claim is allocated."""
        for req in claim.spec.devices.requests or [] if claim.spec and claim.spec.devices else []:
            for sub in [req.exactly] if req.exactly is not None else list(req.firstAvailable or []):
                if sub.deviceClassName not in self.devices.classes:
                    return f"request {req.name}: device class {sub.deviceClassName} does not exist"
        return None

    def reads_node_pods(self, pi: PodInfo) -> bool:
        """Whether NodeVolumeLimits' verdict on the pod reads the pods placed on its node (it has CSI volumes
        to attach); False after a PreFilter error, which no placement survives."""
        state = self.prefilter(pi)
        return state.error is None and bool(state.attachable or state.disks)

    def static(self, pi: PodInfo) -> BoolArray:
        """Nodes not rejected by the generation-wide rejections (all False after a PreFilter error)."""
        state = self.prefilter(pi)
        ok = np.ones(len(self.snap), dtype=bool)
        if state.error is not None:
            return ok & False
        for rejections in state.static.values():
            for mask, _ in rejections:
                ok &= ~mask
        return ok

    # --- Filter ---------------------------------------------------------------------------------------------
    def _users_of(self, claim: tuple[str, str]) -> set[PodKey]:
        if self._users is None:
            self._users = {}
            for key, other in self.pods.items():
                if other.pod.spec.volumes:
                    ns = key[0]
                    for name in pod_claim_names(other.pod):
                        self._users.setdefault((ns, name), set()).add(key)
        return self._users.get(claim, set())

    def _pods_with_volumes_on(self, node: int) -> Iterator[Any]:
        """The pods counted on `node` (bound, assumed, placed earlier in this cycle) that have volumes."""
        for key, (where, _) in self.snap.placed.items():
            if where == node and (other := self.pods.get(key)) is not None and other.pod.spec.volumes:
                yield other.pod

    def _attached_on(self, node: int) -> list[dict[str, str]]:
        return [
            {
                **limits.attachable(self.volumes, pod),
                **limits.inline_attachable(pod),
                **limits.migrated_attachable(self.volumes, pod),
            }
            for pod in self._pods_with_volumes_on(node)
        ]

    def _allocation_of(self, key: tuple[str, str]) -> tuple[Allocation | None, Any] | None:
        """(pending allocation or None, allocated status or None); None when the claim is not allocated."""
        pending = self.claim_state.pending.get(key)
        if pending is not None:
            return (pending.allocation, None)
        claim = self.store.get("ResourceClaim", key)
        allocation = claim.status.allocation if claim is not None and claim.status is not None else None
        return (None, allocation) if allocation is not None else None

    def _available_on(self, pending: Allocation | None, allocated: Any) -> BoolArray:
        selector = pending.node_selector if pending is not None else None
        if allocated is not None:
            selector = allocated.nodeSelector.to_dict() if allocated.nodeSelector is not None else None
        n = len(self.snap)
        if selector is None:
            return np.ones(n, dtype=bool)
        ok = np.zeros(n, dtype=bool)
        parsed: Any = core_v1.NodeSelector.from_dict(selector)
        for term in parsed.nodeSelectorTerms or []:
            ok |= term_matches(self.snap, term)
        return ok

    def dynamic(self, pi: PodInfo, nodes: BoolArray) -> list[tuple[str, Rejections]]:
        """Per plugin (upstream order), the rejections among `nodes`: each plugin sees only the nodes the
        ones before it left, as upstream runs a node's filters until the first that fails."""
        state = self.prefilter(pi)
        n = len(self.snap)
        out: list[tuple[str, Rejections]] = []
        remaining = nodes.copy()
        if state.disks:
            taken = np.zeros(n, dtype=bool)
            for node in np.flatnonzero(remaining):
                taken[node] = restrictions.disk_conflict(state.disks, self._pods_with_volumes_on(int(node)))
            if taken.any():
                out.append((restrictions.NAME, [(taken, restrictions.DISK_CONFLICT)]))
                remaining &= ~taken
        if state.volumes.rwop and restrictions.conflict(self.snap, pi.key, state.volumes, self._users_of):
            if out:  # the nodes a disk conflict already rejected keep that reason (Filter checks it first)
                out[0][1].append((remaining, restrictions.RWOP_CONFLICT))
                return out
            return [(restrictions.NAME, [(remaining, restrictions.RWOP_CONFLICT)])]
        if state.attachable:
            rejected: dict[str, BoolArray] = {}
            for node in np.flatnonzero(remaining):
                name = self.snap.node_names[node]
                reason = limits.missing_driver(self.volumes, state.attachable, name, state.inline)
                if reason is None:
                    caps = limits.limits(self.volumes, name)
                    held = limits.attached_by_volume_attachments(self.volumes, name) if caps else {}
                    if caps and not limits.fits(state.attachable, self._attached_on(int(node)), caps, held):
                        reason = limits.REASON
                if reason is not None:
                    rejected.setdefault(reason, np.zeros(n, dtype=bool))[node] = True
            if rejected:
                out.append((limits.NAME, [(mask, reason) for reason, mask in rejected.items()]))
                for mask in rejected.values():
                    remaining &= ~mask
        if state.volumes.delay:
            unbound = binding.unbound_rejections(
                self.snap, self.pv_nodes, self.volumes, self.reservations, state.volumes, remaining
            )
            if unbound:
                out.append((binding.NAME, unbound))
                for mask, _ in unbound:
                    remaining &= ~mask
        if state.claims.uses or state.extended is not None:
            rejections = self._devices_filter(state, remaining, pi)
            if rejections:
                out.append((DRA_NAME, rejections))
        return out

    def _devices_filter(self, state: PodClaimState, nodes: BoolArray, pi: PodInfo) -> Rejections:
        """DynamicResources' Filter: a special claim left from an earlier cycle rejects every node; allocated
        claims must be available on the node; the others, with the special claim for the extended resources
        DRA serves on the node, must all be allocatable there together."""
        extended = state.extended
        if extended is not None and extended.stale is not None:
            return [(nodes.copy(), STALE_CLAIM)] if nodes.any() else []
        n = len(self.snap)
        not_here = np.zeros(n, dtype=bool)
        to_allocate = []
        for use in state.claims.uses:
            current = self._allocation_of(use.key)
            if current is None:
                to_allocate.append(use.claim)
            else:
                not_here |= nodes & ~self._available_on(*current)
        out: Rejections = [(not_here, NOT_ON_NODE)] if not_here.any() else []
        candidates = nodes & ~not_here
        found: dict[int, list[Allocation]] = {}
        self._found = (pi.key, found)
        for mask, special in self._special_variants(pi, extended, candidates):
            claims = [*to_allocate, special[0]] if special is not None else to_allocate
            if claims:
                out += self._allocate_on(claims, mask, found)
        return out

    def _special_variants(
        self, pi: PodInfo, extended: ExtendedNeed | None, nodes: BoolArray
    ) -> list[tuple[BoolArray, tuple[Any, tuple[dict[str, str], ...]] | None]]:
        """`nodes` split by which of the pod's extended resources DRA serves there (upstream builds the
        special claim per node in filterExtendedResources), each part with its special claim and request
        mappings (None: every such resource comes from the node's allocatable, or the pod has none)."""
        if extended is None:
            return [(nodes, None)]
        names = sorted(extended.resources)
        codes = np.zeros(len(self.snap), dtype=np.int64)
        for i, name in enumerate(names):
            codes |= self.snap.dra_served(name).astype(np.int64) << i
        out = []
        for code in np.unique(codes[nodes]):
            key = int(code)
            if key not in extended.variants:
                served = [name for i, name in enumerate(names) if key >> i & 1]
                requests, mappings = (
                    special_requests(pi.pod.spec, served, self.devices.extended) if served else ([], [])
                )
                extended.variants[key] = (
                    (special_claim(pi.pod, requests), tuple(mappings)) if requests else None
                )
            out.append((nodes & (codes == key), extended.variants[key]))
        return out

    def _allocate_on(
        self, claims: list[Any], candidates: BoolArray, found: dict[int, list[Allocation]]
    ) -> Rejections:
        """Allocate `claims` together on each of `candidates` (the allocator's results kept in `found` for
        Score); the nodes where that fails, with the reason."""
        n = len(self.snap)
        try:
            simple = simple_request(self.devices, claims)
        except AllocationError as e:
            return [(candidates, str(e))]
        free = self.devices.use.free_per_node(simple[0]) if simple is not None else None
        if simple is not None and free is not None:
            short = candidates & (free < simple[1])
            return [(short, CANNOT_ALLOCATE)] if short.any() else []
        in_use = self.devices.use
        short = np.zeros(n, dtype=bool)
        errors: dict[str, BoolArray] = {}
        out: Rejections = []
        for node in np.flatnonzero(candidates):
            try:
                allocations = allocate(self.devices, claims, int(node), in_use)
                if allocations is None:
                    short[node] = True
                else:
                    found[int(node)] = allocations
            except AllocationError as e:
                errors.setdefault(str(e), np.zeros(n, dtype=bool))[node] = True
        if short.any():
            out.append((short, CANNOT_ALLOCATE))
        out += [(mask, message) for message, mask in errors.items()]
        return out

    # --- PostFilter -----------------------------------------------------------------------------------------
    def any_allocated(self, pi: PodInfo) -> bool:
        """Whether one of the pod's claims is allocated in the store: what DynamicResources' PostFilter (and
        PodGroupPostFilter) may deallocate or unreserve after a failed cycle."""
        return any(
            (current := self._allocation_of(use.key)) is not None and current[1] is not None
            for use in self.prefilter(pi).claims.uses
        )

    def to_deallocate(self, pi: PodInfo, nodes: BoolArray, group: Any = None) -> list[tuple[str, str]]:
        """DynamicResources' PostFilter candidates, in the pod's claim order: claims allocated in the store
        that were not available on some node where the filters before DynamicResources passed (`nodes`, less
        the volume plugins' rejections here), reserved for nobody or only for this pod (by UID) — or, given
        the pod's PodGroup `group`, only for that group — so that deallocating one could let a later cycle
        allocate it where the pod can run (dynamicresources.go Filter's unavailableClaims,
        deallocateOrDeletePodClaims and deallocatePodGroupClaims)."""
        state = self.prefilter(pi)
        if state.error is not None or not state.claims.uses:
            return []
        if state.extended is not None and state.extended.stale is not None:
            return []  # Filter stopped at the stale special claim: no claim was found unavailable
        if not self.any_allocated(pi):
            return []  # no candidate: spare running the filters again (a failed gang asks per member)
        reached = nodes.copy()
        for name, rejections in self.dynamic(pi, nodes):
            if name != DRA_NAME:
                for mask, _ in rejections:
                    reached &= ~mask
        if not reached.any():
            return []
        meta, resource = (pi.pod.metadata, "pods") if group is None else (group.metadata, "podgroups")
        out = []
        for use in state.claims.uses:
            current = self._allocation_of(use.key)
            if current is None or current[1] is None:  # not allocated, or only tentatively in this cycle
                continue
            if not (reached & ~self._available_on(*current)).any():
                continue
            claim = self.store.get("ResourceClaim", use.key)
            reserved = (claim.status.reservedFor if claim is not None and claim.status else None) or []
            if not reserved or (len(reserved) == 1 and _is_pod(reserved[0], meta, resource)):
                out.append(use.key)
        return out

    def stale_special(self, pi: PodInfo) -> list[tuple[str, str]]:
        """The pod's special claim left from an earlier cycle, which PostFilter deletes when no claim was
        deallocated (deallocateOrDeletePodClaims); empty when there is none."""
        state = self.prefilter(pi)
        extended = state.extended
        if state.error is not None or extended is None or extended.stale is None:
            return []
        return [extended.stale]

    # --- Score ----------------------------------------------------------------------------------------------
    def scores(self, pi: PodInfo, nodes: Any) -> Any | None:
        """DynamicResources' Score on the feasible `nodes` (after `dynamic`): per claim request with a
        firstAvailable list, `8 - index` of the subrequest allocated on the node, summed, then normalised to
        0..100 (DefaultNormalizeScore); None when no claim has such a list (every node would score 0)."""
        state = self.prefilter(pi)
        lists = [
            (use, req)
            for use in state.claims.uses
            for req in (use.claim.spec.devices.requests or [] if use.claim.spec.devices else [])
            if req.firstAvailable
        ]
        if not lists:
            return None
        pod, found = self._found
        raw = np.zeros(len(nodes), dtype=np.int64)
        for k, node in enumerate(nodes):
            new = iter(found.get(int(node), []) if pod == pi.key else [])
            allocated: set[str] = set()
            for use in state.claims.uses:
                current = self._allocation_of(use.key)
                if current is None:
                    allocation = next(new, None)
                    allocated |= {r for r, _ in allocation.results} if allocation is not None else set()
                elif current[0] is not None:
                    allocated |= {r for r, _ in current[0].results}
                else:
                    allocated |= {r.request for r in (current[1].devices.results or [])}
            for _, req in lists:
                for i, sub in enumerate(req.firstAvailable):
                    if f"{req.name}/{sub.name}" in allocated:
                        raw[k] += FIRST_AVAILABLE_MAX - i
        top = raw.max() if raw.size else 0
        return raw * 100 // top if top > 0 else None

    # --- Reserve --------------------------------------------------------------------------------------------
    def reserve(self, pi: PodInfo, node: int) -> Callable[[], None]:
        """Take the pod's PVs and devices on `node` (which passed `dynamic`); returns the undo."""
        state = self.prefilter(pi)
        undo: list[Callable[[], None]] = []
        if state.volumes.delay:
            chosen, _ = binding.choose(
                self.snap, self.pv_nodes, self.volumes, self.reservations, state.volumes, node
            )
            undo.append(self.reservations.assume(pi.key, chosen or []))
        if state.claims.uses or state.extended is not None:
            uses = list(state.claims.uses)
            special = self._special_use(pi, state, node)
            if special is not None:
                uses.append(special)
            to_allocate = [u for u in uses if u is special or self._allocation_of(u.key) is None]
            new: dict[tuple[str, str], Allocation] = {}
            if to_allocate:
                claims = [u.claim for u in to_allocate]
                if len(claims) == 1:
                    found = allocate_simple(self.devices, claims[0], node) or []
                else:
                    found = allocate(self.devices, claims, node, self.devices.use) or []
                new = {u.key: a for u, a in zip(to_allocate, found, strict=True)}
            undo.append(self.claim_state.reserve(pi.key, new, uses))

        def revert() -> None:
            while undo:
                undo.pop()()

        return revert

    def _special_use(self, pi: PodInfo, state: PodClaimState, node: int) -> ClaimUse | None:
        """The special claim the pod needs on `node` (its extended resources DRA serves there), as a claim
        use reserved for the pod; None when the node's allocatable offers them all, or the pod has none."""
        if state.extended is None:
            return None
        only = np.zeros(len(self.snap), dtype=bool)
        only[node] = True
        ((_, variant),) = self._special_variants(pi, state.extended, only)
        if variant is None:
            return None
        claim, mappings = variant
        meta = pi.pod.metadata
        consumer = {"resource": "pods", "name": meta.name, "uid": meta.uid or ""}
        key = (claim.metadata.namespace, claim.metadata.name)
        return ClaimUse(key, claim, consumer, claim.to_dict(), mappings)

    def decided(self, pod: PodKey) -> tuple[list[VolumeBinding], list[ClaimReservation]]:
        return (self.reservations.by_pod.get(pod, []), self.claim_state.by_pod.get(pod, []))
