"""NodeResourcesFit's LeastAllocated and MostAllocated scores and NodeResourcesBalancedAllocation's, node by
node, on the cases of upstream's table tests (plugins/noderesources/{least_allocated,most_allocated,
balanced_allocation}_test.go, v1.37.2), their expected scores written here by hand. Quantities are theirs:
`cpu: "4000"` is 4000 cores, `memory: "10000"` 10000 bytes; only the ratios matter.

Each score is asked of both of the evaluator's paths, the vectorised one (every node at once) and the scalar
one (the few nodes the last placement changed): both must give upstream's integers."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from lightkube.models import core_v1

from gangsched.api.defaults import apply_defaults
from gangsched.scheduler.plugins import balanced_allocation, node_resources_fit
from gangsched.scheduler.podinfo import pod_info

from .plugin_cases import evaluator, node

Requests = dict[str, str]


def sized(name: str, cpu: str | None = None, memory: str | None = None) -> Any:
    """A node of that allocatable cpu and memory (none given: neither, as upstream's bare MakeNode)."""
    allocatable = {"pods": "110"}
    allocatable |= {"cpu": cpu} if cpu is not None else {}
    allocatable |= {"memory": memory} if memory is not None else {}
    return node(name, allocatable=allocatable)


def requesting(*containers: Requests, on: str | None = None) -> Any:
    """upstream's st.MakePod().Req(...).Req(...): one container per request map (none: no container asks
    anything, upstream's bare MakePod)."""
    spec: dict[str, Any] = {
        "containers": [
            {"name": f"c{i}", "image": "i", "resources": {"requests": requests}}
            for i, requests in enumerate(containers or ({"cpu": "0", "memory": "0"},))
        ]
    }
    if on is not None:
        spec["nodeName"] = on
    pod = core_v1.Pod.from_dict(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"p-{id(spec)}", "namespace": "default"},
            "spec": spec,
        }
    )
    apply_defaults([pod])
    return pod


def scores(nodes: list[Any], existing: list[Any], incoming: Any, plugin: str) -> dict[str, int]:
    ev = evaluator(nodes, existing)
    snap, vec = ev.snap, ev.vector(pod_info(incoming, 10_000))
    if plugin == "balanced":
        whole = balanced_allocation.score(snap, vec, slice(None))
        one = [balanced_allocation.score_one(*snap.column(i)[:2], vec) for i in range(len(snap))]
    else:
        most = plugin == "most"
        whole = (node_resources_fit.most_allocated if most else node_resources_fit.least_allocated)(
            snap, vec, slice(None)
        )
        columns = [snap.column(i) for i in range(len(snap))]
        one = [node_resources_fit.score_one(alloc, nonzero, vec, most) for alloc, _, nonzero in columns]
    assert whole.dtype == np.int64 and whole.tolist() == one, "the vectorised and the scalar path differ"
    return dict(zip(snap.node_names, one, strict=True))


TWO_CONTAINERS = ({"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"})
CPU_ONLY_3000 = {"cpu": "3000", "memory": "0"}
# existing pods (node, containers' requests) several cases share
FOUR_PODS = [
    ("node1", (CPU_ONLY_3000,)),
    ("node1", (CPU_ONLY_3000,)),
    ("node2", (CPU_ONLY_3000,)),
    ("node2", ({"cpu": "3000", "memory": "5000"},)),
]
TWO_PODS = [("node1", (CPU_ONLY_3000,)), ("node2", ({"cpu": "3000", "memory": "5000"},))]
CPU_THEN_BOTH = [
    ("node1", ({"cpu": "1000m"}, {"cpu": "2000m"})),
    ("node2", ({"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000"})),
]

