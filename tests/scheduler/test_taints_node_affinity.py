"""TaintToleration and NodeAffinity, filter and score, node by node: cases written by hand from upstream's
table tests (plugins/tainttoleration/taint_toleration_test.go, plugins/nodeaffinity/node_affinity_test.go,
v1.37.2) and from the rules they test (v1.Toleration.ToleratesTaint, DefaultNormalizeScore, NodeSelectorTerm
matching). Scores are the plugins' normalised ones over the feasible nodes, before their weights."""

from __future__ import annotations

from typing import Any

import pytest
from lightkube.models import core_v1

from gangsched.api.defaults import apply_defaults
from gangsched.scheduler.plugins import node_affinity
from gangsched.scheduler.podinfo import pod_info

from .plugin_cases import evaluator, node, verdicts

PREFER = "PreferNoSchedule"


def taint(key: str, value: str = "", effect: str = PREFER) -> dict[str, str]:
    return {"key": key, "value": value, "effect": effect}


def toleration(
    key: str, value: str | None = None, effect: str | None = PREFER, op: str | None = "Equal"
) -> Any:
    out = {"key": key, "value": value, "effect": effect, "operator": op}
    return {k: v for k, v in out.items() if v is not None}


def pod(
    tolerations: list[dict[str, str]] | None = None,
    preferred: list[tuple[int, dict[str, str]]] | None = None,
    required: list[dict[str, Any]] | None = None,
) -> Any:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i"}], "tolerations": tolerations or []}
    affinity: dict[str, Any] = {}
    if preferred:
        affinity["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": w, "preference": {"matchExpressions": [{"key": k, "operator": "In", "values": [v]}
                                                               for k, v in labels.items()]}}
            for w, labels in preferred
        ]  # fmt: skip
    if required:
        affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": required}
    if affinity:
        spec["affinity"] = {"nodeAffinity": affinity}
    obj = core_v1.Pod.from_dict(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}, "spec": spec}
    )
    apply_defaults([obj])
    return obj


def scores(nodes: list[Any], incoming: Any, plugin: str) -> dict[str, int] | None:
    """The plugin's normalised score per feasible node; None when it scores nothing (PreScore Skip)."""
    return evaluator(nodes, []).node_scores(pod_info(incoming, 0)).get(plugin)


@pytest.mark.filterwarnings("error::RuntimeWarning")  # no score divides by a zero maximum
@pytest.mark.parametrize(
    ("tolerations", "nodes", "want"),
    [
        pytest.param(
            [toleration("foo", "bar")],
            [node("nodeA", taints=[taint("foo", "bar")]), node("nodeB", taints=[taint("foo", "blah")])],
            {"nodeA": 100, "nodeB": 0},
            id="tolerated-scores-higher",
        ),
        pytest.param(
            [toleration("foo", "bar")],
            [
                node("nodeA"),
                node("nodeB", taints=[taint("cpu-type", "arm64")]),
                node("nodeC", taints=[taint("cpu-type", "arm64"), taint("disk-type", "ssd")]),
            ],
            {"nodeA": 100, "nodeB": 50, "nodeC": 0},
            id="more-intolerable-taints-lower-score",
        ),
        pytest.param(
            [toleration("cpu-type", "arm64", "NoSchedule"), toleration("disk-type", "ssd", "NoSchedule")],
            [
                node("nodeA"),
                node("nodeB", taints=[taint("cpu-type", "arm64", "NoSchedule")]),
                node("nodeC", taints=[taint("cpu-type", "arm64"), taint("disk-type", "ssd")]),
            ],
            {"nodeA": 100, "nodeB": 100, "nodeC": 0},
            id="only-prefer-no-schedule-counts",
        ),
        pytest.param(
            [],
            [node("nodeA"), node("nodeB", taints=[taint("cpu-type", "arm64")])],
            {"nodeA": 100, "nodeB": 0},
            id="no-tolerations",
        ),
        pytest.param(
            # the only node with an untolerated PreferNoSchedule taint is filtered out: the maximum over the
            # feasible nodes is 0, and DefaultNormalizeScore (reversed) gives every one of them 100
            [],
            [
                node("nodeA"),
                node("nodeB", taints=[taint("cpu-type", "arm64"), taint("gpu", "", "NoSchedule")]),
            ],
            {"nodeA": 100},
            id="only-feasible-nodes-normalised",
        ),
    ],
)
def test_taint_toleration_score(tolerations: list[Any], nodes: list[Any], want: dict[str, int]) -> None:
    assert scores(nodes, pod(tolerations), "TaintToleration") == want


