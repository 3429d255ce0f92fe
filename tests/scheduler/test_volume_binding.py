"""VolumeBinding's choice of a PersistentVolume for a WaitForFirstConsumer claim, case by case, written by
hand from upstream's rules: FindMatchingVolume (component-helpers storage/volume/pv_helpers.go, v0.37.2)
and the binder's findMatchingVolumes / checkVolumeProvisions (pkg/scheduler/framework/plugins/volumebinding/
binder.go, v1.37.2), whose table tests (binder_test.go, index_test.go) these cases follow.

A case's PVs are local (pinned to a node by its hostname); the PV to pass over is smaller than the one to
take and on the same node, so that a rule left out shows as the wrong PV, not as a coin toss between nodes. A
case states the binding (PV, node) or that no node offers a PV."""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.scheduler import run_until_stable
from gangsched.store import Store

from .builders import build

NO_PV = (
    "0/{n} nodes are available: {n} node(s) didn't find available persistent volumes to bind. "
    "preemption: 0/{n} nodes are available: {n} Preemption is not helpful for scheduling."
)
LOCAL = "local"  # a class without a provisioner: a claim gets a PV or nothing
ZONAL = "zonal"  # a class whose provisioner creates volumes
SELECTED = "volume.kubernetes.io/selected-node"
IN_ZONE_B = {"matchLabelExpressions": [{"key": "zone", "values": ["b"]}]}


def node(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}}}  # fmt: skip


def storage_class(name: str, provisioner: str, **more: Any) -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
            "provisioner": provisioner, "volumeBindingMode": "WaitForFirstConsumer", **more}  # fmt: skip


def pv(
    name: str,
    on: str,
    size: str = "10Gi",
    *,
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    labels: dict[str, str] | None = None,
    status: dict[str, Any] | None = None,
    klass: str = LOCAL,
    **spec: Any,
) -> dict[str, Any]:
    """A local PV on node `on`."""
    on_node = {"key": "kubernetes.io/hostname", "operator": "In", "values": [on]}
    affinity = {"required": {"nodeSelectorTerms": [{"matchExpressions": [on_node]}]}}
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": list(modes),
            "storageClassName": klass,
            "local": {"path": "/mnt/0"},
            "nodeAffinity": affinity,
            **spec,
        },
    }
    if status is not None:
        obj["status"] = status
    return obj


def pvc(
    name: str = "data",
    size: str = "10Gi",
    *,
    modes: tuple[str, ...] = ("ReadWriteOnce",),
    klass: str = LOCAL,
    annotations: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default", "annotations": annotations or {}},
        "spec": {
            "storageClassName": klass,
            "accessModes": list(modes),
            "resources": {"requests": {"storage": size}},
            **spec,
        },
    }


def pod(*claims: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "i"}],
                     "volumes": [{"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
                                 for i, c in enumerate(claims or ("data",))]}}  # fmt: skip


NODES = [node("node-1", zone="a"), node("node-2", zone="a"), node("node-3", zone="b")]


def schedule(*objects: dict[str, Any], nodes: list[dict[str, Any]] = NODES) -> Store:
    classes = [storage_class(LOCAL, "kubernetes.io/no-provisioner")]
    store, scheduler = build([*nodes, *classes, *objects])
    run_until_stable(store, scheduler)
    return store


def outcome(store: Store) -> dict[str, Any]:
    """The pod's node or pending message, and every volume binding decided."""
    p = store.get("Pod", ("default", "p"))
    cond = next(c for c in p.status.conditions if c.type == "PodScheduled")
    return {
        "node": p.spec.nodeName or cond.message,
        "bindings": {vb.pvc[1]: (vb.pv, vb.node) for vb in store.volume_bindings},
    }


def bound(pv_name: str | None, node_name: str, claim: str = "data") -> dict[str, Any]:
    return {"node": node_name, "bindings": {claim: (pv_name, node_name)}}


NONE_FITS = {"node": NO_PV.format(n=3), "bindings": {}}


