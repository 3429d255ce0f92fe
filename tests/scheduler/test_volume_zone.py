"""VolumeZone: a bound PV's zone and region labels against the node's, case by case, written by hand from
upstream's rules (plugins/volumezone/volume_zone.go, v1.37.2): every topology label of the PV must be matched
(a value may list several zones joined by `__`); the node's label of the PV's own key is read, and the GA key
only when the node lacks it (translateToGALabel); a node without any topology label takes any volume.

Each case leaves at most one node acceptable, so the pod's node (or its pending message) is the verdict."""

from __future__ import annotations

from typing import Any

import pytest

from .test_volume_binding import node, outcome, pod, schedule

ZONE, REGION = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"
BETA_ZONE, BETA_REGION = "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region"


def none_fits(n: int) -> str:
    return (
        f"0/{n} nodes are available: {n} node(s) had no available volume zone. "
        f"preemption: 0/{n} nodes are available: {n} Preemption is not helpful for scheduling."
    )


def bound_pv(labels: dict[str, str]) -> list[dict[str, Any]]:
    """A PV with these labels and the claim `data` bound to it."""
    return [
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv", "labels": labels},
         "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
                  "csi": {"driver": "csi.example.com", "volumeHandle": "pv"},
                  "claimRef": {"namespace": "default", "name": "data"}},
         "status": {"phase": "Bound"}},
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
         "metadata": {"name": "data", "namespace": "default"},
         "spec": {"storageClassName": "", "volumeName": "pv", "accessModes": ["ReadWriteOnce"],
                  "resources": {"requests": {"storage": "1Gi"}}},
         "status": {"phase": "Bound"}},
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("pv_labels", "nodes", "want"),
    [
        pytest.param({ZONE: "a"}, [node("n-a", **{ZONE: "a"}), node("n-b", **{ZONE: "b"})], "n-a", id="zone"),
        pytest.param(
            {ZONE: "b"}, [node("n-a", **{ZONE: "a"}), node("n-b", **{ZONE: "b"})], "n-b", id="zone-2"
        ),
        pytest.param(
            {ZONE: "b__c"},
            [node("n-a", **{ZONE: "a"}), node("n-c", **{ZONE: "c"})],
            "n-c",
            id="several-zones",
        ),
        pytest.param(
            {ZONE: "x"}, [node("n-a", **{ZONE: "a"}), node("n-b", **{ZONE: "b"})], none_fits(2), id="none"
        ),
        pytest.param(
            {BETA_ZONE: "b"},
            [node("n-a", **{ZONE: "a"}), node("n-b", **{ZONE: "b"})],
            "n-b",
            id="beta-pv-ga-node",
        ),
        pytest.param(
            # the node's beta label is read first, though its GA label would match
            {BETA_ZONE: "b"},
            [node("n-x", **{BETA_ZONE: "x", ZONE: "b"}), node("n-c", **{ZONE: "c"})],
            none_fits(2),
            id="beta-label-of-the-node-first",
        ),
        pytest.param(
            {ZONE: "a", REGION: "r1"},
            [node("n-1", **{ZONE: "b", REGION: "r1"}), node("n-2", **{ZONE: "a", REGION: "r2"})],
            none_fits(2),
            id="zone-and-region-both-needed",
        ),
        pytest.param(
            {BETA_REGION: "r1", ZONE: "a"},
            [node("n-1", **{ZONE: "b", REGION: "r1"}), node("n-2", **{ZONE: "a", REGION: "r1"})],
            "n-2",
            id="beta-region-and-zone",
        ),
        pytest.param(
            {ZONE: "a"},
            [node("n-b", **{ZONE: "b"}), node("bare", other="x")],
            "bare",
            id="node-without-topology",
        ),
        pytest.param(
            # a node with any topology label is constrained, even one the PV does not name
            {ZONE: "a"},
            [node("n-b", **{ZONE: "b"}), node("region-only", **{REGION: "r1"})],
            none_fits(2),
            id="node-with-region-only",
        ),
        pytest.param({}, [node("n-b", **{ZONE: "b"})], "n-b", id="pv-without-topology"),
    ],
)
def test_volume_zone(pv_labels: dict[str, str], nodes: list[dict[str, Any]], want: str) -> None:
    store = schedule(*bound_pv(pv_labels), pod(), nodes=nodes)
    assert outcome(store)["node"] == want
