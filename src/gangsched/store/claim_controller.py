"""The resourceclaim controller's part, for the in-memory store (pkg/controller/resourceclaim/controller.go:
syncPod/handleClaim, syncPodGroup/handlePodGroupClaim).

For every PodGroup claim made from a template it creates one ResourceClaim owned by the PodGroup and records
it in `status.resourceClaimStatuses`; for every pod claim made from a template it records the PodGroup's
claim when the pod claim equals a PodGroup claim (DRAWorkloadResourceClaims), else creates a ResourceClaim
owned by the pod, named `<pod>-<claim>-<5 characters>` with the annotation
`resource.kubernetes.io/pod-claim-name`, the template's labels and annotations and spec. Upstream the five
characters are random (generateName); here they are derived from the owner and the claim, so that the same
input gives the same names.

`sync_claims(store, workload_claims=...)` is idempotent: objects already recorded are left alone, and a pass
that cannot finish an object records nothing for it (see `_sync_pod`), so the next pass retries it as the
controller's work queue would. It also runs the ephemeral volume controller's part (ephemeral_controller.py).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from lightkube.models import core_v1, meta_v1, scheduling_v1beta1

from ..api.owners import is_controlled_by
from ..scheduler.extended import CLAIM_FINALIZER
from .ephemeral_controller import sync_ephemeral_volumes

__all__ = ["POD_CLAIM_ANNOTATION", "generated_name", "release_claims", "sync_claims"]

POD_CLAIM_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
# The alphabet of the API server's generateName suffixes (k8s.io/apimachinery/pkg/util/rand).
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_MAX_BASE = 57


def generated_name(owner: str, claim: str, namespace: str) -> str:
    """`<owner>-<claim>-xxxxx`, both parts cut proportionally when too long, as handleClaim does."""
    base = f"{owner}-{claim}-"
    if len(base) > _MAX_BASE:
        base = (
            owner[: len(owner) * _MAX_BASE // len(base)] + "-" + claim[: len(claim) * _MAX_BASE // len(base)]
        )
    import hashlib  # here: loading OpenSSL costs every start 4 ms, and only claims need it

    digest = hashlib.sha256(f"{namespace}/{owner}/{claim}".encode()).digest()
    return base + "".join(_ALPHABET[b % len(_ALPHABET)] for b in digest[:5])


def _create(store: Any, owner: Any, kind: str, api_version: str, claim_name: str, template: Any) -> str:
    ns = owner.metadata.namespace or ""
    name = generated_name(owner.metadata.name, claim_name, ns)
    annotations = dict((template.spec.metadata.annotations or {}) if template.spec.metadata else {})
    annotations[POD_CLAIM_ANNOTATION] = claim_name  # a PodGroup's claims carry it too (handlePodGroupClaim)
    labels = (template.spec.metadata.labels or None) if template.spec.metadata else None
    from lightkube.models import resource_v1  # imported where used (api/kinds.py): only claims need it

    claim = resource_v1.ResourceClaim(
        apiVersion="resource.k8s.io/v1",
        kind="ResourceClaim",
        metadata=meta_v1.ObjectMeta(
            name=name,
            namespace=ns,
            annotations=annotations or None,
            labels=labels,
            ownerReferences=[
                meta_v1.OwnerReference(
                    apiVersion=api_version,
                    kind=kind,
                    name=owner.metadata.name,
                    uid=owner.metadata.uid or "",
                    controller=True,
                )
            ],
        ),
        # Shared with the template: specs are never changed once stored (the API server makes them
        # immutable), and a copy per claim costs more than the rest of creating it.
        spec=template.spec.spec,
    )
    if store.get("ResourceClaim", (ns, name)) is None:
        store.add(claim)
    return name


def _sync_group(store: Any, pg: Any) -> None:
    """syncPodGroup's claim part: as the pod's (`_sync_pod`), nothing is recorded in a pass that meets a
    missing template. The new statuses are appended: the controller applies only them, and in Go's map
    order, so no order is upstream's; the spec's order keeps the same input giving the same output."""
    ns = pg.metadata.namespace or ""
    recorded = {s.name for s in (pg.status.resourceClaimStatuses if pg.status else None) or []}
    statuses = []
    for c in pg.spec.resourceClaims or []:
        if c.name in recorded or not c.resourceClaimTemplateName:
            continue
        template = store.get("ResourceClaimTemplate", (ns, c.resourceClaimTemplateName))
        if template is None:
            return  # the controller retries once the template exists
        name = _create(store, pg, "PodGroup", "scheduling.k8s.io/v1beta1", c.name, template)
        statuses.append(scheduling_v1beta1.PodGroupResourceClaimStatus(name=c.name, resourceClaimName=name))
    if statuses:
        made = [*((pg.status.resourceClaimStatuses if pg.status else None) or []), *statuses]
        _write_statuses(store, pg, made, scheduling_v1beta1.PodGroupStatus)


_WAIT = object()  # the pod's PodGroup has the claim, but its ResourceClaim is not made yet


def _group_claim(pg: Any, pc: Any) -> str | object | None:
    """For a pod claim that equals a claim of the pod's PodGroup (resourceclaim.BindTo): the ResourceClaim
    the controller made for the PodGroup, or `_WAIT` while there is none yet (upstream records nothing for
    that pod claim then, and makes no claim of the pod's own). None when the claim is the pod's own."""
    # here: the claims stage's modules (claims.py, devices.py) come in only with pods that use claims
    from ..scheduler.claims import group_claim_of

    shared = group_claim_of(pc, pg)
    if shared is None:
        return None
    for s in (pg.status.resourceClaimStatuses if pg.status else None) or []:
        if s.name == shared.name:
            return str(s.resourceClaimName)
    return _WAIT


def _sync_pod(store: Any, pod: Any, workload_claims: bool) -> None:
    """syncPod's claim part. Its status write comes only after every claim went through: a claim whose
    template is missing (retried once the template exists), or a PodGroup claim while the gate is off (not
    retried), ends the pass with nothing recorded, though the claims made before it stay (found again by
    name on the next pass). A member whose PodGroup does not exist yet is retried once it does."""
    ns = pod.metadata.namespace or ""
    group = pod.spec.schedulingGroup
    pg = None
    if group is not None and group.podGroupName:
        pg = store.get("PodGroup", (ns, group.podGroupName))
        if pg is None:
            return
    recorded = {
        s.name: s.resourceClaimName for s in (pod.status.resourceClaimStatuses if pod.status else None) or []
    }
    made: dict[str, str] = {}
    for pc in pod.spec.resourceClaims or []:
        if pc.name in recorded or not pc.resourceClaimTemplateName:
            continue
        name = _group_claim(pg, pc) if pg is not None else None
        if name is not None and not workload_claims:
            return  # "claim ... is a PodGroup claim but the DRAWorkloadResourceClaims feature is disabled"
        if name is _WAIT:
            continue
        if name is None:
            template = store.get("ResourceClaimTemplate", (ns, pc.resourceClaimTemplateName))
            if template is None:
                return
            name = _create(store, pod, "Pod", "v1", pc.name, template)
        made[pc.name] = str(name)
    if made:  # the merged statuses, sorted by name, as syncPod applies them
        merged = {**recorded, **made}
        statuses = [
            core_v1.PodResourceClaimStatus(name=n, resourceClaimName=merged[n]) for n in sorted(merged)
        ]
        _write_statuses(store, pod, statuses, core_v1.PodStatus)


def _write_statuses(store: Any, owner: Any, statuses: list[Any], empty_status: Any) -> None:
    """The controller's status write, the same for a pod and a PodGroup: the owner's
    status.resourceClaimStatuses become `statuses`, and the store sees the change."""
    if owner.status is None:
        owner.status = empty_status()
    owner.status.resourceClaimStatuses = statuses
    store.add(owner)


def sync_claims(store: Any, *, workload_claims: bool, objects: Iterable[Any] | None = None) -> None:
    """Create the claims templates call for and record them, PodGroups first (their members point to
    them), and the PersistentVolumeClaims of generic ephemeral volumes (ephemeral_controller.py), the two
    controllers whose objects the scheduler waits for. `workload_claims`: the DRAWorkloadResourceClaims
    gate. `objects`: only these PodGroups and pods (those just created, in the simulator), else all."""
    # The objects with work for either controller, sorted out in one pass: most have none (every pod and
    # PodGroup of `gangsched schedule` comes here once). Those being deleted are left alone (syncPod,
    # syncPodGroup).
    with_volumes: list[Any] = []
    groups: list[Any] = []
    pods: list[Any] = []
    for o in list(objects) if objects is not None else [*store.list("PodGroup"), *store.list("Pod")]:
        spec = o.spec
        if o.metadata.deletionTimestamp is not None or spec is None:
            continue
        if o.kind == "Pod":
            if spec.volumes:
                with_volumes.append(o)
            if spec.resourceClaims and not spec.nodeName:
                pods.append(o)
        elif o.kind == "PodGroup" and workload_claims and spec.resourceClaims:
            groups.append(o)
    sync_ephemeral_volumes(store, with_volumes)
    for pg in groups:
        _sync_group(store, pg)
    for pod in pods:
        _sync_pod(store, pod, workload_claims)


def release_claims(store: Any, consumer: Any, resource: str) -> None:
    """What follows the deletion of a pod or PodGroup (`resource`: "pods" or "podgroups") for the claims it
    used: the resourceclaim controller's syncClaim drops it from each claim's status.reservedFor, and a
    claim nobody is reserved for any more, allocated by a scheduler (delete-protection finalizer), is
    deallocated and loses the finalizer, which frees its devices; then the garbage collector deletes the
    claims the consumer controls (made from its templates: api/owners.py). Without this, in the simulator,
    devices of finished pods stayed allocated for ever, and in `schedule` a preemption victim's devices were
    never freed for the preemptor."""
    ns, uid, name = consumer.metadata.namespace or "", consumer.metadata.uid or "", consumer.metadata.name
    for claim_name in _claim_names(consumer):
        key = (ns, claim_name)
        claim = store.get("ResourceClaim", key)
        if claim is None:
            continue
        status = claim.status
        reserved = (status.reservedFor or []) if status is not None else []
        remaining = [r for r in reserved if (r.resource, r.name, r.uid or "") != (resource, name, uid)]
        if len(remaining) < len(reserved):
            before = copy.deepcopy(claim)
            status.reservedFor = remaining or None
            finalizers = claim.metadata.finalizers or []
            if not remaining and CLAIM_FINALIZER in finalizers:
                status.allocation = None
                status.devices = None
                claim.metadata.finalizers = [f for f in finalizers if f != CLAIM_FINALIZER] or None
            store.update("ResourceClaim", key, claim, before)
        if is_controlled_by(claim, consumer) and not (claim.status is not None and claim.status.reservedFor):
            store.delete("ResourceClaim", key)


def _claim_names(consumer: Any) -> list[str]:
    """The claims a pod or PodGroup uses: those it names, and those made for it from templates (as its
    status records them; a pod's special claim for extended resources too)."""
    spec, status = consumer.spec, consumer.status
    named = (spec.resourceClaims if spec is not None else None) or []
    made = (status.resourceClaimStatuses if status is not None else None) or []
    extended = getattr(status, "extendedResourceClaimStatus", None)  # pods only
    names = [c.resourceClaimName for c in named] + [s.resourceClaimName for s in made]
    if extended is not None:
        names.append(extended.resourceClaimName)
    return [n for n in names if n]
