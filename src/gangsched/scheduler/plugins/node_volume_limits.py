"""NodeVolumeLimits (CSI): a node's CSINode caps the volumes each CSI driver may attach there
(`drivers[].allocatable.count`; pkg/scheduler/framework/plugins/nodevolumelimits/csi.go). A volume counts
once per node however many pods use it: `driver/volumeHandle` for a bound CSI PV, and for a claim still to
be provisioned its class's provisioner with a handle made from the claim. Volumes attached by a
VolumeAttachment to the node (attacher and its PV's CSI handle) count too, unless a pod there uses them.
Inline `csi` volumes are not counted. Inline in-tree volumes CSI migration translates count against the
driver they migrate to, on a node that has a CSINode (csi.go checkAttachableInlineVolume, isCSIMigrationOn;
k8s.io/csi-translation-lib): `awsElasticBlockStore` (ebs.csi.aws.com, the bare volume id), `azureDisk`
(disk.csi.azure.com, diskURI), `cinder` (cinder.csi.openstack.org, volumeID), `gcePersistentDisk`
(pd.csi.storage.gke.io, `projects/UNSPECIFIED/zones/UNSPECIFIED/disks/<pdName>`), `portworxVolume`
(pxd.portworx.com, volumeID). So do claims bound to PVs with such in-tree sources, and claims to be
provisioned by an in-tree provisioner (`kubernetes.io/gce-pd`, ...), for the driver that replaces it.
With VolumeLimitScaling (beta, on in v1.37), a node whose CSINode lacks a driver of the pod's volumes whose
CSIDriver says `preventPodSchedulingIfMissing: true` is rejected first, with `<driver> CSI driver is not
installed on the node`. Unschedulable (preemption may free attachments)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from ..volumes import VolumeCatalog, pod_claim_names

NAME = "NodeVolumeLimits"
REASON = "node(s) exceed max volume count"


def _claims(catalog: VolumeCatalog, pod: Any) -> Iterator[tuple[str, Any, Any]]:
    """The pod's existing claims by name, each with its bound PV (None: unbound, or the PV unknown)."""
    ns = pod.metadata.namespace or ""
    for name in pod_claim_names(pod):
        pvc = catalog.pvcs.get((ns, name))
        if pvc is not None:
            yield name, pvc, catalog.pvs.get(pvc.spec.volumeName) if pvc.spec.volumeName else None


def attachable(catalog: VolumeCatalog, pod: Any) -> dict[str, str]:
    """The pod's CSI volumes: unique name -> driver (filterAttachableVolumes / getCSIDriverInfo)."""
    ns = pod.metadata.namespace or ""
    out: dict[str, str] = {}
    for name, pvc, pv in _claims(catalog, pod):
        if pv is not None:
            csi = pv.spec.csi
            if csi is not None and csi.driver and csi.volumeHandle:
                out[f"{csi.driver}/{csi.volumeHandle}"] = csi.driver
            continue
        sc = catalog.classes.get(pvc.spec.storageClassName or "")
        if sc is not None and sc.provisioner and sc.provisioner not in IN_TREE_PROVISIONERS:
            out[f"{sc.provisioner}/-{ns}/{name}"] = sc.provisioner
    return out


#: Inline in-tree volume source -> (the CSI driver it migrates to, the field that becomes its volumeHandle).
INLINE_MIGRATED = {
    "awsElasticBlockStore": ("ebs.csi.aws.com", "volumeID"),
    "azureDisk": ("disk.csi.azure.com", "diskURI"),
    "cinder": ("cinder.csi.openstack.org", "volumeID"),
    "gcePersistentDisk": ("pd.csi.storage.gke.io", "pdName"),
    "portworxVolume": ("pxd.portworx.com", "volumeID"),
}


