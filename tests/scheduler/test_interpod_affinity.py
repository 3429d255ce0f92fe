"""InterPodAffinity filter cases, written by hand from upstream's table tests
(pkg/scheduler/framework/plugins/interpodaffinity/filtering_test.go, v1.37.2): the test names are upstream's,
the expected verdict per node is the status upstream's test expects."""

from __future__ import annotations

from gangsched.scheduler.plugins.inter_pod_affinity import (
    REASON_AFFINITY,
    REASON_ANTI_AFFINITY,
    REASON_EXISTING_ANTI_AFFINITY,
)

from .plugin_cases import evaluator, node, pod, term, verdicts

SECURITYSCAN = {"service": "securityscan"}
S1 = {"security": "S1"}
NODE1 = node("node1", {"region": "r1", "zone": "z11"})
CHINA = {"region": "China"}
CHINA_AZ1 = {"region": "China", "az": "az1"}
INDIA = {"region": "India"}


def one_node(
    incoming: object, existing: list[object], namespaces: dict[str, dict[str, str]] | None = None
) -> str | None:
    return verdicts(evaluator([NODE1], existing, namespaces), incoming)["node1"]


def test_affinity_in_matches_existing_pod() -> None:
    # "satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In operator that
    # matches the existing pod"
    incoming = pod(labels=S1, affinity=[term("service", "In", ["securityscan", "value2"], "region")])
    assert one_node(incoming, [pod("e", SECURITYSCAN, node_name="node1")]) is None


def test_affinity_other_namespace_does_not_match() -> None:
    # "Does not satisfy the PodAffinity with labelSelector because of diff Namespace"
    incoming = pod(
        labels=S1,
        affinity=[term("service", "In", ["securityscan", "value2"], "region", namespaces=["DiffNameSpace"])],
    )
    assert one_node(incoming, [pod("e", SECURITYSCAN, node_name="node1")]) == REASON_AFFINITY


def test_affinity_and_anti_affinity_both_satisfied_with_symmetry() -> None:
    # "satisfies the PodAffinity and PodAntiAffinity and PodAntiAffinity symmetry with the existing pod"
    incoming = pod(
        labels=S1,
        affinity=[term("service", "In", ["securityscan", "value2"], "region")],
        anti=[term("service", "In", ["antivirusscan", "value2"], "node")],
    )
    existing = pod(
        "e",
        SECURITYSCAN,
        node_name="node1",
        anti=[term("service", "In", ["antivirusscan", "value2"], "node")],
    )
    assert one_node(incoming, [existing]) is None


def test_anti_affinity_of_incoming_pod() -> None:
    # "satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod"
    incoming = pod(
        labels=S1,
        affinity=[term("service", "In", ["securityscan", "value2"], "region")],
        anti=[term("service", "In", ["securityscan", "value2"], "zone")],
    )
    assert one_node(incoming, [pod("e", SECURITYSCAN, node_name="node1")]) == REASON_ANTI_AFFINITY


def test_existing_pods_anti_affinity_symmetry() -> None:
    # "satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity symmetry with the
    # existing pod"
    incoming = pod(
        labels=SECURITYSCAN,
        affinity=[term("service", "In", ["securityscan", "value2"], "region")],
        anti=[term("service", "In", ["antivirusscan", "value2"], "node")],
    )
    existing = pod(
        "e", SECURITYSCAN, node_name="node1", anti=[term("service", "In", ["securityscan", "value2"], "zone")]
    )
    assert one_node(incoming, [existing]) == REASON_EXISTING_ANTI_AFFINITY


def test_pod_not_matching_its_own_affinity_and_no_other_pod() -> None:
    # "pod matches its own Label in PodAffinity and that matches the existing pod Labels": the existing pod
    # is on node2, which is not in the snapshot, so nothing matches and the pod does not match its own term
    incoming = pod(
        labels=SECURITYSCAN, affinity=[term("service", "NotIn", ["securityscan", "value2"], "region")]
    )
    assert one_node(incoming, [pod("e", SECURITYSCAN, node_name="node2")]) == REASON_AFFINITY


def test_existing_anti_affinity_respected_without_own_terms() -> None:
    # "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints.
    # doesn't satisfy / satisfy PodAntiAffinity symmetry with the existing pod"
    blocker = pod(
        "e", SECURITYSCAN, node_name="node1", anti=[term("service", "In", ["securityscan", "value2"], "zone")]
    )
    assert one_node(pod(labels=SECURITYSCAN), [blocker]) == REASON_EXISTING_ANTI_AFFINITY
    harmless = pod(
        "e",
        SECURITYSCAN,
        node_name="node1",
        anti=[term("service", "NotIn", ["securityscan", "value2"], "zone")],
    )
    assert one_node(pod(labels=SECURITYSCAN), [harmless]) is None


def test_symmetry_partial_match_a1() -> None:
    # "PodAntiAffinity symmetry check a1: incoming pod and existing pod partially match each other"
    incoming = pod(
        labels=SECURITYSCAN,
        anti=[term("service", "Exists", None, "zone"), term("security", "Exists", None, "zone")],
    )
    existing = pod("e", S1, node_name="node1", anti=[term("security", "Exists", None, "zone")])
    assert one_node(incoming, [existing]) == REASON_ANTI_AFFINITY


