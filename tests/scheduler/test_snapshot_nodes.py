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


def test_label_values_are_coded_in_order_of_first_appearance() -> None:
    """Each key's values numbered as the nodes first show them, -1 where a node lacks the key; a node
    without a hostname label has its name as one, and every node's name is its metadata.name (matchFields)."""
    snap = Snapshot(
        [
            node("n0", {"zone": "b", "rack": "r1"}),
            node("n1", {"zone": "a", "kubernetes.io/hostname": "n0"}),
            node("n2", {"zone": "b"}),
        ]
    )
    assert snap.label_values["zone"] == {"b": 0, "a": 1}
    assert snap.labels["zone"].tolist() == [0, 1, 0]
    assert snap.label_values["rack"] == {"r1": 0}
    assert snap.labels["rack"].tolist() == [0, -1, -1]
    assert snap.label_values["kubernetes.io/hostname"] == {"n0": 0, "n2": 1}
    assert snap.labels["kubernetes.io/hostname"].tolist() == [0, 0, 1]
    assert snap.label_values["metadata.name"] == {"n0": 0, "n1": 1, "n2": 2}
    assert snap.labels["metadata.name"].tolist() == [0, 1, 2]


def test_names_code_as_their_first_appearance_without_hostname_labels() -> None:
    """No node sets the hostname label: each node's name stands for it (its code: the name's first
    appearance, as for metadata.name), also when a name comes twice (a list of nodes, not a store's)."""
    snap = Snapshot([node("n0", {"zone": "a"}), node("n1"), node("n0", {"zone": "b"})])
    for key in ("metadata.name", "kubernetes.io/hostname"):
        assert snap.label_values[key] == {"n0": 0, "n1": 1}
        assert snap.labels[key].tolist() == [0, 1, 0]
    assert snap.labels["zone"].tolist() == [0, -1, 1]
    distinct = Snapshot([node("n0", {"zone": "a"}), node("n1"), node("n2", {"zone": "a"})])
    for key in ("metadata.name", "kubernetes.io/hostname"):
        assert distinct.label_values[key] == {"n0": 0, "n1": 1, "n2": 2}
        assert distinct.labels[key].tolist() == [0, 1, 2]


def test_keys_each_on_few_nodes_are_coded_as_the_others() -> None:
    """Twenty nodes with a key of their own each (the pairs are walked rather than one column per key)."""
    nodes = [node(f"n{j}", {f"only-{j}": "x", "zone": "z" if j < 10 else "y"}) for j in range(20)]
    nodes.append(node("n20", {"kubernetes.io/hostname": "n3"}))
    snap = Snapshot(nodes)
    assert snap.label_values["only-7"] == {"x": 0}
    assert snap.labels["only-7"].tolist() == [0 if j == 7 else -1 for j in range(21)]
    assert snap.label_values["zone"] == {"z": 0, "y": 1}
    assert snap.labels["zone"].tolist() == [0] * 10 + [1] * 10 + [-1]
    assert snap.labels["kubernetes.io/hostname"].tolist() == [*range(20), 3]
    assert snap.labels["metadata.name"].tolist() == list(range(21))