def ebs_volume_id(kubernetes_id: str) -> str | None:
    """KubernetesVolumeIDToEBSVolumeID: `aws://zone/vol-...` -> `vol-...` (a bare id as it is); None for a
    malformed one (upstream's translation fails)."""
    if not kubernetes_id.startswith("aws://"):
        return kubernetes_id
    from urllib.parse import urlparse  # here: with ipaddress, 2-3 ms of every start, for EBS volumes only

    volume = urlparse(kubernetes_id).path.strip("/")
    return volume if re.fullmatch(r"vol-[^/]*", volume) else None


def _handle(source: str, value: Any, field: str) -> str:
    """The volumeHandle CSI translation gives an inline volume: a GCE disk's zone is not known inline."""
    if source == "gcePersistentDisk":
        return f"projects/UNSPECIFIED/zones/UNSPECIFIED/disks/{value.pdName}"
    handle = str(getattr(value, field))
    if source == "awsElasticBlockStore":
        return ebs_volume_id(handle) or handle  # a malformed id is refused before (plugins/unsupported.py)
    return handle


def inline_attachable(pod: Any) -> dict[str, str]:
    """The pod's inline in-tree volumes as CSI migration translates them: `driver/handle` -> driver
    (TranslateInTreeInlineVolumeToCSI, GetCSINameFromInTreeName). They count only on a node with a
    CSINode."""
    out: dict[str, str] = {}
    for volume in pod.spec.volumes or []:
        for source, (driver, handle) in INLINE_MIGRATED.items():
            value = getattr(volume, source, None)
            if value is not None:
                out[f"{driver}/{_handle(source, value, handle)}"] = driver
    return out


#: In-tree provisioners CSI migration maps to their CSI driver (GetCSINameFromInTreeName).
IN_TREE_PROVISIONERS = {
    "kubernetes.io/aws-ebs": "ebs.csi.aws.com",
    "kubernetes.io/azure-disk": "disk.csi.azure.com",
    "kubernetes.io/cinder": "cinder.csi.openstack.org",
    "kubernetes.io/gce-pd": "pd.csi.storage.gke.io",
    "kubernetes.io/portworx-volume": "pxd.portworx.com",
}
ZONE_LABELS = ("failure-domain.beta.kubernetes.io/zone", "topology.kubernetes.io/zone")


def _gce_pv_handle(pv: Any) -> str | None:
    """TranslateInTreePVToCSI for a GCE disk: zonal with the PV's one zone, regional with the region its
    zones share (`__`-separated), UNSPECIFIED without a zone label; None when the zones span regions."""
    labels = pv.metadata.labels or {}
    zones = next((labels[k] for k in ZONE_LABELS if labels.get(k)), "").split("__")
    name = pv.spec.gcePersistentDisk.pdName
    if len(zones) == 1 and zones[0]:
        return f"projects/UNSPECIFIED/zones/{zones[0]}/disks/{name}"
    if len(zones) > 1:
        regions = {z.rsplit("-", 1)[0] for z in zones}
        return f"projects/UNSPECIFIED/regions/{regions.pop()}/disks/{name}" if len(regions) == 1 else None
    return f"projects/UNSPECIFIED/zones/UNSPECIFIED/disks/{name}"


def migrated_attachable(catalog: VolumeCatalog, pod: Any) -> dict[str, str]:
    """The pod's claims on in-tree volumes CSI migration translates (getCSIDriverInfo): a bound PV with an
    in-tree source as its driver and handle, a claim still to be provisioned by an in-tree provisioner as
    the CSI driver that replaces it. Like inline ones, they count only on a node with a CSINode; a PV the
    translation fails on is not counted, as upstream."""
    ns = pod.metadata.namespace or ""
    out: dict[str, str] = {}
    for name, pvc, pv in _claims(catalog, pod):
        if pv is not None:
            if pv.spec.csi is not None:
                continue
            for source, (driver, field) in INLINE_MIGRATED.items():
                value = getattr(pv.spec, source, None)
                if value is None:
                    continue
                handle = (
                    _gce_pv_handle(pv) if source == "gcePersistentDisk" else _handle(source, value, field)
                )
                if handle is not None and (source != "awsElasticBlockStore" or ebs_volume_id(value.volumeID)):
                    out[f"{driver}/{handle}"] = driver
            continue
        sc = catalog.classes.get(pvc.spec.storageClassName or "")
        if sc is not None and sc.provisioner in IN_TREE_PROVISIONERS:
            driver = IN_TREE_PROVISIONERS[sc.provisioner]
            out[f"{driver}/-{ns}/{name}"] = driver
    return out


