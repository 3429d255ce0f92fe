"""PodTopologySpread cases written by hand from upstream's table tests
(pkg/scheduler/framework/plugins/podtopologyspread/{filtering,scoring}_test.go, v1.37.2; names are
upstream's), plus minDomains, nodeTaintsPolicy and matchLabelKeys cases worked out from filtering.go."""

from __future__ import annotations

from typing import Any

from gangsched.scheduler.plugins.node_affinity import REASON as NODE_AFFINITY_REASON
from gangsched.scheduler.plugins.pod_topology_spread import REASON, REASON_MISSING_LABEL
from gangsched.scheduler.podinfo import pod_info

from .plugin_cases import evaluator, node, pod, verdicts

FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
BAR = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}


def spread(
    max_skew: int, key: str, when: str = "DoNotSchedule", selector: Any = FOO, **more: Any
) -> dict[str, Any]:
    c = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when, **more}
    if selector is not None:
        c["labelSelector"] = selector
    return c


def four_nodes() -> list[Any]:
    return [
        node("node-a", {"zone": "zone1", "node": "node-a"}),
        node("node-b", {"zone": "zone1", "node": "node-b"}),
        node("node-x", {"zone": "zone2", "node": "node-x"}),
        node("node-y", {"zone": "zone2", "node": "node-y"}),
    ]


def placed(*where: str, labels: dict[str, str] | None = None, namespace: str = "default") -> list[Any]:
    return [
        pod(f"p-{n}-{i}", {"foo": ""} if labels is None else labels, namespace=namespace, node_name=n)
        for i, n in enumerate(where)
    ]


def test_no_existing_pods() -> None:
    # "no existing pods" / "no existing pods, incoming pod doesn't match itself"
    for selector in (FOO, BAR):
        incoming = pod(labels={"foo": ""}, spread=[spread(1, "zone", selector=selector)])
        assert set(verdicts(evaluator(four_nodes(), []), incoming).values()) == {None}


def test_other_namespaces_do_not_count() -> None:
    # "existing pods in a different namespace do not count"
    existing = [
        *placed("node-a", namespace="ns1"),
        *placed("node-a", namespace="ns2"),
        *placed("node-x", "node-y"),
    ]
    incoming = pod(labels={"foo": ""}, spread=[spread(1, "zone")])
    assert verdicts(evaluator(four_nodes(), existing), incoming) == {
        "node-a": None,
        "node-b": None,
        "node-x": REASON,
        "node-y": REASON,
    }


def test_null_selector_counts_nothing() -> None:
    # "existing pods do not match null selector"
    incoming = pod(labels={"foo": ""}, spread=[spread(1, "zone", selector=None)])
    assert set(verdicts(evaluator(four_nodes(), placed("node-x", "node-y")), incoming).values()) == {None}


def test_node_without_the_key() -> None:
    # "pods spread across zones as 1/2 due to absence of label 'zone' on node-b"
    nodes = four_nodes()
    nodes[1] = node("node-b", {"zon": "zone1", "node": "node-b"})
    incoming = pod(labels={"foo": ""}, spread=[spread(1, "zone")])
    assert verdicts(evaluator(nodes, placed("node-a", "node-b", "node-x", "node-y")), incoming) == {
        "node-a": None,
        "node-b": REASON_MISSING_LABEL,
        "node-x": REASON,
        "node-y": REASON,
    }


def test_per_node_skew() -> None:
    # "pods spread across nodes as 2/1/0/3, only node-x fits", "... maxSkew is 2, node-b and node-x fit",
    # "... but pod doesn't match itself"
    existing = placed("node-a", "node-a", "node-b", "node-y", "node-y", "node-y")
    ev = evaluator(four_nodes(), existing)
    one = pod(labels={"foo": ""}, spread=[spread(1, "node")])
    assert verdicts(ev, one) == {"node-a": REASON, "node-b": REASON, "node-x": None, "node-y": REASON}
    two = pod(labels={"foo": ""}, spread=[spread(2, "node")])
    assert verdicts(ev, two) == {"node-a": REASON, "node-b": None, "node-x": None, "node-y": REASON}
    not_self = pod(labels={"bar": ""}, spread=[spread(1, "node")])
    assert verdicts(ev, not_self) == {"node-a": REASON, "node-b": None, "node-x": None, "node-y": REASON}


