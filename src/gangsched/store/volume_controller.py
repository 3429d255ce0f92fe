"""What follows a pod's deletion for its generic ephemeral volumes, for the in-memory store: the garbage
collector deletes the PersistentVolumeClaims the pod controls (ephemeral_controller.py made them), and the
PersistentVolume controller reclaims the volume each was bound to
(pkg/controller/volume/persistentvolume/pv_controller.go):

- syncVolume: a PV whose claimRef names a claim that no longer exists becomes `Released`; its claimRef stays,
  so that no other claim can bind it (the scheduler's FindMatchingVolume skips a PV bound to another claim).
- reclaimVolume, by `persistentVolumeReclaimPolicy`:
  - Retain: nothing more; the PV stays Released until an administrator acts.
  - Delete (deleteVolumeOperation, findDeletablePlugin): a volume a provisioner made
    (`pv.kubernetes.io/provisioned-by`) is deleted by it: the PV is deleted here, standing in for that
    provisioner as the store stands in for the PV controller's binding. A CSI volume it did not make is
    left to an external deleter, which deletes only what it provisioned: it stays Released. Of the in-tree
    plugins kube-controller-manager loads, only hostPath can delete, a path matching `/tmp/.+`; any other
    volume is `Failed` with the controller's message and a VolumeFailedDelete warning.
  - Recycle (deprecated) is not modelled: the PV stays Released.

Observed against kube-controller-manager v1.37.2's persistentvolume-binder controller: local + Delete is
Failed (`no volume plugin matched`), local + Retain and a static CSI volume + Delete Released, hostPath
under /tmp + Delete deleted. Off in live mode (Store's `claim_controller`), where the real controllers run.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from lightkube.models import core_v1

from ..api.owners import is_controlled_by
from ..scheduler.decision import Notice

__all__ = ["ANN_PROVISIONED_BY", "release_volumes"]

ANN_PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"  # storagehelpers.AnnDynamicallyProvisioned
_HOST_PATH_PLUGIN = "kubernetes.io/host-path"
_TMP = re.compile("/tmp/.+")  # hostPathDeleter.Delete: unanchored, as upstream's MatchString
# Sources whose kube-controller-manager plugin exists but cannot delete (nfs recycles, fc and iscsi neither).
_NOT_DELETABLE = ("nfs", "fc", "iscsi")


def release_volumes(store: Any, pod: Any) -> None:
    """Delete the claims of `pod`'s generic ephemeral volumes that it controls (api/owners.py), then reclaim
    the volumes they were bound to. Mutates `store`; idempotent."""
    ns = pod.metadata.namespace or ""
    for volume in pod.spec.volumes or []:
        if volume.ephemeral is None:
            continue
        key = (ns, f"{pod.metadata.name}-{volume.name}")
        claim = store.get("PersistentVolumeClaim", key)
        if claim is None or not is_controlled_by(claim, pod):
            continue  # another object's claim of that name: the scheduler told the pod so
        store.delete("PersistentVolumeClaim", key)
        if claim.spec is not None and claim.spec.volumeName:
            _reclaim(store, claim)


def _reclaim(store: Any, claim: Any) -> None:
    name = claim.spec.volumeName
    pv = store.get("PersistentVolume", ("", name))
    ref = pv.spec.claimRef if pv is not None and pv.spec is not None else None
    claim_key = (claim.metadata.namespace or "", claim.metadata.name)
    if ref is None or (ref.namespace or "", ref.name) != claim_key:
        return  # not bound to this claim (isVolumeReleased)
    if ref.uid and claim.metadata.uid and ref.uid != claim.metadata.uid:
        return
    before = copy.deepcopy(pv)
    pv.status = core_v1.PersistentVolumeStatus(phase="Released")
    policy = pv.spec.persistentVolumeReclaimPolicy or "Retain"
    if policy == "Delete":
        deleted, failure = _delete(pv)
        if deleted:
            store.delete("PersistentVolume", ("", name))
            return
        if failure is not None:
            pv.status.phase, pv.status.message = "Failed", failure
            store.events.append(Notice("Warning", "VolumeFailedDelete", f"PersistentVolume {name}", failure))
    store.update("PersistentVolume", ("", name), pv, before)


def _delete(pv: Any) -> tuple[bool, str | None]:
    """(deleted, failure message): findDeletablePlugin, then the deleter it found."""
    name, spec = pv.metadata.name, pv.spec
    provisioner = (pv.metadata.annotations or {}).get(ANN_PROVISIONED_BY)
    if provisioner:
        if not provisioner.startswith("kubernetes.io/"):
            return True, None  # its external provisioner deletes the volume, then the PV
        if provisioner != _HOST_PATH_PLUGIN:
            return False, f"no volume plugin matched name: {provisioner}"
    elif spec.csi is not None:
        return False, None  # an external deleter's, which deletes only what it provisioned
    if spec.hostPath is not None:
        path = spec.hostPath.path or ""
        if _TMP.search(path):
            return True, None
        return False, f"host_path deleter only supports /tmp/.+ but received provided {path}"
    reason = (
        "no deletable volume plugin matched"
        if any(getattr(spec, source, None) is not None for source in _NOT_DELETABLE)
        else "no volume plugin matched"
    )
    return False, f'error getting deleter volume plugin for volume "{name}": {reason}'
