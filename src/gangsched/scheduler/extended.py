"""Extended resources backed by DRA (DRAExtendedResource, GA and locked on in v1.37): a container's request
for an extended resource that a DeviceClass names is served by devices where no node's allocatable offers it.

Upstream (k8s.io/kubernetes@v1.37.2 unless named otherwise):
- which class serves a resource name: k8s.io/dynamic-resource-allocation/deviceclass/extendedresourcecache
  (`resource_classes`);
- which names count: pkg/scheduler/util IsDRAExtendedResourceName (`is_dra_extended_name`);
- the special claim's requests and the pod's request mappings: pkg/scheduler/framework/plugins/
  dynamicresources/extendeddynamicresources.go createRequestsAndMappings (`special_requests`);
- its metadata: the same file, preFilterExtendedResources and findExtendedResourceClaim (`special_claim`,
  `is_special_for`).

The rest of the rule lives where upstream has it: NodeResourcesFit skips such a resource on a node whose
allocatable does not offer it (the snapshot's DRA-served rows, snapshot.py), DynamicResources allocates the
special claim with the pod's own claims (claims_stage.py), and the special claim is written at PreBind.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any

from lightkube.models import meta_v1

from ..api.validation.names import is_extended_resource_name
from .resources import container_requests

__all__ = [
    "CLAIM_FINALIZER",
    "EXTENDED_CLAIM_ANNOTATION",
    "IMPLICIT_PREFIX",
    "STALE_CLAIM",
    "dra_requests",
    "is_dra_extended_name",
    "is_special_for",
    "resource_classes",
    "special_claim",
    "special_claim_name",
    "special_requests",
]

EXTENDED_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
CLAIM_FINALIZER = "resource.kubernetes.io/delete-protection"  # resourceapi.Finalizer, added at PreBind
IMPLICIT_PREFIX = "deviceclass.resource.kubernetes.io/"  # resourceapi.ResourceDeviceClassPrefix
# Filter's verdict on every node for a pod whose special claim exists from an earlier cycle (upstream's
# PostFilter then deletes that claim and the pod is tried anew).
STALE_CLAIM = "cannot schedule extended resource claim"
_GENERATED_BASE = 58  # the API server's generateName: at most 63 - 5 characters before the random suffix
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery/pkg/util/rand


def is_dra_extended_name(name: str) -> bool:
    """schedutil.IsDRAExtendedResourceName: an extended resource name, or a class's implicit name."""
    return is_extended_resource_name(name) or name.startswith(IMPLICIT_PREFIX)


def _created(obj: Any) -> float:
    created = obj.metadata.creationTimestamp
    return created.timestamp() if isinstance(created, dt.datetime) else 0.0


def resource_classes(classes: Iterable[Any]) -> dict[str, Any]:
    """Resource name -> the DeviceClass serving it, as upstream's extended resource cache ends up after
    adding `classes` in this order (the store's: the informer's, or the input's): every class serves
    `deviceclass.resource.kubernetes.io/<name>`, and its `extendedResourceName` too. When two classes name
    the same resource the newer (creationTimestamp) wins, on a tie the lower name; a class that loses on
    arrival is left out entirely, its implicit name included, as updateResourceName2class returns early."""
    out: dict[str, Any] = {}
    for cls in classes:
        explicit = cls.spec.extendedResourceName if cls.spec is not None else None
        current = out.get(explicit) if explicit else None
        if current is not None:
            if _created(cls) < _created(current):
                continue
            if _created(cls) == _created(current) and cls.metadata.name >= current.metadata.name:
                continue
        if explicit:
            out[explicit] = cls
        out[IMPLICIT_PREFIX + cls.metadata.name] = cls
    return out


def dra_requests(requests: Mapping[str, int], classes: Mapping[str, Any]) -> dict[str, int]:
    """The pod's requested resources (milli-units) that a DeviceClass serves (hasDeviceClassMappedExtended
    Resource): empty when DRA has nothing to do with the pod's resources."""
    return {r: v for r, v in requests.items() if v and r in classes and is_dra_extended_name(r)}


def _whole(milli: int) -> int | None:
    """Quantity.AsInt64 of a milli-unit amount: None unless a whole number."""
    return milli // 1000 if milli % 1000 == 0 else None


def _mapping(container: str, resource: str, request: str) -> dict[str, str]:
    """A ContainerExtendedResourceRequest in API form."""
    return {"containerName": container, "resourceName": resource, "requestName": request}


