"""The scheduler's start reads what the store holds in a shortened replay (`Scheduler.__init__`): groups are
not replayed, pods go straight to `_on_pod`, and a group's pending members are let in once every pod is known,
its root entered once. That must leave the scheduler where the events one by one leave it: a scheduler
subscribed to an empty store and fed the same objects (groups before their pods, as the replay read them)
holds the same roots in the same order and states, gates the same pods with the same messages, and makes the
same decisions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube.models import core_v1

from gangsched.api.gates import FeatureGates
from gangsched.report.schedule_output import as_json
from gangsched.scheduler import Scheduler, run_until_stable
from gangsched.store import Store

from ..scenarios.harness import load_objects
from .builders import group, node, pod

SCENARIOS = Path(__file__).parents[1] / "scenarios"
CASES = [
    "mixed",
    "engine/podgroup-gated-until-mincount.yaml",
    "engine/podgroup-member-with-scheduling-gates-stays-gated.yaml",
    "engine/gang-terminal-members-do-not-lift-gate.yaml",
    "preemption/composite-tree-preempts-lone-pods.yaml",
    "topology/cpg-quorum-gate.yaml",
    "topology/cpg-child-already-running.yaml",
]
GROUP_KINDS = ("CompositePodGroup", "PodGroup", "Pod")


# Gangs whose members arrive interleaved, one short of its minCount, one whose PodGroup is missing, a
# member with schedulingGates, a member already bound, lone pods between them.
MIXED = [
    node("n1", "4"), node("n2", "4"),
    group("a", 2), group("b", 2), group("short", 3), group("c", 2),
    pod("a-0", "a"), pod("lone-0"), pod("b-0", "b"), pod("a-1", "a"), pod("short-0", "short"),
    pod("b-1", "b"), pod("orphan-0", "missing"), pod("short-1", "short"), pod("lone-1", priority=5),
    pod("c-0", "c", node="n2"), pod("c-1", "c"), pod("c-2", "c"),
]  # fmt: skip


def _objects(case: str) -> list[Any]:
    if case == "mixed":
        objects = load_objects(MIXED, case, FeatureGates())
        gated = next(o for o in objects if o.metadata.name == "b-1")
        gated.spec.schedulingGates = [core_v1.PodSchedulingGate(name="example.com/hold")]
        return objects
    docs = yaml.safe_load((SCENARIOS / case).read_text())["objects"]
    return load_objects(docs, case, FeatureGates())


def _state(scheduler: Scheduler) -> tuple[Any, ...]:
    roots = [(r.key, r.state, r.priority, r.timestamp, r.attempts) for r in scheduler.queue.in_order()]
    members = {group: sorted(keys) for group, keys in scheduler._members.items()}
    return roots, dict(sorted(scheduler._gated.items())), members


@pytest.mark.parametrize("case", CASES)
def test_the_start_leaves_the_scheduler_where_the_events_one_by_one_do(case: str) -> None:
    objects = _objects(case)
    # one order for both stores: what they saw first is the queue's tie-break
    ordered = [o for o in objects if o.kind not in GROUP_KINDS]
    ordered += [o for kind in GROUP_KINDS for o in objects if o.kind == kind]
    started = Store()
    started.add_all(ordered)
    at_start = Scheduler(started, FeatureGates(), seed=0)
    fed = Store()
    one_by_one = Scheduler(fed, FeatureGates(), seed=0)
    own = _objects(case)  # objects of their own: the runs below write to them
    for obj in [o for o in own if o.kind not in GROUP_KINDS] + [
        o for k in GROUP_KINDS for o in own if o.kind == k
    ]:
        fed.add(obj)

    assert _state(at_start) == _state(one_by_one)
    assert at_start.queue.roots() or at_start._gated
    run_until_stable(started, at_start)
    run_until_stable(fed, one_by_one)
    assert as_json(started) == as_json(fed)


def test_the_cases_hold_pods_at_pre_enqueue() -> None:
    """Some of them: else the comparison above would show little of the gates."""
    gated = []
    for case in CASES:
        store = Store()
        store.add_all(_objects(case))
        gated.append(bool(Scheduler(store, FeatureGates(), seed=0)._gated))
    assert sum(gated) >= 3
