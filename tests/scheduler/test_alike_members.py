"""A gang's members of one template in one cycle: each goes where find_node would send it, the members after
the first placed in turn without asking find_node again (Evaluator.reserve_alike), until one fits nowhere
or is not alike (a nominated node of its own). Expectations by hand from upstream's rules: NodeResourcesFit
with LeastAllocated and BalancedAllocation spread identical pods over identical nodes; a pod nominated to a
node where it fits goes there unscored (evaluateNominatedNode); a pod that fits nowhere gets its FitError.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from lightkube.models import core_v1

from gangsched.scheduler import GroupAttempt, run_group_cycle
from gangsched.scheduler.evaluator import Evaluator
from gangsched.scheduler.podinfo import pod_info
from gangsched.scheduler.snapshot import Snapshot
from tests.scheduler.plugin_cases import node, pod


def cluster(*cpus: str) -> Evaluator:
    allocatable = [{"cpu": cpu, "memory": "8Gi", "pods": "110"} for cpu in cpus]
    nodes = [node(f"n{i}", allocatable=a) for i, a in enumerate(allocatable)]
    return Evaluator(Snapshot(nodes), np.random.default_rng(0))


def members(count: int, nominated: dict[int, str] | None = None) -> list[object]:
    pods = []
    for i in range(count):
        p = pod(f"m{i}", cpu="1")
        if nominated and i in nominated:
            p.status = core_v1.PodStatus(nominatedNodeName=nominated[i])
        pods.append(pod_info(p, i))
    return pods


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_identical_members_fill_identical_nodes_evenly_and_the_one_left_over_says_why(seed: int) -> None:
    """Two nodes of 2 CPU, five members of 1 CPU, minCount 4: the emptier node always scores higher, so
    each node takes two; the fifth fits nowhere and carries upstream's FitError; the gang succeeds."""
    ev = cluster("2", "2")
    ev.rng = np.random.default_rng(seed)
    pods = members(5)
    result = run_group_cycle(ev, GroupAttempt(min_count=4, gang=True, scheduled=0, pods=pods))
    assert result.code == 0
    assert Counter(node for _, node in result.placed) == {0: 2, 1: 2}
    assert [pi.key[1] for pi, _ in result.placed] == ["m0", "m1", "m2", "m3"]
    assert result.failures == {("default", "m4"): "0/2 nodes are available: 2 Insufficient cpu."}
    result.revert()
    assert not ev.snap.placed


def test_a_member_nominated_to_a_node_goes_there_between_alike_ones() -> None:
    """Nodes of 4, 4 and 1 CPU; the second member is nominated to the small node, where it fits: it goes
    there unscored, the others to the two big nodes, one each (the emptier one scores higher)."""
    ev = cluster("4", "4", "1")
    pods = members(3, nominated={1: "n2"})
    result = run_group_cycle(ev, GroupAttempt(min_count=3, gang=True, scheduled=0, pods=pods))
    where = {pi.key[1]: node for pi, node in result.placed}
    assert where["m1"] == 2
    assert {where["m0"], where["m2"]} == {0, 1}
