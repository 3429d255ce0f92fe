"""Volumes and devices side by side with kube-scheduler v1.37.2 on the same API server, with
kube-controller-manager's persistentvolume-binder and resourceclaim controllers running, so that volume
binding and claims from templates complete as on a real cluster. Each scheduler gets its own namespace and
nodes with the same objects; both must reach the same outcome: where the pods run, which volume each claim
is bound to, which devices each claim is allocated and for whom they are reserved."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from lightkube import Client
from lightkube.core.exceptions import ApiError
from lightkube.resources.core_v1 import Namespace, PersistentVolume, PersistentVolumeClaim, Pod
from lightkube.resources.resource_v1 import DeviceTaintRule, ResourceClaim, ResourceSlice
from lightkube.resources.scheduling_v1 import PriorityClass
from lightkube.resources.scheduling_v1beta1 import PodGroup
from lightkube.resources.storage_v1 import CSIDriver, CSINode, VolumeAttachment
from lightkube.types import PatchType

from .paired import SCHEDULERS, TIMEOUT, create, outcome, paired_sides, pod, settle
from .test_apiserver import wait_for

DRIVER = "gpu.gangsched.test"
RESOURCE = "resource.k8s.io/v1"
CLASS = "gangsched-test-local-wffc"
DEVICE_CLASS = "gangsched-test-gpu"
CSI_DRIVER = "csi.gangsched.test"
ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"


# Both schedulers and the PV binder and resourceclaim controllers run for every case.
pytestmark = pytest.mark.usefixtures("kube_scheduler", "gangsched", "volume_and_claim_controllers")


@pytest.fixture
def sides(kube_client: Client) -> Iterator[dict[str, str]]:
    """One namespace per scheduler, each with two nodes `<ns>-n1`, `<ns>-n2` labelled for it, in zones
    `<ns>-n1` and `<ns>-n2`."""
    with paired_sides(kube_client, "vd", ("n1", "n2"), lambda ns, node: {ZONE: f"{ns}-{node}"}) as made:
        yield made


def _wait(what: str, check: Any) -> Any:
    return wait_for(what, check, TIMEOUT)


def _node_of(client: Client, ns: str, name: str) -> str | None:
    node: str | None = client.get(Pod, name, namespace=ns).spec.nodeName
    return node


def _storage_class(name: str = CLASS, provisioner: str = "kubernetes.io/no-provisioner") -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
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


def _claim(ns: str, name: str, storage_class: str = CLASS) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "storageClassName": storage_class,
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


def test_wait_for_first_consumer_binds_the_local_pv(kube_client: Client, sides: dict[str, str]) -> None:
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


def test_generic_ephemeral_volume_binds_the_local_pv(kube_client: Client, sides: dict[str, str]) -> None:
    """A generic ephemeral volume of the WaitForFirstConsumer class and one local PV on n2: the ephemeral
    volume controller creates the claim `p-scratch` owned by the pod; both schedulers read it as the pod's
    claim, put the pod on n2, and the PV controller binds the claim to that PV."""
    create(kube_client, _storage_class())
    template = {"spec": _claim("", "")["spec"]}
    for side, ns in sides.items():
        create(kube_client, _local_pv(f"{ns}-scratch", f"{ns}-n2"))
        volume = {"name": "scratch", "ephemeral": {"volumeClaimTemplate": template}}
        create(kube_client, pod(ns, "p", SCHEDULERS[side], volumes=[volume]))
    for side, ns in sides.items():
        node = _wait(f"{side}: pod bound", lambda ns=ns: _node_of(kube_client, ns, "p"))
        assert node == f"{ns}-n2", side

        def bound_claim(ns: str = ns) -> Any:
            claim = kube_client.get(PersistentVolumeClaim, "p-scratch", namespace=ns)
            return claim if claim.status is not None and claim.status.phase == "Bound" else None

        claim = _wait(f"{side}: claim bound", bound_claim)
        assert claim.spec.volumeName == f"{ns}-scratch", side
        owners = [(r.kind, r.name, r.controller) for r in claim.metadata.ownerReferences]
        assert owners == [("Pod", "p", True)], side


def _selected_node(kube_client: Client, ns: str) -> str | None:
    """The node VolumeBinding's PreBind selected for claim `data` (its selected-node annotation)."""
    claim = kube_client.get(PersistentVolumeClaim, "data", namespace=ns)
    node: str | None = (claim.metadata.annotations or {}).get("volume.kubernetes.io/selected-node")
    return node


def test_pod_waits_for_its_claim_to_be_provisioned(kube_client: Client, sides: dict[str, str]) -> None:
    """A WaitForFirstConsumer claim of a class whose provisioner never runs: both schedulers write the
    claim's selected node in PreBind, then wait for the PV controller to bind the claim, which it never
    does, so neither binds the pod (upstream: volumeBinder.BindPodVolumes polls checkBindings for up to
    bindTimeoutSeconds, 600)."""
    create(kube_client, _storage_class("gangsched-test-external", "gangsched.test/external"))
    for side, ns in sides.items():
        create(kube_client, _claim(ns, "data", "gangsched-test-external"))
        volume = {"name": "d", "persistentVolumeClaim": {"claimName": "data"}}
        create(kube_client, pod(ns, "p", SCHEDULERS[side], volumes=[volume]))

    for side, ns in sides.items():
        node = _wait(f"{side}: the claim's selected node", lambda ns=ns: _selected_node(kube_client, ns))
        assert node in (f"{ns}-n1", f"{ns}-n2"), side
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        bound = {side: _node_of(kube_client, ns, "p") for side, ns in sides.items()}
        assert bound == {"kube": None, "gangsched": None}, bound
        time.sleep(0.5)


def test_provisioning_goes_where_storage_capacity_is(kube_client: Client, sides: dict[str, str]) -> None:
    """VolumeBinding's capacity check: the class's provisioner has a CSIDriver with `storageCapacity: true`
    and only n2 has a CSIStorageCapacity with room for the claim (n1's is too small), although a filler
    makes n2 the node LeastAllocated would not pick. Both schedulers select n2 for provisioning (the claim's
    selected-node annotation), the provisioner never runs, so neither binds the pod."""
    driver = "capacity.csi.gangsched.test"
    storage_class = "gangsched-test-capacity"
    create(kube_client, _storage_class(storage_class, driver))
    create(kube_client, {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": driver},
                         "spec": {"storageCapacity": True}})  # fmt: skip
    _filler(kube_client, sides, "n2")
    for side, ns in sides.items():
        for node, size in (("n1", "512Mi"), ("n2", "10Gi")):
            topology = {"matchLabels": {HOSTNAME: f"{ns}-{node}"}}
            capacity = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity"}
            meta = {"name": f"{node}-capacity", "namespace": ns}
            create(kube_client, {**capacity, "metadata": meta, "storageClassName": storage_class,
                                 "nodeTopology": topology, "capacity": size})  # fmt: skip
        create(kube_client, _claim(ns, "data", storage_class))
        volume = {"name": "d", "persistentVolumeClaim": {"claimName": "data"}}
        create(kube_client, pod(ns, "p", SCHEDULERS[side], volumes=[volume]))

    try:
        for side, ns in sides.items():
            node = _wait(f"{side}: the claim's selected node", lambda ns=ns: _selected_node(kube_client, ns))
            assert node == f"{ns}-n2", side
    finally:
        with contextlib.suppress(ApiError):
            kube_client.delete(CSIDriver, driver)


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


