"""What the Snapshot reads from Node objects: allocatable (capacity when allocatable is absent, as the
kubelet reports one or the other), a bad quantity costing only its own resource, and labels read as integers
for the Gt / Lt operators only where a node has them."""

from __future__ import annotations

import math

from lightkube.models import core_v1, meta_v1

from gangsched.scheduler.snapshot import CPU, MEMORY, PODS, Snapshot


def node(name: str, labels: dict[str, str] | None = None, **status: dict[str, str]) -> core_v1.Node:
    return core_v1.Node(
        metadata=meta_v1.ObjectMeta(name=name, labels=labels), status=core_v1.NodeStatus(**status)
    )


def test_capacity_stands_in_for_a_missing_allocatable() -> None:
    snap = Snapshot([node("n0", capacity={"cpu": "2", "memory": "1Ki", "pods": "4"})])
    assert (snap.alloc[CPU, 0], snap.alloc[MEMORY, 0], snap.alloc[PODS, 0]) == (2000, 1024_000, 4000)


def test_a_bad_quantity_costs_only_its_own_resource() -> None:
    # dict order: the bad quantity is read first, the node still offers its cpu (validation reports it)
    snap = Snapshot([node("n0", allocatable={"example.com/x": "lots", "cpu": "3"})])
    assert snap.alloc[CPU, 0] == 3000
    assert snap.alloc[PODS, 0] == 110_000, "no pods allocatable: the kubelet's default 110"


def test_numeric_labels_are_nan_where_absent_or_not_integers() -> None:
    snap = Snapshot(
        [node("n0", {"rank": "5"}), node("n1"), node("n2", {"rank": "x"}), node("n3", {"rank": "-2"})]
    )
    values = snap.label_numeric("rank")
    assert values[0] == 5 and values[3] == -2
    assert math.isnan(values[1]) and math.isnan(values[2])
    assert all(math.isnan(v) for v in snap.label_numeric("absent"))
