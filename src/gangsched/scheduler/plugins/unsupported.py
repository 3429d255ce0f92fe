"""Fields kube-scheduler's default profile reads that gangsched does not evaluate yet: a pod that uses one is
refused, never placed as if the field were absent (issue 10: "nothing silently ignored").

The refusal acts as a PreFilter rejecting the pod, so it waits with upstream's PreFilter rendering,
`0/N nodes are available: spec.volumes[0].rbd is not supported by gangsched yet.` PersistentVolumeClaim and
generic ephemeral volumes and resourceClaims are evaluated by the claims stage (claims_stage.py); inline
`csi` volumes are read by no filter upstream, and the inline in-tree volumes NodeVolumeLimits alone counts
once CSI migration translates them (`azureDisk`, `cinder`, `portworxVolume`) are counted there. What
remains: the in-tree disks VolumeRestrictions compares (GCE and AWS disks, iSCSI, RBD), and an `azureDisk` of
a kind other than Managed, which upstream's CSI translation refuses with an error.
"""

from __future__ import annotations

from typing import Any

NAME = "Unsupported"
# Volume sources the volume plugins read that gangsched does not evaluate yet.
VOLUME_SOURCES = (
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "iscsi",
    "rbd",
)


def refusal(spec: Any) -> str | None:
    """The message naming the first unsupported field the pod uses, or None."""
    for i, volume in enumerate(spec.volumes or []):
        for source in VOLUME_SOURCES:
            if getattr(volume, source, None) is not None:
                return f"spec.volumes[{i}].{source} is not supported by gangsched yet"
        kind = volume.azureDisk.kind if volume.azureDisk is not None else None
        if kind is not None and kind.lower() != "managed":
            return f"spec.volumes[{i}].azureDisk.kind {kind} is not supported by gangsched yet"
    return None