def test_postfilter_deallocates_a_claim_allocated_where_the_pod_cannot_run(
    kube_client: Client,
    sides: dict[str, str],
) -> None:
    """DynamicResources' PostFilter: claim `stale` is allocated on n1's gpu-0 with no consumer (the
    resourceclaim controller deallocates only claims whose last consumer left), and a filler leaves n1 too
    little CPU for p. p's first cycle fails (n1 short of CPU, the claim not available on n2), PostFilter
    deallocates the claim, its update requeues p: both schedulers bind p to n2 with n2's gpu-0."""
    _gpus_and_filler(kube_client, sides, ("n1", "n2"))
    for ns in sides.values():
        _allocated_claim(kube_client, ns)
    try:
        for side, ns in sides.items():
            need = {"resources": {"requests": {"cpu": "2", "memory": "128Mi"}}}
            claim = {"name": "gpu", "resourceClaimName": "stale"}
            create(kube_client, pod(ns, "p", SCHEDULERS[side], {}, container=need, resourceClaims=[claim]))
        outcomes = settle(kube_client, sides, ["p"], lambda o: o["p"] in ("n1", "n2"))
        assert outcomes == {side: {"p": "n2"} for side in sides}
        for side, ns in sides.items():
            got = kube_client.get(ResourceClaim, "stale", namespace=ns)
            (result,) = got.status.allocation.devices.results
            assert (result.pool, result.device) == (f"{ns}-n2", "gpu-0"), side
            assert [r.name for r in got.status.reservedFor] == ["p"], side
    finally:
        for ns in sides.values():
            for node in ("n1", "n2"):
                with contextlib.suppress(ApiError):
                    kube_client.delete(ResourceSlice, f"{ns}-{node}-gpus")


def _gpus_and_filler(client: Client, sides: dict[str, str], gpu_nodes: tuple[str, ...]) -> None:
    """Each side: one device `gpu-0` on each of `gpu_nodes`, and a 3-CPU filler bound to n1 (which keeps 1
    CPU), waited for."""
    create(client, _device_class())
    for side, ns in sides.items():
        for node in gpu_nodes:
            create(client, _slice(f"{ns}-{node}-gpus", f"{ns}-{node}", ["gpu-0"]))
        heavy = {"resources": {"requests": {"cpu": "3", "memory": "128Mi"}}}
        create(
            client,
            pod(ns, "filler", SCHEDULERS[side], {}, container=heavy, nodeSelector={HOSTNAME: f"{ns}-n1"}),
        )
    settle(client, sides, ["filler"], lambda o: o["filler"] == "n1")


def _allocated_claim(
    client: Client,
    ns: str,
    name: str = "stale",
    node: str = "n1",
    reserved_for: list[dict[str, str]] | None = None,
) -> None:
    """Claim `name` asking for one gpu, allocated on `node`'s gpu-0 (its nodeSelector names that node),
    reserved for `reserved_for` (no one by default): what a consumer that left, or a binding that failed
    after PreBind, leaves."""
    request = {"name": "gpu", "exactly": {"deviceClassName": DEVICE_CLASS}}
    create(client, {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                    "metadata": {"name": name, "namespace": ns,
                                 "finalizers": ["resource.kubernetes.io/delete-protection"]},
                    "spec": {"devices": {"requests": [request]}}})  # fmt: skip
    result = {"request": "gpu", "driver": DRIVER, "pool": f"{ns}-{node}", "device": "gpu-0"}
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [f"{ns}-{node}"]}]}
    status: dict[str, Any] = {
        "allocation": {"devices": {"results": [result]}, "nodeSelector": {"nodeSelectorTerms": [term]}}
    }
    if reserved_for:
        status["reservedFor"] = reserved_for
    client.patch(ResourceClaim.Status, name, {"status": status}, namespace=ns, patch_type=PatchType.MERGE)


def _reserved_for_group(client: Client, ns: str) -> list[dict[str, str]]:
    uid = client.get(PodGroup, "pg", namespace=ns).metadata.uid
    return [{"apiGroup": "scheduling.k8s.io", "resource": "podgroups", "name": "pg", "uid": uid}]


@pytest.mark.parametrize("level", ["pod", "podgroup"])
def test_group_postfilter_deallocates_a_claim_allocated_where_the_gang_cannot_run(
    kube_client: Client, sides: dict[str, str], level: str
) -> None:
    """DynamicResources' PodGroupPostFilter: gang pg (minCount 2) of m0 and m1, 2 CPUs each; a filler leaves
    n1 1 CPU, so the gang can only run on n2. m0 uses claim `stale`, allocated on n1's gpu-0: `pod`, a claim
    of m0's own reserved for no one (the per-pod pass deallocates it); `podgroup`, the PodGroup's claim
    reserved for the PodGroup (the group pass deallocates it, no member being scheduled). The first cycle
    fails (m0 fits nowhere), PodGroupPostFilter deallocates `stale`, its update requeues the gang: both
    schedulers bind m0 and m1 to n2, `stale` allocated n2's gpu-0."""
    _gpus_and_filler(kube_client, sides, ("n1", "n2"))
    claim = {"name": "gpu", "resourceClaimName": "stale"}
    try:
        for side, ns in sides.items():
            spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": 2}}}
            if level == "podgroup":
                spec["resourceClaims"] = [claim]
            create(kube_client, {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                                 "metadata": {"name": "pg", "namespace": ns}, "spec": spec})  # fmt: skip
            reserved = _reserved_for_group(kube_client, ns) if level == "podgroup" else None
            _allocated_claim(kube_client, ns, reserved_for=reserved)
            need = {"resources": {"requests": {"cpu": "2", "memory": "128Mi"}}}
            group = {"podGroupName": "pg"}
            create(kube_client, pod(ns, "m0", SCHEDULERS[side], {}, container=need, resourceClaims=[claim],
                                    schedulingGroup=group))  # fmt: skip
            create(kube_client, pod(ns, "m1", SCHEDULERS[side], {}, container=need, schedulingGroup=group))
        outcomes = settle(
            kube_client,
            sides,
            ["m0", "m1"],
            lambda o: o["m0"] in ("n1", "n2") and o["m1"] != "pending" and "Unschedulable" not in o["m1"],
        )
        assert outcomes == {side: {"m0": "n2", "m1": "n2"} for side in sides}
        for side, ns in sides.items():
            got = kube_client.get(ResourceClaim, "stale", namespace=ns)
            (result,) = got.status.allocation.devices.results
            assert (result.pool, result.device) == (f"{ns}-n2", "gpu-0"), side
            want = ["pg"] if level == "podgroup" else ["m0"]
            assert [r.name for r in got.status.reservedFor] == want, side
    finally:
        for ns in sides.values():
            for node in ("n1", "n2"):
                with contextlib.suppress(ApiError):
                    kube_client.delete(ResourceSlice, f"{ns}-{node}-gpus")


