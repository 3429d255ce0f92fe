"""VolumeRestrictions, ReadWriteOncePod: a claim with that access mode is used by one pod at a time
(pkg/scheduler/framework/plugins/volumerestrictions). If any other pod counted in the snapshot (bound,
assumed, or placed earlier in this cycle) uses one of the pod's ReadWriteOncePod claims, every node is
rejected as Unschedulable; preemption may free the claim by evicting that pod."""

from __future__ import annotations

from collections.abc import Callable

from ..snapshot import Snapshot
from ..volumes import ClaimKey, PodVolumes

NAME = "VolumeRestrictions"
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
