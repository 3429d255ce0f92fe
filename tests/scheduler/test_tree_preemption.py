"""A CompositePodGroup root preempting, step by step, with victims that take 15 s to leave.

The cluster is tests/scenarios/preemption/composite-tree-preempts-lone-pods.yaml: tree train (priority 100,
minGroupCount 2) of gangs ps (1 pod) and workers (2 pods), 1 CPU each, on node-1 (4 CPU) held by three
priority-10 lone pods. Expectations follow upstream v1.37.2 (docs/preemption.md): PodGroupPostFilter runs for
the tree root (schedule_one_podgroup.go podGroupCycle), the preemptor is the CompositePodGroup (executor.go
compositePodGroupExecutorPreemptor, Type() "compositepodgroup"), every pod of the tree is nominated, and
while its victims terminate the tree preempts no one else (isOngoingPreemption) and binds once they are gone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from gangsched.api.gates import FeatureGates
from gangsched.scheduler import Decision, Scheduler, run_until_stable
from gangsched.scheduler.explain import explain
from gangsched.store import Store

from .test_nominations import Clock, objects, pod, step

SCENARIO = Path(__file__).parents[1] / "scenarios" / "preemption" / "composite-tree-preempts-lone-pods.yaml"
FOUND = ", pod group preemption: found a placement for podgroup, preempting 2 victims"
ONGOING = ", pod group preemption: ongoing preemption on nominated nodes"
# Every group of a tree goes through upstream's placement algorithm (one placement without a constraint),
# which reports a group none of whose placements is feasible as `0/1 placements are available, first
# placement status: <its status>`, wrapped in errPodGroupUnschedulable
# (compositePodGroupSchedulingPlacementAlgorithm for train, podGroupSchedulingPlacementAlgorithm for ps).
PLACEMENT = "pod group is unschedulable, 0/1 placements are available, first placement status: "
ROOT = PLACEMENT + "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining"
PS = PLACEMENT + "minCount (1) cannot be satisfied: 0 scheduled, 0 remaining"


def setup() -> tuple[Store, Scheduler, Clock]:
    clock = Clock()
    store = Store(clock, termination_seconds=15.0)
    store.add_all(objects(yaml.safe_dump(yaml.safe_load(SCENARIO.read_text())["objects"])))
    return store, Scheduler(store, FeatureGates(), seed=0), clock


def condition(store: Store, kind: str, name: str, ctype: str) -> Any:
    obj = store.get(kind, ("default", name))
    return next(c for c in obj.status.conditions if c.type == ctype)


def group_message(store: Store, kind: str, name: str) -> str:
    ctype = "PodGroupInitiallyScheduled" if kind == "PodGroup" else "CompositePodGroupInitiallyScheduled"
    return str(condition(store, kind, name, ctype).message)


def pod_message(store: Store, name: str) -> str:
    return str(condition(store, "Pod", name, "PodScheduled").message)


def test_tree_preempts_waits_for_its_victims_then_binds() -> None:
    store, scheduler, clock = setup()
    first = step(store, scheduler, clock)
    assert first is not None and not first.bindings
    assert sorted((e.pod[1], e.preemptor) for e in first.evictions) == [
        ("v2", "default/train"),
        ("v3", "default/train"),
    ], "v1, the oldest, fits beside the tree and is spared"
    assert sorted((n.pod[1], n.node) for n in first.nominations) == [
        ("ps-0", "node-1"),
        ("w-0", "node-1"),
        ("w-1", "node-1"),
    ]
    # The executor's words for a CompositePodGroup preemptor: its Type(), its UID, the candidate "cluster".
    target = condition(store, "Pod", "v2", "DisruptionTarget")
    assert (target.reason, target.message) == (
        "PreemptionByScheduler",
        "default-scheduler: preempting to accommodate a higher priority compositepodgroup",
    )
    preempted = sorted(e.message for e in first.events if e.reason == "Preempted")
    assert preempted == ["Preempted by compositepodgroup default/train on node cluster"] * 2
    # PostFilter's reason on every group's status: train's is shared with workers (never tried), so twice.
    assert group_message(store, "CompositePodGroup", "train") == ROOT + FOUND * 2
    assert group_message(store, "PodGroup", "workers") == ROOT + FOUND * 2
    assert group_message(store, "PodGroup", "ps") == PS + FOUND
    # ps-0 keeps its FitError; the workers the root's status copied before PostFilter ran.
    assert pod_message(store, "ps-0") == "0/2 nodes are available: 2 Insufficient cpu."
    assert pod_message(store, "w-0") == ROOT
    # Retried while v2 and v3 terminate, it evicts, nominates and binds nothing.
    for _ in range(3):
        scheduler.queue.move_all_to_active()
        clock.now = max(clock.now + 2.0, scheduler.queue.next_ready_at() or 0.0)
        again = step(store, scheduler, clock)
        assert again is not None and not again.evictions and not again.nominations and not again.bindings
    assert group_message(store, "CompositePodGroup", "train") == ROOT + ONGOING * 2
    assert group_message(store, "PodGroup", "ps") == PS + ONGOING
    assert pod(store, "w-1").status.nominatedNodeName == "node-1"
    # Their deletion at 15 s activates it at once, backoff or not; it binds where it was nominated.
    clock.now = 15.0
    store.finish_terminations(clock.now)
    bound = step(store, scheduler, clock)
    assert bound is not None
    assert sorted((b.pod[1], b.node) for b in bound.bindings) == [
        ("ps-0", "node-1"),
        ("w-0", "node-1"),
        ("w-1", "node-1"),
    ]
    scheduled = condition(store, "CompositePodGroup", "train", "CompositePodGroupInitiallyScheduled")
    assert scheduled.status == "True"
    assert pod(store, "v1").spec.nodeName == "node-1"


def test_a_victim_leaving_early_does_not_start_a_second_preemption() -> None:
    """v3 confirmed gone first: v2 still terminates on the nominated node, so the tree, retried, waits."""
    store, scheduler, clock = setup()
    step(store, scheduler, clock)
    clock.now = 5.0
    store.delete("Pod", ("default", "v3"))
    decisions: list[Decision] = list(iter(lambda: step(store, scheduler, clock), None))
    assert decisions, "v3's deletion did not wake the tree"
    assert not any(d.evictions or d.nominations or d.bindings for d in decisions)
    clock.now = 15.0
    store.finish_terminations(clock.now)
    bound = step(store, scheduler, clock)
    assert bound is not None and len(bound.bindings) == 3


def test_explain_runs_the_trees_preemption_dry() -> None:
    """`gangsched explain` on the tree: the victims its preemption would take, v3 then v2 (most important
    first), and nothing evicted by asking."""
    store, scheduler, clock = setup()
    e = explain(scheduler, ("CompositePodGroup", "default", "train"), clock.now)
    assert (e.evict, e.preemption) == (["Pod default/v3 (priority 10)", "Pod default/v2 (priority 10)"], None)
    assert not store.evictions


def test_the_last_group_of_the_tree_lets_its_siblings_pods_in() -> None:
    """Pods created before their groups, the PodGroups one by one: ps-0 waits at PreEnqueue for the tree's
    quorum until workers exists; workers' arrival must let ps-0 in too, or the tree is tried without it,
    fails, and ps-0 stays gated for ever."""
    docs = yaml.safe_load(SCENARIO.read_text())["objects"]
    everything = objects(yaml.safe_dump(docs))
    groups = [o for o in everything if o.kind in ("CompositePodGroup", "PodGroup")]
    store = Store(Clock())
    scheduler = Scheduler(store, FeatureGates(), seed=0)
    for obj in [o for o in everything if o not in groups] + groups:
        store.add(obj)
    run_until_stable(store, scheduler)
    assert {n: pod(store, n).spec.nodeName for n in ("ps-0", "w-0", "w-1")} == dict.fromkeys(
        ("ps-0", "w-0", "w-1"), "node-1"
    )
    assert sorted(e.pod[1] for e in store.evictions) == ["v2", "v3"]