def test_group_postfilter_unreserves_the_group_claim(kube_client: Client, sides: dict[str, str]) -> None:
    """DynamicResources' PodGroupPostFilter, nothing to deallocate: the PodGroup's claim `held` is allocated
    on n2's gpu-0 and reserved for pg; the two 3-CPU members cannot both run (n1 keeps 1 CPU beside a
    filler, n2 has 4). The claim is available wherever the other filters pass and no member runs, so both
    schedulers remove pg from its reservedFor (a strategic merge patch deleting the entry by UID) and keep
    its allocation; the gang waits, with the same messages under both."""
    _gpus_and_filler(kube_client, sides, ("n2",))
    claim = {"name": "gpu", "resourceClaimName": "held"}
    try:
        for side, ns in sides.items():
            spec = {"schedulingPolicy": {"gang": {"minCount": 2}}, "resourceClaims": [claim]}
            create(kube_client, {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                                 "metadata": {"name": "pg", "namespace": ns}, "spec": spec})  # fmt: skip
            _allocated_claim(kube_client, ns, "held", "n2", _reserved_for_group(kube_client, ns))
            need = {"resources": {"requests": {"cpu": "3", "memory": "128Mi"}}}
            group = {"podGroupName": "pg"}
            for name in ("m0", "m1"):
                member = pod(ns, name, SCHEDULERS[side], {}, container=need, resourceClaims=[claim])
                create(kube_client, {**member, "spec": {**member["spec"], "schedulingGroup": group}})
        for side, ns in sides.items():
            _wait(
                f"{side}: pg unreserved from held",
                lambda ns=ns: not kube_client.get(ResourceClaim, "held", namespace=ns).status.reservedFor,
            )
        outcomes = settle(kube_client, sides, ["m0", "m1"], lambda o: "Unschedulable" in o["m0"])
        assert outcomes["kube"] == outcomes["gangsched"], outcomes
        for side, ns in sides.items():
            got = kube_client.get(ResourceClaim, "held", namespace=ns)
            assert not got.status.reservedFor, side
            (result,) = got.status.allocation.devices.results
            assert (result.pool, result.device) == (f"{ns}-n2", "gpu-0"), side
    finally:
        for ns in sides.values():
            with contextlib.suppress(ApiError):
                kube_client.delete(ResourceSlice, f"{ns}-n2-gpus")


def test_device_taints_keep_untolerating_claims_away(kube_client: Client, sides: dict[str, str]) -> None:
    """DRADeviceTaints and DRADeviceTaintRules (on in v1.37): n1's gpu-0 is tainted `dedicated=ml:NoSchedule`
    in its slice, n2's gpu-0 `maintenance:NoExecute` by a DeviceTaintRule naming its driver and pool. Pod
    `plain`, whose request tolerates nothing, waits with the same message under both schedulers; pod `ml`,
    tolerating the NoSchedule taint, runs on n1 and its claim's result carries that toleration. Deleting the
    rule lets `plain` have n2's GPU."""
    create(kube_client, _device_class())
    ml_taint = {"key": "dedicated", "value": "ml", "effect": "NoSchedule"}
    toleration = {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}
    plain = {"name": "gpu", "resourceClaimTemplateName": "one-gpu"}
    tolerant = {"name": "gpu", "resourceClaimTemplateName": "ml-gpu"}
    rules = []
    try:
        for side, ns in sides.items():
            tainted = _slice(f"{ns}-n1-gpus", f"{ns}-n1", ["gpu-0"])
            tainted["spec"]["devices"][0]["taints"] = [ml_taint]
            create(kube_client, tainted)
            create(kube_client, _slice(f"{ns}-n2-gpus", f"{ns}-n2", ["gpu-0"]))
            rule = {
                "deviceSelector": {"driver": DRIVER, "pool": f"{ns}-n2"},
                "taint": {"key": "maintenance", "effect": "NoExecute"},
            }
            meta = {"name": f"{ns}-maintenance"}
            kind = {"apiVersion": RESOURCE, "kind": "DeviceTaintRule"}
            create(kube_client, {**kind, "metadata": meta, "spec": rule})
            rules.append(f"{ns}-maintenance")
            create(kube_client, _template(ns))
            ml = _template(ns)
            ml["metadata"]["name"] = "ml-gpu"
            ml["spec"]["spec"]["devices"]["requests"][0]["exactly"]["tolerations"] = [toleration]
            create(kube_client, ml)
            create(kube_client, pod(ns, "plain", SCHEDULERS[side], resourceClaims=[plain]))
            create(kube_client, pod(ns, "ml", SCHEDULERS[side], resourceClaims=[tolerant]))
        outcomes = settle(
            kube_client, sides, ["plain", "ml"], lambda o: o["ml"] == "n1" and "allocate" in o["plain"]
        )
        assert outcomes["kube"] == outcomes["gangsched"], outcomes
        assert "2 cannot allocate all claims" in outcomes["kube"]["plain"], outcomes
        for side, ns in sides.items():
            (claim,) = [
                c
                for c in kube_client.list(ResourceClaim, namespace=ns)
                if c.metadata.ownerReferences[0].name == "ml"
            ]
            (result,) = claim.status.allocation.devices.results
            assert (result.pool, result.device) == (f"{ns}-n1", "gpu-0"), side
            assert [t.to_dict() for t in result.tolerations or []] == [toleration], side
        for name in rules:
            kube_client.delete(DeviceTaintRule, name)
        outcomes = settle(kube_client, sides, ["plain", "ml"], lambda o: o["plain"] == "n2")
        assert outcomes == {side: {"plain": "n2", "ml": "n1"} for side in sides}, outcomes
    finally:
        for name in rules:
            with contextlib.suppress(ApiError):
                kube_client.delete(DeviceTaintRule, name)
        for ns in sides.values():
            for node in ("n1", "n2"):
                with contextlib.suppress(ApiError):
                    kube_client.delete(ResourceSlice, f"{ns}-{node}-gpus")