@pytest.mark.parametrize(
    ("tolerations", "tolerated"),
    [
        ([toleration("dedicated", "gpu", "NoSchedule")], True),
        ([toleration("dedicated", "gpu", None)], True),  # no effect: every effect
        ([toleration("dedicated", None, "NoSchedule", "Exists")], True),
        ([toleration("", None, None, "Exists")], True),  # empty key with Exists: every taint
        ([toleration("dedicated", "gpu", "NoSchedule", None)], True),  # no operator: Equal
        ([toleration("dedicated", "cpu", "NoSchedule")], False),
        ([toleration("dedicated", "gpu", "NoExecute")], False),
        ([toleration("other", "gpu", "NoSchedule")], False),
        # the first toleration does not apply, the second does: each is tried
        ([toleration("dedicated", "gpu", "NoExecute"), toleration("dedicated", "gpu", "NoSchedule")], True),
        ([toleration("other", None, None, "Exists"), toleration("dedicated", "gpu")], False),
    ],
)
def test_toleration_matches_a_no_schedule_taint(tolerations: list[Any], tolerated: bool) -> None:
    nodes = [node("n1", taints=[taint("dedicated", "gpu", "NoSchedule")])]
    want = None if tolerated else "node(s) had untolerated taint {dedicated: gpu}"
    assert verdicts(evaluator(nodes, []), pod(tolerations)) == {"n1": want}


@pytest.mark.parametrize(("op", "tolerated"), [("Equal", True), (None, True), ("Exists", True)])
def test_toleration_without_value_matches_a_taint_without_value(op: str | None, tolerated: bool) -> None:
    nodes = [node("n1", taints=[taint("dedicated", "", "NoSchedule")])]
    got = verdicts(evaluator(nodes, []), pod([toleration("dedicated", None, "NoSchedule", op)]))
    assert got == {"n1": None}


@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize(
    ("preferred", "nodes", "want"),
    [
        pytest.param(
            [(2, {"foo": "bar"})],
            [node("node1", {"abc": "az11"}), node("node2", {"key": "value"}), node("node3", {"az": "az1"})],
            {"node1": 0, "node2": 0, "node3": 0},
            id="no-node-matches",
        ),
        pytest.param(
            [(2, {"foo": "bar"})],
            [node("node1", {"foo": "bar"}), node("node2", {"key": "value"}), node("node3", {"az": "az1"})],
            {"node1": 100, "node2": 0, "node3": 0},
            id="only-node1-matches",
        ),
        pytest.param(
            [(1, {"foo": "bar"})],
            [node("node1", {"foo": "bar"}), node("node2")],
            {"node1": 100, "node2": 0},
            id="weight-one",
        ),
        pytest.param(
            [(2, {"foo": "bar"}), (4, {"key": "value"}), (5, {"foo": "bar", "key": "value", "az": "az1"})],
            [
                node("node1", {"foo": "bar"}),
                node("node5", {"foo": "bar", "key": "value", "az": "az1"}),
                node("node2", {"key": "value"}),
            ],
            {"node1": 18, "node5": 100, "node2": 36},
            id="different-priorities",
        ),
        pytest.param(
            # the best match is filtered out (untolerated taint): the maximum is taken over feasible nodes
            [(2, {"foo": "bar"}), (4, {"key": "value"})],
            [
                node("node1", {"foo": "bar"}),
                node("node2", {"key": "value"}, taints=[taint("gpu", "", "NoSchedule")]),
                node("node3"),
            ],
            {"node1": 100, "node3": 0},
            id="only-feasible-nodes-normalised",
        ),
    ],
)
def test_node_affinity_score(preferred: list[Any], nodes: list[Any], want: dict[str, int]) -> None:
    assert scores(nodes, pod(preferred=preferred), "NodeAffinity") == want


ZONE_A = {"key": "zone", "operator": "In", "values": ["a"]}
SSD = {"key": "disk", "operator": "In", "values": ["ssd"]}


def name_in(*names: str) -> dict[str, Any]:
    return {"key": "metadata.name", "operator": "In", "values": list(names)}


@pytest.mark.parametrize(
    ("terms", "fits"),
    [
        # a term's expressions are ANDed, terms are ORed
        ([{"matchExpressions": [ZONE_A, SSD]}], {"n1"}),
        ([{"matchExpressions": [ZONE_A]}, {"matchExpressions": [SSD]}], {"n1", "n2", "n3"}),
        ([{"matchExpressions": [SSD, ZONE_A]}], {"n1"}),
        # an empty term matches no node ("Pod with an empty NodeSelectorTerm in affinity ... won't schedule")
        ([{"matchExpressions": []}], set()),
        ([{"matchExpressions": []}, {"matchExpressions": [SSD]}], {"n1", "n3"}),
        # matchFields alone, and with expressions (ANDed with them)
        ([{"matchFields": [name_in("n2")]}], {"n2"}),
        ([{"matchExpressions": [ZONE_A], "matchFields": [name_in("n3")]}], set()),
        ([{"matchExpressions": [SSD], "matchFields": [name_in("n1", "n2")]}], {"n1"}),
        ([{"matchFields": [name_in("n1", "n3")], "matchExpressions": [ZONE_A]}], {"n1"}),
    ],
)
def test_required_node_affinity_terms(terms: list[dict[str, Any]], fits: set[str]) -> None:
    nodes = [
        node("n1", {"zone": "a", "disk": "ssd"}),
        node("n2", {"zone": "a", "disk": "hdd"}),
        node("n3", {"zone": "b", "disk": "ssd"}),
    ]
    got = verdicts(evaluator(nodes, []), pod(required=terms))
    assert {name for name, reason in got.items() if reason is None} == fits
    for name, reason in got.items():
        if name not in fits:
            assert reason in (node_affinity.REASON, node_affinity.PREFILTER_REASON)