LEAST = [
    pytest.param(
        [], TWO_CONTAINERS, ("4000", "10000"), ("6000", "10000"), (37, 50), id="differently-sized-nodes"
    ),
    pytest.param(
        [("node1", ()), ("node1", ()), ("node2", ()), ("node2", ())],
        (),
        ("4000", "10000"),
        ("4000", "10000"),
        (100, 100),
        id="no-resources-requested-pods-scheduled",
    ),
    pytest.param(
        FOUR_PODS,
        (),
        ("10000", "20000"),
        ("10000", "20000"),
        (70, 57),
        id="no-resources-requested-pods-scheduled-with-resources",
    ),
    pytest.param(
        TWO_PODS,
        TWO_CONTAINERS,
        ("10000", "20000"),
        ("10000", "50000"),
        (57, 60),
        id="resources-requested-differently-sized-nodes",
    ),
    pytest.param(
        TWO_PODS,
        (CPU_ONLY_3000,),
        ("4000", "10000"),
        ("4000", "10000"),
        (50, 25),
        id="requested-resources-exceed-node-capacity",
    ),
    pytest.param(
        TWO_PODS,
        (),
        (None, None),
        (None, None),
        (0, 0),
        id="zero-node-resources",
    ),
    # written from leastResourceScorer (not an upstream case): a resource of allocatable 0 is left out of the
    # weighted average; node1 offers cpu only: (4000 - 1000) * 100 / 4000 = 75; node2 memory only:
    # (10000 - 2000) * 100 / 10000 = 80
    pytest.param(
        [],
        ({"cpu": "1000m", "memory": "2000"},),
        ("4000m", None),
        (None, "10000"),
        (75, 80),
        id="one-resource",
    ),
    # each resource's score is an integer before the average (upstream's int64 arithmetic): node1
    # (2000 * 100 / 3000 = 66 + 8350 * 100 / 10000 = 83) / 2 = 74, not (66.7 + 83.5) / 2 = 75;
    # node2 (75 + 83) / 2 = 79
    pytest.param(
        [],
        ({"cpu": "1000m", "memory": "1650"},),
        ("3000m", "10000"),
        ("4000m", "10000"),
        (74, 79),
        id="integer-steps",
    ),
]

MOST = [
    pytest.param([], (), ("4000", "10000"), ("4000", "10000"), (0, 0), id="nothing-requested"),
    pytest.param(
        [], TWO_CONTAINERS, ("4000", "10000"), ("6000", "10000"), (62, 50), id="differently-sized-nodes"
    ),
    pytest.param(
        FOUR_PODS,
        (),
        ("10000", "20000"),
        ("10000", "20000"),
        (30, 42),
        id="no-resources-requested-pods-scheduled-with-resources",
    ),
    pytest.param(
        TWO_PODS,
        TWO_CONTAINERS,
        ("10000", "20000"),
        ("10000", "20000"),
        (42, 55),
        id="resources-requested-pods-scheduled-with-resources",
    ),
    pytest.param(
        [],
        ({"cpu": "2000", "memory": "4000"}, {"cpu": "3000", "memory": "5000"}),
        ("5000", "10000"),
        ("10000", "9000"),
        (95, 75),
        id="requested-equal-node-capacity",
    ),
    pytest.param(
        # requests are the non-zero ones: a container asking nothing counts 100m cpu and 200Mi memory
        [("node1", ({},)), ("node1", ({},))],
        ({},),
        ("250m", "1000Mi"),
        ("250m", "1000Mi"),
        (80, 30),
        id="nonzero-request-for-resource",
    ),
    pytest.param(
        [("node1", (CPU_ONLY_3000,))],
        (),
        (None, None),
        (None, None),
        (0, 0),
        id="zero-node-resources",
    ),
    # written from mostResourceScorer: node1 offers cpu only, 1000 * 100 / 4000 = 25; node2 memory only,
    # 2000 * 100 / 10000 = 20
    pytest.param(
        [],
        ({"cpu": "1000m", "memory": "2000"},),
        ("4000m", None),
        (None, "10000"),
        (25, 20),
        id="one-resource",
    ),
    # integers before the average: node1 (1000 * 100 / 3000 = 33 + 1675 * 100 / 10000 = 16) / 2 = 24, not
    # (33.3 + 16.75) / 2 = 25; node2 (25 + 16) / 2 = 20
    pytest.param(
        [],
        ({"cpu": "1000m", "memory": "1675"},),
        ("3000m", "10000"),
        ("4000m", "10000"),
        (24, 20),
        id="integer-steps",
    ),
    # the smallest capacity there is: 1m of cpu, all of it requested (100), half the memory (50)
    pytest.param(
        [],
        ({"cpu": "1m", "memory": "5000"},),
        ("1m", "10000"),
        ("4000", "10000"),
        (75, 25),
        id="one-milli-cpu",
    ),
]

