"""Nominations and ongoing preemption over time, step by step on the in-memory Store with a clock.

Expectations follow upstream (docs/preemption.md): a nominated pod holds its node for pods of equal or lower
priority; the preemptor retried while its victims terminate evicts no one and writes no nomination again;
its group's status says the preemption is ongoing; the deletion of its victim activates it at once.
"""

from __future__ import annotations

from typing import Any

import yaml

from gangsched.api.defaults import apply_defaults
from gangsched.api.gates import FeatureGates
from gangsched.api.loader import load_documents
from gangsched.scheduler import Decision, Scheduler
from gangsched.store import Store

CLUSTER = """
- {apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: low}, value: 10}
- {apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: high}, value: 100}
- {apiVersion: v1, kind: Node, metadata: {name: node-1}, status: {allocatable: {cpu: "4", memory: 16Gi}}}
- {apiVersion: v1, kind: Pod, metadata: {name: v1}, spec: {priorityClassName: low, nodeName: node-1,
   containers: [{name: c, image: i, resources: {requests: {cpu: "1"}}}]}}
- {apiVersion: v1, kind: Pod, metadata: {name: v2}, spec: {priorityClassName: low, nodeName: node-1,
   containers: [{name: c, image: i, resources: {requests: {cpu: "1"}}}]}}
- {apiVersion: v1, kind: Pod, metadata: {name: v3}, spec: {priorityClassName: low, nodeName: node-1,
   containers: [{name: c, image: i, resources: {requests: {cpu: "1"}}}]}}
- {apiVersion: v1, kind: Pod, metadata: {name: v4}, spec: {priorityClassName: low, nodeName: node-1,
   containers: [{name: c, image: i, resources: {requests: {cpu: "1"}}}]}}
- {apiVersion: scheduling.k8s.io/v1beta1, kind: PodGroup, metadata: {name: gang},
   spec: {priorityClassName: high, schedulingPolicy: {gang: {minCount: 3}}}}
"""
MEMBER = """{apiVersion: v1, kind: Pod, metadata: {name: NAME}, spec: {priorityClassName: high,
  schedulingGroup: {podGroupName: gang},
  containers: [{name: c, image: i, resources: {requests: {cpu: "1"}}}]}}"""
LOW = """{apiVersion: v1, kind: Pod, metadata: {name: NAME}, spec: {priorityClassName: low,
  containers: [{name: c, image: i, resources: {requests: {cpu: "1"}}}]}}"""


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def objects(text: str) -> list[Any]:
    """The objects of `text`, defaulted (priorities resolved against CLUSTER's PriorityClasses)."""
    docs = yaml.safe_load(text)
    classes = [d for d in yaml.safe_load(CLUSTER) if d["kind"] == "PriorityClass"]
    extra = [] if any(d["kind"] == "PriorityClass" for d in docs) else classes
    result = load_documents(extra + docs, "test")
    assert not list(apply_defaults(item.obj for item in result.objects))
    return [item.obj for item in result.objects if item.obj.kind != "PriorityClass" or not extra]


def member(name: str) -> list[Any]:
    return objects(f"[{MEMBER.replace('NAME', name)}]")


def setup(termination: float = 15.0) -> tuple[Store, Scheduler, Clock]:
    clock = Clock()
    store = Store(clock, termination_seconds=termination)
    store.add_all(objects(CLUSTER))
    scheduler = Scheduler(store, FeatureGates(), seed=0)
    for name in ("g1", "g2", "g3"):
        store.add_all(member(name))
    return store, scheduler, clock


def step(store: Store, scheduler: Scheduler, clock: Clock) -> Decision | None:
    decision = scheduler.schedule_one(clock.now)
    if decision is not None:
        store.apply(decision)
    return decision


def pod(store: Store, name: str) -> Any:
    return store.get("Pod", ("default", name))


def group_message(store: Store) -> str:
    pg = store.get("PodGroup", ("default", "gang"))
    return str(pg.status.conditions[0].message)