@pytest.mark.parametrize(
    ("objects", "want"),
    [
        pytest.param(
            [pv("a", "node-1", "5Gi"), pv("b", "node-1", "20Gi")], bound("b", "node-1"), id="too-small"
        ),
        pytest.param(
            [pv("a", "node-1", "20Gi"), pv("b", "node-1", "10Gi")], bound("b", "node-1"), id="smallest"
        ),
        pytest.param([pv("a", "node-1", "10G")], NONE_FITS, id="10G-is-less-than-10Gi"),
        pytest.param(
            [pv("a", "node-1", volumeMode="Block"), pv("b", "node-1", "20Gi")],
            bound("b", "node-1"),
            id="block-pv-for-filesystem-claim",
        ),
        pytest.param(
            [pv("a", "node-1"), pv("b", "node-1", "20Gi", volumeMode="Block"), pvc(volumeMode="Block")],
            bound("b", "node-1"),
            id="block-claim-takes-block-pv",
        ),
        pytest.param(
            [
                pv("a", "node-1"),
                pv("b", "node-1", "20Gi", modes=("ReadWriteOnce", "ReadWriteMany")),
                pvc(modes=("ReadWriteMany",)),
            ],
            bound("b", "node-1"),
            id="access-modes",
        ),
        pytest.param(
            [
                pv("a", "node-1", status={"phase": "Released"}),
                pv("b", "node-1", "20Gi", status={"phase": "Available"}),
            ],
            bound("b", "node-1"),
            id="released-pv",
        ),
        pytest.param(
            [pv("a", "node-1", status={"phase": "Available"}), pv("b", "node-1", "20Gi")],
            bound("a", "node-1"),
            id="available-pv",
        ),
        pytest.param(
            [
                pv("a", "node-1", status={"phase": "Failed"}),
                pv("b", "node-1", "20Gi", status={"phase": "Pending"}),
            ],
            NONE_FITS,
            id="neither-available",
        ),
        pytest.param(
            [
                pv("a", "node-1", claimRef={"namespace": "default", "name": "other"}),
                pv("b", "node-1", "20Gi"),
            ],
            bound("b", "node-1"),
            id="pv-reserved-for-another-claim",
        ),
        pytest.param(
            [pv("a", "node-1", claimRef={"namespace": "other", "name": "data"}), pv("b", "node-1", "20Gi")],
            bound("b", "node-1"),
            id="pv-reserved-for-a-claim-of-another-namespace",
        ),
        pytest.param(
            [pv("a", "node-1"), pv("b", "node-1", "20Gi", claimRef={"namespace": "default", "name": "data"})],
            bound("b", "node-1"),
            id="pre-bound-pv-wins-over-a-smaller-one",
        ),
        pytest.param(
            [
                pv(
                    "a",
                    "node-1",
                    claimRef={"namespace": "default", "name": "data"},
                    status={"phase": "Released"},
                )
            ],
            bound("a", "node-1"),
            id="pre-bound-pv-in-any-phase",
        ),
        pytest.param(
            [
                pv("a", "node-1", "5Gi", claimRef={"namespace": "default", "name": "data"}),
                pv("b", "node-1", "20Gi"),
            ],
            bound("b", "node-1"),
            id="pre-bound-pv-too-small",
        ),
        pytest.param(
            [
                pv(
                    "a",
                    "node-1",
                    "20Gi",
                    claimRef={"namespace": "default", "name": "data", "uid": "not-the-claim"},
                ),
                pv("b", "node-1", "30Gi"),
            ],
            bound("b", "node-1"),
            id="pre-bound-to-another-uid",
        ),
        pytest.param(
            [
                pv("a", "node-1", labels={"tier": "gold"}),
                pv("b", "node-1", "20Gi", labels={"tier": "silver"}),
                pvc(selector={"matchLabels": {"tier": "silver"}}),
            ],
            bound("b", "node-1"),
            id="selector-match-labels",
        ),
        pytest.param(
            [
                pv("a", "node-1", labels={"tier": "gold"}),
                pv("b", "node-1", "20Gi", labels={"tier": "silver"}),
                pvc(selector={"matchExpressions": [{"key": "tier", "operator": "In", "values": ["silver"]}]}),
            ],
            bound("b", "node-1"),
            id="selector-in",
        ),
        pytest.param(
            [
                pv("a", "node-1", labels={"tier": "gold"}),
                pv("b", "node-1", "20Gi", labels={"tier": "silver"}),
                pvc(
                    selector={"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["gold"]}]}
                ),
            ],
            bound("b", "node-1"),
            id="selector-not-in",
        ),
        pytest.param(
            [
                pv("a", "node-1"),
                pv("b", "node-1", "20Gi", labels={"fast": ""}),
                pvc(selector={"matchExpressions": [{"key": "fast", "operator": "Exists"}]}),
            ],
            bound("b", "node-1"),
            id="selector-exists",
        ),
        pytest.param(
            [
                pv("a", "node-1", labels={"slow": ""}),
                pv("b", "node-1", "20Gi"),
                pvc(selector={"matchExpressions": [{"key": "slow", "operator": "DoesNotExist"}]}),
            ],
            bound("b", "node-1"),
            id="selector-does-not-exist",
        ),
        pytest.param(
            [pv("a", "node-1", labels={"tier": "gold"}), pvc(selector={"matchLabels": {"tier": "silver"}})],
            NONE_FITS,
            id="selector-matches-no-pv",
        ),
        pytest.param(
            [pv("a", "node-1", klass="other"), pv("b", "node-1", "20Gi")],
            bound("b", "node-1"),
            id="other-class",
        ),
        pytest.param(
            [
                storage_class(ZONAL, "csi.example.com"),
                pv("a", "node-1", klass=ZONAL),
                pvc(klass=ZONAL, annotations={SELECTED: "node-2"}),
            ],
            {"node": "node-2", "bindings": {"data": (None, "node-2")}},
            id="selected-node-annotation",
        ),
        pytest.param(
            [storage_class(ZONAL, "csi.example.com"), pvc(klass=ZONAL, annotations={SELECTED: "gone"})],
            NONE_FITS,
            id="selected-node-not-in-the-cluster",
        ),
        pytest.param(
            # checkVolumeProvisions still asks the class: no provisioner, no volume
            [pv("a", "node-1"), pvc(annotations={SELECTED: "node-1"})],
            NONE_FITS,
            id="selected-node-of-a-class-without-provisioner",
        ),
        pytest.param(
            [
                storage_class(ZONAL, "csi.example.com", allowedTopologies=[IN_ZONE_B]),
                pvc(klass=ZONAL, annotations={SELECTED: "node-1"}),
            ],
            NONE_FITS,
            id="selected-node-outside-allowed-topologies",
        ),
        pytest.param(
            [pv("a", "node-1", volumeAttributesClassName="gold"), pv("b", "node-1", "20Gi")],
            bound("b", "node-1"),
            id="pv-with-attributes-class",
        ),
        pytest.param(
            [
                pv("a", "node-1"),
                pv("b", "node-1", "20Gi", volumeAttributesClassName="gold"),
                pvc(volumeAttributesClassName="gold"),
            ],
            bound("b", "node-1"),
            id="claim-with-attributes-class",
        ),
    ],
)
def test_one_claim_finds_its_pv(objects: list[dict[str, Any]], want: dict[str, Any]) -> None:
    if not any(o["kind"] == "PersistentVolumeClaim" for o in objects):
        objects = [*objects, pvc()]
    assert outcome(schedule(*objects, pod())) == want


def test_pv_being_deleted_is_not_bound() -> None:
    gone = pv("a", "node-1")
    gone["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    gone["metadata"]["finalizers"] = ["kubernetes.io/pv-protection"]
    assert outcome(schedule(gone, pv("b", "node-1", "20Gi"), pvc(), pod())) == bound("b", "node-1")


def test_two_claims_of_one_pod_never_share_a_pv() -> None:
    """Two claims that both fit the one PV of node-1: a node must offer each claim a PV of its own
    (findMatchingVolumes excludes the PVs chosen for the pod's earlier claims). The smaller request is
    matched first and takes the smaller PV."""
    objects = [pv("a", "node-1"), pv("b", "node-2"), pv("c", "node-2", "20Gi"), pvc("d2"), pvc("d1", "5Gi")]
    assert outcome(schedule(*objects, pod("d2", "d1"))) == {
        "node": "node-2",
        "bindings": {"d1": ("b", "node-2"), "d2": ("c", "node-2")},
    }


def test_two_claims_smallest_request_first() -> None:
    """Claims are matched smallest request first (byPVCSize): the 5Gi claim takes the 10Gi PV, leaving the
    20Gi one to the 10Gi claim; in the pod's order the 10Gi claim would take the 10Gi PV instead."""
    objects = [pv("a", "node-1", "10Gi"), pv("b", "node-1", "20Gi"), pvc("big", "10Gi"), pvc("small", "5Gi")]
    store = schedule(*objects, pod("big", "small"))
    assert outcome(store) == {
        "node": "node-1",
        "bindings": {"big": ("b", "node-1"), "small": ("a", "node-1")},
    }


def test_two_claims_one_provisioned_one_selected() -> None:
    """With several claims: a claim whose node was already selected pins the pod there, a claim of a
    provisioning class is provisioned where no PV serves it, and a node lacking either is not chosen."""
    objects = [
        storage_class(ZONAL, "csi.example.com"),
        pv("a", "node-1"),
        pvc("pinned", klass=ZONAL, annotations={SELECTED: "node-3"}),
        pvc("fresh", klass=ZONAL),
    ]
    assert outcome(schedule(*objects, pod("pinned", "fresh"))) == {
        "node": "node-3",
        "bindings": {"pinned": (None, "node-3"), "fresh": (None, "node-3")},
    }


def test_two_claims_of_a_class_without_provisioner_and_no_pv() -> None:
    objects = [pv("a", "node-1"), pvc("d1"), pvc("d2", "20Gi")]
    assert outcome(schedule(*objects, pod("d1", "d2"))) == NONE_FITS


@pytest.mark.parametrize(
    ("klass", "want"),
    [
        # allowedTopologies: terms are ORed, a term's expressions ANDed, an expression's values ORed
        ({"allowedTopologies": [IN_ZONE_B]}, ["node-3"]),
        (
            {"allowedTopologies": [{"matchLabelExpressions": [{"key": "zone", "values": ["x", "a"]}]}]},
            ["node-1", "node-2"],
        ),
        (
            {
                "allowedTopologies": [
                    {
                        "matchLabelExpressions": [
                            {"key": "rack", "values": ["r2"]},
                            {"key": "zone", "values": ["a"]},
                        ]
                    },
                    {"matchLabelExpressions": [{"key": "zone", "values": ["b"]}]},
                ]
            },
            ["node-2", "node-3"],
        ),
        ({"allowedTopologies": [{"matchLabelExpressions": [{"key": "zone", "values": ["x"]}]}]}, []),
        ({"allowedTopologies": [{"matchLabelExpressions": [{"key": "nolabel", "values": ["a"]}]}]}, []),
        ({}, ["node-1", "node-2", "node-3"]),
    ],
)
def test_provisioning_allowed_topologies(klass: dict[str, Any], want: list[str]) -> None:
    """Node by node (the pod pinned to it by a matchFields term): may the claim be provisioned there?"""
    nodes = [
        node("node-1", zone="a", rack="r1"),
        node("node-2", zone="a", rack="r2"),
        node("node-3", zone="b"),
    ]
    provisionable = []
    for name in ("node-1", "node-2", "node-3"):
        pinned = pod()
        pin = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [name]}]}
        pinned["spec"]["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [pin]}}
        }
        store = schedule(
            storage_class(ZONAL, "csi.example.com", **klass), pvc(klass=ZONAL), pinned, nodes=nodes
        )
        if outcome(store) == {"node": name, "bindings": {"data": (None, name)}}:
            provisionable.append(name)
    assert provisionable == want


