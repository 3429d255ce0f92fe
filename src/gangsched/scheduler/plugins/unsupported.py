"""Fields kube-scheduler's default profile reads in a way gangsched does not evaluate: a pod that uses one is
refused, never placed as if the field were absent (issue 10: "nothing silently ignored").

The refusal acts as a PreFilter rejecting the pod, so it waits with upstream's PreFilter rendering,
`0/N nodes are available: spec.volumes[0].azureDisk.kind Shared is not supported by gangsched yet.`
PersistentVolumeClaim and generic ephemeral volumes and resourceClaims are evaluated by the claims stage
(claims_stage.py), and so are the inline in-tree disks (VolumeRestrictions compares GCE and AWS disks,
iSCSI and RBD; NodeVolumeLimits counts the ones CSI migration translates); inline `csi` volumes are read by no
filter upstream. What remains is what upstream's CSI translation fails on, an error on every node with a
CSINode: an `azureDisk` of a kind other than Managed, an `awsElasticBlockStore` volume id it cannot parse.
"""

from __future__ import annotations

from typing import Any

from .node_volume_limits import ebs_volume_id

NAME = "Unsupported"


def refusal(spec: Any) -> str | None:
    """The message naming the first unsupported field the pod uses, or None."""
    for i, volume in enumerate(spec.volumes or []):
        kind = volume.azureDisk.kind if volume.azureDisk is not None else None
        if kind is not None and kind.lower() != "managed":
            return f"spec.volumes[{i}].azureDisk.kind {kind} is not supported by gangsched yet"
        ebs = volume.awsElasticBlockStore
        if ebs is not None and ebs_volume_id(ebs.volumeID or "") is None:
            field = f"spec.volumes[{i}].awsElasticBlockStore.volumeID"
            return f"{field} {ebs.volumeID} is not supported by gangsched yet"
    return None
