"""Partitionable devices (shared counters, per-device node selection), distinctAttribute, capacity requests on
devices allocated whole, and the devices gangsched refuses (binding conditions, multi-allocatable devices):
the structured allocator on cases of upstream's allocator tests
(k8s.io/dynamic-resource-allocation/structured/internal/allocatortesting/allocator_testing.go, named in each
test), expectations written by hand from the incubating allocator's rules."""

from __future__ import annotations

import re
from typing import Any

import pytest

from gangsched.scheduler.devices import AllocationError, allocate, allocate_simple, simple_request

from .test_allocator import DRIVER, _catalog, _claim, _devices, _node, _slice


def _exactly(message: str) -> str:
    return f"^{re.escape(message)}$"


def _counters(name: str, pool: str, sets: dict[str, dict[str, str]], **where: Any) -> dict[str, Any]:
    """A slice that only declares counter sets (the API allows `sharedCounters` or `devices`, not both)."""
    doc = _slice(name, pool, [], **where)
    del doc["spec"]["devices"]
    doc["spec"]["sharedCounters"] = [
        {"name": s, "counters": {c: {"value": v} for c, v in counters.items()}}
        for s, counters in sets.items()
    ]
    return doc


def _part(name: str, counter_set: str = "gpu-0", **counters: str) -> dict[str, Any]:
    """A device consuming `counters` of `counter_set`."""
    return {
        "name": name,
        "consumesCounters": [
            {"counterSet": counter_set, "counters": {c: {"value": v} for c, v in counters.items()}}
        ],
    }


def _req(name: str = "r", count: int = 1, **extra: Any) -> dict[str, Any]:
    return {"name": name, "exactly": {"deviceClassName": "class-a", "count": count, **extra}}


def _pool(
    devices: list[dict[str, Any]], sets: dict[str, dict[str, str]], **where: Any
) -> list[dict[str, Any]]:
    """Node n1, and pool p1 on it: one slice of devices, one of counter sets."""
    return [
        _node("n1"),
        _slice("s1", "p1", devices, nodeName="n1", count=2, **where),
        _counters("s2", "p1", sets, nodeName="n1", count=2, **where),
    ]


def test_a_device_within_its_counter_set_is_allocated() -> None:
    """partitionable-devices-single-device."""
    cat = _catalog(*_pool([_part("d1", memory="4Gi")], {"gpu-0": {"memory": "8Gi"}}))
    result = allocate(cat, [_claim("c", [_req()])], 0, set())
    assert _devices(result or []) == [[("r", "d1")]]
    assert (result or [])[0].node_selector == {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]
    }


def test_overlapping_partitions_are_never_allocated_together() -> None:
    """Two 6Gi partitions of one 8Gi GPU (MIG profiles): one claim takes the first; two claims, or one
    claim asking for two, find no second; the allocated one keeps the other from later claims."""
    cat = _catalog(*_pool([_part("a", memory="6Gi"), _part("b", memory="6Gi")], {"gpu-0": {"memory": "8Gi"}}))
    assert _devices(allocate(cat, [_claim("c", [_req()])], 0, set()) or []) == [[("r", "a")]]
    assert allocate(cat, [_claim("c", [_req()]), _claim("d", [_req()])], 0, set()) is None
    assert allocate(cat, [_claim("c", [_req(count=2)])], 0, set()) is None
    assert allocate(cat, [_claim("c", [_req()])], 0, {(DRIVER, "p1", "a")}) is None


def test_counters_are_checked_across_requests_with_backtracking() -> None:
    """partitionable-devices-multiple-devices: 4Gi, 6Gi, 4Gi of 8Gi, one device per request: d1 and d3."""
    devices = [_part("d1", memory="4Gi"), _part("d2", memory="6Gi"), _part("d3", memory="4Gi")]
    cat = _catalog(*_pool(devices, {"gpu-0": {"memory": "8Gi"}}))
    claim = _claim("c", [_req("r0"), _req("r1")])
    assert _devices(allocate(cat, [claim], 0, set()) or []) == [[("r0", "d1"), ("r1", "d3")]]


def test_unused_counters_do_not_matter_and_the_search_backtracks() -> None:
    """partitionable-devices-unused-counters-in-counter-set: two of 5Gi, 4Gi, 4Gi within 8Gi: d2 and d3."""
    devices = [_part("d1", memory="5Gi"), _part("d2", memory="4Gi"), _part("d3", memory="4Gi")]
    cat = _catalog(*_pool(devices, {"gpu-0": {"memory": "8Gi", "unused": "1Gi"}}))
    assert _devices(allocate(cat, [_claim("c", [_req(count=2)])], 0, set()) or []) == [
        [("r", "d2"), ("r", "d3")]
    ]


