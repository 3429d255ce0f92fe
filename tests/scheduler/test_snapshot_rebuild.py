"""A snapshot rebuilt after pods of a template were bound (a node added, say) lets the template's pending pods
go to any node: the bound pods' nodeName must not leak into their equivalence class's NodeName verdict."""

from __future__ import annotations

from gangsched.scheduler import run_until_stable

from .builders import build, node, node_of, pod


def test_a_node_added_after_a_bind_is_open_to_the_same_template() -> None:
    store, scheduler = build([node("n1", "1"), pod("a", cpu="1"), pod("b", cpu="1")])
    run_until_stable(store, scheduler)
    assert (node_of(store, "a"), node_of(store, "b")) == ("n1", None)
    store.add_all(build([node("n2", "1")])[0].list("Node"))
    run_until_stable(store, scheduler)
    assert node_of(store, "b") == "n2"