def test_admin_access_shares_a_device(kube_client: Client, sides: dict[str, str]) -> None:
    """DRAAdminAccess (GA in v1.37): n1 has one GPU. `monitor`'s claim asks for it with adminAccess (its
    namespace labelled for admin access) and runs on n1 first; `worker` still gets the same GPU, since a
    device allocated with admin access is in use for no one; `worker-2` then waits, with the same message
    from both schedulers. The monitor's result says adminAccess."""
    create(kube_client, _device_class())
    admin_label = {"metadata": {"labels": {"resource.kubernetes.io/admin-access": "true"}}}
    plain = {"name": "gpu", "resourceClaimTemplateName": "one-gpu"}
    admin = {"name": "gpu", "resourceClaimTemplateName": "admin-gpu"}
    try:
        for side, ns in sides.items():
            kube_client.patch(Namespace, ns, admin_label, patch_type=PatchType.MERGE)
            create(kube_client, _slice(f"{ns}-n1-gpus", f"{ns}-n1", ["gpu-0"]))
            create(kube_client, _template(ns))
            template = _template(ns)
            template["metadata"]["name"] = "admin-gpu"
            template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["adminAccess"] = True
            create(kube_client, template)
            create(kube_client, pod(ns, "monitor", SCHEDULERS[side], resourceClaims=[admin]))
        settle(kube_client, sides, ["monitor"], lambda o: o["monitor"] == "n1")
        for side, ns in sides.items():
            create(kube_client, pod(ns, "worker", SCHEDULERS[side], resourceClaims=[plain]))
        outcomes = settle(kube_client, sides, ["monitor", "worker"], lambda o: o["worker"] == "n1")
        assert outcomes == {side: {"monitor": "n1", "worker": "n1"} for side in sides}, outcomes
        for side, ns in sides.items():
            create(kube_client, pod(ns, "worker-2", SCHEDULERS[side], resourceClaims=[plain]))
        outcomes = settle(kube_client, sides, ["worker-2"], lambda o: "allocate" in o["worker-2"])
        assert outcomes["kube"] == outcomes["gangsched"], outcomes
        for side, ns in sides.items():
            for claim in kube_client.list(ResourceClaim, namespace=ns):
                owner = claim.metadata.ownerReferences[0].name
                if owner in ("monitor", "worker"):
                    (result,) = claim.status.allocation.devices.results
                    assert (result.pool, result.device) == (f"{ns}-n1", "gpu-0"), (side, owner)
                    assert bool(result.adminAccess) == (owner == "monitor"), (side, owner)
    finally:
        for ns in sides.values():
            with contextlib.suppress(ApiError):
                kube_client.delete(ResourceSlice, f"{ns}-n1-gpus")


def _partitions(ns: str) -> list[dict[str, Any]]:
    """n1's GPU as a counter set (8Gi of memory) in a slice of its own, and three devices consuming it: two
    4Gi partitions and the whole GPU (the pool's two slices)."""
    pool = {"name": f"{ns}-n1", "generation": 1, "resourceSliceCount": 2}
    counters = {
        "driver": DRIVER,
        "nodeName": f"{ns}-n1",
        "pool": pool,
        "sharedCounters": [{"name": "gpu-0", "counters": {"memory": {"value": "8Gi"}}}],
    }
    devices = [
        {"name": name, "consumesCounters": [{"counterSet": "gpu-0", "counters": {"memory": {"value": size}}}]}
        for name, size in (("gpu-0-mig-a", "4Gi"), ("gpu-0-mig-b", "4Gi"), ("gpu-0-full", "8Gi"))
    ]
    partitions = {"driver": DRIVER, "nodeName": f"{ns}-n1", "pool": pool, "devices": devices}
    kind = {"apiVersion": RESOURCE, "kind": "ResourceSlice"}
    return [
        {**kind, "metadata": {"name": f"{ns}-n1-counters"}, "spec": counters},
        {**kind, "metadata": {"name": f"{ns}-n1-partitions"}, "spec": partitions},
    ]


def test_partitions_share_their_gpu_counters(kube_client: Client, sides: dict[str, str]) -> None:
    """DRAPartitionableDevices (beta, on in v1.37): n1's 8Gi GPU is published as two 4Gi partitions and the
    whole GPU, all consuming its shared memory counter. Three pods with one-device claims: with both
    schedulers two run on n1 with the two partitions and the third waits with the same message, since the
    whole GPU would need the counter the partitions consume."""
    create(kube_client, _device_class())
    pods = ["p0", "p1", "p2"]
    try:
        for side, ns in sides.items():
            for slice_ in _partitions(ns):
                create(kube_client, slice_)
            create(kube_client, _template(ns))
            claim = {"name": "gpu", "resourceClaimTemplateName": "one-gpu"}
            for name in pods:
                create(kube_client, pod(ns, name, SCHEDULERS[side], resourceClaims=[claim]))
        outcomes = settle(
            kube_client,
            sides,
            pods,
            lambda o: list(o.values()).count("n1") == 2 and any("allocate" in v for v in o.values()),
        )
        # which of the three waits is the queue's order; where they run and the waiting message are the rule's
        assert sorted(outcomes["kube"].values()) == sorted(outcomes["gangsched"].values()), outcomes
        assert any("2 cannot allocate all claims" in v for v in outcomes["kube"].values()), outcomes
        for side, ns in sides.items():
            devices = sorted(
                r.device
                for c in kube_client.list(ResourceClaim, namespace=ns)
                if c.status is not None and c.status.allocation is not None
                for r in c.status.allocation.devices.results
            )
            assert devices == ["gpu-0-mig-a", "gpu-0-mig-b"], (side, devices)
    finally:
        for ns in sides.values():
            for name in ("counters", "partitions"):
                with contextlib.suppress(ApiError):
                    kube_client.delete(ResourceSlice, f"{ns}-n1-{name}")