def test_allocated_devices_consume_their_counters() -> None:
    """partitionable-devices-no-capacity-available (16Gi of 18Gi allocated: 4Gi more does not fit),
    partitionable-devices-overallocated-capacity-pool (20Gi of 18Gi allocated: nothing fits), and
    partitionable-devices-counter-quantities-are-not-modified (exact large quantities)."""
    devices = [_part("d1", memory="4Gi"), _part("d2", memory="16Gi")]
    cat = _catalog(*_pool(devices, {"gpu-0": {"memory": "18Gi"}}))
    assert allocate(cat, [_claim("c", [_req()])], 0, {(DRIVER, "p1", "d2")}) is None
    assert _devices(allocate(cat, [_claim("c", [_req()])], 0, set()) or []) == [[("r", "d1")]]
    over = _catalog(
        *_pool([_part("d1", memory="4Gi"), _part("d2", memory="20Gi")], {"gpu-0": {"memory": "18Gi"}})
    )
    assert allocate(over, [_claim("c", [_req()])], 0, {(DRIVER, "p1", "d2")}) is None
    big = _catalog(
        *_pool(
            [_part("d1", c="9000000000000000000"), _part("d2", c="1")],
            {"gpu-0": {"c": "10000000000000000000"}},
        )
    )
    assert _devices(allocate(big, [_claim("c", [_req()])], 0, {(DRIVER, "p1", "d1")}) or []) == [
        [("r", "d2")]
    ]


def test_a_rejected_device_gives_its_counters_back() -> None:
    """partitionable-devices-taint-releases-counter and partitionable-devices-constraint-releases-counter."""
    tainted = dict(_part("d1", c="1"), taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])
    cat = _catalog(*_pool([tainted, _part("d2", c="1")], {"gpu-0": {"c": "1"}}))
    assert _devices(allocate(cat, [_claim("c", [_req()])], 0, set()) or []) == [[("r", "d2")]]
    colours = [
        dict(_part(name, c="1"), attributes={"colour": {"string": colour}})
        for name, colour in (("d1", "red"), ("d2", "blue"), ("d3", "blue"))
    ]
    cat = _catalog(*_pool(colours, {"gpu-0": {"c": "2"}}))
    claim = _claim("c", [_req(count=2)], [{"matchAttribute": f"{DRIVER}/colour"}])
    assert _devices(allocate(cat, [claim], 0, set()) or []) == [[("r", "d2"), ("r", "d3")]]


def test_counter_sets_belong_to_their_pool() -> None:
    """partitionable-devices-counter-cache-scoped-by-pool-ID: two drivers' pools of the same name keep their
    own counters; ...-not-crossed-between-driver-schemas: a device over its own pool's counter is refused."""
    other = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "class-b"},
        "spec": {"selectors": [{"cel": {"expression": 'device.driver == "driver-b"'}}]},
    }

    def slices(b_needs: str, b_set: str, b_counter: str) -> list[dict[str, Any]]:
        b_devices = _slice("s3", "p1", [_part("d2", b_set, **{b_counter: b_needs})], nodeName="n1", count=2)
        b_counters = _counters(
            "s4", "p1", {b_set: {b_counter: "2" if b_set == "gpu-0" else "1"}}, nodeName="n1", count=2
        )
        for doc in (b_devices, b_counters):
            doc["spec"]["driver"] = "driver-b"
        return [*_pool([_part("d1", c="1")], {"gpu-0": {"c": "1"}}), b_devices, b_counters, other]

    claims = [_claim("a", [_req()]), _claim("b", [{"name": "r", "exactly": {"deviceClassName": "class-b"}}])]
    result = allocate(_catalog(*slices("2", "gpu-0", "c")), claims, 0, set())
    assert [[dev for _, dev in a.results] for a in result or []] == [
        [(DRIVER, "p1", "d1")],
        [("driver-b", "p1", "d2")],
    ]
    assert allocate(_catalog(*slices("2", "set-2", "d")), claims, 0, set()) is None


