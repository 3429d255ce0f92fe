"""InterPodAffinity's score, node by node: cases written by hand from upstream's TestPreferredAffinity
(plugins/interpodaffinity/scoring_test.go, v1.37.2, names quoted) and from the rules scoring.go applies:
per node, the weights of the pod's preferred affinity terms (+) and anti-affinity terms (-) times the
matching pods in the node's domain, plus the placed pods' preferred terms matching the pod (+/- weight) and
their required affinity terms matching it (HardPodAffinityWeight, 1), in that pod's domain; then
NormalizeScore: (s - min) * 100 / (max - min) over the feasible nodes, all 0 when max == min."""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.scheduler.podinfo import pod_info

from .plugin_cases import evaluator, node, pod, term

S1, S2 = {"security": "S1"}, {"security": "S2"}
CHINA, INDIA, AZ1, AZ2 = {"region": "China"}, {"region": "India"}, {"az": "az1"}, {"az": "az2"}


def with_s(value: str, key: str) -> dict[str, Any]:
    """A term selecting the pods labelled security=value, per domain of `key`."""
    return term("security", "In", [value], key)


def scores(nodes: list[Any], existing: list[Any], incoming: Any) -> dict[str, int] | None:
    """The plugin's normalised score per feasible node; None when PreScore skips it."""
    return evaluator(nodes, existing).node_scores(pod_info(incoming, 10_000)).get("InterPodAffinity")


@pytest.mark.parametrize(
    ("nodes", "existing", "incoming", "want"),
    [
        pytest.param(
            [node("node1", CHINA), node("node2", INDIA), node("node3", AZ1)],
            [
                pod("a", S1, node_name="node1"),
                pod("b", S2, node_name="node2"),
                pod("c", S1, node_name="node3"),
            ],
            pod(labels=S1, preferred_affinity=[(5, with_s("S1", "region"))]),
            {"node1": 100, "node2": 0, "node3": 0},
            id="Affinity: pod that matches topology key & pods in nodes will get high score",
        ),
        pytest.param(
            # term 1 (weight 8): NotIn S1 and In S2; term 2 (weight 2): security Exists, wrongkey absent.
            # node1's China holds an S1 pod: 2; node2's India an S2 pod: 8 + 2; node3 has no region: 0
            [node("node1", CHINA), node("node2", INDIA), node("node3", AZ1)],
            [
                pod("a", S1, node_name="node1"),
                pod("b", S2, node_name="node2"),
                pod("c", S1, node_name="node3"),
            ],
            pod(
                labels=S1,
                preferred_affinity=[
                    (
                        8,
                        {
                            "labelSelector": {
                                "matchExpressions": [
                                    {"key": "security", "operator": "NotIn", "values": ["S1"]},
                                    {"key": "security", "operator": "In", "values": ["S2"]},
                                ]
                            },
                            "topologyKey": "region",
                        },
                    ),
                    (
                        2,
                        {
                            "labelSelector": {
                                "matchExpressions": [
                                    {"key": "security", "operator": "Exists"},
                                    {"key": "wrongkey", "operator": "DoesNotExist"},
                                ]
                            },
                            "topologyKey": "region",
                        },
                    ),
                ],
            ),
            {"node1": 20, "node2": 100, "node3": 0},
            id="Affinity: different Label operators and values",
        ),
        pytest.param(
            # the placed pods' required affinity terms (S1 or value2 / security Exists) match the S1 pod:
            # 1 each in their own region
            [node("node1", CHINA), node("node2", INDIA), node("node3", AZ1)],
            [
                pod(
                    "a", S1, node_name="node1", affinity=[term("security", "In", ["S1", "value2"], "region")]
                ),
                pod("b", S2, node_name="node2", affinity=[term("security", "Exists", None, "region")]),
            ],
            pod(labels=S1),
            {"node1": 100, "node2": 100, "node3": 0},
            id="Affinity symmetry: considered RequiredDuringSchedulingIgnoredDuringExecution",
        ),
        pytest.param(
            [node("node1", AZ1), node("node2", INDIA)],
            [
                pod("a", S1, node_name="node1"),
                pod("b", S1, node_name="node1"),
                pod("c", S2, node_name="node2"),
            ],
            pod(labels=S1, preferred_anti=[(5, with_s("S1", "az"))]),
            {"node1": 0, "node2": 100},
            id="Anti Affinity: the node which has more unmatches will get high score",
        ),
        pytest.param(
            # the placed pods' preferred anti-affinity: node1's pod avoids S2 pods in its az, node2's S1 ones
            [node("node1", AZ1), node("node2", AZ2)],
            [
                pod("a", S1, node_name="node1", preferred_anti=[(5, with_s("S2", "az"))]),
                pod("b", S2, node_name="node2", preferred_anti=[(5, with_s("S1", "az"))]),
            ],
            pod(labels=S2),
            {"node1": 0, "node2": 100},
            id="Anti Affinity symmetry: the existing pods in node which has anti affinity match",
        ),
        pytest.param(
            # affinity 8 on node1 (an S1 pod in China), anti-affinity -5 on node2 (an S2 pod in az1),
            # symmetry +8 on node3 (its pod prefers S1 pods in India), -5 on node4 (its pod avoids S1 in az2)
            [node("node1", CHINA), node("node2", AZ1), node("node3", INDIA), node("node4", AZ2)],
            [
                pod("a", S1, node_name="node1"),
                pod("b", S2, node_name="node2"),
                pod("c", node_name="node3", preferred_affinity=[(8, with_s("S1", "region"))]),
                pod("d", node_name="node4", preferred_anti=[(5, with_s("S1", "az"))]),
            ],
            pod(
                labels=S1,
                preferred_affinity=[(8, with_s("S1", "region"))],
                preferred_anti=[(5, with_s("S2", "az"))],
            ),
            {"node1": 100, "node2": 0, "node3": 100, "node4": 0},
            id="Affinity and Anti Affinity and symmetry",
        ),
        # written from the rules (not upstream cases), so that no weight cancels out in the normalisation:
        # node1 +5 (an S1 pod in China), node2 -3 (an S2 pod in India), node3 +1 (its pod's required affinity
        # matches the S1 pod): min -3, max 5, node3 (1 + 3) * 100 / 8 = 50
        pytest.param(
            [node("node1", CHINA), node("node2", INDIA), node("node3", {"region": "Japan"})],
            [
                pod("a", S1, node_name="node1"),
                pod("b", S2, node_name="node2"),
                pod("c", node_name="node3", affinity=[with_s("S1", "region")]),
            ],
            pod(
                labels=S1,
                preferred_affinity=[(5, with_s("S1", "region"))],
                preferred_anti=[(3, with_s("S2", "region"))],
            ),
            {"node1": 100, "node2": 0, "node3": 50},
            id="mixed-weights",
        ),
        # the same with two S1 pods in China and a placed pod's preferred affinity (weight 2) in Japan:
        # node1 +10, node2 -3, node3 +1 +2: node3 (3 + 3) * 100 / 13 = 46
        pytest.param(
            [node("node1", CHINA), node("node2", INDIA), node("node3", {"region": "Japan"})],
            [
                pod("a", S1, node_name="node1"),
                pod("a2", S1, node_name="node1"),
                pod("b", S2, node_name="node2"),
                pod("c", node_name="node3", affinity=[with_s("S1", "region")]),
                pod("d", node_name="node3", preferred_affinity=[(2, with_s("S1", "region"))]),
            ],
            pod(
                labels=S1,
                preferred_affinity=[(5, with_s("S1", "region"))],
                preferred_anti=[(3, with_s("S2", "region"))],
            ),
            {"node1": 100, "node2": 0, "node3": 46},
            id="mixed-weights-counted-per-pod",
        ),
        # every node scores the same raw value: all 0 (upstream's maxMinDiff == 0)
        pytest.param(
            [node("node1", CHINA), node("node2", INDIA)],
            [pod("a", S2, node_name="node1")],
            pod(labels=S1, preferred_affinity=[(5, with_s("S1", "region"))]),
            {"node1": 0, "node2": 0},
            id="no-matching-pod",
        ),
        # PreScore Skip: no preferred term of the pod and no placed pod's term scoring it
        pytest.param(
            [node("node1", CHINA), node("node2", INDIA)],
            [pod("a", S1, node_name="node1", affinity=[with_s("S2", "region")])],
            pod(labels=S1),
            None,
            id="skip",
        ),
    ],
)
def test_inter_pod_affinity_score(
    nodes: list[Any], existing: list[Any], incoming: Any, want: dict[str, int] | None
) -> None:
    assert scores(nodes, existing, incoming) == want


