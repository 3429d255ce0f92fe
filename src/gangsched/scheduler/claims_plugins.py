"""The claims stage's plugins as the evaluator's tables name them, and the kinds of objects it reads.

Apart from claims_stage.py so that the evaluator and the scheduler can name them without importing the stage
(with the device allocator, devices.py, and claims.py): the scheduler imports and builds the stage only once
a pod uses claims, so that scheduling plain pods and gangs never loads it (about a hundredth of a second of
`gangsched schedule`'s start).
"""

from __future__ import annotations

from .plugins import node_volume_limits as limits
from .plugins import volume_restrictions as restrictions
from .volumes import STORAGE_KINDS

__all__ = ["CLAIM_KINDS", "DRA_NAME", "DRA_WEIGHT", "PREEMPTIBLE_CLAIM_PLUGINS"]

# The kinds the stage reads: the volume catalog's, then the device catalog's and claims.
CLAIM_KINDS = (
    *STORAGE_KINDS,
    "DeviceClass",
    "ResourceSlice",
    "DeviceTaintRule",
    "ResourceClaim",
    "ResourceClaimTemplate",
)

DRA_NAME = "DynamicResources"
DRA_WEIGHT = 2
# Their rejections are Unschedulable upstream (not ...AndUnresolvable): preemption may evict a
# ReadWriteOncePod claim's user or a pod holding CSI attachments (both plugins re-run in the dry run).
PREEMPTIBLE_CLAIM_PLUGINS = frozenset({restrictions.NAME, limits.NAME})
