"""VolumeBinding: a pod's claims must be bindable on the node (pkg/scheduler/framework/plugins/volumebinding).

- PreFilter (`volumes.pod_volumes`): a missing claim or an unbound Immediate claim stops the pod
  (UnschedulableAndUnresolvable, `pod has unbound immediate PersistentVolumeClaims`).
- Bound claims: the PV's required node affinity must match the node (`checkBoundClaims`); a claim bound to
  a PV that does not exist rejects every node.
- Unbound WaitForFirstConsumer claims, smallest request first: a claim annotated with a selected node only
  fits that node, and only if its class could provision there; otherwise the smallest available PV of the
  claim's class that is large enough, of the same volumeMode and volumeAttributesClassName, with the
  claim's access modes and label selector, not assumed for another claim, whose node affinity matches the
  node (`FindMatchingVolume`; a PV pre-bound to the claim by its claimRef is taken before any other);
  failing that, dynamic provisioning: a class with a provisioner other than `kubernetes.io/no-provisioner`
  whose allowedTopologies match the node (`checkVolumeProvisions`), and, when the provisioner's CSIDriver
  sets `storageCapacity: true`, a CSIStorageCapacity of the claim's class whose nodeTopology selects the
  node with `maximumVolumeSize` (else `capacity`) at least the claim's request (`hasEnoughCapacity`; else
  `node(s) did not have enough free storage`). Claims with a selected node are checked first, then the
  claims no PV matched; the first that fails gives the reason.

All rejections are UnschedulableAndUnresolvable: preemption cannot help. A PV without a status counts as
Available (what the PV controller makes of it), since input files rarely carry one.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from lightkube.models import core_v1

from ...api.quantity import QuantityError, milli
from ..labelselector import compile_selector
from ..snapshot import Snapshot
from ..volumes import (
    ANN_SELECTED_NODE,
    NO_PROVISIONER,
    PodVolumes,
    Reservations,
    VolumeBinding,
    VolumeCatalog,
)
from . import BoolArray, Rejections
from .node_affinity import term_matches

NAME = "VolumeBinding"
NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"


class PVNodes:
    """Per PV, the nodes its required node affinity admits (cached for one snapshot)."""

    def __init__(self, snap: Snapshot) -> None:
        self.snap = snap
        self._cache: dict[str, BoolArray] = {}

    def of(self, pv: Any) -> BoolArray:
        mask = self._cache.get(pv.metadata.name)
        if mask is None:
            affinity = pv.spec.nodeAffinity
            required = affinity.required if affinity is not None else None
            if required is None:
                mask = np.ones(len(self.snap), dtype=bool)
            else:
                mask = np.zeros(len(self.snap), dtype=bool)
                for term in required.nodeSelectorTerms or []:
                    mask |= term_matches(self.snap, term)
            self._cache[pv.metadata.name] = mask
        return mask


def bound_rejections(pv_nodes: PVNodes, volumes: PodVolumes) -> Rejections:
    """Bound claims: PV node affinity, or a PV that does not exist (every node)."""
    n = len(pv_nodes.snap)
    if any(pv is None for _, pv in volumes.bound):
        return [(np.ones(n, dtype=bool), PV_NOT_EXIST)]
    ok = np.ones(n, dtype=bool)
    for _, pv in volumes.bound:
        ok &= pv_nodes.of(pv)
    return [] if ok.all() else [(~ok, NODE_CONFLICT)]


def _quantity(raw: Any) -> int:
    try:
        return milli(raw)
    except QuantityError:
        return 0


def _bound_to(ref: Any, pvc: Any) -> bool:
    """IsVolumeBoundToClaim: the PV's claimRef names this claim (and its uid, when the ref carries one)."""
    same_name = (ref.namespace or "", ref.name) == (pvc.metadata.namespace or "", pvc.metadata.name)
    return same_name and (not ref.uid or ref.uid == pvc.metadata.uid)