def _container_request(
    index: int,
    container: Any,
    resource: str,
    class_name: str,
    reusable: list[dict[str, Any] | None],
) -> tuple[dict[str, Any] | None, list[dict[str, str]]]:
    """createResourceRequestAndMappings: the container's request for `resource` (`container-<i>-request-<j>`,
    j the resource's place among the container's sorted request names), less what requests in `reusable`
    (later long-lived containers' own, for an init container) already provide; and its mappings."""
    requests = container_requests(container)
    amount = requests.get(resource)
    count = _whole(amount) if amount is not None else None
    if not count:
        return None, []
    mappings: list[dict[str, str]] = []
    covered = 0
    for other in reusable:
        if other is not None:
            covered += other["exactly"]["count"]
            mappings.append(_mapping(container.name, resource, other["name"]))
            if covered >= count:
                return None, mappings
    name = f"container-{index}-request-{sorted(requests).index(resource)}"
    request = {
        "name": name,
        "exactly": {"deviceClassName": class_name, "allocationMode": "ExactCount", "count": count - covered},
    }
    mappings.append(_mapping(container.name, resource, name))
    return request, mappings


def special_requests(
    spec: Any, resources: Iterable[str], classes: Mapping[str, Any]
) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """createRequestsAndMappings: the special claim's device requests (API form, sorted by name) for the
    resources DRA serves on a node, and the pod's `extendedResourceClaimStatus.requestMappings`. Per
    resource (sorted by name): one request per long-lived container (regular, or init with restartPolicy
    Always) asking for it; init containers that run to completion first reuse the requests of the long-lived
    containers after them and together get one request, the largest of theirs, which all their mappings
    name."""
    containers = [*(spec.initContainers or []), *(spec.containers or [])]
    n_init = len(spec.initContainers or [])
    short = [i for i, c in enumerate(containers) if i < n_init and c.restartPolicy != "Always"]
    long = [i for i in range(len(containers)) if i not in short]
    requests: list[dict[str, Any]] = []
    mappings: list[dict[str, str]] = []
    for resource in sorted(resources):
        cls = classes.get(resource)
        if cls is None:
            continue
        class_name = cls.metadata.name
        long_requests: list[dict[str, Any] | None] = [None] * len(containers)
        long_mappings: list[dict[str, str]] = []
        for i in long:
            long_requests[i], found = _container_request(i, containers[i], resource, class_name, [])
            long_mappings += found
        biggest: dict[str, Any] | None = None
        short_names: set[str] = set()
        short_mappings: list[dict[str, str]] = []
        for i in short:
            request, found = _container_request(i, containers[i], resource, class_name, long_requests[i:])
            if request is not None:
                short_names.add(request["name"])
                if biggest is None or biggest["exactly"]["count"] < request["exactly"]["count"]:
                    biggest = request
            short_mappings += found
        if biggest is not None and len(short_names) > 1:
            for m in short_mappings:
                if m["requestName"] in short_names:
                    m["requestName"] = biggest["name"]
        if biggest is not None:
            requests.append(biggest)
        requests += [r for r in long_requests if r is not None]
        mappings += long_mappings + short_mappings
    requests.sort(key=lambda r: str(r["name"]))
    return requests, mappings


def special_claim_name(pod_name: str, namespace: str) -> str:
    """The name the API server would generate from `<pod>-extended-resources-` (base cut at 58
    characters, five random characters appended); derived from the pod instead of random, so that runs are
    reproducible. The live API server generates its own."""
    base = f"{pod_name}-extended-resources-"[:_GENERATED_BASE]
    import hashlib  # here: loading OpenSSL costs every start 4 ms, and only claims need it

    digest = hashlib.sha256(f"{namespace}/{pod_name}/extended-resources".encode()).digest()
    return base + "".join(_ALPHABET[b % len(_ALPHABET)] for b in digest[:5])


def special_claim(pod: Any, requests: list[dict[str, Any]]) -> Any:
    """The special claim as preFilterExtendedResources makes it and PreBind creates it: generateName
    `<pod>-extended-resources-`, the pod as controlling owner, the extended-resource-claim annotation, and
    the node's requests (filterExtendedResources). Named as `special_claim_name` here."""
    from lightkube.models import resource_v1  # imported where used (api/kinds.py): only claims need it

    meta = pod.metadata
    spec: Any = resource_v1.ResourceClaimSpec.from_dict({"devices": {"requests": requests}})
    return resource_v1.ResourceClaim(
        apiVersion="resource.k8s.io/v1",
        kind="ResourceClaim",
        metadata=meta_v1.ObjectMeta(
            name=special_claim_name(meta.name, meta.namespace or ""),
            generateName=f"{meta.name}-extended-resources-",
            namespace=meta.namespace or "",
            annotations={EXTENDED_CLAIM_ANNOTATION: "true"},
            ownerReferences=[
                meta_v1.OwnerReference(
                    apiVersion="v1", kind="Pod", name=meta.name, uid=meta.uid or "", controller=True
                )
            ],
        ),
        spec=spec,
    )


def is_special_for(claim: Any, pod_name: str, pod_uid: str) -> bool:
    """findExtendedResourceClaim: the claim carries the annotation and the pod (name and UID) controls it."""
    meta = claim.metadata
    if (meta.annotations or {}).get(EXTENDED_CLAIM_ANNOTATION) != "true":
        return False
    return any(
        ref.controller and ref.name == pod_name and (ref.uid or "") == pod_uid
        for ref in meta.ownerReferences or []
    )
