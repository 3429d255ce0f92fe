"""Volumes and devices side by side with kube-scheduler v1.37.2 on the same API server, with
kube-controller-manager's persistentvolume-binder and resourceclaim controllers running, so that volume
binding and claims from templates complete as on a real cluster. Each scheduler gets its own namespace and
nodes with the same objects; both must reach the same outcome: where the pods run, which volume each claim
is bound to, which devices each claim is allocated and for whom they are reserved."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from lightkube import Client
from lightkube.resources.core_v1 import PersistentVolume, PersistentVolumeClaim, Pod
from lightkube.resources.resource_v1 import ResourceClaim, ResourceSlice

from gangsched.live.controlplane import ManagedProcess

from .paired import SCHEDULERS, TIMEOUT, create, paired_sides, pod
from .test_apiserver import wait_for

DRIVER = "gpu.gangsched.test"
CLASS = "gangsched-test-local-wffc"
DEVICE_CLASS = "gangsched-test-gpu"


@pytest.fixture
def sides(kube_client: Client) -> Iterator[dict[str, str]]:
    """One namespace per scheduler, each with two nodes `<ns>-n1`, `<ns>-n2` labelled for it."""
    with paired_sides(kube_client, "vd", ("n1", "n2")) as made:
        yield made


def _wait(what: str, check: Any) -> Any:
    return wait_for(what, check, TIMEOUT)


def _node_of(client: Client, ns: str, name: str) -> str | None:
    node: str | None = client.get(Pod, name, namespace=ns).spec.nodeName
    return node


def _storage_class() -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": CLASS},
        "provisioner": "kubernetes.io/no-provisioner",
        "volumeBindingMode": "WaitForFirstConsumer",
    }


def _local_pv(name: str, node: str) -> dict[str, Any]:
    on_node = {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": "10Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": CLASS,
            "local": {"path": "/mnt/disk"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [on_node]}]}},
        },
    }


def _claim(ns: str, name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "storageClassName": CLASS,
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }


def _device_class() -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": DEVICE_CLASS},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }


def _slice(name: str, node: str, devices: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": d} for d in devices],
        },
    }


def _template(ns: str) -> dict[str, Any]:
    request = {"name": "gpu", "exactly": {"deviceClassName": DEVICE_CLASS}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "one-gpu", "namespace": ns},
        "spec": {"spec": {"devices": {"requests": [request]}}},
    }


def test_wait_for_first_consumer_binds_the_local_pv(
    kube_client: Client,
    kube_scheduler: ManagedProcess,
    gangsched: ManagedProcess,
    volume_and_claim_controllers: ManagedProcess,
    sides: dict[str, str],
) -> None:
    """A WaitForFirstConsumer claim and one local PV on n2: both schedulers put the pod on n2 and the PV
    controller binds the claim to that PV."""
    create(kube_client, _storage_class())
    for side, ns in sides.items():
        create(kube_client, _local_pv(f"{ns}-local", f"{ns}-n2"))
        create(kube_client, _claim(ns, "data"))
        volume = {"name": "d", "persistentVolumeClaim": {"claimName": "data"}}
        create(kube_client, pod(ns, "p", SCHEDULERS[side], volumes=[volume]))

    def bound_claim(ns: str) -> Any:
        claim = kube_client.get(PersistentVolumeClaim, "data", namespace=ns)
        return claim if claim.status is not None and claim.status.phase == "Bound" else None

    for side, ns in sides.items():
        node = _wait(f"{side}: pod bound", lambda ns=ns: _node_of(kube_client, ns, "p"))
        assert node == f"{ns}-n2", side
        claim = _wait(f"{side}: claim bound", lambda ns=ns: bound_claim(ns))
        assert claim.spec.volumeName == f"{ns}-local", side
        pv = kube_client.get(PersistentVolume, f"{ns}-local")
        assert (pv.spec.claimRef.namespace, pv.spec.claimRef.name) == (ns, "data"), side


def _pending_message(client: Client, ns: str, pods: list[str]) -> str | None:
    for name in pods:
        pod = client.get(Pod, name, namespace=ns)
        if pod.spec.nodeName:
            continue
        for c in (pod.status.conditions if pod.status else None) or []:
            if c.type == "PodScheduled" and c.status == "False" and c.message:
                return f"{c.reason}: {c.message}"
    return None


def test_claims_from_templates_get_node_local_devices(
    kube_client: Client,
    kube_scheduler: ManagedProcess,
    gangsched: ManagedProcess,
    volume_and_claim_controllers: ManagedProcess,
    sides: dict[str, str],
) -> None:
    """Two devices on n1, none on n2, three pods each with a one-device claim from a template: with both
    schedulers two pods run on n1 with distinct devices, their claims allocated and reserved for them, and
    the third waits because no node can allocate its claim."""
    create(kube_client, _device_class())
    pods = ["p0", "p1", "p2"]
    for side, ns in sides.items():
        create(kube_client, _slice(f"{ns}-n1-gpus", f"{ns}-n1", ["gpu-0", "gpu-1"]))
        create(kube_client, _template(ns))
        claim = {"name": "gpu", "resourceClaimTemplateName": "one-gpu"}
        for name in pods:
            create(kube_client, pod(ns, name, SCHEDULERS[side], resourceClaims=[claim]))
    messages = {}
    for side, ns in sides.items():
        _wait(
            f"{side}: two pods bound",
            lambda ns=ns: sum(bool(_node_of(kube_client, ns, p)) for p in pods) == 2,
        )
        messages[side] = _wait(
            f"{side}: the third pod's reason",
            lambda ns=ns: (m := _pending_message(kube_client, ns, pods)) and "allocate" in m and m,
        )
    time.sleep(2)  # and nothing more gets bound
    for side, ns in sides.items():
        bound = {p: _node_of(kube_client, ns, p) for p in pods}
        assert sorted(n for n in bound.values() if n) == [f"{ns}-n1", f"{ns}-n1"], (side, bound)
        devices = set()
        for claim in kube_client.list(ResourceClaim, namespace=ns):
            owner = claim.metadata.ownerReferences[0].name
            allocation = claim.status.allocation if claim.status else None
            if not bound[owner]:
                assert allocation is None, (side, claim.metadata.name)
                continue
            assert allocation is not None, (side, claim.metadata.name)
            (result,) = allocation.devices.results
            assert (result.driver, result.pool) == (DRIVER, f"{ns}-n1"), side
            devices.add(result.device)
            assert [r.name for r in claim.status.reservedFor] == [owner], side
        assert devices == {"gpu-0", "gpu-1"}, side
        kube_client.delete(ResourceSlice, f"{ns}-n1-gpus")
    for side, message in messages.items():
        assert message.startswith("Unschedulable: 0/"), (side, message)
        assert "2 cannot allocate all claims" in message, (side, message)


def test_podgroup_claim_is_shared_and_reserved_for_the_group(
    kube_client: Client,
    kube_scheduler: ManagedProcess,
    gangsched: ManagedProcess,
    volume_and_claim_controllers: ManagedProcess,
    sides: dict[str, str],
) -> None:
    """DRAWorkloadResourceClaims: a gang of 2 whose pods' claim equals the PodGroup's; one device, on n2.
    The resourceclaim controller makes one claim for the group; both schedulers put both members on n2 with
    that one claim allocated once and reserved for the PodGroup."""
    create(kube_client, _device_class())
    claim = {"name": "gpu", "resourceClaimTemplateName": "one-gpu"}
    for side, ns in sides.items():
        create(kube_client, _slice(f"{ns}-n2-gpus", f"{ns}-n2", ["gpu-0"]))
        create(kube_client, _template(ns))
        create(
            kube_client,
            {
                "apiVersion": "scheduling.k8s.io/v1beta1",
                "kind": "PodGroup",
                "metadata": {"name": "pg", "namespace": ns},
                "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, "resourceClaims": [claim]},
            },
        )
        for name in ("m0", "m1"):
            group = {"podGroupName": "pg"}
            create(
                kube_client,
                pod(ns, name, SCHEDULERS[side], resourceClaims=[claim], schedulingGroup=group),
            )
    for side, ns in sides.items():
        for name in ("m0", "m1"):
            node = _wait(f"{side}: {name} bound", lambda ns=ns, name=name: _node_of(kube_client, ns, name))
            assert node == f"{ns}-n2", (side, name)
        (group_claim,) = list(kube_client.list(ResourceClaim, namespace=ns))
        assert group_claim.metadata.ownerReferences[0].kind == "PodGroup", side
        allocation = group_claim.status.allocation
        assert [(r.pool, r.device) for r in allocation.devices.results] == [(f"{ns}-n2", "gpu-0")], side
        reserved = [(r.resource, r.name) for r in group_claim.status.reservedFor]
        assert reserved == [("podgroups", "pg")], (side, reserved)
        kube_client.delete(ResourceSlice, f"{ns}-n2-gpus")