def test_gang_preempts_three_of_four_then_waits_without_preempting_again() -> None:
    store, scheduler, clock = setup()
    first = step(store, scheduler, clock)
    assert first is not None
    assert len(first.evictions) == 3, "3 CPUs are needed: three of the four 1-CPU victims"
    assert sorted(n.pod[1] for n in first.nominations) == ["g1", "g2", "g3"]
    found = "pod group preemption: found a placement for podgroup, preempting 3 victims"
    assert group_message(store).endswith(found)
    victims = [e.pod for e in first.evictions]
    assert all(pod(store, v[1]).metadata.deletionTimestamp is not None for v in victims)
    # Retried while the victims terminate (as any unrelated event would), it evicts and nominates nothing.
    for _ in range(3):  # at 2, 4 and 8 s: each retry doubles its backoff (1, 2, 4 s), the next is at 16 s
        scheduler.queue.move_all_to_active()
        clock.now = max(clock.now + 2.0, scheduler.queue.next_ready_at() or 0.0)
        again = step(store, scheduler, clock)
        assert again is not None and not again.evictions and not again.nominations and not again.bindings
    assert group_message(store).endswith("pod group preemption: ongoing preemption on nominated nodes")
    # Its backoff runs until 16 s by now; the deletion of its victims at 15 s activates it at once anyway.
    scheduler.queue.move_all_to_active()
    assert scheduler.queue.next_ready_at() == 16.0
    clock.now = 15.0
    store.finish_terminations(clock.now)
    bound = step(store, scheduler, clock)
    assert bound is not None and sorted(b.pod[1] for b in bound.bindings) == ["g1", "g2", "g3"]
    assert not bound.nominations, "binding clears a nomination; no status write for it"
    assert pod(store, "g1").status.nominatedNodeName is None


def test_nominations_rebuilt_from_status_after_a_restart_hold_the_room() -> None:
    store, scheduler, clock = setup()
    step(store, scheduler, clock)
    # A new scheduler on the same objects (a restart): status.nominatedNodeName is all it knows.
    clock.now = 15.0
    store.finish_terminations(clock.now)
    store.add_all(objects(f"[{LOW.replace('NAME', 'late')}]"))
    restarted = Scheduler(store, FeatureGates(), seed=0)
    assert {k[1]: restarted.nominated_node(k) for k in [("default", f"g{i}") for i in (1, 2, 3)]} == {
        "g1": "node-1",
        "g2": "node-1",
        "g3": "node-1",
    }
    # The gang would go first by priority; take it out of the queue (as if it were backing off) so that the
    # low pod's cycle runs while the nominations hold node-1's 3 free CPUs.
    restarted.queue.remove(("PodGroup", "default", "gang"))
    d = restarted.schedule_one(clock.now)
    assert d is not None and not d.bindings and not d.evictions
    (message,) = [c.condition.message for c in d.conditions if c.key == ("default", "late")]
    assert message.startswith("0/1 nodes are available: 1 Insufficient cpu.")


def test_a_nomination_is_written_once_per_decision() -> None:
    store, scheduler, clock = setup()
    written: list[tuple[str, str | None]] = []
    for _ in range(6):
        d = scheduler.schedule_one(clock.now)
        if d is None:
            scheduler.queue.move_all_to_active()
            clock.now += 1.0
            continue
        written += [(n.pod[1], n.node) for n in d.nominations]
        store.apply(d)
    assert sorted(written) == [("g1", "node-1"), ("g2", "node-1"), ("g3", "node-1")]


def test_victims_leaving_one_by_one_the_gang_binds_right_after_the_last() -> None:
    """Live, victims are deleted one at a time with cycles in between: each departure before the last wakes
    the gang, which finds its preemption still ongoing and backs off longer; the last departure must still
    bring it back at once (the delete event of a victim activates its preemptor, whatever its backoff)."""
    store, scheduler, clock = setup()
    first = step(store, scheduler, clock)
    assert first is not None
    victims = [e.pod for e in first.evictions]
    for i, victim in enumerate(victims):
        clock.now = 15.0 + 0.2 * i
        store.delete("Pod", victim)
        decisions = list(iter(lambda: step(store, scheduler, clock), None))
        assert decisions, f"not tried when {victim[1]} left"
        bound = [b.pod[1] for d in decisions for b in d.bindings]
        if i < len(victims) - 1:
            assert not bound and not any(d.evictions for d in decisions)
        else:
            assert sorted(bound) == ["g1", "g2", "g3"], "not bound at once after its last victim left"


