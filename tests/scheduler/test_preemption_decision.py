"""What a preemption Decision carries besides evictions: nominations, DisruptionTarget conditions on victim
pods and on groups evicted whole, Preempted events worded as upstream's executor words them."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gangsched.api.gates import FeatureGates
from gangsched.scheduler import Decision, Scheduler, run_until_stable
from gangsched.store import Store

from ..scenarios.harness import load_objects, run_scenario

SCENARIOS = Path(__file__).parent.parent / "scenarios" / "preemption"
TARGET = ("DisruptionTarget", "True", "PreemptionByScheduler")


def _first_decision(name: str) -> tuple[Store, Scheduler, Decision | None]:
    spec = yaml.safe_load((SCENARIOS / name).read_text())
    store = Store()
    store.add_all(load_objects(spec["objects"], name, FeatureGates()))
    scheduler = Scheduler(store, FeatureGates(), seed=0)
    decision = scheduler.schedule_one(0.0)
    return store, scheduler, decision


def test_group_preemptor_nominates_evicts_and_binds_only_in_a_later_cycle() -> None:
    store, scheduler, d = _first_decision("full.yaml")
    assert d is not None
    assert not d.bindings
    assert sorted((n.pod[1], n.node) for n in d.nominations) == [
        ("p1", "node-1"),
        ("p2", "node-1"),
        ("p3", "node-1"),
    ]
    assert sorted(e.pod[1] for e in d.evictions) == ["v1", "v2", "v3"]
    pod_targets = {
        c.key[1]: c.condition for c in d.conditions if c.kind == "Pod" and c.condition.type == TARGET[0]
    }
    assert set(pod_targets) == {"v1", "v2", "v3"}
    assert {(c.type, c.status, c.reason, c.message) for c in pod_targets.values()} == {
        (*TARGET, "default-scheduler: preempting to accommodate a higher priority podgroup")
    }
    preempted = [e for e in d.events if e.reason == "Preempted"]
    assert [(e.type, e.object, e.message) for e in preempted] == [
        ("Normal", f"Pod default/{v}", "Preempted by podgroup default/pg on node cluster")
        for v in ("v1", "v2", "v3")
    ]
    store.apply(d)
    assert all(store.get("Pod", ("default", f"p{i}")).status.nominatedNodeName == "node-1" for i in (1, 2, 3))
    run_until_stable(store, scheduler)
    assert all(store.get("Pod", ("default", f"p{i}")).spec.nodeName == "node-1" for i in (1, 2, 3))


def test_groups_evicted_whole_get_disruption_target() -> None:
    store = run_scenario(SCENARIOS / "composite-all-victim.yaml")
    marked = {
        (kind, g.metadata.name): [(c.type, c.status, c.reason, c.message) for c in g.status.conditions]
        for kind in ("CompositePodGroup", "PodGroup")
        for g in store.list(kind)
        if g.status is not None and g.status.conditions
    }
    expected = [(*TARGET, "default-scheduler: preempting to accommodate a higher priority pod")]
    assert marked == {
        ("CompositePodGroup", "root"): expected,
        ("PodGroup", "g1"): expected,
        ("PodGroup", "g2"): expected,
    }
    node = store.get("Pod", ("default", "lone")).spec.nodeName
    assert (
        sorted(e.message for e in store.events if e.reason == "Preempted")
        == [f"Preempted by pod default/lone on node {node}"] * 4
    )


def test_single_mode_members_leave_their_group_unmarked() -> None:
    store = run_scenario(SCENARIOS / "kep-single-victims-gang-preemptor.yaml")
    victims = store.get("PodGroup", ("default", "victims"))
    assert not [
        c for c in (victims.status.conditions if victims.status else None) or [] if c.type == TARGET[0]
    ]


def _first_evictions(name: str, cycles: int = 4) -> list[str]:
    """The victims of the first decision that evicts, within a few cycles (each decision applied): a
    reprieve that wrongly spares a victim makes the gang retry a preemption of no victims for ever, which
    the scenario file alone would only show as a run that does not end."""
    store, scheduler, d = _first_decision(name)
    for cycle in range(1, cycles + 1):
        if d is not None and d.evictions:
            return sorted(e.pod[1] for e in d.evictions)
        if d is not None:
            store.apply(d)
        d = scheduler.schedule_one(float(cycle))
    return []


@pytest.mark.parametrize(
    ("name", "victims"),
    [
        # the preemptor pod's own term reads a unit put back on another node of its zone
        ("preemptor-anti-affinity-reaches-another-node.yaml", ["v", "w"]),
        # the room a nominated pod of higher priority holds counts against the placements
        ("nominated-room-held-during-group-reprieve.yaml", ["v1", "v2"]),
        # the budget's one allowed disruption goes to the most important potential victim, on another node
        ("pdb-budget-counts-victims-on-other-nodes.yaml", ["a2"]),
        # a unit sharing no node with the preemptor, tried first, is passed over: the reprieve goes on
        ("pdb-none-allowed-victim-elsewhere-first.yaml", ["a2"]),
        # the second pod of the gang on a node is checked too
        ("host-port-member-after-a-plain-member.yaml", ["v", "w"]),
    ],
)
def test_reprieve_checks_every_placement_in_one_preemption(name: str, victims: list[str]) -> None:
    assert _first_evictions(name) == victims


def test_lone_pod_dry_run_takes_a_whole_unit_out_of_its_affinity_counts() -> None:
    """Upstream's SelectVictimsOnNode removes an `all` unit's members on other nodes from the preemptor's
    pod affinity state: lone's zone anti-affinity against group g then holds on either node."""
    store, _, d = _first_decision("lone-anti-affinity-all-group-across-nodes.yaml")
    assert d is not None
    assert sorted(e.pod[1] for e in d.evictions) == ["g1", "g2"]
    ((key, node),) = [(n.pod, n.node) for n in d.nominations]
    assert key[1] == "lone" and node in ("node-1", "node-2")
    store.apply(d)
    scheduled = [
        c for c in store.get("Pod", ("default", "lone")).status.conditions if c.type == "PodScheduled"
    ]
    assert scheduled[0].message == (
        "0/2 nodes are available: 2 Insufficient cpu. "
        f"preemption: found a potential placement for pod on node {node}, preempting 2 victims"
    )


