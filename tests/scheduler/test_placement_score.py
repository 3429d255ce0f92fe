"""The score of a topology placement (upstream's NodeResourcesFit ScorePlacement with MostAllocated): the
requests and allocatable of every node of the placement summed, each resource scored requested * 100 /
allocatable (0 when nothing is allocatable), CPU and memory weighted equally, in integers."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from lightkube.models import core_v1

from gangsched.api.defaults import apply_defaults
from gangsched.scheduler.evaluator import Evaluator
from gangsched.scheduler.podinfo import pod_info
from gangsched.scheduler.snapshot import Snapshot
from gangsched.scheduler.topology import most_allocated


def _node(name: str, cpu: str, memory: str) -> Any:
    status = {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}}
    meta = {"name": name}
    return core_v1.Node.from_dict({"apiVersion": "v1", "kind": "Node", "metadata": meta, "status": status})


def _pod(name: str, node: str, cpu: str, memory: str) -> Any:
    container = {"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
    obj = core_v1.Pod.from_dict(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "d"},
            "spec": {"nodeName": node, "containers": [container]},
        }
    )
    apply_defaults([obj])
    return obj


def _score(nodes: list[Any], pods: list[Any], placement: list[str]) -> int:
    snap = Snapshot(nodes)
    ev = Evaluator(snap, np.random.default_rng(0))
    for i, p in enumerate(pods):
        pi = pod_info(p, i)
        snap.place(pi.key, snap.index[p.spec.nodeName], ev.vector(pi), pi.traits)
    mask = np.zeros(len(snap), dtype=bool)
    for name in placement:
        mask[snap.index[name]] = True
    return most_allocated(snap, mask)


TWO = [_node("a", "4", "8Gi"), _node("b", "4", "8Gi")]
ON_A = [_pod("p", "a", "3", "2Gi")]


@pytest.mark.parametrize(
    ("nodes", "pods", "placement", "score"),
    [
        (TWO, [], ["a", "b"], 0),
        (TWO, ON_A, ["a"], 50),  # cpu 3/4 -> 75, memory 2/8 -> 25: (75 + 25) / 2
        (TWO, ON_A, ["b"], 0),
        (TWO, ON_A, ["a", "b"], 24),  # cpu 3/8 -> 37, memory 2/16 -> 12: 49 / 2 -> 24
        ([_node("c", "4", "0")], [_pod("q", "c", "2", "0")], ["c"], 25),  # no memory allocatable: 0, not /0
        ([_node("m", "1m", "8Gi")], [_pod("r", "m", "1m", "0")], ["m"], 50),  # 1 millicore of 1: 100
        (TWO, [_pod("s", "a", "4", "8Gi"), _pod("t", "b", "2", "0")], ["a", "b"], 62),  # 75, 50: 125 / 2
    ],
    ids=["empty", "one-node", "other-node", "summed", "zero-memory", "one-millicore", "two-nodes-summed"],
)
def test_most_allocated_over_a_placement(
    nodes: list[Any], pods: list[Any], placement: list[str], score: int
) -> None:
    assert _score(nodes, pods, placement) == score