def test_a_preemptor_waits_while_a_victim_elsewhere_still_terminates() -> None:
    """Group g (disruptionMode all) has a member on each node; lone's zone anti-affinity needs both gone,
    so one preemption evicts both. The victim on lone's nominated node leaves first: the other still
    terminates (and still repels lone), so lone waits. Upstream, looking only at the nominated node, would
    preempt again there and move the nomination to the other node (issue 15: one nomination per decision)."""
    path = "tests/scenarios/preemption/lone-anti-affinity-all-group-across-nodes.yaml"
    with open(path) as f:
        spec = yaml.safe_load(f)
    clock = Clock()
    store = Store(clock, termination_seconds=15.0)
    store.add_all(objects(yaml.safe_dump(spec["objects"])))
    scheduler = Scheduler(store, FeatureGates(), seed=0)
    first = step(store, scheduler, clock)
    assert first is not None and sorted(e.pod[1] for e in first.evictions) == ["g1", "g2"]
    nominated = pod(store, "lone").status.nominatedNodeName
    on_nominated, elsewhere = ("g1", "g2") if nominated == "node-1" else ("g2", "g1")
    clock.now = 5.0
    store.delete("Pod", ("default", on_nominated))  # its kubelet confirmed first
    again = step(store, scheduler, clock)
    assert again is not None and not again.evictions and not again.nominations and not again.bindings
    assert pod(store, "lone").status.nominatedNodeName == nominated
    assert pod(store, elsewhere).metadata.deletionTimestamp is not None
    clock.now = 15.0
    store.finish_terminations(clock.now)
    bound = step(store, scheduler, clock)
    assert bound is not None and [(b.pod[1], b.node) for b in bound.bindings] == [("lone", nominated)]


def test_a_gang_waiting_on_preemption_tells_untried_members_the_cycles_status() -> None:
    """g1 fits nowhere, so the cycle stops with g2 and g3 untried: they get the group's status as the cycle
    left it, copied before PodGroupPostFilter ran (completePodGroupAlgorithmResult); the group's own status
    carries the preemption (applyPodGroupPostFilterResult), g1 its FitError."""
    store, scheduler, clock = setup()
    step(store, scheduler, clock)
    # TopologyAwareWorkloadScheduling is on: the group's one placement (all nodes) was not feasible
    # (podGroupSchedulingPlacementAlgorithm), so its status is wrapped, and that is what g2 and g3 are copied.
    cycle = (
        "pod group is unschedulable, 0/1 placements are available, first placement status: "
        "minCount (3) cannot be satisfied: 0 scheduled, 2 remaining"
    )
    assert (
        group_message(store)
        == f"{cycle}, pod group preemption: found a placement for podgroup, preempting 3 victims"
    )
    messages = {
        name: next(c.message for c in pod(store, name).status.conditions if c.type == "PodScheduled")
        for name in ("g1", "g2", "g3")
    }
    assert messages == {"g1": "0/1 nodes are available: 1 Insufficient cpu.", "g2": cycle, "g3": cycle}


def test_after_a_restart_the_terminating_victims_on_the_nominated_node_still_hold_the_gang() -> None:
    """A restarted scheduler does not know which pods its predecessor evicted: the nominated node holding
    lower-priority pods terminating by preemption is what tells it the preemption is ongoing (upstream's
    isOngoingPreemption), so it evicts no fourth pod."""
    store, _, clock = setup()
    step(store, Scheduler(store, FeatureGates(), seed=0), clock)
    restarted = Scheduler(store, FeatureGates(), seed=0)
    clock.now = 2.0
    again = step(store, restarted, clock)
    assert again is not None and not again.evictions and not again.nominations and not again.bindings
    assert group_message(store).endswith("pod group preemption: ongoing preemption on nominated nodes")
    terminating = [v for v in ("v1", "v2", "v3", "v4") if pod(store, v).metadata.deletionTimestamp]
    assert len(terminating) == 3, "the first preemption's three victims, no fourth"


def test_with_the_group_policy_gate_off_the_pods_policy_decides_and_the_gang_preempts() -> None:
    """PodGroupPreemptionPolicy off: the group's policy is Never only if one of its pods says Never
    (resolvePreemptionPolicy); these pods default to PreemptLowerPriority, so the gang preempts as before."""
    clock = Clock()
    store = Store(clock, termination_seconds=15.0)
    store.add_all(objects(CLUSTER))
    scheduler = Scheduler(store, FeatureGates(pod_group_preemption_policy=False), seed=0)
    for name in ("g1", "g2", "g3"):
        store.add_all(member(name))
    first = step(store, scheduler, clock)
    assert first is not None and len(first.evictions) == 3