LOWER_NOMINATED = """
- {apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: low}, value: 10}
- {apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: mid}, value: 50}
- {apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: high}, value: 100}
- {apiVersion: v1, kind: Node, metadata: {name: node-1}, status: {allocatable: {cpu: "2", memory: 16Gi}}}
- {apiVersion: v1, kind: Pod, metadata: {name: v}, spec: {priorityClassName: low, nodeName: node-1,
   containers: [{name: c, image: i, resources: {requests: {cpu: "2"}}}]}}
- {apiVersion: v1, kind: Pod, metadata: {name: m}, spec: {priorityClassName: mid,
   containers: [{name: c, image: i, resources: {requests: {cpu: "1"}}}]}, status: {nominatedNodeName: node-1}}
- {apiVersion: v1, kind: Pod, metadata: {name: lone}, spec: {priorityClassName: high,
   containers: [{name: c, image: i, resources: {requests: {cpu: "2"}}}]}}
- {apiVersion: scheduling.k8s.io/v1beta1, kind: PodGroup, metadata: {name: pg},
   spec: {priorityClassName: high, schedulingPolicy: {gang: {minCount: 1}}}}
- {apiVersion: v1, kind: Pod, metadata: {name: p1}, spec: {priorityClassName: high,
   schedulingGroup: {podGroupName: pg}, containers: [{name: c, image: i, resources: {requests: {cpu: "2"}}}]}}
"""


@pytest.mark.parametrize(("preemptor", "m_cleared"), [("lone", True), ("p1", False)])
def test_lower_priority_nomination_cleared_only_on_a_pod_preemptors_node(
    preemptor: str, m_cleared: bool
) -> None:
    """Upstream's executor clears the nominations of lower-priority pods on the candidate's node: node-1 for
    a lone pod, the node named "cluster" (none here) for a pod group, though its members go to node-1."""
    docs = [
        d
        for d in yaml.safe_load(LOWER_NOMINATED)
        if d["metadata"]["name"] != ("p1" if preemptor == "lone" else "lone")
    ]
    store = Store()
    store.add_all(load_objects(docs, "test", FeatureGates()))
    d = Scheduler(store, FeatureGates(), seed=0).schedule_one(0.0)
    assert d is not None and [e.pod[1] for e in d.evictions] == ["v"]
    assert (preemptor, "node-1") in [(n.pod[1], n.node) for n in d.nominations]
    assert (("m", None) in [(n.pod[1], n.node) for n in d.nominations]) == m_cleared


VICTIM_WITH_TERMS = Path(__file__).parent / "victim_terms_put_back.yaml"


def test_a_victims_own_anti_affinity_is_not_seen_when_it_is_put_back() -> None:
    """Upstream's quirk, which kube-scheduler v1.37.2 shows side by side: `v` on node-1 repels role=b pods
    from zone z1, where the gang needs p2 on node-2 (which `w` fills). With every victim out,
    InterPodAffinity's PreFilter finds no pod with terms and skips p2, so `v` is reprieved: `w` goes."""
    store = Store()
    store.add_all(load_objects(yaml.safe_load(VICTIM_WITH_TERMS.read_text()), "test", FeatureGates()))
    d = Scheduler(store, FeatureGates(), seed=0).schedule_one(0.0)
    assert d is not None and [e.pod[1] for e in d.evictions] == ["w"]
