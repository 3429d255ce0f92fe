"""Preemption units (victims.py), on hand-made objects: which pods form one unit, its priority, its group,
and how units are ordered. Expectations follow upstream's getCrossNodesVictims / moreImportantVictim."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gangsched.api.gates import FeatureGates
from gangsched.scheduler.podinfo import PodInfo, pod_info
from gangsched.scheduler.victims import collect_units, sort_by_importance
from tests.scenarios.harness import load_objects


class Objects:
    """A minimal ObjectReader over a list of loaded objects."""

    def __init__(self, objs: list[Any]) -> None:
        self.objs = {(o.kind, (o.metadata.namespace or "", o.metadata.name)): o for o in objs}

    def get(self, kind: str, key: tuple[str, str]) -> Any | None:
        return self.objs.get((kind, key))

    def list(self, kind: str) -> Iterator[Any]:
        return (o for (k, _), o in self.objs.items() if k == kind)


def _group(name: str, priority: int, mode: str = "single", parent: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulingPolicy": {"gang": {"minCount": 1}},
        "priority": priority,
        "disruptionMode": {mode: {}},
    }
    if parent:
        spec["parentCompositePodGroupName"] = parent
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": spec,
    }


def _composite(name: str, mode: str, parent: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "workloadRef": {"workloadName": "w", "templateName": name},
        "schedulingPolicy": {"gang": {"minGroupCount": 1}},
        "disruptionMode": {mode: {}},
    }
    if parent:
        spec["parentCompositePodGroupName"] = parent
    meta = {"name": name}
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha3",
        "kind": "CompositePodGroup",
        "metadata": meta,
        "spec": spec,
    }


def _pod(name: str, priority: int, group: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "nodeName": "n1",
        "priority": priority,
        "containers": [{"name": "c", "image": "i"}],
    }
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def _units(docs: list[dict[str, Any]], below: int | None = None) -> list[tuple[list[str], int, Any]]:
    objs = load_objects(docs, "test", FeatureGates(), check=False)
    infos: dict[tuple[str, str], PodInfo] = {}
    for i, o in enumerate(x for x in objs if x.kind == "Pod"):
        infos[(o.metadata.namespace, o.metadata.name)] = pod_info(o, i)
    units = sort_by_importance(collect_units(list(infos), infos, Objects(objs), below))
    return [(sorted(pi.key[1] for pi in u.pods), u.priority, u.whole_group) for u in units]


def test_a_unit_takes_its_groups_priority_and_an_all_group_is_one_unit_naming_its_podgroup() -> None:
    docs = [_group("g", 7, "all"), _pod("a", 0, "g"), _pod("b", 0, "g"), _pod("lone", 3)]
    assert _units(docs) == [(["a", "b"], 7, ("PodGroup", "default", "g")), (["lone"], 3, None)]


def test_the_highest_all_ancestor_is_the_unit_through_a_chain_of_composites() -> None:
    docs = [
        _composite("top", "all"),
        _composite("mid", "single", parent="top"),
        _group("g1", 5, parent="mid"),
        _group("g2", 5, parent="mid"),
        _pod("a", 5, "g1"),
        _pod("b", 5, "g2"),
    ]
    assert _units(docs) == [(["a", "b"], 5, ("CompositePodGroup", "default", "top"))]


def test_a_missing_group_or_parent_leaves_the_pods_as_single_units_at_their_own_priority() -> None:
    docs = [_pod("orphan", 4, "nowhere"), _group("g", 6, parent="gone"), _pod("child", 6, "g")]
    assert _units(docs) == [(["child"], 6, None), (["orphan"], 4, None)]
    assert _units(docs, below=5) == [(["orphan"], 4, None)]


def test_only_units_strictly_below_the_preemptor_and_every_group_is_looked_at() -> None:
    docs = [
        _group("high", 9),
        _pod("h", 9, "high"),
        _group("low", 2),
        _pod("l", 2, "low"),
        _pod("equal", 5),
        _pod("under", 4),
    ]
    assert _units(docs, below=5) == [(["under"], 4, None), (["l"], 2, None)]


def test_importance_groups_before_lone_pods_bigger_groups_first() -> None:
    docs = [
        _group("small", 1, "all"),
        _pod("s", 1, "small"),
        _group("big", 1, "all"),
        _pod("b1", 1, "big"),
        _pod("b2", 1, "big"),
        _pod("lone", 1),
    ]
    assert [names for names, _, _ in _units(docs)] == [["b1", "b2"], ["s"], ["lone"]]


def test_a_group_of_priority_zero_is_below_a_preemptor_of_priority_one() -> None:
    docs = [_group("g", 0), _pod("a", 0, "g")]
    assert _units(docs, below=1) == [(["a"], 0, None)]


def test_pods_of_a_deleted_group_at_the_preemptors_priority_are_out_of_reach() -> None:
    """Running pods whose PodGroup is gone are single units at their own priority, and only those strictly
    below the preemptor's are candidates (upstream's `< preemptor priority`), as for any pod."""
    docs = [_pod("equal", 5, "gone"), _pod("under", 4, "gone")]
    assert _units(docs, below=5) == [(["under"], 4, None)]


def test_a_cycle_of_composites_ends_the_walk_up() -> None:
    """A parent cycle is invalid input, but units are still collected (and the walk terminates)."""
    docs = [
        _composite("x", "all", parent="y"),
        _composite("y", "single", parent="x"),
        _group("g", 3, parent="x"),
        _pod("a", 3, "g"),
    ]
    assert _units(docs) == [(["a"], 3, ("CompositePodGroup", "default", "x"))]


def test_a_bound_key_without_a_pod_is_skipped_not_the_end() -> None:
    objs = load_objects([_pod("a", 1), _pod("b", 2)], "test", FeatureGates(), check=False)
    infos = {(o.metadata.namespace, o.metadata.name): pod_info(o, i) for i, o in enumerate(objs)}
    units = collect_units([("default", "gone"), *infos], infos, Objects(objs))
    assert sorted(pi.key[1] for u in units for pi in u.pods) == ["a", "b"]
