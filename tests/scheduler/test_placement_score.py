"""The score of a topology placement (upstream's NodeResourcesFit ScorePlacement with MostAllocated): the
requests and allocatable of every node of the placement summed, each resource scored requested * 100 /
allocatable, CPU and memory weighted equally over the resources the placement offers (one with no
allocatable is left out of the average), in integers; requests as the scorer counts them (a container
without a request counts upstream's default: 100m cpu, 200Mi memory)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from lightkube.models import core_v1

from gangsched.api.defaults import apply_defaults
from gangsched.scheduler.evaluator import Evaluator
from gangsched.scheduler.podinfo import pod_info
from gangsched.scheduler.snapshot import Snapshot
from gangsched.scheduler.topology import _KeptScores, choose, most_allocated, several_domains


def _node(name: str, cpu: str, memory: str) -> Any:
    status = {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}}
    meta = {"name": name}
    return core_v1.Node.from_dict({"apiVersion": "v1", "kind": "Node", "metadata": meta, "status": status})


def _pod(name: str, node: str, cpu: str, memory: str) -> Any:
    requests = {"cpu": cpu, "memory": memory} if memory else {"cpu": cpu}  # "": no memory request
    container = {"name": "c", "image": "i", "resources": {"requests": requests}}
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
        # no memory allocatable: memory is left out of the average (mostResourceScorer's weightSum), not 0
        ([_node("c", "4", "0")], [_pod("q", "c", "2", "0")], ["c"], 50),
        ([_node("m", "1m", "8Gi")], [_pod("r", "m", "1m", "0")], ["m"], 50),  # 1 millicore of 1: 100
        (TWO, [_pod("s", "a", "4", "8Gi"), _pod("t", "b", "2", "0")], ["a", "b"], 62),  # 75, 50: 125 / 2
        # no memory request: counted as 200Mi (schedutil.DefaultMemoryRequest): cpu 2/4 -> 50, 200Mi/8Gi -> 2
        ([_node("d", "4", "8Gi")], [_pod("u", "d", "2", "")], ["d"], 26),
    ],
    ids=[
        "empty",
        "one-node",
        "other-node",
        "summed",
        "zero-memory",
        "one-millicore",
        "two-nodes-summed",
        "default-memory-request",
    ],
)
def test_most_allocated_over_a_placement(
    nodes: list[Any], pods: list[Any], placement: list[str], score: int
) -> None:
    assert _score(nodes, pods, placement) == score


def _evaluator(seed: int) -> Evaluator:
    return Evaluator(Snapshot([_node("a", "4", "8Gi")]), np.random.default_rng(seed))


def test_a_single_best_placement_is_chosen_whatever_the_seed() -> None:
    pods, most = [4, 3, 4], [25, 100, 30]
    # totals: 100 + 25, 75 + 100, 100 + 30: the second
    assert {choose(pods, most, _evaluator(seed)) for seed in range(20)} == {1}


def test_placements_of_equal_score_are_chosen_at_random() -> None:
    """findBestPlacement keeps the placement with the larger random tie-breaker among equal totals: over
    many cycles every tied placement is chosen, and a placement with a lower total never is."""
    pods, most = [2, 2, 1, 2], [10, 10, 60, 10]
    # totals: 110, 110, 50 + 60 = 110, 110: all tied
    assert {choose(pods, most, _evaluator(seed)) for seed in range(40)} == {0, 1, 2, 3}
    pods, most = [2, 2, 1], [10, 10, 59]
    assert {choose(pods, most, _evaluator(seed)) for seed in range(40)} == {0, 1}
    # in integers: 3 of 3 -> 100 + 0; 2 of 3 -> 66 (not 66.7) + 34: tied
    pods, most = [3, 2], [0, 34]
    assert {choose(pods, most, _evaluator(seed)) for seed in range(40)} == {0, 1}


def test_members_in_three_domains_name_two_of_them() -> None:
    """TopologyPlacement stops at the first domain that differs from the first one: two names, whatever
    the number of domains."""
    message = (
        "cannot determine domain for already scheduled pods: more than 1 domain found for pod group: a, b"
    )
    assert several_domains({"c", "b", "a"}) == message


class _Sums:
    """What `_KeptScores` reads of a DomainSums: per domain (column) the room of the group's class, the
    allocatable cpu and memory and their requested amounts, and the columns changed since."""

    def __init__(self, columns: list[tuple[int, int]]) -> None:  # (room, percent requested) per column
        self.columns = [[room, 100, 100, used, used] for room, used in columns]
        self.rebuilds, self.touched = 1, []

    def array(self, columns: list[int] | None = None) -> np.ndarray:
        picked = self.columns if columns is None else [self.columns[column] for column in columns]
        return np.array(picked, dtype=np.int64).T

    def column_sums(self, column: int) -> list[int]:
        return self.columns[column]

    def set(self, column: int, room: int, used: int) -> None:
        self.columns[column] = [room, 100, 100, used, used]
        self.touched.append(column)


def test_the_kept_choice_follows_the_best_pods_count_down() -> None:
    """A group of 3 pods (1 needed, no requests: MostAllocated is the domain's own usage). The best pods
    count is 3 (a, empty: 100 + 0); b (room 1, full: 33 + 100) and c (room 2, 67%: 66 + 67) tie at 133.
    When a's room falls to 2, the best count is 2: b has 50 + 100, c 100 + 67, and c alone is chosen."""
    sums = _Sums([(3, 0), (1, 100), (2, 67)])
    kept = _KeptScores(sums, (3, 0, 1, 0, 0))  # a stand-in for DomainSums
    assert kept.winners() == [1, 2]
    sums.set(0, 2, 0)
    assert kept.winners() == [2]
    # and back up: a holds all 3 again, b and c tie again
    sums.set(0, 3, 0)
    assert kept.winners() == [1, 2]
