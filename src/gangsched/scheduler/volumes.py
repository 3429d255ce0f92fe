"""What the volume plugins read about a pod's PersistentVolumeClaims, and the bindings a cycle assumes.

`VolumeCatalog` is a read-only view of the storage objects of one store generation (StorageClasses, PVs,
PVCs, CSINodes); the scheduler builds a new one when any of them changes, as it rebuilds the snapshot when a
node changes. `pod_volumes` is the PreFilter step the four volume plugins share: it resolves a pod's claims
into bound ones (with their PV), unbound WaitForFirstConsumer ones, and the error that stops the pod at
PreFilter (missing claim, unbound Immediate claim). `Reservations` holds the PVs assumed for pods placed in
the current cycle, so that a later pod of the same gang does not take the same PV; each assumption returns
its undo, as the snapshot's `place` does.

Upstream: pkg/scheduler/framework/plugins/volumebinding (binder.go: GetPodVolumeClaims, FindPodVolumes,
AssumePodVolumes), k8s.io/component-helpers/storage/volume (FindMatchingVolume, pv_helpers.go).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from msgspec import Struct, field

from ..api.owners import is_controlled_by
from ..api.quantity import QuantityError, milli
from .decision import VolumeBinding

__all__ = [
    "ANN_BIND_COMPLETED",
    "ANN_BOUND_BY_CONTROLLER",
    "ANN_SELECTED_NODE",
    "NO_PROVISIONER",
    "STORAGE_KINDS",
    "PodVolumes",
    "Reservations",
    "VolumeBinding",
    "VolumeCatalog",
    "pod_claim_names",
    "pod_volumes",
]

ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
EPHEMERAL_NOT_CREATED = "waiting for ephemeral volume controller to create the persistentvolumeclaim"
STORAGE_KINDS = (
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CSINode",
    "CSIDriver",
    "CSIStorageCapacity",
    "VolumeAttachment",
)

ClaimKey = tuple[str, str]


def _storage(obj_capacity: Any) -> int:
    try:
        return milli((obj_capacity or {}).get("storage", "0"))
    except QuantityError:
        return 0


def pod_claim_names(pod: Any) -> list[str]:
    """The PVC names a pod's volumes use, in volume order."""
    return [name for name, _ in _pod_claims(pod)]


def _pod_claims(pod: Any) -> list[tuple[str, bool]]:
    """(PVC name, whether it is a generic ephemeral volume's) per volume that uses a claim: a
    persistentVolumeClaim's claimName, an `ephemeral` volume's `<pod>-<volume>` (component-helpers
    storage/ephemeral VolumeClaimName)."""
    out = []
    for v in pod.spec.volumes or []:
        if v.persistentVolumeClaim is not None:
            out.append((v.persistentVolumeClaim.claimName, False))
        elif v.ephemeral is not None:
            out.append((f"{pod.metadata.name}-{v.name}", True))
    return out


class VolumeCatalog:
    """Storage objects by name, as the volume plugins' listers see them. Never changed after building."""

    def __init__(self, store: Any) -> None:
        self.classes: dict[str, Any] = {sc.metadata.name: sc for sc in store.list("StorageClass")}
        self.pvs: dict[str, Any] = {pv.metadata.name: pv for pv in store.list("PersistentVolume")}
        self.pvcs: dict[ClaimKey, Any] = {
            (c.metadata.namespace or "", c.metadata.name): c for c in store.list("PersistentVolumeClaim")
        }
        self.csi_nodes: dict[str, Any] = {c.metadata.name: c for c in store.list("CSINode")}
        self.csi_drivers: dict[str, Any] = {
            d.metadata.name: d.spec for d in store.list("CSIDriver") if d.spec is not None
        }
        self.capacities: list[Any] = list(store.list("CSIStorageCapacity"))
        self.attachments: dict[str, list[Any]] = {}  # node name -> VolumeAttachments to it
        for va in store.list("VolumeAttachment"):
            if va.spec is not None and va.spec.nodeName:
                self.attachments.setdefault(va.spec.nodeName, []).append(va)
        # PVs by class, smallest first: FindMatchingVolume keeps the smallest that fits.
        self.pvs_by_class: dict[str, list[Any]] = {}
        for pv in sorted(self.pvs.values(), key=lambda pv: (_storage(pv.spec.capacity), pv.metadata.name)):
            self.pvs_by_class.setdefault(pv.spec.storageClassName or "", []).append(pv)

    def is_bound(self, pvc: Any) -> bool:
        """Fully bound: a volume name and the PV controller's bind-completed mark (or phase Bound, which
        only the controller sets), as isPVCFullyBound."""
        if not pvc.spec.volumeName:
            return False
        annotations = pvc.metadata.annotations or {}
        return ANN_BIND_COMPLETED in annotations or (pvc.status is not None and pvc.status.phase == "Bound")

    def delay_binding(self, pvc: Any) -> bool:
        """IsDelayBindingMode: the claim's class says WaitForFirstConsumer."""
        sc = self.classes.get(pvc.spec.storageClassName or "")
        return sc is not None and sc.volumeBindingMode == "WaitForFirstConsumer"