BALANCED = [
    pytest.param(
        [],
        ({"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000"}),
        ("4000m", "10000"),
        ("6000m", "10000"),
        (68, 75),
        id="differently-sized-nodes",
    ),
    pytest.param(
        CPU_THEN_BOTH,
        ({"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000"}),
        ("10000m", "20000"),
        ("10000m", "20000"),
        (73, 74),
        id="pods-scheduled-with-resources",
    ),
    pytest.param(
        CPU_THEN_BOTH,
        ({"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000"}),
        ("10000m", "20000"),
        ("10000m", "50000"),
        (73, 70),
        id="differently-sized-nodes-with-pods",
    ),
    pytest.param(
        [("node1", ({"cpu": "1000m"}, {"cpu": "2000m"}))],
        ({"memory": "2000"}, {"memory": "3000"}),
        ("3000m", "5000"),
        ("3000m", "5000"),
        (100, 50),
        id="nodes-to-reach-min-max-score",
    ),
    pytest.param(
        CPU_THEN_BOTH,
        ({"cpu": "1000m"}, {"cpu": "2000m"}),
        ("6000m", "10000"),
        ("6000m", "10000"),
        (62, 62),
        id="requested-resources-at-node-capacity",
    ),
    # a best-effort pod: PreScore Skip, the plugin adds nothing on any node
    pytest.param(
        [("node1", ({"cpu": "1000m"},))], (), ("4000m", "10000"), ("4000m", "10000"), (0, 0), id="best-effort"
    ),
    # a node offering only one of the two resources has no spread before or after: (100 - 100) -> 75
    pytest.param(
        [],
        ({"cpu": "1000m", "memory": "2000"},),
        ("4000m", None),
        (None, "10000"),
        (75, 75),
        id="one-resource",
    ),
    # written from balancedResourceScore (not upstream cases): a fraction above 1 counts as 1. node1's cpu
    # and node2's memory are overcommitted by bound pods: without the pod |1 - 4000/8000| / 2 = 0.25 -> 75,
    # with it |1 - 6000/8000| / 2 = 0.125 -> 87; 50 + (50 + 87 - 75) / 2 = 81 on both
    pytest.param(
        [("node1", ({"cpu": "6000m", "memory": "4000"},)), ("node2", ({"cpu": "2000m", "memory": "12000"},))],
        ({"cpu": "1000m", "memory": "2000"},),
        ("4000m", "8000"),
        ("4000m", "8000"),
        (81, 81),
        id="overcommitted-capped-at-one",
    ),
    # an allocatable of one unit still counts (only 0 is skipped): node1's 1m cpu taken whole, memory half:
    # 50 + (50 + 75 - 100) / 2 = 62; node2's 1-byte memory taken whole (capped), cpu 1/4000:
    # int((1 - 0.499875) * 100) = 50, 50 + (50 + 50 - 100) / 2 = 50
    pytest.param(
        [],
        ({"cpu": "1m", "memory": "4000"},),
        ("1m", "8000"),
        ("4000m", "1"),
        (62, 50),
        id="allocatable-of-one-unit",
    ),
]


@pytest.mark.parametrize(("existing", "incoming", "node1", "node2", "want"), LEAST)
def test_least_allocated(existing: Any, incoming: Any, node1: Any, node2: Any, want: tuple[int, int]) -> None:
    _check("least", existing, incoming, node1, node2, want)


@pytest.mark.parametrize(("existing", "incoming", "node1", "node2", "want"), MOST)
def test_most_allocated(existing: Any, incoming: Any, node1: Any, node2: Any, want: tuple[int, int]) -> None:
    _check("most", existing, incoming, node1, node2, want)


@pytest.mark.parametrize(("existing", "incoming", "node1", "node2", "want"), BALANCED)
def test_balanced_allocation(
    existing: Any, incoming: Any, node1: Any, node2: Any, want: tuple[int, int]
) -> None:
    _check("balanced", existing, incoming, node1, node2, want)


def _check(
    plugin: str,
    existing: list[tuple[str, tuple[Requests, ...]]],
    incoming: tuple[Requests, ...],
    node1: tuple[str | None, str | None],
    node2: tuple[str | None, str | None],
    want: tuple[int, int],
) -> None:
    nodes = [sized("node1", *node1), sized("node2", *node2)]
    placed = [requesting(*containers, on=where) for where, containers in existing]
    assert scores(nodes, placed, requesting(*incoming), plugin) == {"node1": want[0], "node2": want[1]}
