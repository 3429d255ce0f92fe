"""VolumeBinding: a pod's claims must be bindable on the node (pkg/scheduler/framework/plugins/volumebinding).

- PreFilter (`volumes.pod_volumes`): a missing claim or an unbound Immediate claim stops the pod
  (UnschedulableAndUnresolvable, `pod has unbound immediate PersistentVolumeClaims`).
- Bound claims: the PV's required node affinity must match the node (`checkBoundClaims`); a claim bound to
  a PV that does not exist rejects every node.
- Unbound WaitForFirstConsumer claims, smallest request first: a claim annotated with a selected node only
  fits that node; otherwise the smallest available PV of the claim's class that is large enough, of the
  same volumeMode, with the claim's access modes and label selector, not assumed for another claim, whose
  node affinity matches the node (`FindMatchingVolume`); failing that, dynamic provisioning: a class with a
  provisioner other than `kubernetes.io/no-provisioner` whose allowedTopologies match the node
  (`checkVolumeProvisions`).

All rejections are UnschedulableAndUnresolvable: preemption cannot help. A PV without a status counts as
Available (what the PV controller makes of it), since input files rarely carry one.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...api.quantity import QuantityError, milli
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


def _selector_matches(selector: Any, labels: dict[str, str]) -> bool:
    if selector is None:
        return True
    for key, value in (selector.matchLabels or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.matchExpressions or []:
        values, has = expr.values or [], expr.key in labels
        op = expr.operator
        if (
            (op == "In" and (not has or labels[expr.key] not in values))
            or (op == "NotIn" and has and labels[expr.key] in values)
            or (op == "Exists" and not has)
            or (op == "DoesNotExist" and has)
        ):
            return False
    return True


def candidate_pvs(catalog: VolumeCatalog, reservations: Reservations, pvc: Any) -> list[Any]:
    """PVs that could take `pvc` on some node, smallest first (FindMatchingVolume without the node test).
    A PV pre-bound to this claim (claimRef) is the only candidate when it exists."""
    ns, name = pvc.metadata.namespace or "", pvc.metadata.name
    want = _quantity((pvc.spec.resources.requests or {}).get("storage", "0"))
    modes = set(pvc.spec.accessModes or [])
    out = []
    for pv in catalog.pvs_by_class.get(pvc.spec.storageClassName or "", []):
        spec = pv.spec
        ref = spec.claimRef
        if reservations.taken.get(pv.metadata.name, (ns, name)) != (ns, name):
            continue
        if ref is not None and (ref.namespace, ref.name) == (ns, name):
            return [pv]
        if ref is not None or pv.metadata.deletionTimestamp is not None:
            continue
        if pv.status is not None and pv.status.phase not in (None, "Available"):
            continue
        if _quantity((spec.capacity or {}).get("storage", "0")) < want:
            continue
        if (spec.volumeMode or "Filesystem") != (pvc.spec.volumeMode or "Filesystem"):
            continue
        if not modes <= set(spec.accessModes or []):
            continue
        if not _selector_matches(pvc.spec.selector, pv.metadata.labels or {}):
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


def choose(
    snap: Snapshot,
    pv_nodes: PVNodes,
    catalog: VolumeCatalog,
    reservations: Reservations,
    volumes: PodVolumes,
    node: int,
) -> list[VolumeBinding] | None:
    """The bindings for the pod's unbound claims on `node` (findMatchingVolumes then checkVolumeProvisions),
    or None when they cannot all be satisfied there."""
    node_name = snap.node_names[node]
    chosen: set[str] = set()
    out: list[VolumeBinding] = []
    for pvc in volumes.delay:
        key = (pvc.metadata.namespace or "", pvc.metadata.name)
        selected = (pvc.metadata.annotations or {}).get(ANN_SELECTED_NODE)
        if selected is not None:
            if selected != node_name:
                return None
            out.append(VolumeBinding(key, None, node_name))
            continue
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
        elif provisionable(snap, catalog, pvc)[node]:
            out.append(VolumeBinding(key, None, node_name))
        else:
            return None
    return out


def unbound_ok(
    snap: Snapshot,
    pv_nodes: PVNodes,
    catalog: VolumeCatalog,
    reservations: Reservations,
    volumes: PodVolumes,
    nodes: BoolArray,
) -> BoolArray:
    """Among `nodes`, those where every unbound claim can be bound or provisioned. One claim is decided for
    all nodes at once; several claims (which must not share a PV) node by node."""
    if not volumes.delay:
        return nodes.copy()
    if len(volumes.delay) == 1:
        (pvc,) = volumes.delay
        selected = (pvc.metadata.annotations or {}).get(ANN_SELECTED_NODE)
        if selected is not None:
            ok = np.zeros(len(snap), dtype=bool)
            if selected in snap.index:
                ok[snap.index[selected]] = True
            return nodes & ok
        ok = provisionable(snap, catalog, pvc).copy()
        for pv in candidate_pvs(catalog, reservations, pvc):
            ok |= pv_nodes.of(pv)
        return nodes & ok
    ok = np.zeros(len(snap), dtype=bool)
    for node in np.flatnonzero(nodes):
        ok[node] = choose(snap, pv_nodes, catalog, reservations, volumes, int(node)) is not None
    return ok
