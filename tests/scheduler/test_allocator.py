"""The structured allocator (devices.allocate) on cases modelled on upstream's allocator tests
(k8s.io/dynamic-resource-allocation/structured/internal/allocatortesting): expectations written by hand."""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.api.defaults import claim_spec_defaults
from gangsched.api.loader import load_documents
from gangsched.scheduler.devices import (
    AllocationError,
    DeviceCatalog,
    allocate,
    allocate_simple,
    simple_request,
)
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


# Device taints (DRADeviceTaints, on in v1.37): cases of upstream's allocator_testing.go "tainted-*".
NO_SCHEDULE = {"key": "taint-key", "value": "taint-value", "effect": "NoSchedule"}
NO_EXECUTE = {"key": "taint-key", "value": "taint-value-2", "effect": "NoExecute"}
TOLERATE_NO_SCHEDULE = {"key": "taint-key", "operator": "Exists", "effect": "NoSchedule"}
TOLERATE_NO_EXECUTE = {
    "key": "taint-key",
    "operator": "Equal",
    "value": "taint-value-2",
    "effect": "NoExecute",
}


def _tainted(name: str, *taints: dict[str, str]) -> dict[str, Any]:
    return {"name": name, "taints": list(taints)}


def _one(tolerations: list[dict[str, str]] | None = None, **extra: Any) -> Any:
    exactly = {"deviceClassName": "class-a", **extra}
    if tolerations is not None:
        exactly["tolerations"] = tolerations
    return _claim("c", [{"name": "r", "exactly": exactly}])


def _results(result: Any) -> list[list[dict[str, Any]]]:
    """The allocation results as the claim's status would carry them."""
    return [a.to_status()["devices"]["results"] for a in result]


def test_untolerated_taints_keep_devices_from_being_allocated() -> None:
    two = _catalog(
        _node("n1"),
        _slice("s1", "p1", [_tainted("d1", NO_SCHEDULE), _tainted("d2", NO_EXECUTE)], nodeName="n1"),
    )
    assert allocate(two, [_one()], 0, set()) is None  # tainted-two-devices
    both = _catalog(_node("n1"), _slice("s1", "p1", [_tainted("d1", NO_SCHEDULE, NO_EXECUTE)], nodeName="n1"))
    assert allocate(both, [_one()], 0, set()) is None  # tainted-one-device-two-taints
    # a toleration of one taint of two is not enough
    assert allocate(both, [_one([TOLERATE_NO_EXECUTE])], 0, set()) is None


def test_a_tolerated_taint_allows_the_device_and_the_result_carries_the_tolerations() -> None:
    two = _catalog(
        _node("n1"),
        _slice("s1", "p1", [_tainted("d1", NO_SCHEDULE), _tainted("d2", NO_EXECUTE)], nodeName="n1"),
    )
    # tainted-two-devices-tolerated: only d2's taint is tolerated
    assert _results(allocate(two, [_one([TOLERATE_NO_EXECUTE])], 0, set()) or []) == [
        [
            {
                "request": "r",
                "driver": DRIVER,
                "pool": "p1",
                "device": "d2",
                "tolerations": [TOLERATE_NO_EXECUTE],
            }
        ]
    ]
    both = _catalog(_node("n1"), _slice("s1", "p1", [_tainted("d1", NO_SCHEDULE, NO_EXECUTE)], nodeName="n1"))
    # tainted-one-device-two-taints-both-tolerated
    result = allocate(both, [_one([TOLERATE_NO_SCHEDULE, TOLERATE_NO_EXECUTE])], 0, set())
    assert _results(result or []) == [
        [
            {
                "request": "r",
                "driver": DRIVER,
                "pool": "p1",
                "device": "d1",
                "tolerations": [TOLERATE_NO_SCHEDULE, TOLERATE_NO_EXECUTE],
            }
        ]
    ]


def test_a_taint_without_a_blocking_effect_is_ignored() -> None:
    none = {"key": "taint-key", "value": "taint-value", "effect": "None"}
    cat = _catalog(_node("n1"), _slice("s1", "p1", [_tainted("d1", none)], nodeName="n1"))
    assert _results(allocate(cat, [_one()], 0, set()) or []) == [  # tainted-no-effect: no tolerations field
        [{"request": "r", "driver": DRIVER, "pool": "p1", "device": "d1"}]
    ]


