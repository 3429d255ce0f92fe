"""Store.add_all before anyone listens (one loop, no events) must leave the store as `add` one by one does:
the same objects under the same keys, a replaced object keeping its first-seen order; once someone listens,
it emits what `add` emits."""

from __future__ import annotations

from typing import Any

from gangsched.api.gates import FeatureGates
from gangsched.store import Store
from tests.scenarios.harness import load_objects


def _objects() -> list[Any]:
    docs = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "a"},
         "spec": {"containers": [{"name": "c", "image": "x"}]}},
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "b"},
         "spec": {"containers": [{"name": "c", "image": "x"}]}},
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"again": "yes"}}},
    ]  # fmt: skip
    return load_objects(docs, "test", FeatureGates(), check=False)  # n1 twice: a replacement


def _state(store: Store) -> list[tuple[str, Any, int, Any]]:
    return [
        (kind, key, store.order(kind, key), obj.metadata.labels)
        for kind in ("Node", "Pod")
        for obj in store.list(kind)
        for key in [(obj.metadata.namespace or "", obj.metadata.name)]
    ]


def test_add_all_keeps_what_add_keeps() -> None:
    batch, one_by_one = Store(), Store()
    batch.add_all(_objects())
    for obj in _objects():
        one_by_one.add(obj)
    assert (
        _state(batch)
        == _state(one_by_one)
        == [
            ("Node", ("", "n1"), 1, {"again": "yes"}),  # replaced, first seen first
            ("Node", ("", "n2"), 3, None),
            ("Pod", ("a", "p"), 2, None),
            ("Pod", ("b", "p"), 4, None),
        ]
    )
    # the count goes on from where add_all left it, for add and add_all alike
    more = _objects()
    more[1].metadata.name, more[3].metadata.name = "q", "r"
    batch.add(more[1])
    batch.add_all([more[3]])
    assert (batch.order("Pod", ("a", "q")), batch.order("Pod", ("b", "r"))) == (5, 6)


def test_add_all_with_a_listener_emits_adds_and_updates() -> None:
    store, seen = Store(), []
    store.subscribe(lambda c: seen.append((c.action, c.kind, c.key)))
    store.add_all(_objects())
    assert seen == [
        ("add", "Node", ("", "n1")),
        ("add", "Pod", ("a", "p")),
        ("add", "Node", ("", "n2")),
        ("add", "Pod", ("b", "p")),
        ("update", "Node", ("", "n1")),
    ]
