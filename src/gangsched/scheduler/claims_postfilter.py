"""DynamicResources' PodGroupPostFilter (dynamicresources.go PodGroupPostFilter, deallocatePodGroupClaims):
after a PodGroup's cycle ended Unschedulable, free the claims that keep it where it cannot run, so that a
later cycle may allocate them elsewhere. It runs before preemption (upstream inserts DynamicResources before
DefaultPreemption) and is always Unschedulable, so preemption runs after it either way.

1. Per pod of the cycle that got as far as PreFilter (upstream's podsStateData): one of its claims allocated
   but unavailable on a node where the other filters passed, reserved for nobody or only for that pod, is
   deallocated, or else its stale special claim for extended resources deleted (the lone pod's PostFilter,
   deallocateOrDeletePodClaims).
2. If some pod found none (and gate DRAWorkloadResourceClaims is on), and no member of the group is
   scheduled: one such claim reserved for nobody or only for the PodGroup is deallocated
   (`deallocation of PodGroup ResourceClaim completed`); failing that, the first of the PodGroup's own
   claims (`spec.resourceClaims`) that is allocated and reserved for the group is unreserved for it, its
   allocation kept (`ResourceClaim unreserved for PodGroup`).
3. Otherwise the reason is `deallocation and deletion of ResourceClaims completed`, whatever was done.

Not for a CompositePodGroup root, nor (with TopologyAwareWorkloadScheduling on) for a PodGroup with
scheduling constraints: upstream returns there with no reason at all. Upstream picks claims from a set in
random order; gangsched takes them in the pods' claim order. A claim two pods share is written once (upstream
would send the second write from a stale copy and fail the plugin with a conflict).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..api.owners import is_controlled_by
from .decision import ClaimUnreservation, ObjectKey
from .evaluator import Evaluator
from .podinfo import PodInfo, PodKey

__all__ = [
    "CLAIMS_FREED",
    "GROUP_CLAIM_DEALLOCATED",
    "GROUP_CLAIM_UNRESERVED",
    "ClaimsPostFilter",
    "pod_group_post_filter",
]

CLAIMS_FREED = "deallocation and deletion of ResourceClaims completed"
GROUP_CLAIM_DEALLOCATED = "deallocation of PodGroup ResourceClaim completed"
GROUP_CLAIM_UNRESERVED = "ResourceClaim unreserved for PodGroup"
GROUP_API = "scheduling.k8s.io"


@dataclass(slots=True)
class ClaimsPostFilter:
    """What DynamicResources' PodGroupPostFilter wrote and the reason it returned (None: no reason)."""

    deallocations: list[ObjectKey] = field(default_factory=list)
    deletions: list[ObjectKey] = field(default_factory=list)  # stale special claims for extended resources
    unreservations: list[ClaimUnreservation] = field(default_factory=list)
    reason: str | None = None


def pod_group_post_filter(
    ev: Evaluator,
    claims: Any,
    pg: Any,
    pods: Sequence[PodInfo],
    tried: Collection[PodKey],
    scheduled: int,
    *,
    workload_claims: bool,
    topology_aware: bool,
) -> ClaimsPostFilter:
    """PodGroupPostFilter for PodGroup `pg` whose cycle over its pending `pods` failed: `tried` are the pods
    the cycle ran PreFilter for, `scheduled` its members already bound, `claims` reads ResourceClaims by key.
    """
    out = ClaimsPostFilter()
    if pg.kind != "PodGroup" or (topology_aware and pg.spec.schedulingConstraints is not None):
        return out
    out.reason = CLAIMS_FREED
    some_without = False
    for pi in pods:
        if pi.key not in tried:
            continue
        found = ev.claims_to_deallocate(pi)
        for key in found[:1]:
            if key not in out.deallocations:
                out.deallocations.append(key)
        if not found:
            found = ev.special_claim_to_delete(pi)
            out.deletions += [key for key in found if key not in out.deletions]
        some_without |= not found
    if not (some_without and workload_claims and pods) or scheduled > 0:
        return out
    for pi in pods:
        if pi.key not in tried:
            continue
        fresh = [k for k in ev.claims_to_deallocate(pi, pg) if k not in out.deallocations]
        if fresh:
            out.deallocations.append(fresh[0])
            out.reason = GROUP_CLAIM_DEALLOCATED
            return out
    meta = pg.metadata
    for gc in pg.spec.resourceClaims or []:
        name, check_owner = _claim_name(pg, gc)
        if name is None:
            continue
        claim = claims((meta.namespace, name))
        if claim is None or claim.status is None or claim.status.allocation is None:
            continue
        if check_owner and not is_controlled_by(claim, pg):
            continue
        if any(_names_group(ref, meta) for ref in claim.status.reservedFor or []):
            consumer = {
                "apiGroup": GROUP_API,
                "resource": "podgroups",
                "name": meta.name,
                "uid": meta.uid or "",
            }
            out.unreservations.append(ClaimUnreservation((meta.namespace, name), consumer))
            out.reason = GROUP_CLAIM_UNRESERVED
            return out
    return out


def _claim_name(pg: Any, gc: Any) -> tuple[str | None, bool]:
    """resourceclaim.NameFromPodGroup: the claim's name and whether it must be the group's own (made from a
    template). A template's claim not made yet has no name here (upstream fails the plugin with an error;
    gangsched skips it: the pods already wait at PreFilter for that claim)."""
    if gc.resourceClaimName:
        return gc.resourceClaimName, False
    for status in (pg.status.resourceClaimStatuses if pg.status is not None else None) or []:
        if status.name == gc.name:
            return status.resourceClaimName, True
    return None, False


def _names_group(ref: Any, meta: Any) -> bool:
    """IsReservedForPod for a member of the group: an entry for the PodGroup of that name (pods do not know
    its UID, upstream matches API group, resource and name)."""
    return bool(ref.apiGroup == GROUP_API and ref.resource == "podgroups" and ref.name == meta.name)
