"""The ephemeral volume controller's part, for the in-memory store (pkg/controller/volume/ephemeral/
controller.go: enqueuePod, handleVolume).

For every generic ephemeral volume (`spec.volumes[].ephemeral`) of a pod not being deleted, it creates the
PersistentVolumeClaim `<pod>-<volume>` with the volumeClaimTemplate's labels, annotations and spec,
controlled by the pod, as the API server then stores it (default StorageClass, volumeMode). A claim of that
name that exists already is left as it is: when another object owns it, the scheduler's VolumeBinding says
the pod is not its owner (scheduler/volumes.py).

`sync_ephemeral_volumes(store, pods)` is idempotent.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from lightkube.models import core_v1, meta_v1

from ..api.defaults import claim_defaults

__all__ = ["sync_ephemeral_volumes"]


def _claim(pod: Any, volume: Any) -> core_v1.PersistentVolumeClaim:
    template = volume.ephemeral.volumeClaimTemplate
    meta = template.metadata if template is not None and template.metadata is not None else None
    spec = template.spec if template is not None else None
    return core_v1.PersistentVolumeClaim(
        apiVersion="v1",
        kind="PersistentVolumeClaim",
        metadata=meta_v1.ObjectMeta(
            name=f"{pod.metadata.name}-{volume.name}",
            namespace=pod.metadata.namespace or "",
            labels=dict(meta.labels) if meta is not None and meta.labels else None,
            annotations=dict(meta.annotations) if meta is not None and meta.annotations else None,
            ownerReferences=[
                meta_v1.OwnerReference(
                    apiVersion="v1",
                    kind="Pod",
                    name=pod.metadata.name,
                    uid=pod.metadata.uid or "",
                    controller=True,
                    blockOwnerDeletion=True,
                )
            ],
        ),
        # A copy: the claim's spec is defaulted, and the pod's template must stay as written.
        spec=_copy(spec),
    )


def _copy(spec: Any) -> Any:
    return core_v1.PersistentVolumeClaimSpec.from_dict(spec.to_dict()) if spec is not None else None


def sync_ephemeral_volumes(store: Any, pods: Iterable[Any]) -> None:
    """Create the claims of these pods' generic ephemeral volumes that do not exist yet."""
    classes = None
    for pod in pods:
        if pod.spec is None or pod.metadata.deletionTimestamp is not None:
            continue
        for volume in pod.spec.volumes or []:
            if volume.ephemeral is None:
                continue
            key = (pod.metadata.namespace or "", f"{pod.metadata.name}-{volume.name}")
            if store.get("PersistentVolumeClaim", key) is not None:
                continue
            claim = _claim(pod, volume)
            if classes is None:
                classes = list(store.list("StorageClass"))
            claim_defaults(claim, classes)
            store.add(claim)
