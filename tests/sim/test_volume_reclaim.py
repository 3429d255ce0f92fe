"""A static PersistentVolume over a job's life in the simulator, computed by hand from upstream's rules:
the ephemeral volume controller creates `<pod>-<volume>` owned by the pod; the garbage collector deletes it
with the pod; the PV controller (pkg/controller/volume/persistentvolume/pv_controller.go) then marks the PV
bound to it Released (syncVolume) and reclaims it by its policy (reclaimVolume): Retain keeps it Released,
its claimRef still naming the gone claim, so no other claim can bind it; Delete asks the volume's deleter
(findDeletablePlugin): the in-tree hostPath deleter removes a path under /tmp/ and the PV is deleted, a
`local` volume has no deleter and the PV is Failed with a VolumeFailedDelete warning. These outcomes were
observed with kube-controller-manager v1.37.2's persistentvolume-binder controller.

One node, one PV of 10Gi in StorageClass `local` (no provisioner, WaitForFirstConsumer). Pods a (0 s) and b
(1 s, input order) each need a 5Gi generic ephemeral volume `scratch` of that class and run 100 s. a's claim
takes the PV and a runs 0-100 s; b's claim finds no PV (the only one is bound to a's claim) and nothing can
provision one, so b waits; when a ends, its claim goes and the PV is reclaimed, and b still cannot have it.
"""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.sim import SimOptions

from .story import node, pod, simulate

# UnschedulableAndUnresolvable (VolumeBinding's ErrReasonBindConflict): preemption cannot help.
NO_PV = (
    "0/1 nodes are available: 1 node(s) didn't find available persistent volumes to bind. "
    "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
)


def _cluster(policy: str, source: dict[str, Any]) -> list[dict[str, Any]]:
    n = node("node-0", 0)
    n["metadata"]["labels"] = {"kubernetes.io/hostname": "node-0"}
    pv_spec = {
        "capacity": {"storage": "10Gi"},
        "accessModes": ["ReadWriteOnce"],
        "persistentVolumeReclaimPolicy": policy,
        "storageClassName": "local",
        **source,
        "nodeAffinity": {
            "required": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-0"]}
                        ]
                    }
                ]
            }
        },
    }
    return [
        n,
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "local"},
         "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"},
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-0"}, "spec": pv_spec},
    ]  # fmt: skip


def _with_scratch(doc: dict[str, Any]) -> dict[str, Any]:
    doc["spec"]["volumes"] = [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {
        "accessModes": ["ReadWriteOnce"], "storageClassName": "local",
        "resources": {"requests": {"storage": "5Gi"}}}}}}]  # fmt: skip
    return doc


def _run(policy: str, source: dict[str, Any]) -> tuple[dict[str, dict[str, Any]], Any]:
    docs = _cluster(policy, source) + [_with_scratch(pod(n, None, gpus=0, duration="100")) for n in "ab"]
    _, jobs, sim = simulate(docs, SimOptions())
    assert (jobs["a"]["start_s"], jobs["a"]["end_s"]) == (0.0, 100.0)
    assert jobs["b"]["start_s"] is None  # never: no PV for its claim, before or after a's ends
    b = sim.store.get("Pod", ("ml", "b"))
    condition = next(c for c in b.status.conditions if c.type == "PodScheduled")
    assert (condition.reason, condition.message) == ("Unschedulable", NO_PV)
    claims = [c.metadata.name for c in sim.store.list("PersistentVolumeClaim")]
    assert claims == ["b-scratch"]  # a's went with a (owned by it); b's waits
    return jobs, sim


@pytest.mark.parametrize(
    "source",
    [{"local": {"path": "/mnt/disks/0"}}, {"hostPath": {"path": "/tmp/scratch"}}],
    ids=["local", "host-path-in-tmp"],
)
def test_retain_leaves_the_volume_released_and_bound_to_the_gone_claim(source: dict[str, Any]) -> None:
    _, sim = _run("Retain", source)
    pv = sim.store.get("PersistentVolume", ("", "pv-0"))
    assert pv.status.phase == "Released"
    assert (pv.spec.claimRef.namespace, pv.spec.claimRef.name) == ("ml", "a-scratch")
    assert not [e for e in sim.store.events if e.object == "PersistentVolume pv-0"]


def test_delete_of_a_tmp_host_path_deletes_the_volume() -> None:
    _, sim = _run("Delete", {"hostPath": {"path": "/tmp/scratch"}})
    assert sim.store.get("PersistentVolume", ("", "pv-0")) is None


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ({"local": {"path": "/mnt/disks/0"}},
         'error getting deleter volume plugin for volume "pv-0": no volume plugin matched'),
        ({"nfs": {"server": "nfs.example.com", "path": "/exports/0"}},
         'error getting deleter volume plugin for volume "pv-0": no deletable volume plugin matched'),
        ({"hostPath": {"path": "/mnt/scratch"}},
         "host_path deleter only supports /tmp/.+ but received provided /mnt/scratch"),
    ],
    ids=["local", "nfs", "host-path-outside-tmp"],
)  # fmt: skip
def test_delete_without_a_deleter_fails_the_volume(source: dict[str, Any], message: str) -> None:
    _, sim = _run("Delete", source)
    pv = sim.store.get("PersistentVolume", ("", "pv-0"))
    assert (pv.status.phase, pv.status.message) == ("Failed", message)
    events = [(e.type, e.reason, e.message) for e in sim.store.events if e.object == "PersistentVolume pv-0"]
    assert events == [("Warning", "VolumeFailedDelete", message)]


def test_delete_of_a_csi_volume_waits_for_its_external_deleter() -> None:
    """A CSI volume is deleted by the driver's external provisioner, and only if it provisioned it
    (`pv.kubernetes.io/provisioned-by`): a static one stays Released. One it provisioned is deleted (the
    simulator stands in for that provisioner, as for the PV controller's binding)."""
    csi = {"csi": {"driver": "disk.csi.example.com", "volumeHandle": "vol-0"}}
    _, sim = _run("Delete", csi)
    assert sim.store.get("PersistentVolume", ("", "pv-0")).status.phase == "Released"
    docs_pv = _cluster("Delete", csi)
    docs_pv[2]["metadata"]["annotations"] = {"pv.kubernetes.io/provisioned-by": "disk.csi.example.com"}
    docs = docs_pv + [_with_scratch(pod(n, None, gpus=0, duration="100")) for n in "ab"]
    _, _, provisioned = simulate(docs, SimOptions())
    assert provisioned.store.get("PersistentVolume", ("", "pv-0")) is None