def test_a_pool_with_unknown_counters_is_invalid() -> None:
    """pools_incubating.go validateDeviceCounterConsumption: a device consuming a counter set (or counter)
    the pool does not declare makes the pool invalid; none of its devices is allocated, the node says why
    when nothing else fits, and an `All` request refuses the pool."""
    cat = _catalog(
        *_pool([{"name": "plain"}, _part("d1", "gpu-9", memory="1Gi")], {"gpu-0": {"memory": "8Gi"}})
    )
    with pytest.raises(AllocationError, match=_exactly("invalid resource pools were encountered")):
        allocate(cat, [_claim("c", [_req()])], 0, set())
    cat = _catalog(*_pool([_part("d1", memory="1Gi"), _part("d2", mem="1Gi")], {"gpu-0": {"memory": "8Gi"}}))
    with pytest.raises(
        AllocationError,
        match=_exactly("request r: asks for all devices, but resource pool driver-a/p1 is currently invalid"),
    ):
        allocate(
            cat,
            [
                _claim(
                    "c", [{"name": "r", "exactly": {"deviceClassName": "class-a", "allocationMode": "All"}}]
                )
            ],
            0,
            set(),
        )


def test_a_device_name_twice_on_a_node_makes_its_pool_invalid_there() -> None:
    """pools_incubating.go validateDeviceNames, over the slices of a pool that serve the node: two slices of
    pool p1 on n1 both name d1, so p1 allocates nothing on n1 (another pool still does) and says why when
    nothing else fits; the same name in slices serving different nodes is fine."""
    twice = [
        _node("n1"),
        _slice("s1", "p1", [{"name": "d1"}], nodeName="n1", count=2),
        _slice("s2", "p1", [{"name": "d1"}], nodeName="n1", count=2),
    ]
    with pytest.raises(AllocationError, match=_exactly("invalid resource pools were encountered")):
        allocate(_catalog(*twice), [_claim("c", [_req()])], 0, set())
    beside = _catalog(*twice, _slice("s3", "p2", [{"name": "d9"}], nodeName="n1"))
    assert _devices(allocate(beside, [_claim("c", [_req()])], 0, set()) or []) == [[("r", "d9")]]
    apart = _catalog(
        _node("n1"),
        _node("n2"),
        _slice("s1", "p1", [{"name": "d1"}], nodeName="n1", count=2),
        _slice("s2", "p1", [{"name": "d1"}], nodeName="n2", count=2),
    )
    assert _devices(allocate(apart, [_claim("c", [_req()])], 1, set()) or []) == [[("r", "d1")]]
    want = simple_request(apart, [_claim("c", [_req()])])
    assert want is not None and apart.use.free_per_node(want[0]) is None


def test_all_mode_counts_every_device_against_the_counters() -> None:
    """all-devices-with-consumed-counters: `All` takes every matching device, and fails when their counters
    do not fit together."""
    all_mode = [{"name": "r", "exactly": {"deviceClassName": "class-a", "allocationMode": "All"}}]
    fits = _catalog(
        *_pool([_part("d1", memory="4Gi"), _part("d2", memory="4Gi")], {"gpu-0": {"memory": "8Gi"}})
    )
    assert _devices(allocate(fits, [_claim("c", all_mode)], 0, set()) or []) == [[("r", "d1"), ("r", "d2")]]
    short = _catalog(
        *_pool([_part("d1", memory="6Gi"), _part("d2", memory="6Gi")], {"gpu-0": {"memory": "8Gi"}})
    )
    assert allocate(short, [_claim("c", all_mode)], 0, set()) is None


def test_counter_consuming_devices_leave_the_counting_path() -> None:
    """The per-node count of free devices cannot see counters: such claims go through the search."""
    cat = _catalog(*_pool([_part("a", memory="6Gi"), _part("b", memory="6Gi")], {"gpu-0": {"memory": "8Gi"}}))
    claim = _claim("c", [_req()])
    want = simple_request(cat, [claim])
    assert want is not None and cat.use.free_per_node(want[0]) is None
    cat.use.add([(DRIVER, "p1", "a")])  # held by another claim
    assert allocate_simple(cat, claim, 0) is None


# perDeviceNodeSelection: partitionable-devices-per-device-node-selection-{nodename,node-selector}
def _per_device(*devices: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        _node("n1", region="r1"),
        _node("n2", region="r2"),
        _slice("s1", "p1", list(devices), perDeviceNodeSelection=True),
    ]


def test_per_device_node_name_serves_that_node_only() -> None:
    cat = _catalog(*_per_device({"name": "d1", "nodeName": "n1"}, {"name": "d2", "nodeName": "n2"}))
    for node, device, name in ((0, "d1", "n1"), (1, "d2", "n2")):
        result = allocate(cat, [_claim("c", [_req()])], node, set())
        assert _devices(result or []) == [[("r", device)]]
        assert (result or [])[0].node_selector == {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [name]}]}
            ]
        }
    assert allocate(cat, [_claim("c", [_req(count=2)])], 0, set()) is None