class PodVolumes(Struct):
    """A pod's claims after PreFilter. `error` set: the pod stops at PreFilter with that message."""

    error: str | None = None
    bound: list[tuple[Any, Any | None]] = field(default_factory=list)  # (pvc, its PV or None if missing)
    delay: list[Any] = field(default_factory=list)  # unbound WaitForFirstConsumer claims, smallest first
    rwop: list[ClaimKey] = field(default_factory=list)  # claims with access mode ReadWriteOncePod

    @property
    def any(self) -> bool:
        return bool(self.error or self.bound or self.delay or self.rwop)


def pod_volumes(catalog: VolumeCatalog, pod: Any) -> PodVolumes:
    """VolumeBinding's and VolumeRestrictions' PreFilter: resolve the claims or say why the pod cannot be
    scheduled at all (UnschedulableAndUnresolvable)."""
    ns = pod.metadata.namespace or ""
    out = PodVolumes()
    for name, ephemeral in _pod_claims(pod):
        pvc = catalog.pvcs.get((ns, name))
        if pvc is None and ephemeral:  # normal right after the pod's creation
            out.error = f'{EPHEMERAL_NOT_CREATED} "{name}"'
            return out
        if pvc is None:
            out.error = f'persistentvolumeclaim "{name}" not found'
            return out
        if pvc.status is not None and pvc.status.phase == "Lost":
            pv_name = pvc.spec.volumeName
            out.error = f'persistentvolumeclaim "{name}" bound to non-existent persistentvolume "{pv_name}"'
            return out
        if pvc.metadata.deletionTimestamp is not None:
            out.error = f'persistentvolumeclaim "{name}" is being deleted'
            return out
        if ephemeral and not is_controlled_by(pvc, pod):  # ephemeral.VolumeIsForPod
            pod_ref = f"{ns}/{pod.metadata.name}"
            out.error = f"PVC {ns}/{name} was not created for pod {pod_ref} (pod is not owner)"
            return out
        if "ReadWriteOncePod" in (pvc.spec.accessModes or []):
            out.rwop.append((ns, name))
        if catalog.is_bound(pvc):
            out.bound.append((pvc, catalog.pvs.get(pvc.spec.volumeName)))
        elif catalog.delay_binding(pvc) and not pvc.spec.volumeName:
            out.delay.append(pvc)
        else:
            out.error = UNBOUND_IMMEDIATE  # Immediate (or pre-bound) claims are the PV controller's to bind
    out.delay.sort(key=lambda pvc: _storage(pvc.spec.resources.requests))
    return out


class Reservations:
    """PVs assumed for claims of pods placed in the current cycles (the assume cache of upstream's binder)."""

    def __init__(self) -> None:
        self.by_pod: dict[tuple[str, str], list[VolumeBinding]] = {}
        self.taken: dict[str, ClaimKey] = {}  # PV name -> claim it is assumed for

    def assume(self, pod: tuple[str, str], bindings: Iterable[VolumeBinding]) -> Callable[[], None]:
        bindings = list(bindings)
        self.by_pod[pod] = bindings
        for b in bindings:
            if b.pv is not None:
                self.taken[b.pv] = b.pvc

        def undo() -> None:
            for b in self.by_pod.pop(pod, []):
                if b.pv is not None:
                    self.taken.pop(b.pv, None)

        return undo