def test_namespace_selector() -> None:
    # "affinity with NamespaceSelector" / "affinity with non-matching NamespaceSelector"
    selector = {"matchExpressions": [{"key": "team", "operator": "In", "values": ["team1"]}]}
    incoming = pod(
        labels=S1,
        affinity=[term("service", "In", ["securityscan", "value2"], "region", namespaceSelector=selector)],
    )
    namespaces = {"subteam1.team1": {"team": "team1"}, "subteam1.team2": {"team": "team2"}}
    in_team1 = pod("e", SECURITYSCAN, namespace="subteam1.team1", node_name="node1")
    in_team2 = pod("e", SECURITYSCAN, namespace="subteam1.team2", node_name="node1")
    assert one_node(incoming, [in_team1], namespaces) is None
    assert one_node(incoming, [in_team2], namespaces) == REASON_AFFINITY


def test_anti_affinity_with_all_namespaces_selector() -> None:
    # "anti-affinity with matching all NamespaceSelector": an empty namespaceSelector selects every namespace
    incoming = pod(
        labels=S1,
        namespace="subteam1.team1",
        anti=[term("service", "In", ["securityscan", "value2"], "region", namespaceSelector={})],
    )
    existing = pod("e", SECURITYSCAN, namespace="subteam2.team2", node_name="node1")
    assert one_node(incoming, [existing]) == REASON_ANTI_AFFINITY


def test_affinity_domain_spans_nodes() -> None:
    # "A pod can be scheduled onto all the nodes that have the same topology key & label value with one of
    # them has an existing pod that matches the affinity rules"
    nodes = [node("node1", CHINA), node("node2", CHINA_AZ1), node("node3", INDIA)]
    ev = evaluator(nodes, [pod("p1", {"foo": "bar"}, node_name="node1")])
    incoming = pod(affinity=[term("foo", "In", ["bar"], "region")])
    assert verdicts(ev, incoming) == {"node1": None, "node2": None, "node3": REASON_AFFINITY}


def test_first_pod_of_a_collection() -> None:
    # "The affinity rule is to schedule all of the pods of this collection to the same zone. The first pod
    # of the collection should not be blocked ..." and "... can only be scheduled on nodes labelled with the
    # requested topology keys"
    labels = {"foo": "bar", "service": "securityscan"}
    incoming = pod(
        labels=labels,
        affinity=[term("foo", "In", ["bar"], "zone"), term("service", "In", ["securityscan"], "zone")],
    )
    existing = [pod("p1", {"foo": "bar"}, node_name="nodeA")]
    zoned = evaluator([node("nodeA", {"zone": "az1"}), node("nodeB", {"zone": "az2"})], existing)
    assert verdicts(zoned, incoming) == {"nodeA": None, "nodeB": None}
    unzoned = evaluator([node("nodeA", {"zoneLabel": "az1"}), node("nodeB", {"zoneLabel": "az2"})], existing)
    assert verdicts(unzoned, incoming) == {"nodeA": REASON_AFFINITY, "nodeB": REASON_AFFINITY}


def test_anti_affinity_domain_spans_nodes_and_namespaces() -> None:
    # "NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the
    # inter pod affinity rule. The pod can not be scheduled onto nodeA, nodeB, but can be scheduled onto
    # nodeC (NodeC has an existing pod that match the inter pod affinity rule but in different namespace)"
    nodes = [node("nodeA", CHINA), node("nodeB", CHINA_AZ1), node("nodeC", INDIA)]
    existing = [
        pod("a", {"foo": "bar"}, namespace="NS1", node_name="nodeA"),
        pod("c", namespace="NS2", node_name="nodeC", anti=[term("foo", "In", ["123"], "region")]),
    ]
    incoming = pod(labels={"foo": "123"}, namespace="NS1", anti=[term("foo", "In", ["bar"], "region")])
    assert verdicts(evaluator(nodes, existing), incoming) == {
        "nodeA": REASON_ANTI_AFFINITY,
        "nodeB": REASON_ANTI_AFFINITY,
        "nodeC": None,
    }


def test_existing_pods_anti_affinity_only_nodeC_left() -> None:
    # "Test existing pod's anti-affinity: existingPod on nodeA and nodeB has at least one anti-affinity term
    # matches incoming pod, so incoming pod can only be scheduled to nodeC"
    nodes = [
        node("nodeA", {"region": "r1", "zone": "z1", "hostname": "nodeA"}),
        node("nodeB", {"region": "r1", "zone": "z2", "hostname": "nodeB"}),
        node("nodeC", {"region": "r1", "zone": "z3", "hostname": "nodeC"}),
    ]
    existing = [
        pod("a", {"foo": ""}, node_name="nodeA", anti=[term("foo", "Exists", None, "zone")]),
        pod("b", {"bar": ""}, node_name="nodeB", anti=[term("bar", "Exists", None, "zone")]),
    ]
    incoming = pod(labels={"foo": "", "bar": ""})
    assert verdicts(evaluator(nodes, existing), incoming) == {
        "nodeA": REASON_EXISTING_ANTI_AFFINITY,
        "nodeB": REASON_EXISTING_ANTI_AFFINITY,
        "nodeC": None,
    }