def test_class_that_cannot_provision() -> None:
    objects = [storage_class(ZONAL, "kubernetes.io/no-provisioner"), pvc(klass=ZONAL), pod()]
    assert outcome(schedule(*objects)) == NONE_FITS


def test_claim_of_a_class_that_does_not_exist_waits() -> None:
    """IsDelayBindingMode reads a class that does not exist as not WaitForFirstConsumer: the unbound claim
    is an Immediate one, and the pod stops at PreFilter."""
    assert outcome(schedule(pv("a", "node-1"), pvc(klass="missing"), pod())) == {
        "node": "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
        "bindings": {},
    }


def bound_claim(name: str, *terms: list[str]) -> list[dict[str, Any]]:
    """A claim bound to a PV whose required node affinity has one term per list of hostnames."""
    affinity = {"required": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": hosts}]}
        for hosts in terms]}}  # fmt: skip
    volume = pv(name, "unused", claimRef={"namespace": "default", "name": name}, status={"phase": "Bound"})
    volume["spec"]["nodeAffinity"] = affinity
    claim = pvc(name, volumeName=name)
    claim["status"] = {"phase": "Bound"}
    return [volume, claim]


def test_bound_pv_node_affinity_terms_are_ored() -> None:
    """checkBoundClaims: the PV's nodeSelectorTerms are ORed (a term naming no node is just false)."""
    store = schedule(*bound_claim("data", ["node-2"], ["node-9"]), pod())
    assert outcome(store) == {"node": "node-2", "bindings": {}}


def test_every_bound_claim_of_the_pod_must_admit_the_node() -> None:
    store = schedule(
        *bound_claim("d1", ["node-1"]), *bound_claim("d2", ["node-2"], ["node-3"]), pod("d1", "d2")
    )
    assert outcome(store) == {
        "node": "0/3 nodes are available: 3 node(s) didn't match PersistentVolume's node affinity. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
        "bindings": {},
    }
