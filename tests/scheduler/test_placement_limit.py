"""Upstream's adaptive limit on the topology placements scored (Profile.placement_limit, off by default):
max(1, n * max(5, 100 - nodes * 9 / 500) / 100) of the feasible placements, taken in order, are scored;
the rest are never looked at even when one of them would score best."""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.scheduler import Profile, run_until_stable
from gangsched.scheduler.topology import adaptive_placement_limit

from .builders import build, node, node_of, pod

RACK = "topology.kubernetes.io/rack"
ZONE = "topology.kubernetes.io/zone"


@pytest.mark.parametrize(
    ("placements", "nodes", "scored"),
    [
        (10, 10, 10),  # a small cluster: 100%
        (10, 100, 9),  # 100 - 900/500 = 99%: 9.9 -> 9
        (1000, 5000, 100),  # 100 - 90 = 10%
        (1000, 20000, 50),  # 100 - 360 < 5: at least 5%
        (3, 20000, 1),  # 5% of 3 is 0: at least one
    ],
)
def test_adaptive_placement_limit(placements: int, nodes: int, scored: int) -> None:
    assert adaptive_placement_limit(placements, nodes) == scored


def _cluster() -> list[dict[str, Any]]:
    """600 nodes, 10 racks of 60 (rack-0 .. rack-9 in that order), all in one zone; 10 nodes of the last rack
    full, so that rack-9 is the most allocated placement: 600 nodes let 90% of 10 placements be scored."""
    labels = [{RACK: f"rack-{r}", ZONE: "zone-1"} for r in range(10)]
    docs = [node(f"n{r}-{i}", "4", **labels[r]) for r in range(10) for i in range(60)]
    docs += [pod(f"busy-{i}", cpu="4", node=f"n9-{i}") for i in range(10)]
    return docs


def _group(name: str, topology: str | None, parent: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": 2}}}
    if topology:
        spec["schedulingConstraints"] = {"topology": [{"key": topology}]}
    if parent:
        spec["parentCompositePodGroupName"] = parent
        spec["workloadRef"] = {"workloadName": "wl", "templateName": name}
    meta = {"name": name, "namespace": "default"}
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": meta, "spec": spec}


def _tree() -> list[dict[str, Any]]:
    """A zone-constrained CompositePodGroup root over a rack-constrained gang of 2."""
    template = {
        "name": "root",
        "schedulingPolicy": {"gang": {"minGroupCount": 1}},
        "schedulingConstraints": {"topology": [{"key": ZONE}]},
        "podGroupTemplates": [
            {
                "name": "g",
                "schedulingPolicy": {"gang": {"minCount": 2}},
                "schedulingConstraints": {"topology": [{"key": RACK}]},
            }
        ],
    }
    workload = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload",
                "metadata": {"name": "wl", "namespace": "default"},
                "spec": {"compositePodGroupTemplates": [template]}}  # fmt: skip
    root = {"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup",
            "metadata": {"name": "root", "namespace": "default"},
            "spec": {"workloadRef": {"workloadName": "wl", "templateName": "root"},
                     "schedulingPolicy": {"gang": {"minGroupCount": 1}},
                     "schedulingConstraints": {"topology": [{"key": ZONE}]}}}  # fmt: skip
    return [workload, root, _group("g", RACK, parent="root")]


@pytest.mark.parametrize("shape", ["podgroup", "composite"])
@pytest.mark.parametrize("limit", [False, True])
def test_the_limit_leaves_the_last_feasible_placement_unscored(shape: str, limit: bool) -> None:
    groups = [_group("g", RACK)] if shape == "podgroup" else _tree()
    docs = _cluster() + groups + [pod("g-0", "g"), pod("g-1", "g")]
    store, scheduler = build(docs, Profile(placement_limit=limit))
    run_until_stable(store, scheduler)
    racks = {str(node_of(store, name)).split("-")[0] for name in ("g-0", "g-1")}
    assert len(racks) == 1
    if limit:
        assert racks != {"n9"}  # 9 of the 10 racks scored: rack-9, the best, is not among them
    else:
        assert racks == {"n9"}  # every rack scored: the most allocated wins