def test_match_label_keys_and_mismatch_label_keys() -> None:
    # kube-apiserver merges matchLabelKeys (key In value) and mismatchLabelKeys (key NotIn value) from the
    # pod's own labels into the term's selector (pkg/registry/core/pod/strategy.go)
    nodes = [node("n1", {"zone": "a"}), node("n2", {"zone": "b"})]
    existing = [
        pod("v1", {"app": "x", "version": "1"}, node_name="n1"),
        pod("v2", {"app": "x", "version": "2"}, node_name="n2"),
    ]
    same_version = pod(
        labels={"app": "x", "version": "2"},
        anti=[term("app", "In", ["x"], "zone", matchLabelKeys=["version"])],
    )
    assert verdicts(evaluator(nodes, existing), same_version) == {"n1": None, "n2": REASON_ANTI_AFFINITY}
    other_version = pod(
        labels={"app": "x", "version": "2"},
        anti=[term("app", "In", ["x"], "zone", mismatchLabelKeys=["version"])],
    )
    assert verdicts(evaluator(nodes, existing), other_version) == {"n1": REASON_ANTI_AFFINITY, "n2": None}


ZONED = [
    node("node-a", {"zone": "z1", "host": "node-a"}),
    node("node-b", {"zone": "z1", "host": "node-b"}),
    node("node-x", {"zone": "z2", "host": "node-x"}),
]


def test_affinity_terms_each_need_their_domain() -> None:
    # two required terms of different topology keys: a node needs pods matching all the terms in its domain
    # of each term (its host and its zone); node-b shares node-a's zone but not its host
    existing = [pod("s1", S1, node_name="node-a")]
    terms = [term("security", "In", ["S1"], "host"), term("security", "In", ["S1"], "zone")]
    got = verdicts(evaluator(ZONED, existing), pod(affinity=terms))
    assert got == {"node-a": None, "node-b": REASON_AFFINITY, "node-x": REASON_AFFINITY}


def test_pod_matching_its_own_affinity_follows_existing_matches() -> None:
    # "the first of a group may go anywhere" holds only while no pod anywhere matches the terms: one in z2
    # pins the self-matching pod to z2
    incoming = pod(labels=S1, affinity=[term("security", "In", ["S1"], "zone")])
    assert verdicts(evaluator(ZONED, []), incoming) == {"node-a": None, "node-b": None, "node-x": None}
    got = verdicts(evaluator(ZONED, [pod("s1", S1, node_name="node-x")]), incoming)
    assert got == {"node-a": REASON_AFFINITY, "node-b": REASON_AFFINITY, "node-x": None}


def test_first_of_a_group_still_needs_every_key() -> None:
    # with no matching pod anywhere a self-matching pod may start the group, but only on a node carrying
    # every term's topology key
    nodes = [*ZONED, node("no-host", {"zone": "z1"})]
    incoming = pod(
        labels=S1, affinity=[term("security", "In", ["S1"], "host"), term("security", "In", ["S1"], "zone")]
    )
    got = verdicts(evaluator(nodes, []), incoming)
    assert got == {"node-a": None, "node-b": None, "node-x": None, "no-host": REASON_AFFINITY}


def test_every_anti_affinity_term_blocks_its_domains() -> None:
    # upstream's satisfyPodAntiAffinity: a node fails when any of the pod's terms has a matching pod in its
    # domain (written from filtering.go's rule; its table tests have one term per pod)
    nodes = [node("n1", {"zone": "a"}), node("n2", {"zone": "b"}), node("n3", {"zone": "c"})]
    existing = [pod("x", {"app": "x"}, node_name="n1"), pod("y", {"app": "y"}, node_name="n2")]
    incoming = pod(anti=[term("app", "In", ["x"], "zone"), term("app", "In", ["y"], "zone")])
    got = verdicts(evaluator(nodes, existing), incoming)
    assert got == {"n1": REASON_ANTI_AFFINITY, "n2": REASON_ANTI_AFFINITY, "n3": None}


def test_affinity_of_two_pods_in_one_evaluator() -> None:
    # the per-domain counts of one pod's terms are not those of another's: each pod goes where its own
    # terms find their pods
    nodes = [node("n1", {"zone": "a"}), node("n2", {"zone": "b"})]
    ev = evaluator(nodes, [pod("x", {"app": "x"}, node_name="n1"), pod("y", {"app": "y"}, node_name="n2")])
    to_x = pod("px", affinity=[term("app", "In", ["x"], "zone")])
    to_y = pod("py", affinity=[term("app", "In", ["y"], "zone")])
    assert verdicts(ev, to_x) == {"n1": None, "n2": REASON_AFFINITY}
    assert verdicts(ev, to_y) == {"n1": REASON_AFFINITY, "n2": None}
