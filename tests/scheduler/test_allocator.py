"""The structured allocator (devices.allocate) on cases modelled on upstream's allocator tests
(k8s.io/dynamic-resource-allocation/structured/internal/allocatortesting): expectations written by hand."""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.api.defaults import claim_spec_defaults
from gangsched.api.loader import load_documents
from gangsched.scheduler.devices import AllocationError, DeviceCatalog, allocate
from gangsched.scheduler.snapshot import Snapshot
from gangsched.store import Store

DRIVER = "driver-a"


def _node(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}}


def _slice(name: str, pool: str, devices: list[dict[str, Any]], **where: Any) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": DRIVER,
            "pool": {
                "name": pool,
                "generation": where.pop("generation", 1),
                "resourceSliceCount": where.pop("count", 1),
            },
            "devices": devices,
            **where,
        },
    }


def _dev(name: str, **attrs: Any) -> dict[str, Any]:
    return {"name": name, "attributes": {k: v for k, v in attrs.items()}}


CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "class-a"},
    "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
}


def _claim(name: str, requests: list[dict[str, Any]], constraints: list[dict[str, Any]] | None = None) -> Any:
    doc = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": requests, "constraints": constraints or []}},
    }
    (item,) = load_documents([doc], "t").objects
    claim_spec_defaults(item.obj.spec)
    return item.obj


def _catalog(*docs: dict[str, Any]) -> DeviceCatalog:
    store = Store()
    store.add_all(i.obj for i in load_documents([CLASS, *docs], "t").objects)
    return DeviceCatalog(store, Snapshot(store.list("Node")))


def _devices(result: Any) -> list[list[tuple[str, str]]]:
    return [[(req, dev[2]) for req, dev in a.results] for a in result]


def test_two_devices_from_one_node_local_pool() -> None:
    cat = _catalog(_node("n1"), _slice("s1", "p1", [_dev("d1"), _dev("d2"), _dev("d3")], nodeName="n1"))
    claim = _claim("c", [{"name": "r", "exactly": {"deviceClassName": "class-a", "count": 2}}])
    result = allocate(cat, [claim], 0, set())
    assert result is not None
    assert _devices(result) == [[("r", "d1"), ("r", "d2")]]
    assert result[0].node_selector == {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]
    }


def test_devices_in_use_are_skipped_and_too_few_fail() -> None:
    cat = _catalog(_node("n1"), _slice("s1", "p1", [_dev("d1"), _dev("d2")], nodeName="n1"))
    claim = _claim("c", [{"name": "r", "exactly": {"deviceClassName": "class-a", "count": 2}}])
    assert allocate(cat, [claim], 0, {(DRIVER, "p1", "d1")}) is None
    one = _claim("c", [{"name": "r", "exactly": {"deviceClassName": "class-a"}}])
    assert _devices(allocate(cat, [one], 0, {(DRIVER, "p1", "d1")}) or []) == [[("r", "d2")]]


def test_other_node_slices_are_not_seen() -> None:
    cat = _catalog(_node("n1"), _node("n2"), _slice("s2", "p2", [_dev("d1")], nodeName="n2"))
    claim = _claim("c", [{"name": "r", "exactly": {"deviceClassName": "class-a"}}])
    assert allocate(cat, [claim], 0, set()) is None
    assert allocate(cat, [claim], 1, set()) is not None


def test_all_nodes_and_node_selector_pools() -> None:
    cat = _catalog(
        _node("n1", zone="a"),
        _node("n2", zone="b"),
        _slice("net", "net", [_dev("nic")], allNodes=True),
        _slice(
            "zonal",
            "zonal",
            [_dev("z")],
            nodeSelector={
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}
                ]
            },
        ),
    )
    claim = _claim("c", [{"name": "r", "exactly": {"deviceClassName": "class-a", "allocationMode": "All"}}])
    on_n1 = allocate(cat, [claim], 0, set())
    on_n2 = allocate(cat, [claim], 1, set())
    assert on_n1 is not None and on_n2 is not None
    assert _devices(on_n1) == [[("r", "nic")]]
    assert sorted(_devices(on_n2)[0]) == [("r", "nic"), ("r", "z")]
    assert on_n1[0].node_selector is None  # allNodes: available everywhere
    assert on_n2[0].node_selector == {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}]
    }