def _device_slice(name: str, pool: str, devices: list[dict[str, Any]], **where: Any) -> dict[str, Any]:
    spec = {"driver": DRIVER, "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1}, **where}
    return {
        "apiVersion": RESOURCE,
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {**spec, "devices": devices},
    }


def test_per_device_node_selection(kube_client: Client, sides: dict[str, str]) -> None:
    """DRAPartitionableDevices' perDeviceNodeSelection: one slice whose `nic-1` serves n1 by name and `nic-2`
    the nodes of n2's zone by a node selector. Pod `in-n2`, held to n2, gets nic-2 (its allocation carrying
    the device's node selector), then one of `p0` and `p1` gets nic-1 on n1 (its allocation pinned to n1) and
    the other waits, with the same message from both schedulers."""
    create(kube_client, _device_class())
    claim = {"name": "gpu", "resourceClaimTemplateName": "one-gpu"}
    try:
        for side, ns in sides.items():
            zone = {"key": ZONE, "operator": "In", "values": [f"{ns}-n2"]}
            devices = [
                {"name": "nic-1", "nodeName": f"{ns}-n1"},
                {"name": "nic-2", "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [zone]}]}},
            ]
            create(
                kube_client,
                _device_slice(f"{ns}-fabric", f"{ns}-fabric", devices, perDeviceNodeSelection=True),
            )
            create(kube_client, _template(ns))
            create(
                kube_client,
                pod(ns, "in-n2", SCHEDULERS[side], resourceClaims=[claim], nodeSelector={ZONE: f"{ns}-n2"}),
            )
        settle(kube_client, sides, ["in-n2"], lambda o: o["in-n2"] == "n2")
        for side, ns in sides.items():
            for name in ("p0", "p1"):
                create(kube_client, pod(ns, name, SCHEDULERS[side], resourceClaims=[claim]))
        outcomes = settle(
            kube_client,
            sides,
            ["in-n2", "p0", "p1"],
            lambda o: list(o.values()).count("n1") == 1 and any("allocate" in v for v in o.values()),
        )
        # which of p0 and p1 waits is the queue's order; where they run and the waiting message are the rule's
        assert sorted(outcomes["kube"].values()) == sorted(outcomes["gangsched"].values()), outcomes
        selectors: dict[str, dict[str, str]] = {}
        for side, ns in sides.items():
            for c in kube_client.list(ResourceClaim, namespace=ns):
                allocation = c.status.allocation if c.status else None
                if allocation is not None:
                    (result,) = allocation.devices.results
                    selector = json.dumps(allocation.nodeSelector.to_dict()).replace(ns, "NS")
                    selectors.setdefault(side, {})[result.device] = selector
        assert selectors["kube"] == selectors["gangsched"], selectors
        assert sorted(selectors["kube"]) == ["nic-1", "nic-2"], selectors
    finally:
        for ns in sides.values():
            with contextlib.suppress(ApiError):
                kube_client.delete(ResourceSlice, f"{ns}-fabric")


def test_binding_conditions_keep_both_from_binding(kube_client: Client, sides: dict[str, str]) -> None:
    """DRADeviceBindingConditions (beta, on in v1.37): n1's only GPU has binding conditions no driver ever
    reports. kube-scheduler allocates it, copies the conditions into the result and waits in PreBind, so the
    pod is not bound; gangsched does not allocate such a device, and its pod waits with a message naming the
    field. Neither binds the pod (the departure is where it waits: docs/volumes-and-devices.md)."""
    create(kube_client, _device_class())
    claim = {"name": "gpu", "resourceClaimTemplateName": "one-gpu"}
    conditions = {
        "bindingConditions": ["gpu.gangsched.test/ready"],
        "bindingFailureConditions": ["gpu.gangsched.test/failed"],
    }
    try:
        for side, ns in sides.items():
            device = {"name": "gpu-0", **conditions}
            create(kube_client, _device_slice(f"{ns}-n1-gpus", f"{ns}-n1", [device], nodeName=f"{ns}-n1"))
            create(kube_client, _template(ns))
            create(kube_client, pod(ns, "p", SCHEDULERS[side], resourceClaims=[claim]))
        kube_ns, gangsched_ns = sides["kube"], sides["gangsched"]

        def kube_allocated() -> Any:
            (c,) = kube_client.list(ResourceClaim, namespace=kube_ns)
            return c.status.allocation if c.status is not None else None

        allocation = _wait("kube: the claim allocated", kube_allocated)
        (result,) = allocation.devices.results
        assert result.bindingConditions == conditions["bindingConditions"], result
        message = _wait(
            "gangsched: the pod's reason",
            lambda: (
                (m := _pending_message(kube_client, gangsched_ns, ["p"])) and "bindingConditions" in m and m
            ),
        )
        assert message == (
            "Unschedulable: 0/4 nodes are available: 1 cannot allocate all claims, 1 cannot allocate all "
            "claims: ResourceSlice spec.devices[].bindingConditions is not supported by gangsched yet, 2 "
            "node(s) didn't match Pod's node affinity/selector. preemption: 0/4 nodes are available: 4 "
            "Preemption is not helpful for scheduling."
        ), message
        time.sleep(5)
        assert _node_of(kube_client, kube_ns, "p") is None
        assert _node_of(kube_client, gangsched_ns, "p") is None
        (c,) = kube_client.list(ResourceClaim, namespace=gangsched_ns)
        assert c.status is None or c.status.allocation is None, c.status
    finally:
        for ns in sides.values():
            with contextlib.suppress(ApiError):
                kube_client.delete(ResourceSlice, f"{ns}-n1-gpus")


# --- statically bound volumes: VolumeZone, VolumeRestrictions (ReadWriteOncePod), NodeVolumeLimits ---------


def _static_pv(
    name: str, mode: str = "ReadWriteOnce", labels: dict[str, str] | None = None
) -> dict[str, Any]:
    """A PV of no class with a CSI source (driver CSI_DRIVER, handle = name)."""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": [mode],
            "storageClassName": "",
            "csi": {"driver": CSI_DRIVER, "volumeHandle": name},
        },
    }