N1, N2, N3 = "n1", "n2", "n3"
FIT, NO, PRE = None, node_affinity.REASON, node_affinity.PREFILTER_REASON


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, "values": list(values)} if values else {"key": key, "operator": op}


@pytest.mark.parametrize(
    ("terms", "want"),
    [
        # PreFilter (upstream's NodeAffinity.PreFilter): a term's `metadata.name In` pins are intersected ...
        ([{"matchFields": [name_in(N1, N2), name_in(N2, N3)]}], {N1: PRE, N2: FIT, N3: PRE}),
        # ... the terms' pins are united, and the nodes outside them fail in PreFilter, before any Filter
        ([{"matchFields": [name_in(N1)]}, {"matchFields": [name_in(N3)]}], {N1: FIT, N2: PRE, N3: FIT}),
        # only `metadata.name In` pins: a NotIn leaves every node to the Filter
        (
            [{"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": [N1]}]}],
            {N1: NO, N2: FIT, N3: FIT},
        ),
        # one term without a pin: all nodes stay eligible (terms are ORed), the pinned term still filters
        (
            [{"matchFields": [name_in(N1)]}, {"matchExpressions": [expr("disk", "In", "hdd")]}],
            {N1: FIT, N2: FIT, N3: NO},
        ),
        # DoesNotExist: only nodes without the key (n3 has no `gpu` label; n1's is the first value seen)
        ([{"matchExpressions": [expr("gpu", "DoesNotExist")]}], {N1: NO, N2: NO, N3: FIT}),
        ([{"matchExpressions": [expr("gpu", "Exists")]}], {N1: FIT, N2: FIT, N3: NO}),
        # Gt and Lt are strict; a node without the label or with a non-integer value never matches
        ([{"matchExpressions": [expr("cores", "Gt", "8")]}], {N1: FIT, N2: NO, N3: NO}),
        ([{"matchExpressions": [expr("cores", "Lt", "16")]}], {N1: NO, N2: FIT, N3: NO}),
        ([{"matchExpressions": [expr("cores", "Gt", "7")]}], {N1: FIT, N2: FIT, N3: NO}),
        # a bound that is no integer: the requirement cannot be parsed and matches no node
        ([{"matchExpressions": [expr("cores", "Gt", "eight")]}], {N1: NO, N2: NO, N3: NO}),
        # an operator the API does not define: no node matches (the selector cannot be built)
        ([{"matchExpressions": [expr("gpu", "Near", "a100")]}], {N1: NO, N2: NO, N3: NO}),
    ],
)
def test_node_affinity_reasons(terms: list[dict[str, Any]], want: dict[str, str | None]) -> None:
    """Each node's verdict with its exact reason, from upstream's NodeAffinity PreFilter and Filter and
    nodeaffinity.NodeSelectorRequirementsAsSelector's operators."""
    nodes = [
        node(N1, {"gpu": "a100", "cores": "16", "disk": "hdd"}),
        node(N2, {"gpu": "h100", "cores": "8", "disk": "hdd"}),
        node(N3, {"cores": "many"}),
    ]
    assert verdicts(evaluator(nodes, []), pod(required=terms)) == want


def test_node_selector_keys_and_required_affinity_all_hold() -> None:
    """nodeSelector's pairs are ANDed, and with required node affinity both must hold
    (upstream's GetRequiredNodeAffinity Match: the selector, then the affinity)."""
    nodes = [node(N1, {"a": "1", "b": "2"}), node(N2, {"a": "1"}), node(N3, {"b": "2"})]
    selector_only = pod()
    selector_only.spec.nodeSelector = {"a": "1", "b": "2"}
    assert verdicts(evaluator(nodes, []), selector_only) == {N1: FIT, N2: NO, N3: NO}
    both = pod(required=[{"matchExpressions": [expr("b", "Exists")]}])
    both.spec.nodeSelector = {"a": "1"}
    assert verdicts(evaluator(nodes, []), both) == {N1: FIT, N2: NO, N3: NO}