def test_first_available_takes_the_subrequest_that_tolerates() -> None:
    two = _catalog(
        _node("n1"),
        _slice("s1", "p1", [_tainted("d1", NO_SCHEDULE), _tainted("d2", NO_EXECUTE)], nodeName="n1"),
    )
    claim = _claim(
        "c",
        [
            {
                "name": "r",
                "firstAvailable": [
                    {"name": "plain", "deviceClassName": "class-a"},
                    {"name": "tolerant", "deviceClassName": "class-a", "tolerations": [TOLERATE_NO_EXECUTE]},
                ],
            }
        ],
    )
    # tainted-two-devices-prioritized-list-tolerated: the subrequest's own tolerations in the result
    assert _results(allocate(two, [claim], 0, set()) or []) == [
        [
            {
                "request": "r/tolerant",
                "driver": DRIVER,
                "pool": "p1",
                "device": "d2",
                "tolerations": [TOLERATE_NO_EXECUTE],
            }
        ]
    ]


def test_all_mode_fails_on_one_untolerated_taint() -> None:
    one = _catalog(_node("n1"), _slice("s1", "p1", [_tainted("d1", NO_SCHEDULE)], nodeName="n1"))
    assert allocate(one, [_one(allocationMode="All")], 0, set()) is None  # tainted-all-devices-single
    mixed = _catalog(
        _node("n1"), _slice("s1", "p1", [_dev("d0"), _tainted("d1", NO_SCHEDULE)], nodeName="n1")
    )
    assert allocate(mixed, [_one(allocationMode="All")], 0, set()) is None  # not just the untainted ones
    tolerant = allocate(mixed, [_one([TOLERATE_NO_SCHEDULE], allocationMode="All")], 0, set())
    assert _devices(tolerant or []) == [[("r", "d0"), ("r", "d1")]]


def test_toleration_matching_rules() -> None:
    """resourceclaim.ToleratesTaint: empty key with Exists matches every key; an effect must be the taint's;
    Equal (the default operator) needs the same value."""
    cat = _catalog(_node("n1"), _slice("s1", "p1", [_tainted("d1", NO_SCHEDULE)], nodeName="n1"))
    assert allocate(cat, [_one([{"operator": "Exists"}])], 0, set()) is not None
    assert allocate(cat, [_one([{"operator": "Exists", "effect": "NoExecute"}])], 0, set()) is None
    assert allocate(cat, [_one([{"key": "taint-key", "value": "taint-value"}])], 0, set()) is not None
    assert allocate(cat, [_one([{"key": "taint-key", "value": "other"}])], 0, set()) is None
    assert allocate(cat, [_one([{"key": "other-key", "operator": "Exists"}])], 0, set()) is None


def _rule(name: str, taint: dict[str, str], **selector: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"taint": taint}
    if selector:
        spec["deviceSelector"] = selector
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceTaintRule",
        "metadata": {"name": name},
        "spec": spec,
    }


def test_device_taint_rules_taint_the_devices_they_select() -> None:
    """The tracker's applyPatches: a rule's unset driver, pool or device matches any; no selector, nothing."""
    devices = [_dev("d1"), _dev("d2")]
    nodes = (_node("n1"), _slice("s1", "p1", devices, nodeName="n1"))
    one = _catalog(*nodes, _rule("r1", NO_SCHEDULE, driver=DRIVER, pool="p1", device="d1"))
    assert _devices(allocate(one, [_one()], 0, set()) or []) == [[("r", "d2")]]
    assert allocate(one, [_one(count=2)], 0, set()) is None
    pool = _catalog(*nodes, _rule("r1", NO_EXECUTE, pool="p1"))
    assert allocate(pool, [_one()], 0, set()) is None
    assert _devices(allocate(pool, [_one([TOLERATE_NO_EXECUTE])], 0, set()) or []) == [[("r", "d1")]]
    other_pool = _catalog(*nodes, _rule("r1", NO_SCHEDULE, driver=DRIVER, pool="p9"))
    assert _devices(allocate(other_pool, [_one()], 0, set()) or []) == [[("r", "d1")]]
    other_driver = _catalog(*nodes, _rule("r1", NO_SCHEDULE, driver="driver-b"))
    assert _devices(allocate(other_driver, [_one()], 0, set()) or []) == [[("r", "d1")]]
    no_selector = _catalog(*nodes, _rule("r1", NO_SCHEDULE))
    assert _devices(allocate(no_selector, [_one()], 0, set()) or []) == [[("r", "d1")]]