def _bound_claims(
    client: Client, sides: dict[str, str], claims: dict[str, Callable[[str], dict[str, Any]]]
) -> None:
    """Per side, claim `name` pre-bound (spec.volumeName) to the PV `claims[name](ns)`; waits until the PV
    controller has bound every claim."""
    for ns in sides.values():
        for name, make_pv in claims.items():
            pv = make_pv(ns)
            create(client, pv)
            claim = {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": name, "namespace": ns},
                "spec": {
                    "storageClassName": "",
                    "volumeName": pv["metadata"]["name"],
                    "accessModes": pv["spec"]["accessModes"],
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            }
            create(client, claim)

    def all_bound() -> bool:
        for ns in sides.values():
            for name in claims:
                got = client.get(PersistentVolumeClaim, name, namespace=ns)
                if got.status is None or got.status.phase != "Bound":
                    return False
        return True

    _wait("claims bound by the PV controller", all_bound)


def _using(ns: str, name: str, side: str, claim: str, **spec: Any) -> dict[str, Any]:
    volume = {"name": "v", "persistentVolumeClaim": {"claimName": claim}}
    small = {"resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}
    return pod(ns, name, SCHEDULERS[side], {}, volumes=[volume], container=small, **spec)


def _filler(client: Client, sides: dict[str, str], node: str) -> None:
    """A 2-CPU filler pinned to `node`, so that LeastAllocated prefers the other node."""
    heavy = {"resources": {"requests": {"cpu": "2", "memory": "128Mi"}}}
    for side, ns in sides.items():
        pinned = {HOSTNAME: f"{ns}-{node}"}
        create(client, pod(ns, "filler", SCHEDULERS[side], {}, container=heavy, nodeSelector=pinned))


def test_volume_zone(
    kube_client: Client,
    sides: dict[str, str],
) -> None:
    """A bound PV labelled with zone n1: VolumeZone admits only n1, although a filler there makes n2 the
    node LeastAllocated would pick."""
    _filler(kube_client, sides, "n1")
    _bound_claims(
        kube_client, sides, {"data": lambda ns: _static_pv(f"{ns}-zoned", labels={ZONE: f"{ns}-n1"})}
    )
    for side, ns in sides.items():
        create(kube_client, _using(ns, "p", side, "data"))
    outcomes = settle(kube_client, sides, ["filler", "p"], lambda o: o["p"] in ("n1", "n2"))
    assert outcomes == {side: {"filler": "n1", "p": "n1"} for side in sides}


def test_read_write_once_pod(
    kube_client: Client,
    sides: dict[str, str],
) -> None:
    """VolumeRestrictions: a ReadWriteOncePod claim used by a running pod; a second pod using it waits with
    upstream's reason, in the same message from both schedulers."""
    _bound_claims(kube_client, sides, {"once": lambda ns: _static_pv(f"{ns}-once", mode="ReadWriteOncePod")})
    for side, ns in sides.items():
        create(kube_client, _using(ns, "first", side, "once"))
    settle(kube_client, sides, ["first"], lambda o: o["first"] in ("n1", "n2"))
    for side, ns in sides.items():
        create(kube_client, _using(ns, "second", side, "once"))
    outcomes = settle(kube_client, sides, ["second"], lambda o: o["second"].startswith("Unschedulable"))
    for side, got in outcomes.items():
        reason = "ReadWriteOncePod access mode already in-use by another pod"
        assert reason in got["second"], (side, got)
    assert outcomes["kube"] == outcomes["gangsched"]


@contextlib.contextmanager
def _one_volume_per_node(client: Client, sides: dict[str, str], driver: str) -> Iterator[None]:
    """Each side's n1 and n2 get a CSINode allowing one volume of `driver`, deleted afterwards."""
    names = [f"{ns}-{n}" for ns in sides.values() for n in ("n1", "n2")]
    for node in names:
        spec = {"drivers": [{"name": driver, "nodeID": node, "allocatable": {"count": 1}}]}
        create(client, {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": node},
                        "spec": spec})  # fmt: skip
    try:
        yield
    finally:
        for node in names:
            with contextlib.suppress(ApiError):
                client.delete(CSINode, node)


def _both_exceed(outcomes: dict[str, dict[str, str]], name: str) -> None:
    """`name` waits for want of attach room on both nodes, in the same message under both schedulers."""
    for side, got in outcomes.items():
        assert "2 node(s) exceed max volume count" in got[name], (side, got)
    assert outcomes["kube"] == outcomes["gangsched"]


def test_csi_attach_limits(
    kube_client: Client,
    sides: dict[str, str],
) -> None:
    """NodeVolumeLimits: each node's CSINode allows one volume of the driver. p-1 is pinned to n1 with
    c-1; p-2 (c-2) goes to the loaded n2 since n1 is at its limit; p-3 (c-3) fits nowhere and waits with
    `exceed max volume count` for both nodes, in the same message from both schedulers."""
    with _one_volume_per_node(kube_client, sides, CSI_DRIVER):
        _filler(kube_client, sides, "n2")
        _bound_claims(
            kube_client, sides, {f"c-{i}": lambda ns, i=i: _static_pv(f"{ns}-v-{i}") for i in (1, 2, 3)}
        )
        for side, ns in sides.items():
            create(kube_client, _using(ns, "p-1", side, "c-1", nodeSelector={HOSTNAME: f"{ns}-n1"}))
        settle(kube_client, sides, ["p-1"], lambda o: o["p-1"] == "n1")
        for side, ns in sides.items():
            create(kube_client, _using(ns, "p-2", side, "c-2"))
        outcomes = settle(kube_client, sides, ["p-2"], lambda o: o["p-2"] in ("n1", "n2"))
        assert outcomes == {side: {"p-2": "n2"} for side in sides}
        for side, ns in sides.items():
            create(kube_client, _using(ns, "p-3", side, "c-3"))
        outcomes = settle(kube_client, sides, ["p-3"], lambda o: o["p-3"].startswith("Unschedulable"))
        _both_exceed(outcomes, "p-3")


def test_inline_migrated_volumes_count_against_the_csi_driver(
    kube_client: Client, sides: dict[str, str]
) -> None:
    """NodeVolumeLimits translates inline in-tree volumes (CSI migration, locked on): each node's CSINode
    allows one disk.csi.azure.com volume. p-1 with Azure disk `a` is pinned to n1, p-2 with disk `b` goes to
    n2, p-3 with disk `a` again fits n1 (one volume counts once per node), p-4 with disk `c` fits nowhere:
    both schedulers say `2 node(s) exceed max volume count` in the same message."""

    def disk(name: str) -> list[dict[str, Any]]:
        uri = f"/subscriptions/s/resourceGroups/r/providers/Microsoft.Compute/disks/{name}"
        return [{"name": "d", "azureDisk": {"diskName": name, "diskURI": uri, "kind": "Managed"}}]

    with _one_volume_per_node(kube_client, sides, "disk.csi.azure.com"):
        for side, ns in sides.items():
            create(
                kube_client,
                pod(ns, "p-1", SCHEDULERS[side], volumes=disk("a"), nodeSelector={HOSTNAME: f"{ns}-n1"}),
            )
        settle(kube_client, sides, ["p-1"], lambda o: o["p-1"] == "n1")
        for side, ns in sides.items():
            create(kube_client, pod(ns, "p-2", SCHEDULERS[side], volumes=disk("b")))
        outcomes = settle(kube_client, sides, ["p-2"], lambda o: o["p-2"] in ("n1", "n2"))
        assert outcomes == {side: {"p-2": "n2"} for side in sides}
        for side, ns in sides.items():
            create(
                kube_client,
                pod(ns, "p-3", SCHEDULERS[side], volumes=disk("a"), nodeSelector={HOSTNAME: f"{ns}-n1"}),
            )
            create(kube_client, pod(ns, "p-4", SCHEDULERS[side], volumes=disk("c")))
        outcomes = settle(
            kube_client,
            sides,
            ["p-3", "p-4"],
            lambda o: o["p-3"] == "n1" and o["p-4"].startswith("Unschedulable"),
        )
        _both_exceed(outcomes, "p-4")


def test_inline_disk_conflict(kube_client: Client, sides: dict[str, str]) -> None:
    """VolumeRestrictions compares inline disks: `holder` mounts GCE disk d1 on n1; `writer` mounts it too
    and goes to n2 under both schedulers; `pinned`, which must run on n1, waits with the same message
    (`node(s) had no available disk`) from both."""
    disk = [{"name": "d", "gcePersistentDisk": {"pdName": "d1"}}]
    for side, ns in sides.items():
        on_n1 = {HOSTNAME: f"{ns}-n1"}
        create(kube_client, pod(ns, "holder", SCHEDULERS[side], volumes=disk, nodeSelector=on_n1))
    settle(kube_client, sides, ["holder"], lambda o: o["holder"] == "n1")
    for side, ns in sides.items():
        create(kube_client, pod(ns, "writer", SCHEDULERS[side], volumes=disk))
        create(
            kube_client,
            pod(ns, "pinned", SCHEDULERS[side], volumes=disk, nodeSelector={HOSTNAME: f"{ns}-n1"}),
        )
    outcomes = settle(
        kube_client,
        sides,
        ["writer", "pinned"],
        lambda o: o["writer"] != "pending" and "Unschedulable" in o["pinned"],
    )
    assert {side: got["writer"] for side, got in outcomes.items()} == {side: "n2" for side in sides}, outcomes
    assert "1 node(s) had no available disk" in outcomes["kube"]["pinned"], outcomes
    assert outcomes["kube"] == outcomes["gangsched"]


def test_csi_driver_required_and_volume_attachments(kube_client: Client, sides: dict[str, str]) -> None:
    """NodeVolumeLimits in v1.37: the CSIDriver says `preventPodSchedulingIfMissing: true`
    (VolumeLimitScaling, on) and only n1's CSINode lists it, with room for one volume, which a
    VolumeAttachment already holds for a PV no pod uses. p (claim r-1) fits on neither node, with the same
    message from both schedulers; once the VolumeAttachment is deleted both bind p to n1."""
    driver = "required.csi.gangsched.test"
    create(kube_client, {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": driver},
                         "spec": {"preventPodSchedulingIfMissing": True}})  # fmt: skip
    nodes = [f"{ns}-n1" for ns in sides.values()]

    def required_pv(name: str) -> dict[str, Any]:
        pv = _static_pv(name)
        pv["spec"]["csi"]["driver"] = driver
        return pv

    try:
        for node in nodes:
            entry = {"name": driver, "nodeID": node, "allocatable": {"count": 1}}
            csi_node = {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": node}}
            create(kube_client, {**csi_node, "spec": {"drivers": [entry]}})
        _bound_claims(kube_client, sides, {"r-1": lambda ns: required_pv(f"{ns}-r-1")})
        for side, ns in sides.items():
            create(kube_client, required_pv(f"{ns}-held"))
            source = {"persistentVolumeName": f"{ns}-held"}
            spec = {"attacher": driver, "nodeName": f"{ns}-n1", "source": source}
            attachment = {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment"}
            create(kube_client, {**attachment, "metadata": {"name": f"{ns}-held"}, "spec": spec})
            create(kube_client, _using(ns, "p", side, "r-1"))
        outcomes = settle(kube_client, sides, ["p"], lambda o: o["p"].startswith("Unschedulable"))
        for side, got in outcomes.items():
            assert "1 node(s) exceed max volume count" in got["p"], (side, got)
            assert f"1 {driver} CSI driver is not installed on the node" in got["p"], (side, got)
        assert outcomes["kube"] == outcomes["gangsched"]
        for ns in sides.values():
            kube_client.delete(VolumeAttachment, f"{ns}-held")
        outcomes = settle(kube_client, sides, ["p"], lambda o: o["p"] in ("n1", "n2"))
        assert outcomes == {side: {"p": "n1"} for side in sides}
    finally:
        for ns in sides.values():
            with contextlib.suppress(ApiError):
                kube_client.delete(VolumeAttachment, f"{ns}-held")
        for node in nodes:
            with contextlib.suppress(ApiError):
                kube_client.delete(CSINode, node)
        with contextlib.suppress(ApiError):
            kube_client.delete(CSIDriver, driver)


def _priority_class(client: Client, ns: str) -> None:
    create(client, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                    "metadata": {"name": f"{ns}-high"}, "value": 1000})  # fmt: skip


def _gang_on_n1(client: Client, side: str, ns: str, claim: str) -> None:
    """A priority-1000 gang of 2 pinned to n1: m0 uses `claim`, m1 none; the PodGroup last, so that its
    first cycle has both members."""
    high, group, pinned = f"{ns}-high", {"podGroupName": "pg"}, {HOSTNAME: f"{ns}-n1"}
    create(client, _using(ns, "m0", side, claim, nodeSelector=pinned, priorityClassName=high,
                          schedulingGroup=group))  # fmt: skip
    create(client, pod(ns, "m1", SCHEDULERS[side], {}, nodeSelector=pinned, priorityClassName=high,
                       schedulingGroup=group))  # fmt: skip
    spec = {"priorityClassName": high, "schedulingPolicy": {"gang": {"minCount": 2}},
            "disruptionMode": {"single": {}}}  # fmt: skip
    create(client, {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                    "metadata": {"name": "pg", "namespace": ns}, "spec": spec})  # fmt: skip


def _gone(client: Client, ns: str, name: str) -> bool:
    try:
        client.get(Pod, name, namespace=ns)
    except ApiError as e:
        return e.status.code == 404
    return False


def test_gang_preemption_spares_a_read_write_once_pod_holder(
    kube_client: Client,
    sides: dict[str, str],
) -> None:
    """Workload-aware preemption does not free a ReadWriteOncePod claim: a priority-0 holder of the claim
    runs on n2, a priority-1000 gang of 2 is pinned to n1 with m0 using the claim. In upstream's dry run the
    victims are out when VolumeRestrictions' PreFilter runs, the claim has no other user and the plugin
    Skips, so putting the holder back rejects nothing and it is spared: neither scheduler evicts it, and
    the gang stays unbound on both sides."""
    _bound_claims(kube_client, sides, {"once": lambda ns: _static_pv(f"{ns}-once", mode="ReadWriteOncePod")})
    for side, ns in sides.items():
        _priority_class(kube_client, ns)
        create(kube_client, _using(ns, "holder", side, "once", nodeSelector={HOSTNAME: f"{ns}-n2"}))
    settle(kube_client, sides, ["holder"], lambda o: o["holder"] == "n2")
    try:
        for side, ns in sides.items():
            _gang_on_n1(kube_client, side, ns, "once")
        outcomes = settle(
            kube_client, sides, ["m0", "m1"], lambda o: all(v.startswith("Unschedulable") for v in o.values())
        )
        time.sleep(15)  # several of the gang's retries (backoff 1 s, doubling): still nobody evicted
        for side, ns in sides.items():
            assert outcome(kube_client, ns, ["holder", "m0", "m1"])["holder"] == "n2", (side, outcomes)
            assert not _node_of(kube_client, ns, "m0") and not _node_of(kube_client, ns, "m1"), side
    finally:
        for ns in sides.values():
            with contextlib.suppress(ApiError):
                kube_client.delete(PriorityClass, f"{ns}-high")


def test_gang_preemption_frees_a_csi_attachment(
    kube_client: Client,
    sides: dict[str, str],
) -> None:
    """Workload-aware preemption and NodeVolumeLimits: n1's CSINode allows one volume of the driver, held
    by a priority-0 pod; a priority-1000 gang of 2 pinned to n1, m0 bringing another volume. When the dry
    run puts the holder back, NodeVolumeLimits (no PreFilter Skip for a pod with a claim) counts two volumes
    and rejects m0: both schedulers evict the holder, spare the volume-less bystander on n1, and bind the
    gang to n1."""
    names = [f"{ns}-n1" for ns in sides.values()]
    for node in names:
        driver = {"name": CSI_DRIVER, "nodeID": node, "allocatable": {"count": 1}}
        create(kube_client, {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": node},
                             "spec": {"drivers": [driver]}})  # fmt: skip
    try:
        _bound_claims(kube_client, sides, {c: lambda ns, c=c: _static_pv(f"{ns}-gv-{c}") for c in ("a", "b")})
        for side, ns in sides.items():
            _priority_class(kube_client, ns)
            pinned = {HOSTNAME: f"{ns}-n1"}
            create(kube_client, _using(ns, "holder", side, "a", nodeSelector=pinned))
            small = {"resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}
            bystander = pod(ns, "bystander", SCHEDULERS[side], {}, container=small, nodeSelector=pinned)
            create(kube_client, bystander)
        settle(kube_client, sides, ["holder", "bystander"], lambda o: o["holder"] == o["bystander"] == "n1")
        for side, ns in sides.items():
            _gang_on_n1(kube_client, side, ns, "b")
        outcomes = settle(kube_client, sides, ["m0", "m1", "bystander"], lambda o: o["m0"] == o["m1"] == "n1")
        assert outcomes == {side: {"m0": "n1", "m1": "n1", "bystander": "n1"} for side in sides}
        for side, ns in sides.items():
            assert _gone(kube_client, ns, "holder"), side
    finally:
        for ns in sides.values():
            with contextlib.suppress(ApiError):
                kube_client.delete(PriorityClass, f"{ns}-high")
        for node in names:
            with contextlib.suppress(ApiError):
                kube_client.delete(CSINode, node)


EXTENDED = "gpu.gangsched.test/card"  # an extended resource no node offers, named by a DeviceClass


def _extended_device_class() -> dict[str, Any]:
    """A DeviceClass serving EXTENDED with the test driver's devices."""
    return {
        "apiVersion": RESOURCE,
        "kind": "DeviceClass",
        "metadata": {"name": "gangsched-test-ext-gpu"},
        "spec": {
            "extendedResourceName": EXTENDED,
            "selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}],
        },
    }


def _special_claim_view(client: Client, ns: str, pod_name: str) -> dict[str, Any]:
    """The pod's special claim for extended resources and what points to it, side-neutral: names and UIDs
    checked against the pod, pools by node suffix."""
    p = client.get(Pod, pod_name, namespace=ns)
    status = p.status.extendedResourceClaimStatus
    assert status is not None, (ns, pod_name)
    claim = client.get(ResourceClaim, status.resourceClaimName, namespace=ns)
    meta = claim.metadata
    assert (
        meta.name.startswith(f"{pod_name}-extended-resources-")
        and len(meta.name) == len(meta.generateName) + 5
    )
    (owner,) = meta.ownerReferences
    assert (owner.uid, owner.controller) == (p.metadata.uid, True), (ns, owner)
    allocation = claim.status.allocation
    (reserved,) = claim.status.reservedFor
    assert reserved.uid == p.metadata.uid, (ns, reserved)
    return {
        "generateName": meta.generateName,
        "annotations": meta.annotations,
        "owner": (owner.apiVersion, owner.kind, owner.name),
        "finalizers": meta.finalizers,
        "spec": claim.spec.to_dict(),
        "results": [
            (r.request, r.driver, r.pool.removeprefix(f"{ns}-"), r.device) for r in allocation.devices.results
        ],
        "nodes": allocation.nodeSelector.nodeSelectorTerms[0].matchFields[0].values == [p.spec.nodeName],
        "stamped": allocation.allocationTimestamp is not None,
        "reservedFor": (reserved.resource, reserved.name),
        "mappings": [m.to_dict() for m in status.requestMappings],
    }


def test_extended_resource_served_by_devices(kube_client: Client, sides: dict[str, str]) -> None:
    """DRAExtendedResource: a DeviceClass names an extended resource no node offers; n1 has 2 devices, n2
    one. p0 asks for 2 and gets n1's, p1 for 1 and gets n2's, p2 finds none. Both schedulers write the same
    special claim (generateName, owner, annotation, finalizer, requests, allocation, reservedFor) and the same
    pod.status.extendedResourceClaimStatus, and leave p2 with the same message."""
    create(kube_client, _extended_device_class())
    for ns in sides.values():
        create(kube_client, _slice(f"{ns}-n1-gpus", f"{ns}-n1", ["gpu-0", "gpu-1"]))
        create(kube_client, _slice(f"{ns}-n2-gpus", f"{ns}-n2", ["gpu-0"]))
    asks = {"p0": "2", "p1": "1", "p2": "1"}
    outcomes: dict[str, dict[str, str]] = {}
    for name, count in asks.items():  # one at a time: the order decides which devices each gets
        for side, ns in sides.items():
            container = {"resources": {"limits": {EXTENDED: count}}}
            create(kube_client, pod(ns, name, SCHEDULERS[side], container=container))
        outcomes = settle(
            kube_client, sides, list(asks)[: int(name[1]) + 1], lambda o, n=name: o[n] != "pending"
        )
    try:
        assert outcomes["kube"] == outcomes["gangsched"], outcomes
        assert outcomes["kube"]["p0"] == "n1" and outcomes["kube"]["p1"] == "n2", outcomes
        assert "cannot allocate all claims" in outcomes["kube"]["p2"], outcomes
        views = {
            side: {n: _special_claim_view(kube_client, ns, n) for n in ("p0", "p1")}
            for side, ns in sides.items()
        }
        assert views["kube"] == views["gangsched"], views
        p0 = views["kube"]["p0"]
        assert p0["results"] == [
            ("container-0-request-0", DRIVER, "n1", "gpu-0"),
            ("container-0-request-0", DRIVER, "n1", "gpu-1"),
        ]
        assert p0["mappings"] == [
            {"containerName": "c", "resourceName": EXTENDED, "requestName": "container-0-request-0"}
        ]
        for ns in sides.values():
            assert kube_client.get(Pod, "p2", namespace=ns).status.extendedResourceClaimStatus is None
    finally:
        for ns in sides.values():
            for suffix in ("n1", "n2"):
                kube_client.delete(ResourceSlice, f"{ns}-{suffix}-gpus")


def test_extended_resources_inside_gangs(kube_client: Client, sides: dict[str, str]) -> None:
    """DRAExtendedResource in gangs: one device on n1, one on n2. A gang of 3 asking for one each cannot
    fit (the third member finds both taken in the cycle): with both schedulers nothing is bound and no
    special claim written. A gang of 2 then gets one device each, on both nodes, each member's special claim
    allocated where it runs."""
    create(kube_client, _extended_device_class())
    container = {"resources": {"limits": {EXTENDED: "1"}}}

    def gang(ns: str, side: str, name: str, members: list[str]) -> None:
        spec = {"schedulingPolicy": {"gang": {"minCount": len(members)}}}
        meta = {"name": name, "namespace": ns}
        group = {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "PodGroup",
            "metadata": meta,
            "spec": spec,
        }
        create(kube_client, group)
        for m in members:
            member = pod(ns, m, SCHEDULERS[side], container=container, schedulingGroup={"podGroupName": name})
            create(kube_client, member)

    for side, ns in sides.items():
        create(kube_client, _slice(f"{ns}-n1-gpus", f"{ns}-n1", ["gpu-0"]))
        create(kube_client, _slice(f"{ns}-n2-gpus", f"{ns}-n2", ["gpu-0"]))
        gang(ns, side, "big", ["w0", "w1", "w2"])
    try:
        big = ["w0", "w1", "w2"]
        outcomes = settle(kube_client, sides, big, lambda o: all(v != "pending" for v in o.values()))
        for side, ns in sides.items():
            assert all(v.startswith("Unschedulable: ") for v in outcomes[side].values()), (side, outcomes)
            assert not list(kube_client.list(ResourceClaim, namespace=ns)), side
        for side, ns in sides.items():
            gang(ns, side, "small", ["v0", "v1"])
        outcomes = settle(kube_client, sides, ["v0", "v1"], lambda o: "pending" not in o.values())
        for side, ns in sides.items():
            assert sorted(outcomes[side].values()) == ["n1", "n2"], (side, outcomes)
            for member in ("v0", "v1"):
                view = _special_claim_view(kube_client, ns, member)
                node = outcomes[side][member]
                assert view["results"] == [("container-0-request-0", DRIVER, node, "gpu-0")], (side, view)
                assert view["nodes"] and view["reservedFor"] == ("pods", member), (side, view)
            assert not [
                c.metadata.name
                for c in kube_client.list(ResourceClaim, namespace=ns)
                if c.metadata.name[0] == "w"
            ], side
    finally:
        for ns in sides.values():
            for suffix in ("n1", "n2"):
                kube_client.delete(ResourceSlice, f"{ns}-{suffix}-gpus")