def candidate_pvs(catalog: VolumeCatalog, reservations: Reservations, pvc: Any) -> list[Any]:
    """PVs that could take `pvc` on some node, smallest first: FindMatchingVolume without the node test, its
    checks in its order. A PV pre-bound to this claim (claimRef) that is large enough, of the claim's
    volumeMode and not being deleted is the only candidate, whatever its phase, labels or access modes."""
    key = (pvc.metadata.namespace or "", pvc.metadata.name)
    want = _quantity((pvc.spec.resources.requests or {}).get("storage", "0"))
    mode = pvc.spec.volumeMode or "Filesystem"
    attributes_class = pvc.spec.volumeAttributesClassName or ""
    selector = compile_selector(pvc.spec.selector) if pvc.spec.selector is not None else None
    modes = set(pvc.spec.accessModes or [])
    out = []
    for pv in catalog.pvs_by_class.get(pvc.spec.storageClassName or "", []):
        spec = pv.spec
        ref = spec.claimRef
        if reservations.taken.get(pv.metadata.name, key) != key:
            continue  # assumed for another claim in this cycle
        if ref is not None and not _bound_to(ref, pvc):
            continue
        if _quantity((spec.capacity or {}).get("storage", "0")) < want:
            continue
        if (spec.volumeMode or "Filesystem") != mode:
            continue
        if (spec.volumeAttributesClassName or "") != attributes_class:
            continue
        if pv.metadata.deletionTimestamp is not None:
            continue
        if ref is not None:
            return [pv]
        if pv.status is not None and pv.status.phase not in (None, "Available"):
            continue
        if selector is not None and not selector.matches(pv.metadata.labels or {}):
            continue
        if not modes <= set(spec.accessModes or []):
            continue
        out.append(pv)
    return out


def provisionable(snap: Snapshot, catalog: VolumeCatalog, pvc: Any) -> BoolArray:
    """Nodes where the claim's class could provision a volume (provisioner, allowedTopologies)."""
    n = len(snap)
    sc = catalog.classes.get(pvc.spec.storageClassName or "")
    if sc is None or not sc.provisioner or sc.provisioner == NO_PROVISIONER:
        return np.zeros(n, dtype=bool)
    terms = sc.allowedTopologies or []
    if not terms:
        return np.ones(n, dtype=bool)
    ok = np.zeros(n, dtype=bool)
    for term in terms:
        hit = np.ones(n, dtype=bool)
        for expr in term.matchLabelExpressions or []:
            codes = snap.label_codes(expr.key)
            known = snap.label_values.get(expr.key, {})
            wanted = [known[v] for v in expr.values or [] if v in known]
            hit &= np.isin(codes, wanted) if wanted else False
        ok |= hit
    return ok