def test_all_mode_fails_when_one_matching_device_is_in_use() -> None:
    cat = _catalog(_node("n1"), _slice("s1", "p1", [_dev("d1"), _dev("d2")], nodeName="n1"))
    claim = _claim("c", [{"name": "r", "exactly": {"deviceClassName": "class-a", "allocationMode": "All"}}])
    assert allocate(cat, [claim], 0, {(DRIVER, "p1", "d2")}) is None


def test_all_mode_refuses_an_incomplete_pool() -> None:
    cat = _catalog(_node("n1"), _slice("s1", "p1", [_dev("d1")], nodeName="n1", count=2))
    claim = _claim("c", [{"name": "r", "exactly": {"deviceClassName": "class-a", "allocationMode": "All"}}])
    with pytest.raises(AllocationError, match="is currently being updated"):
        allocate(cat, [claim], 0, set())
    exact = _claim("c", [{"name": "r", "exactly": {"deviceClassName": "class-a"}}])
    assert allocate(cat, [exact], 0, set()) is None  # devices of incomplete pools are never allocated


def test_match_attribute_backtracks_to_a_consistent_set() -> None:
    devices = [
        _dev("d1", numa={"int": 0}),
        _dev("d2", numa={"int": 1}),
        _dev("d3", numa={"int": 1}),
    ]
    cat = _catalog(_node("n1"), _slice("s1", "p1", devices, nodeName="n1"))
    claim = _claim(
        "c",
        [{"name": "r", "exactly": {"deviceClassName": "class-a", "count": 2}}],
        [{"matchAttribute": f"{DRIVER}/numa"}],
    )
    assert _devices(allocate(cat, [claim], 0, set()) or []) == [[("r", "d2"), ("r", "d3")]]


def test_first_available_falls_back_to_the_next_subrequest() -> None:
    devices = [_dev("small", size={"int": 1}), _dev("small2", size={"int": 1})]
    cat = _catalog(_node("n1"), _slice("s1", "p1", devices, nodeName="n1"))
    selector = {"cel": {"expression": f'device.attributes["{DRIVER}"].size > 1'}}
    claim = _claim(
        "c",
        [
            {
                "name": "r",
                "firstAvailable": [
                    {"name": "big", "deviceClassName": "class-a", "selectors": [selector]},
                    {"name": "two-small", "deviceClassName": "class-a", "count": 2},
                ],
            }
        ],
    )
    assert _devices(allocate(cat, [claim], 0, set()) or []) == [
        [("r/two-small", "small"), ("r/two-small", "small2")]
    ]


def test_two_claims_do_not_share_a_device() -> None:
    cat = _catalog(_node("n1"), _slice("s1", "p1", [_dev("d1"), _dev("d2")], nodeName="n1"))
    a = _claim("a", [{"name": "r", "exactly": {"deviceClassName": "class-a"}}])
    b = _claim("b", [{"name": "r", "exactly": {"deviceClassName": "class-a"}}])
    assert _devices(allocate(cat, [a, b], 0, set()) or []) == [[("r", "d1")], [("r", "d2")]]
    c = _claim("c", [{"name": "r", "exactly": {"deviceClassName": "class-a"}}])
    assert allocate(cat, [a, b, c], 0, set()) is None


def test_missing_class_and_cel_runtime_error_are_errors() -> None:
    cat = _catalog(_node("n1"), _slice("s1", "p1", [_dev("d1")], nodeName="n1"))
    missing = _claim("c", [{"name": "r", "exactly": {"deviceClassName": "nope"}}])
    with pytest.raises(AllocationError, match="request r: device class nope does not exist"):
        allocate(cat, [missing], 0, set())
    bad = _claim(
        "c",
        [
            {
                "name": "r",
                "exactly": {
                    "deviceClassName": "class-a",
                    "selectors": [{"cel": {"expression": f'device.attributes["{DRIVER}"].x == 1'}}],
                },
            }
        ],
    )
    with pytest.raises(AllocationError, match="CEL runtime error"):
        allocate(cat, [bad], 0, set())