def test_per_device_node_selector_and_all_nodes() -> None:
    region = {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "region", "operator": "In", "values": ["r1"]}]}]
    }
    cat = _catalog(*_per_device({"name": "d1", "nodeSelector": region}, {"name": "d2", "allNodes": True}))
    on_n1 = allocate(cat, [_claim("c", [_req()])], 0, set())
    assert _devices(on_n1 or []) == [[("r", "d1")]]
    assert (on_n1 or [])[0].node_selector == region
    on_n2 = allocate(cat, [_claim("c", [_req()])], 1, set())
    assert _devices(on_n2 or []) == [[("r", "d2")]]
    assert (on_n2 or [])[0].node_selector is None
    both = allocate(cat, [_claim("c", [_req(count=2)])], 0, set())
    assert _devices(both or []) == [[("r", "d1"), ("r", "d2")]]
    assert (both or [])[0].node_selector == region


def test_per_device_slices_share_their_pool_counters() -> None:
    """partitionable-devices-per-device-node-selection-nodename's pool: counters in a slice of its own."""
    slices = _per_device(
        dict(_part("d1", memory="6Gi"), allNodes=True), dict(_part("d2", memory="6Gi"), allNodes=True)
    )
    slices[2]["spec"]["pool"]["resourceSliceCount"] = 2
    slices.append(_counters("s2", "p1", {"gpu-0": {"memory": "8Gi"}}, perDeviceNodeSelection=True, count=2))
    cat = _catalog(*slices)
    assert _devices(allocate(cat, [_claim("c", [_req()])], 1, set()) or []) == [[("r", "d1")]]
    assert allocate(cat, [_claim("c", [_req()])], 1, {(DRIVER, "p1", "d1")}) is None


# distinctAttribute (DRAConsumableCapacity): distinct-constraint-* cases
def _numa(name: str, value: int | None) -> dict[str, Any]:
    return {"name": name, "attributes": {"numa": {"int": value}} if value is not None else {}}


def test_distinct_attribute_takes_devices_with_different_values() -> None:
    """distinct-constraint-single-request-multiple-devices-attribute-set, ...-not-enough-distinct-values,
    ...-attribute-not-set, distinct-constraint-two-requests-with-count-not-distinct."""
    constraint = [{"distinctAttribute": f"{DRIVER}/numa"}]
    devices = [_numa("d1", 1), _numa("d2", 2), _numa("d3", 1), _numa("d4", 3)]
    cat = _catalog(_node("n1"), _slice("s1", "p1", devices, nodeName="n1"))
    got = allocate(cat, [_claim("c", [_req(count=3)], constraint)], 0, set())
    assert _devices(got or []) == [[("r", "d1"), ("r", "d2"), ("r", "d4")]]
    few = _catalog(
        _node("n1"), _slice("s1", "p1", [_numa("d1", 1), _numa("d2", 2), _numa("d3", 2)], nodeName="n1")
    )
    assert allocate(few, [_claim("c", [_req(count=3)], constraint)], 0, set()) is None
    unset = _catalog(_node("n1"), _slice("s1", "p1", [_numa("d1", None), _numa("d2", None)], nodeName="n1"))
    assert allocate(unset, [_claim("c", [_req()], constraint)], 0, set()) is None
    spanning = [{"distinctAttribute": f"{DRIVER}/numa", "requests": ["r0", "r1"]}]
    two = _claim("c", [_req("r0", 2), _req("r1")], spanning)
    assert allocate(few, [two], 0, set()) is None
    free = _claim(
        "c", [_req("r0", 2), _req("r1")], [{"distinctAttribute": f"{DRIVER}/numa", "requests": ["r0"]}]
    )
    assert _devices(allocate(few, [free], 0, set()) or []) == [[("r0", "d1"), ("r0", "d2"), ("r1", "d3")]]


def test_match_attribute_applies_to_a_named_subrequest() -> None:
    """A constraint naming `request/subrequest` binds the devices of that subrequest to the others it
    names (matchAttributeConstraint.matches)."""
    devices = [_numa("d1", 0), _numa("d2", 1), _numa("d3", 1)]
    cat = _catalog(_node("n1"), _slice("s1", "p1", devices, nodeName="n1"))
    first = {"name": "a", "firstAvailable": [{"name": "x", "deviceClassName": "class-a", "count": 1}]}
    claim = _claim("c", [first, _req("b")], [{"matchAttribute": f"{DRIVER}/numa", "requests": ["a/x", "b"]}])
    assert _devices(allocate(cat, [claim], 0, set()) or []) == [[("a/x", "d2"), ("b", "d3")]]


