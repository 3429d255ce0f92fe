"""NodeVolumeLimits (CSI): a node's CSINode caps the volumes each CSI driver may attach there
(`drivers[].allocatable.count`; pkg/scheduler/framework/plugins/nodevolumelimits/csi.go). A volume counts
once per node however many pods use it: `driver/volumeHandle` for a bound CSI PV, and for a claim still to
be provisioned its class's provisioner with a handle made from the claim. Unschedulable (preemption may
free attachments)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..volumes import VolumeCatalog, pod_claim_names

NAME = "NodeVolumeLimits"
REASON = "node(s) exceed max volume count"


def attachable(catalog: VolumeCatalog, pod: Any) -> dict[str, str]:
    """The pod's CSI volumes: unique name -> driver (filterAttachableVolumes / getCSIDriverInfo)."""
    ns = pod.metadata.namespace or ""
    out: dict[str, str] = {}
    for name in pod_claim_names(pod):
        pvc = catalog.pvcs.get((ns, name))
        if pvc is None:
            continue
        pv = catalog.pvs.get(pvc.spec.volumeName) if pvc.spec.volumeName else None
        if pv is not None:
            csi = pv.spec.csi
            if csi is not None and csi.driver and csi.volumeHandle:
                out[f"{csi.driver}/{csi.volumeHandle}"] = csi.driver
            continue
        sc = catalog.classes.get(pvc.spec.storageClassName or "")
        if sc is not None and sc.provisioner:
            out[f"{sc.provisioner}/-{ns}/{name}"] = sc.provisioner
    return out


def limits(catalog: VolumeCatalog, node_name: str) -> dict[str, int]:
    csi_node = catalog.csi_nodes.get(node_name)
    drivers = (csi_node.spec.drivers if csi_node is not None and csi_node.spec else None) or []
    return {
        d.name: int(d.allocatable.count)
        for d in drivers
        if d.allocatable is not None and d.allocatable.count is not None
    }


def fits(new: dict[str, str], attached: Iterable[dict[str, str]], caps: dict[str, int]) -> bool:
    """Whether the pod's new volumes stay within the node's per-driver limits."""
    on_node: dict[str, str] = {}
    for volumes in attached:
        on_node.update(volumes)
    count: dict[str, int] = {}
    for driver in on_node.values():
        count[driver] = count.get(driver, 0) + 1
    adding: dict[str, int] = {}
    for unique, driver in new.items():
        if unique not in on_node:
            adding[driver] = adding.get(driver, 0) + 1
    return all(count.get(d, 0) + k <= caps[d] for d, k in adding.items() if d in caps)