def missing_driver(
    catalog: VolumeCatalog, new: dict[str, str], node_name: str, inline: Iterable[str] = ()
) -> str | None:
    """The reason when a driver of the pod's volumes must be installed on the node and is not (Filter's
    checkCSIDriverOnNode; a driver without a CSIDriver object, or one not opting in, never rejects). The
    `inline` volumes of `new` count only on a node with a CSINode (isCSIMigrationOn)."""
    if catalog.csi_nodes.get(node_name) is None:
        skip = set(inline)
        new = {unique: driver for unique, driver in new.items() if unique not in skip}
    installed = {d.name for d in _drivers(catalog, node_name)}
    for driver in sorted(set(new.values())):  # upstream walks a Go map: the first it meets
        spec = catalog.csi_drivers.get(driver)
        if spec is not None and spec.preventPodSchedulingIfMissing and driver not in installed:
            return f"{driver} CSI driver is not installed on the node"
    return None


def attached_by_volume_attachments(catalog: VolumeCatalog, node_name: str) -> dict[str, str]:
    """getNodeVolumeAttachmentInfo: `attacher/volumeHandle` -> attacher for each VolumeAttachment to the
    node that names an attacher and a CSI PV."""
    out: dict[str, str] = {}
    for va in catalog.attachments.get(node_name, ()):
        source = va.spec.source
        pv = catalog.pvs.get(source.persistentVolumeName) if source and source.persistentVolumeName else None
        if va.spec.attacher and pv is not None and pv.spec.csi is not None:
            out[f"{va.spec.attacher}/{pv.spec.csi.volumeHandle}"] = va.spec.attacher
    return out


def _drivers(catalog: VolumeCatalog, node_name: str) -> list[Any]:
    """The drivers the node's CSINode lists (none without a CSINode)."""
    csi_node = catalog.csi_nodes.get(node_name)
    return list((csi_node.spec.drivers if csi_node is not None and csi_node.spec else None) or [])


def limits(catalog: VolumeCatalog, node_name: str) -> dict[str, int]:
    return {
        d.name: int(d.allocatable.count)
        for d in _drivers(catalog, node_name)
        if d.allocatable is not None and d.allocatable.count is not None
    }


def fits(
    new: dict[str, str],
    attached: Iterable[dict[str, str]],
    caps: dict[str, int],
    by_attachments: dict[str, str] | None = None,
) -> bool:
    """Whether the pod's new volumes stay within the node's per-driver limits: the volumes of the pods on
    the node, plus those VolumeAttachments hold that no such pod uses, plus the pod's volumes no pod there
    uses yet (a volume only a VolumeAttachment holds counts as new as well, as upstream counts it)."""
    on_node: dict[str, str] = {}
    for volumes in attached:
        on_node.update(volumes)
    count: dict[str, int] = {}
    for driver in on_node.values():
        count[driver] = count.get(driver, 0) + 1
    for unique, driver in (by_attachments or {}).items():
        if unique not in on_node:
            count[driver] = count.get(driver, 0) + 1
    adding: dict[str, int] = {}
    for unique, driver in new.items():
        if unique not in on_node:
            adding[driver] = adding.get(driver, 0) + 1
    return all(count.get(d, 0) + k <= caps[d] for d, k in adding.items() if d in caps)