def test_node_affinity_policy_honor() -> None:
    # "incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits": only node-a and
    # node-y are domains (nodeAffinityPolicy Honor), so the minimum is 2
    existing = placed("node-a", "node-a", "node-b", "node-y", "node-y", "node-y")
    only_a_y = [{"matchExpressions": [{"key": "node", "operator": "In", "values": ["node-a", "node-y"]}]}]
    incoming = pod(labels={"foo": ""}, spread=[spread(1, "node")], node_affinity=only_a_y)
    assert verdicts(evaluator(four_nodes(), existing), incoming) == {
        "node-a": None,
        "node-b": NODE_AFFINITY_REASON,
        "node-x": NODE_AFFINITY_REASON,
        "node-y": REASON,
    }
    # nodeAffinityPolicy Ignore: every node is a domain, the minimum is 0 (node-x), node-a is too full
    ignore = pod(
        labels={"foo": ""}, spread=[spread(1, "node", nodeAffinityPolicy="Ignore")], node_affinity=only_a_y
    )
    assert verdicts(evaluator(four_nodes(), existing), ignore)["node-a"] == REASON


def test_min_domains() -> None:
    # 1 matching pod in each of two zones; with minDomains 3 there are fewer domains than asked, the
    # minimum counts as 0 and 1 + 1 - 0 > maxSkew 1 everywhere; with minDomains 2 the minimum is 1
    existing = placed("node-a", "node-x")
    few = pod(labels={"foo": ""}, spread=[spread(1, "zone", minDomains=3)])
    assert set(verdicts(evaluator(four_nodes(), existing), few).values()) == {REASON}
    enough = pod(labels={"foo": ""}, spread=[spread(1, "zone", minDomains=2)])
    assert set(verdicts(evaluator(four_nodes(), existing), enough).values()) == {None}


