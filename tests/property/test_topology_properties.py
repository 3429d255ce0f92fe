"""Topology invariants on random clusters: every bound pod of a topology-constrained group is in one value of
its key; every child of a composite is inside its parent's domain; a composite tree is bound whole (at least
minGroupCount children, each at least minCount) or not at all."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gangsched.api.gates import FeatureGates
from gangsched.scheduler import Scheduler, run_until_stable
from gangsched.store import Store
from tests.scenarios.harness import load_objects

ZONE, RACK = "topology.kubernetes.io/zone", "topology.kubernetes.io/rack"
PROPERTY = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _node(i: int, zone: int, rack: int | None, cpu: int) -> dict[str, Any]:
    labels = {ZONE: f"z{zone}"}
    if rack is not None:
        labels[RACK] = f"z{zone}-r{rack}"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"n{i}", "labels": labels},
        "status": {"allocatable": {"cpu": str(cpu), "memory": "64Gi", "pods": "110"}},
    }


def _pod(name: str, group: str, cpu: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "schedulingGroup": {"podGroupName": group},
            "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": str(cpu)}}}],
        },
    }


def _group(name: str, min_count: int, key: str | None, parent: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
    if key:
        spec["schedulingConstraints"] = {"topology": [{"key": key}]}
    if parent:
        spec["parentCompositePodGroupName"] = parent
        spec["workloadRef"] = {"workloadName": "wl", "templateName": name}
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": spec,
    }


nodes_st = st.lists(
    st.tuples(st.integers(0, 2), st.one_of(st.none(), st.integers(0, 2)), st.integers(1, 6)),
    min_size=1,
    max_size=14,
)
gangs_st = st.lists(
    st.tuples(st.integers(1, 5), st.integers(0, 2), st.integers(1, 3), st.sampled_from([RACK, ZONE])),
    min_size=1,
    max_size=6,
)


def _domain(store: Store, pod: Any, key: str) -> str | None:
    node = store.get("Node", ("", pod.spec.nodeName))
    return (node.metadata.labels or {}).get(key)


def _run(docs: list[dict[str, Any]], seed: int) -> Store:
    gates = FeatureGates()
    store = Store()
    store.add_all(load_objects(docs, "generated", gates))
    run_until_stable(store, Scheduler(store, gates, seed=seed))
    return store


@PROPERTY
@given(nodes=nodes_st, gangs=gangs_st, seed=st.integers(0, 3))
def test_constrained_gangs_land_in_one_domain(nodes: list[Any], gangs: list[Any], seed: int) -> None:
    docs = [_node(i, z, r, cpu) for i, (z, r, cpu) in enumerate(nodes)]
    for g, (min_count, extra, cpu, key) in enumerate(gangs):
        docs.append(_group(f"g{g}", min_count, key))
        docs += [_pod(f"g{g}-p{i}", f"g{g}", cpu) for i in range(min_count + extra)]
    store = _run(docs, seed)
    domains: dict[str, set[str | None]] = defaultdict(set)
    bound: dict[str, int] = defaultdict(int)
    for pod in store.list("Pod"):
        if pod.spec.nodeName:
            group = pod.spec.schedulingGroup.podGroupName
            key = gangs[int(group[1:])][3]
            domains[group].add(_domain(store, pod, key))
            bound[group] += 1
    for group, values in domains.items():
        assert len(values) == 1 and None not in values, f"{group} spread over {values}"
        assert bound[group] >= gangs[int(group[1:])][0]


@PROPERTY
@given(
    nodes=nodes_st,
    children=st.lists(st.tuples(st.integers(1, 4), st.integers(1, 3)), min_size=1, max_size=3),
    min_groups=st.integers(1, 3),
    seed=st.integers(0, 3),
)
def test_composite_children_stay_in_the_parent_domain(
    nodes: list[Any], children: list[Any], min_groups: int, seed: int
) -> None:
    min_groups = min(min_groups, len(children))
    docs: list[dict[str, Any]] = [_node(i, z, r, cpu) for i, (z, r, cpu) in enumerate(nodes)]
    templates = [
        {
            "name": f"c{i}",
            "schedulingPolicy": {"gang": {"minCount": n}},
            "schedulingConstraints": {"topology": [{"key": RACK}]},
        }
        for i, (n, _) in enumerate(children)
    ]
    docs.append(
        {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "Workload",
            "metadata": {"name": "wl"},
            "spec": {
                "compositePodGroupTemplates": [
                    {
                        "name": "root",
                        "schedulingPolicy": {"gang": {"minGroupCount": min_groups}},
                        "schedulingConstraints": {"topology": [{"key": ZONE}]},
                        "podGroupTemplates": templates,
                    }
                ]
            },
        }
    )
    docs.append(
        {
            "apiVersion": "scheduling.k8s.io/v1alpha3",
            "kind": "CompositePodGroup",
            "metadata": {"name": "root"},
            "spec": {
                "workloadRef": {"workloadName": "wl", "templateName": "root"},
                "schedulingPolicy": {"gang": {"minGroupCount": min_groups}},
                "schedulingConstraints": {"topology": [{"key": ZONE}]},
            },
        }
    )
    for i, (n, cpu) in enumerate(children):
        docs.append(_group(f"c{i}", n, RACK, parent="root"))
        docs += [_pod(f"c{i}-p{j}", f"c{i}", cpu) for j in range(n)]
    store = _run(docs, seed)
    bound = [p for p in store.list("Pod") if p.spec.nodeName]
    zones = {_domain(store, p, ZONE) for p in bound}
    assert len(zones) <= 1, f"tree spread over zones {zones}"
    per_child: dict[str, set[str | None]] = defaultdict(set)
    for p in bound:
        per_child[p.spec.schedulingGroup.podGroupName].add(_domain(store, p, RACK))
    for child, racks in per_child.items():
        assert len(racks) == 1 and None not in racks, f"{child} spread over racks {racks}"
    if bound:  # admitted whole: enough children, each complete
        assert len(per_child) >= min_groups
        for child in per_child:
            n = children[int(child[1:])][0]
            assert sum(1 for p in bound if p.spec.schedulingGroup.podGroupName == child) == n
