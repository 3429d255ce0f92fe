"""A pod's ResourceClaims as the DynamicResources plugin resolves them at PreFilter, and what a cycle
tentatively allocates and reserves (pkg/scheduler/framework/plugins/dynamicresources, PreFilter and
Reserve; k8s.io/dynamic-resource-allocation/resourceclaim: Name, IsForPod, BindTo).

A pod claim names a ResourceClaim directly (`resourceClaimName`) or through a template, in which case the
resourceclaim controller has created the claim and recorded its name in `pod.status.resourceClaimStatuses`.
With DRAWorkloadResourceClaims, a pod claim equal to one of its PodGroup's `spec.resourceClaims` (same name,
same source) is the group's claim: one ResourceClaim for every member, reserved for the PodGroup.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..api.owners import controller_of, is_controlled_by
from .decision import ClaimReservation
from .devices import Allocation, DeviceUse

__all__ = ["ClaimReservation", "ClaimUse", "Pending", "PodClaims", "group_claim_of", "pod_claims"]

ClaimKey = tuple[str, str]
NOT_CREATED = "ResourceClaim not created yet"
GROUP_API_GROUP = "scheduling.k8s.io"  # a PodGroup's API group (schedulingapi.GroupName)


@dataclass(frozen=True, slots=True)
class ClaimUse:
    """One claim a pod needs, and for whom it is reserved (a Pod or, for a PodGroup claim, the PodGroup)."""

    key: ClaimKey
    claim: Any
    consumer: dict[str, str]  # ResourceClaimConsumerReference in API form
    # The special claim for extended resources (extended.py): created at PreBind, then the pod's mappings.
    create: dict[str, Any] | None = None
    request_mappings: tuple[dict[str, str], ...] = ()


@dataclass(slots=True)
class PodClaims:
    """A pod's claims after PreFilter; `error` set: the pod stops at PreFilter with that message."""

    error: str | None = None
    uses: list[ClaimUse] = field(default_factory=list)


def _source(c: Any) -> tuple[str | None, str | None]:
    return (c.resourceClaimName, c.resourceClaimTemplateName)


def group_claim_of(pod_claim: Any, group: Any) -> Any | None:
    """resourceclaim.BindTo's test: the PodGroup's claim that the pod claim equals (the same name, the same
    resourceClaimName and resourceClaimTemplateName), whose one ResourceClaim serves every member and is
    reserved for the PodGroup; None if none (or no PodGroup). The caller checks DRAWorkloadResourceClaims."""
    if group is None or group.spec is None:
        return None
    return next(
        (
            c
            for c in group.spec.resourceClaims or []
            if c.name == pod_claim.name and _source(c) == _source(pod_claim)
        ),
        None,
    )


def _not_for_pod(pod: Any, claim: Any, workload: bool) -> str | None:
    """resourceclaim.IsForPod: None when the pod controls the claim (api/owners.py) or, with
    DRAWorkloadResourceClaims, the claim's controller is the pod's PodGroup (isForPodGroupByPod: by API
    group, kind and name, the pod knows no UID of it); else upstream's error."""
    if is_controlled_by(claim, pod):
        return None
    ns, name, claim_name = pod.metadata.namespace or "", pod.metadata.name, claim.metadata.name
    head = f"ResourceClaim {ns}/{claim_name} was not created for Pod {ns}/{name}"
    group = pod.spec.schedulingGroup.podGroupName if pod.spec.schedulingGroup is not None else None
    if not (workload and group):
        return f"{head} (Pod is not owner)"
    ref = controller_of(claim)
    if (
        ref is not None
        and ref.name == group
        and ref.kind == "PodGroup"
        and (ref.apiVersion or "").startswith(f"{GROUP_API_GROUP}/")
    ):
        return None
    return f"{head} (neither Pod nor PodGroup {group} is the owner)"


def pod_claims(
    pod: Any, group: Any, get_claim: Callable[[ClaimKey], Any | None], workload: bool
) -> PodClaims:
    """Resolve `pod.spec.resourceClaims` (PreFilter's podResourceClaims): every claim must exist and belong
    to the pod (or its PodGroup, for a group claim made from a template)."""
    ns, name = pod.metadata.namespace or "", pod.metadata.name
    statuses = {
        s.name: s.resourceClaimName for s in (pod.status.resourceClaimStatuses if pod.status else None) or []
    }
    out = PodClaims()
    for pc in pod.spec.resourceClaims or []:
        if pc.resourceClaimName:
            claim_name, check_owner = pc.resourceClaimName, False
        elif pc.name in statuses:
            claim_name, check_owner = statuses[pc.name], True
            if claim_name is None:
                continue  # the controller decided no claim is needed
        else:
            out.error = f'pod "{ns}/{name}": {NOT_CREATED}'
            return out
        claim = get_claim((ns, claim_name))
        if claim is None:
            out.error = f'resourceclaim "{claim_name}" not found'
            return out
        if claim.metadata.deletionTimestamp is not None:
            out.error = f'resourceclaim "{claim_name}" is being deleted'
            return out
        for_group = workload and group_claim_of(pc, group) is not None
        if check_owner:
            error = _not_for_pod(pod, claim, workload)
            if error is not None:
                out.error = error
                return out
        if for_group:
            consumer = {
                "apiGroup": GROUP_API_GROUP,
                "resource": "podgroups",
                "name": group.metadata.name,
                "uid": group.metadata.uid or "",
            }
        else:
            consumer = {"resource": "pods", "name": name, "uid": pod.metadata.uid or ""}
        out.uses.append(ClaimUse((ns, claim_name), claim, consumer))
    return out


@dataclass(slots=True)
class Pending:
    """A claim allocated tentatively in this cycle, with the consumers it has been reserved for so far."""

    allocation: Allocation
    consumers: list[dict[str, str]]


class ClaimState:
    """Allocations made tentatively in the current cycles: devices taken and claims allocated, so that a
    later gang member sees them (the plugin's in-flight allocations). Each `reserve` returns its undo."""

    def __init__(self, use: DeviceUse) -> None:
        self.use = use
        self.pending: dict[ClaimKey, Pending] = {}
        self.by_pod: dict[tuple[str, str], list[ClaimReservation]] = {}

    def settled(self, key: ClaimKey) -> None:
        """The claim's allocation is in the store now: it is no longer pending here."""
        pending = self.pending.pop(key, None)
        if pending is not None:
            self.use.remove(pending.allocation.held())

    def reserve(
        self, pod: tuple[str, str], new: dict[ClaimKey, Allocation], uses: list[ClaimUse]
    ) -> Callable[[], None]:
        records = []
        for use in uses:
            allocation = new.get(use.key)
            if allocation is not None:
                self.pending[use.key] = Pending(allocation, [])
                self.use.add(allocation.held())
            pending = self.pending.get(use.key)
            if pending is not None and use.consumer not in pending.consumers:
                pending.consumers.append(use.consumer)
            records.append(
                ClaimReservation(
                    use.key,
                    allocation.to_status() if allocation is not None else None,
                    use.consumer,
                    use.create,
                    use.request_mappings,
                )
            )
        self.by_pod[pod] = records

        def undo() -> None:
            self.by_pod.pop(pod, None)
            for use in uses:
                pending = self.pending.get(use.key)
                if pending is None:
                    continue
                if use.consumer in pending.consumers:
                    pending.consumers.remove(use.consumer)
                if use.key in new and self.pending.pop(use.key, None) is not None:
                    self.use.remove(new[use.key].held())

        return undo