def test_node_taints_policy() -> None:
    # zone2's only node is tainted: with nodeTaintsPolicy Ignore (default) it is a domain with 0 pods, so
    # zone1's 2 pods are too many; with Honor zone1 is the only domain and its minimum is its own count
    nodes = [
        node("node-a", {"zone": "zone1"}),
        node("node-b", {"zone": "zone1"}),
        node("node-x", {"zone": "zone2"}, taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
    ]
    existing = placed("node-b", "node-b")
    ignore = pod(labels={"foo": ""}, spread=[spread(1, "zone")])
    assert verdicts(evaluator(nodes, existing), ignore)["node-a"] == REASON
    honor = pod(labels={"foo": ""}, spread=[spread(1, "zone", nodeTaintsPolicy="Honor")])
    assert verdicts(evaluator(nodes, existing), honor)["node-a"] is None


def test_match_label_keys() -> None:
    # matchLabelKeys narrows the selector to pods sharing the incoming pod's value of the key: only the
    # revision-2 pod on node-x counts, so node-x (1 + 1 - 0) is over maxSkew 1 and the rest fit
    existing = [
        *placed("node-a", "node-a", labels={"foo": "", "rev": "1"}),
        *placed("node-x", labels={"foo": "", "rev": "2"}),
    ]
    incoming = pod(labels={"foo": "", "rev": "2"}, spread=[spread(1, "node", matchLabelKeys=["rev"])])
    assert verdicts(evaluator(four_nodes(), existing), incoming) == {
        "node-a": None,
        "node-b": None,
        "node-x": REASON,
        "node-y": None,
    }


def hostname_nodes(*names: str) -> list[Any]:
    return [node(n, {"kubernetes.io/hostname": n}) for n in names]


def spread_scores(ev: Any, incoming: Any) -> dict[str, int]:
    return ev.node_scores(pod_info(incoming, 10_000)).get("PodTopologySpread", {})


def test_score_one_constraint_on_node() -> None:
    # "one constraint on node, no existing pods" and "... all 4 nodes are candidates" (20/60/100/0) and
    # "... maxSkew=2" (33/66/100/16)
    incoming = pod(labels={"foo": ""}, spread=[spread(1, "kubernetes.io/hostname", "ScheduleAnyway")])
    empty = evaluator(hostname_nodes("node-a", "node-b"), [])
    assert spread_scores(empty, incoming) == {"node-a": 100, "node-b": 100}
    existing = placed("node-a", "node-a", "node-b", "node-d", "node-d", "node-d")
    ev = evaluator(hostname_nodes("node-a", "node-b", "node-c", "node-d"), existing)
    assert spread_scores(ev, incoming) == {"node-a": 20, "node-b": 60, "node-c": 100, "node-d": 0}
    skew2 = pod(labels={"foo": ""}, spread=[spread(2, "kubernetes.io/hostname", "ScheduleAnyway")])
    assert spread_scores(ev, skew2) == {"node-a": 33, "node-b": 66, "node-c": 100, "node-d": 16}


def test_score_null_selector() -> None:
    # "one constraint on node, null selector": nothing is counted, every node scores 100
    existing = placed("node-a", "node-a", "node-b", "node-d")
    ev = evaluator(hostname_nodes("node-a", "node-b", "node-c", "node-d"), existing)
    incoming = pod(
        labels={"foo": ""}, spread=[spread(1, "kubernetes.io/hostname", "ScheduleAnyway", selector=None)]
    )
    assert set(spread_scores(ev, incoming).values()) == {100}


_SEQ = iter(range(1_000_000))


def _labelled(where: str, *keys: str) -> Any:
    """A placed pod carrying these labels (empty values), with a name of its own."""
    return pod(f"p-{where}-{next(_SEQ)}", dict.fromkeys(keys, ""), node_name=where)


ZONE_AND_NODE = [spread(1, "zone"), spread(1, "node")]


def test_two_constraints_intersect() -> None:
    # "two Constraints on zone and node, spreads = [3/3, 2/1/0/3]": the zone allows any node, the node
    # constraint only node-x
    existing = placed("node-a", "node-a", "node-b", "node-y", "node-y", "node-y")
    incoming = pod(labels={"foo": ""}, spread=ZONE_AND_NODE)
    assert verdicts(evaluator(four_nodes(), existing), incoming) == {
        "node-a": REASON,
        "node-b": REASON,
        "node-x": None,
        "node-y": REASON,
    }
    # "spreads = [3/4, 2/1/0/4]": zone1 only by the zone, node-x only by the node: nothing
    more = [*existing, *placed("node-y")]
    assert set(verdicts(evaluator(four_nodes(), more), incoming).values()) == {REASON}


def test_two_constraints_with_different_selectors() -> None:
    incoming = pod(labels={"foo": "", "bar": ""}, spread=[spread(1, "zone"), spread(1, "node", selector=BAR)])
    # "spreads = [1/0, 1/0/0/1]" -> node-x
    existing = [_labelled("node-a", "foo"), _labelled("node-y", "bar")]
    assert verdicts(evaluator(four_nodes(), existing), incoming) == {
        "node-a": REASON,
        "node-b": REASON,
        "node-x": None,
        "node-y": REASON,
    }
    # "spreads = [1/0, 0/0/1/1]" -> nothing
    existing = [_labelled("node-a", "foo"), _labelled("node-x", "bar"), _labelled("node-y", "bar")]
    assert set(verdicts(evaluator(four_nodes(), existing), incoming).values()) == {REASON}
    # "spreads = [2/3, 1/0/0/1]" -> node-b
    existing = [
        _labelled("node-a", "foo"),
        _labelled("node-a", "foo", "bar"),
        _labelled("node-y", "foo"),
        _labelled("node-y", "foo", "bar"),
        _labelled("node-y", "foo"),
    ]
    assert verdicts(evaluator(four_nodes(), existing), incoming) == {
        "node-a": REASON,
        "node-b": None,
        "node-x": REASON,
        "node-y": REASON,
    }
    # "pod doesn't match itself on 'zone' constraint" -> node-a and node-b
    not_foo = pod(labels={"bar": ""}, spread=[spread(1, "zone"), spread(1, "node", selector=BAR)])
    existing = [_labelled("node-a", "foo"), _labelled("node-x", "bar"), _labelled("node-y", "bar")]
    assert verdicts(evaluator(four_nodes(), existing), not_foo) == {
        "node-a": None,
        "node-b": None,
        "node-x": REASON,
        "node-y": REASON,
    }


def test_two_constraints_one_label_missing() -> None:
    # "two Constraints on zone and node, absence of label 'node' on node-x, spreads = [1/1, 1/0/0/1]": the
    # node without the second key fails with the missing-label reason, whatever the first constraint says
    nodes = four_nodes()
    nodes[2] = node("node-x", {"zone": "zone2"})
    incoming = pod(labels={"foo": ""}, spread=ZONE_AND_NODE)
    assert verdicts(evaluator(nodes, placed("node-a", "node-y")), incoming) == {
        "node-a": REASON,
        "node-b": None,
        "node-x": REASON_MISSING_LABEL,
        "node-y": REASON,
    }
    # the first failure wins: node-a is too skewed by the zone before it lacks the node key
    nodes[0] = node("node-a", {"zone": "zone1"})
    heavy = placed("node-b", "node-b")
    assert verdicts(evaluator(nodes, heavy), incoming) == {
        "node-a": REASON,
        "node-b": REASON,
        "node-x": REASON_MISSING_LABEL,
        "node-y": None,
    }


def test_two_constraints_inclusion_policies() -> None:
    # "two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore": node-y (no foo label) is
    # outside the zone constraint's domains but counts for the node constraint
    nodes = [
        node("node-a", {"zone": "zone1", "node": "node-a", "foo": ""}),
        node("node-b", {"zone": "zone1", "node": "node-b", "foo": ""}),
        node("node-x", {"zone": "zone2", "node": "node-x", "foo": ""}),
        node("node-y", {"zone": "zone2", "node": "node-y"}),
    ]
    incoming = pod(
        labels={"foo": ""},
        node_selector={"foo": ""},
        spread=[spread(1, "zone"), spread(1, "node", nodeAffinityPolicy="Ignore")],
    )
    got = verdicts(evaluator(nodes, placed("node-a", "node-b", "node-y")), incoming)
    assert got == {"node-a": REASON, "node-b": REASON, "node-x": None, "node-y": NODE_AFFINITY_REASON}


def test_nodes_lacking_any_constraint_key_are_not_counted() -> None:
    # requireAllTopologies: a node without every constraint's key is left out of all domains, so node-x (no
    # zone) does not make the node constraint's minimum 0
    nodes = four_nodes()
    nodes[2] = node("node-x", {"node": "node-x"})
    incoming = pod(labels={"foo": ""}, spread=[spread(5, "zone"), spread(1, "node")])
    assert verdicts(evaluator(nodes, placed("node-a", "node-b", "node-y")), incoming) == {
        "node-a": None,
        "node-b": None,
        "node-x": REASON_MISSING_LABEL,
        "node-y": None,
    }


def test_both_inclusion_policies_honoured() -> None:
    # nodeAffinityPolicy Honor (the default) and nodeTaintsPolicy Honor together: node-a, outside the pod's
    # nodeSelector, is no domain, so its lack of pods does not lower the minimum
    nodes = [
        node("node-a", {"zone": "zone1", "node": "node-a"}),
        *(node(n, {"zone": "zone1", "node": n, "foo": ""}) for n in ("node-b", "node-x", "node-y")),
    ]
    incoming = pod(
        labels={"foo": ""}, node_selector={"foo": ""}, spread=[spread(1, "node", nodeTaintsPolicy="Honor")]
    )
    assert verdicts(evaluator(nodes, placed("node-b", "node-x", "node-y")), incoming) == {
        "node-a": NODE_AFFINITY_REASON,
        "node-b": None,
        "node-x": None,
        "node-y": None,
    }