def enough_space(snap: Snapshot, catalog: VolumeCatalog, pvc: Any) -> BoolArray:
    """hasEnoughCapacity: every node when the claim requests no storage or its provisioner's CSIDriver does
    not opt into capacity checks; else the nodes some CSIStorageCapacity of the claim's class with room for
    the request (in whole bytes) selects (a capacity without nodeTopology selects none)."""
    n = len(snap)
    sc = catalog.classes.get(pvc.spec.storageClassName or "")
    requests = (pvc.spec.resources.requests if pvc.spec.resources is not None else None) or {}
    driver = catalog.csi_drivers.get(sc.provisioner) if sc is not None else None
    if sc is None or "storage" not in requests or driver is None or not driver.storageCapacity:
        return np.ones(n, dtype=bool)
    size = -(-_quantity(requests["storage"]) // 1000)  # Quantity.Value(): rounded up to whole bytes
    ok = np.zeros(n, dtype=bool)
    for capacity in catalog.capacities:
        limit = capacity.maximumVolumeSize if capacity.maximumVolumeSize is not None else capacity.capacity
        if capacity.storageClassName != sc.metadata.name or limit is None or capacity.nodeTopology is None:
            continue
        if -(-_quantity(limit) // 1000) >= size:
            ok |= _selected(snap, capacity.nodeTopology)
    return ok


def _selected(snap: Snapshot, selector: Any) -> BoolArray:
    """The nodes whose labels a metav1.LabelSelector matches (the empty selector: every node)."""
    exprs = [
        core_v1.NodeSelectorRequirement(key=k, operator="In", values=[v])
        for k, v in (selector.matchLabels or {}).items()
    ]
    exprs += [
        core_v1.NodeSelectorRequirement(key=e.key, operator=e.operator, values=e.values)
        for e in selector.matchExpressions or []
    ]
    if not exprs:
        return np.ones(len(snap), dtype=bool)
    return term_matches(snap, core_v1.NodeSelectorTerm(matchExpressions=exprs))


def _provision_reason(snap: Snapshot, catalog: VolumeCatalog, claims: list[Any], node: int) -> str | None:
    """checkVolumeProvisions on one node: the first claim its class cannot provision there, or that lacks
    storage capacity there, gives the reason."""
    for pvc in claims:
        if not provisionable(snap, catalog, pvc)[node]:
            return BIND_CONFLICT
        if not enough_space(snap, catalog, pvc)[node]:
            return NOT_ENOUGH_SPACE
    return None


def choose(
    snap: Snapshot,
    pv_nodes: PVNodes,
    catalog: VolumeCatalog,
    reservations: Reservations,
    volumes: PodVolumes,
    node: int,
) -> tuple[list[VolumeBinding] | None, str | None]:
    """(bindings, None) for the pod's unbound claims on `node` (findMatchingVolumes then
    checkVolumeProvisions), or (None, the reason) when they cannot all be satisfied there (FindPodVolumes)."""
    node_name = snap.node_names[node]
    chosen: set[str] = set()
    out: list[VolumeBinding] = []
    to_provision = []
    for pvc in volumes.delay:  # claims whose provisioning began on a node: only that node will do
        selected = (pvc.metadata.annotations or {}).get(ANN_SELECTED_NODE)
        if selected is not None and selected != node_name:
            return None, BIND_CONFLICT
        if selected is not None:
            to_provision.append(pvc)
    for pvc in volumes.delay:  # findMatchingVolumes, smallest claim first
        if (pvc.metadata.annotations or {}).get(ANN_SELECTED_NODE) is not None:
            continue
        key = (pvc.metadata.namespace or "", pvc.metadata.name)
        pv = next(
            (
                pv
                for pv in candidate_pvs(catalog, reservations, pvc)
                if pv.metadata.name not in chosen and pv_nodes.of(pv)[node]
            ),
            None,
        )
        if pv is not None:
            chosen.add(pv.metadata.name)
            out.append(VolumeBinding(key, pv.metadata.name, node_name))
        else:
            to_provision.append(pvc)
    reason = _provision_reason(snap, catalog, to_provision, node)
    if reason is not None:
        return None, reason
    out += [
        VolumeBinding((p.metadata.namespace or "", p.metadata.name), None, node_name) for p in to_provision
    ]
    return out, None


def unbound_rejections(
    snap: Snapshot,
    pv_nodes: PVNodes,
    catalog: VolumeCatalog,
    reservations: Reservations,
    volumes: PodVolumes,
    nodes: BoolArray,
) -> Rejections:
    """Among `nodes`, those where the unbound claims cannot all be bound or provisioned, by reason. One
    claim is decided for all nodes at once; several claims (which must not share a PV) node by node."""
    n = len(snap)
    if not volumes.delay:
        return []
    if len(volumes.delay) == 1:
        (pvc,) = volumes.delay
        can = provisionable(snap, catalog, pvc)
        selected = (pvc.metadata.annotations or {}).get(ANN_SELECTED_NODE)
        if selected is not None:
            here = np.zeros(n, dtype=bool)
            if selected in snap.index:
                here[snap.index[selected]] = True
            can = can & here
            by_pv = np.zeros(n, dtype=bool)
        else:
            by_pv = np.zeros(n, dtype=bool)
            for pv in candidate_pvs(catalog, reservations, pvc):
                by_pv |= pv_nodes.of(pv)
        short = nodes & ~by_pv & can & ~enough_space(snap, catalog, pvc)
        conflict = nodes & ~by_pv & ~can
        return [
            (mask, reason)
            for mask, reason in ((conflict, BIND_CONFLICT), (short, NOT_ENOUGH_SPACE))
            if mask.any()
        ]
    masks: dict[str, BoolArray] = {}
    for node in np.flatnonzero(nodes):
        reason = choose(snap, pv_nodes, catalog, reservations, volumes, int(node))[1]
        if reason is not None:
            masks.setdefault(reason, np.zeros(n, dtype=bool))[node] = True
    return [(mask, reason) for reason, mask in masks.items()]