def test_counting_path_skips_untolerated_devices() -> None:
    """The per-node counts of free devices (a one-request claim on node-local pools) count only devices the
    request may take, and allocate_simple takes the same devices the search would."""
    cat = _catalog(
        _node("n1"),
        _node("n2"),
        _slice("s1", "p1", [_tainted("d1", NO_SCHEDULE), _dev("d2")], nodeName="n1"),
        _slice("s2", "p2", [_tainted("d1", NO_SCHEDULE)], nodeName="n2"),
    )
    plain = simple_request(cat, [_one()])
    assert plain is not None and list(cat.use.free_per_node(plain[0])) == [1, 0]
    tolerant = simple_request(cat, [_one([TOLERATE_NO_SCHEDULE])])
    assert tolerant is not None and list(cat.use.free_per_node(tolerant[0])) == [2, 1]
    assert _results(allocate_simple(cat, _one(), 0) or []) == [
        [{"request": "r", "driver": DRIVER, "pool": "p1", "device": "d2"}]
    ]
    assert allocate_simple(cat, _one(), 1) is None
    assert _results(allocate_simple(cat, _one([TOLERATE_NO_SCHEDULE]), 1) or []) == [
        [
            {
                "request": "r",
                "driver": DRIVER,
                "pool": "p2",
                "device": "d1",
                "tolerations": [TOLERATE_NO_SCHEDULE],
            }
        ]
    ]


# Admin access (DRAAdminAccess, GA in v1.37): upstream's "admin-access-*" and "tainted-admin-access" cases.
def _admin(name: str = "c", **extra: Any) -> Any:
    exactly = {"deviceClassName": "class-a", "adminAccess": True, **extra}
    return _claim(name, [{"name": "r", "exactly": exactly}])


def test_admin_access_takes_devices_in_use_and_says_so() -> None:
    cat = _catalog(_node("n1"), _slice("s1", "p1", [_dev("d1")], nodeName="n1"))
    # admin-access-enabled: d1 is allocated to another claim, the admin claim gets it all the same
    result = allocate(cat, [_admin()], 0, {(DRIVER, "p1", "d1")})
    assert _results(result or []) == [
        [{"request": "r", "driver": DRIVER, "pool": "p1", "device": "d1", "adminAccess": True}]
    ]
    assert [a.held() for a in result or []] == [[]]  # and keeps it from nobody
    assert allocate(cat, [_admin(count=2)], 0, set()) is None  # never the same device twice in one claim


def test_admin_access_shares_a_device_being_allocated_to_another_claim() -> None:
    """admin-access-claims-device-allocating-for-non-admin-access: claim 0 takes d1, the admin claim after
    it takes d1 too; a plain claim after an admin one does not take the admin's device."""
    cat = _catalog(_node("n1"), _slice("s1", "p1", [_dev("d1"), _dev("d2")], nodeName="n1"))
    plain = _claim("a", [{"name": "r", "exactly": {"deviceClassName": "class-a"}}])
    assert _results(allocate(cat, [plain, _admin("b")], 0, set()) or []) == [
        [{"request": "r", "driver": DRIVER, "pool": "p1", "device": "d1"}],
        [{"request": "r", "driver": DRIVER, "pool": "p1", "device": "d1", "adminAccess": True}],
    ]
    assert _devices(allocate(cat, [_admin("b"), plain], 0, set()) or []) == [[("r", "d1")], [("r", "d2")]]


def test_admin_access_does_not_lift_taints() -> None:
    cat = _catalog(_node("n1"), _slice("s1", "p1", [_tainted("d1", NO_SCHEDULE)], nodeName="n1"))
    assert allocate(cat, [_admin()], 0, {(DRIVER, "p1", "d1")}) is None  # tainted-admin-access