def test_capacity_requests_on_devices_allocated_whole() -> None:
    """CmpRequestOverCapacity on a device without allowMultipleAllocations: every requested capacity must be
    one the device has, no larger than it (consumable-capacity-* cases with single-allocatable devices)."""
    devices = [
        {"name": "small", "capacity": {"memory": {"value": "8Gi"}}},
        {"name": "big", "capacity": {"memory": {"value": "40Gi"}}},
    ]
    cat = _catalog(_node("n1"), _slice("s1", "p1", devices, nodeName="n1"))

    def ask(amount: str, name: str = "memory") -> Any:
        return _claim("c", [_req(capacity={"requests": {name: amount}})])

    assert _devices(allocate(cat, [ask("8Gi")], 0, set()) or []) == [[("r", "small")]]
    assert _devices(allocate(cat, [ask("16Gi")], 0, set()) or []) == [[("r", "big")]]
    assert allocate(cat, [ask("41Gi")], 0, set()) is None
    assert allocate(cat, [ask("1", "cores")], 0, set()) is None
    assert simple_request(cat, [ask("8Gi")]) is None  # the per-node counts do not see capacity


# Devices gangsched refuses: binding-conditions-* and consumable-capacity-multi-allocatable-device-* cases
BINDING = {
    "bindingConditions": ["dra.example.com/is-prepared"],
    "bindingFailureConditions": ["dra.example.com/failed"],
}


def test_a_device_with_binding_conditions_is_not_allocated_and_the_node_says_why() -> None:
    """binding-conditions-with-and-without: upstream takes d1, then d2 with its binding conditions (and
    PreBind waits for them); gangsched takes d1 for one request and refuses the second."""
    cat = _catalog(
        _node("n1"), _slice("s1", "p1", [{"name": "d1"}, dict(name="d2", **BINDING)], nodeName="n1")
    )
    assert _devices(allocate(cat, [_claim("c", [_req("r0")])], 0, set()) or []) == [[("r0", "d1")]]
    message = _exactly(
        "cannot allocate all claims: ResourceSlice spec.devices[].bindingConditions is not supported "
        "by gangsched yet"
    )
    with pytest.raises(AllocationError, match=message):
        allocate(cat, [_claim("c", [_req("r0"), _req("r1")])], 0, set())
    # without the refused device the claims could not be allocated either: the usual answer
    assert allocate(cat, [_claim("c", [_req("r0", 3)])], 0, set()) is None


def test_pools_with_binding_conditions_come_last() -> None:
    """GatherPools puts pools with a device that has binding conditions after the others: a plain device of
    such a pool is taken only after the other pools' devices."""
    cat = _catalog(
        _node("n1"),
        _slice("a", "p-a", [{"name": "plain"}, dict(name="bound", **BINDING)], nodeName="n1"),
        _slice("b", "p-b", [{"name": "other"}], nodeName="n1"),
    )
    result = allocate(cat, [_claim("c", [_req(count=2)])], 0, set())
    assert [[dev for _, dev in a.results] for a in result or []] == [
        [(DRIVER, "p-b", "other"), (DRIVER, "p-a", "plain")]
    ]


def test_a_multi_allocatable_device_is_not_allocated_and_the_node_says_why() -> None:
    shared = {"name": "d1", "allowMultipleAllocations": True, "capacity": {"memory": {"value": "8Gi"}}}
    cat = _catalog(_node("n1"), _slice("s1", "p1", [shared], nodeName="n1"))
    message = _exactly(
        "cannot allocate all claims: ResourceSlice spec.devices[].allowMultipleAllocations is not "
        "supported by gangsched yet"
    )
    with pytest.raises(AllocationError, match=message):
        allocate(cat, [_claim("c", [_req()])], 0, set())
    with pytest.raises(AllocationError, match=message):
        allocate(
            cat,
            [
                _claim(
                    "c", [{"name": "r", "exactly": {"deviceClassName": "class-a", "allocationMode": "All"}}]
                )
            ],
            0,
            set(),
        )
    want = simple_request(cat, [_claim("c", [_req()])])
    assert want is not None and cat.use.free_per_node(want[0]) is None


def test_binds_to_node_pins_the_allocation_to_the_node() -> None:
    """createNodeSelector: a device that binds to its node makes the allocation local even in an allNodes
    pool."""
    cat = _catalog(
        _node("n1"), _node("n2"), _slice("s1", "p1", [{"name": "d1", "bindsToNode": True}], allNodes=True)
    )
    result = allocate(cat, [_claim("c", [_req()])], 1, set())
    assert (result or [])[0].node_selector == {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]
    }
