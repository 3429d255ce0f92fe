"""VolumeRestrictions (pkg/scheduler/framework/plugins/volumerestrictions), both Unschedulable (preemption may
free what the other pod holds):
- Inline disks (isVolumeConflict): a node is rejected with `node(s) had no available disk` when a pod on it
  (bound, assumed, or placed earlier in this cycle) mounts the same disk: the same GCE disk unless both
  mount it read-only, the same AWS volume, the same iSCSI IQN unless both read-only, the same RBD image (a
  shared Ceph monitor, same pool and image) unless both read-only.
- ReadWriteOncePod: a claim with that access mode is used by one pod at a time. If any other pod counted in
  the snapshot uses one of the pod's ReadWriteOncePod claims, every node is rejected."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..snapshot import Snapshot
from ..volumes import ClaimKey, PodVolumes

NAME = "VolumeRestrictions"
DISK_CONFLICT = "node(s) had no available disk"
DISK_SOURCES = ("gcePersistentDisk", "awsElasticBlockStore", "iscsi", "rbd")
RWOP_CONFLICT = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by "
    "another pod"
)


def conflict(
    snap: Snapshot,
    pod: tuple[str, str],
    volumes: PodVolumes,
    users: Callable[[ClaimKey], set[tuple[str, str]]],
) -> bool:
    """Whether another placed pod uses one of the pod's ReadWriteOncePod claims."""
    return any(other != pod and other in snap.placed for claim in volumes.rwop for other in users(claim))


def disk_volumes(spec: Any) -> list[Any]:
    """The pod's volumes whose disk another pod on the node may hold (needsRestrictionsCheck)."""
    return [v for v in spec.volumes or [] if any(getattr(v, s, None) is not None for s in DISK_SOURCES)]


def _same_disk(volume: Any, other: Any) -> bool:
    """upstream's isVolumeConflict for one pair of volumes."""
    if volume.gcePersistentDisk is not None and other.gcePersistentDisk is not None:
        a, b = volume.gcePersistentDisk, other.gcePersistentDisk
        return bool(a.pdName == b.pdName and not (a.readOnly and b.readOnly))
    if volume.awsElasticBlockStore is not None and other.awsElasticBlockStore is not None:
        return bool(volume.awsElasticBlockStore.volumeID == other.awsElasticBlockStore.volumeID)
    if volume.iscsi is not None and other.iscsi is not None:
        a, b = volume.iscsi, other.iscsi
        return bool(a.iqn == b.iqn and not (a.readOnly and b.readOnly))
    if volume.rbd is not None and other.rbd is not None:
        a, b = volume.rbd, other.rbd
        shared_monitor = bool(set(a.monitors or []) & set(b.monitors or []))
        same_image = (a.pool or "rbd") == (b.pool or "rbd") and a.image == b.image
        return shared_monitor and same_image and not (a.readOnly and b.readOnly)
    return False


def disk_conflict(disks: list[Any], others: Iterable[Any]) -> bool:
    """Whether one of `disks` (the pod's, from disk_volumes) conflicts with a volume of a pod in `others`."""
    return any(_same_disk(v, o) for pod in others for o in pod.spec.volumes or [] for v in disks)