@pytest.mark.parametrize(
    ("existing", "incoming", "want"),
    [
        # preferred affinity alone: China holds an S1 pod (and the load), the pod still goes there
        (
            [pod("a", S1, node_name="node1", cpu="8")],
            pod(labels=S1, preferred_affinity=[(5, with_s("S1", "region"))]),
            "node1",
        ),
        # preferred anti-affinity alone: node2 is the loaded one, but node1 holds the S2 pod it avoids
        (
            [pod("a", S2, node_name="node1"), pod("b", node_name="node2", cpu="8")],
            pod(labels=S1, preferred_anti=[(5, with_s("S2", "region"))]),
            "node2",
        ),
        # no term of its own: a placed pod's required affinity for S1 pods draws it to the loaded node1
        (
            [pod("a", node_name="node1", cpu="8", affinity=[with_s("S1", "region")])],
            pod(labels=S1),
            "node1",
        ),
    ],
)
def test_the_score_decides_the_node(existing: list[Any], incoming: Any, want: str) -> None:
    """InterPodAffinity's score (weight 2, up to 200) outweighs LeastAllocated's few points: the node it
    prefers is the one chosen, even with no other score plugin in play (PreScore does not skip it)."""
    ev = evaluator([node("node1", CHINA), node("node2", INDIA)], existing)
    found = ev.find_node(pod_info(incoming, 10_000))
    assert isinstance(found, int) and ev.snap.node_names[found] == want
