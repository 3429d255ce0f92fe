"""Which object controls which: metav1.GetControllerOf and metav1.IsControlledBy
(k8s.io/apimachinery/pkg/apis/meta/v1/controller_ref.go), the one test of "was this made for that object"
that the scheduler (ephemeral.VolumeIsForPod, resourceclaim.IsForPodGroup) and the controllers the store
plays (the resourceclaim controller's owningPod, the garbage collector of generated claims) share.

Upstream an object's controller is the first of its ownerReferences with `controller: true` (the API server
allows one at most), and it controls the object when that reference carries the owner's UID: neither
another owner reference (controller false) nor a name counts. Objects read from files often carry no UID;
when neither the owner nor the reference has one, the reference must name the owner by kind and name, where
the API server would have told them apart by UID.
"""

from __future__ import annotations

from typing import Any

from .kinds import kind_info

__all__ = ["controller_of", "is_controlled_by"]


def controller_of(obj: Any) -> Any | None:
    """metav1.GetControllerOf: the first of the object's ownerReferences with `controller: true`, else None.
    Pure."""
    meta = obj.metadata
    for ref in (meta.ownerReferences if meta is not None else None) or []:
        if ref.controller:
            return ref
    return None


def is_controlled_by(obj: Any, owner: Any) -> bool:
    """metav1.IsControlledBy: the object's controller reference (`controller_of`) carries the owner's UID;
    with no UID on either side, names the owner's kind and name (see the module docstring). Pure."""
    ref = controller_of(obj)
    if ref is None:
        return False
    uid = owner.metadata.uid or ""
    if uid or ref.uid:
        return bool(ref.uid == uid)
    return bool(ref.kind == kind_info(owner).kind and ref.name == owner.metadata.name)
