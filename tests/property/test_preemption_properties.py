"""Preemption invariants on random clusters: lower-priority work of every disruption mode fills some nodes,
then a higher-priority gang (or lone pod) arrives. The first cycle's Decision is checked with plain
arithmetic on the generated requests, independently of the engine:

- no victim has a priority >= the preemptor's (a grouped pod's priority is its PodGroup's);
- no `all` group is ever partly evicted;
- the evicted set is minimal in upstream's sense: with the preemptor's pods on their nominated nodes, the
  victims suffice, and putting back any one victim unit over-commits a node that holds a preemptor pod;
- once the victims are gone, the preemptor is placed (its gang reaches minCount, a lone pod binds);
- progress: a preemptor that cannot be placed now but surely fits once every lower-priority pod is gone does
  preempt; one that could not fit even then evicts nothing.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, event, given, settings, target
from hypothesis import strategies as st

from gangsched.api.defaults import apply_defaults
from gangsched.api.gates import FeatureGates
from gangsched.api.loader import load_documents
from gangsched.api.validation import validate
from gangsched.scheduler import Decision, Scheduler, run_until_stable
from gangsched.store import Store

PRIORITIES = (5, 10, 40, 60)


@dataclass
class Cluster:
    docs: list[dict[str, Any]]
    node_cpu: dict[str, int]  # millicores
    cpu: dict[str, int] = field(default_factory=dict)  # pod -> millicores
    node_of: dict[str, str] = field(default_factory=dict)  # bound pod -> node
    priority: dict[str, int] = field(default_factory=dict)  # pod -> priority as a victim
    unit_of: dict[str, str] = field(default_factory=dict)  # pod -> preemption unit id
    all_groups: dict[str, list[str]] = field(default_factory=dict)  # `all` group -> its bound pods
    preemptor: str = ""
    preemptor_pods: list[str] = field(default_factory=list)
    preemptor_priority: int = 0
    min_count: int = 1


def _pod(
    name: str, cpu: int, pclass: str, group: str | None, node: str | None, labels: dict[str, str]
) -> Any:
    spec: dict[str, Any] = {
        "priorityClassName": pclass,
        "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": f"{cpu}m"}}}],
    }
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels}, "spec": spec}


def _group(name: str, pclass: str, policy: dict[str, Any], mode: str) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name},
        "spec": {"priorityClassName": pclass, "schedulingPolicy": policy, "disruptionMode": {mode: {}}},
    }


@st.composite
def clusters(draw: st.DrawFn) -> Cluster:
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": f"p{p}"},
            "value": p,
        }
        for p in PRIORITIES
    ]
    node_cpu = {f"n{i}": 1000 * draw(st.integers(1, 4)) for i in range(draw(st.integers(1, 4)))}
    docs += [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": n},
            "status": {"allocatable": {"cpu": f"{c}m", "memory": "16Gi", "pods": "110"}},
        }
        for n, c in node_cpu.items()
    ]
    c = Cluster(docs, node_cpu)
    free = dict(node_cpu)
    for w in range(draw(st.integers(2, 8))):
        kind = draw(st.sampled_from(["lone", "single", "all"]))
        prio = draw(st.sampled_from(PRIORITIES))
        size = 1 if kind == "lone" else draw(st.integers(1, 4))
        group = None if kind == "lone" else f"w{w}"
        protected = draw(st.booleans())
        placed = []
        for i in range(size):
            name, cpu = f"w{w}-{i}", draw(st.sampled_from([500, 1000]))
            fits = [n for n, f in free.items() if f >= cpu]
            if not fits:
                continue
            node = draw(st.sampled_from(fits))
            free[node] -= cpu
            labels = {"app": "protected"} if protected else {}
            docs.append(_pod(name, cpu, f"p{prio}", group, node, labels))
            c.cpu[name], c.node_of[name], c.priority[name] = cpu, node, prio
            c.unit_of[name] = group if kind == "all" and group else name
            placed.append(name)
        if group and placed:
            docs.append(_group(group, f"p{prio}", {"gang": {"minCount": 1}}, kind))
            if kind == "all":
                c.all_groups[group] = placed
    if draw(st.booleans()):
        budget = draw(
            st.sampled_from([{"minAvailable": 1}, {"maxUnavailable": "50%"}, {"minAvailable": "100%"}])
        )
        docs.append(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "budget"},
                "spec": {**budget, "selector": {"matchLabels": {"app": "protected"}}},
            }
        )
    c.preemptor_priority = draw(st.sampled_from([10, 40, 60]))
    pclass, cpu = f"p{c.preemptor_priority}", draw(st.sampled_from([500, 1000, 2000]))
    if draw(st.booleans()):
        c.preemptor = "lone"
        c.preemptor_pods = ["lone"]
        docs.append(_pod("lone", cpu, pclass, None, None, {}))
    else:
        c.preemptor = "gang"
        size = draw(st.integers(1, 4))
        c.min_count = draw(st.integers(1, size))
        docs.append(_group("gang", pclass, {"gang": {"minCount": c.min_count}}, "single"))
        c.preemptor_pods = [f"g-{i}" for i in range(size)]
        # Members of different sizes: the follow-up cycle must find the simulated placement again.
        cpus = {p: draw(st.sampled_from([500, 1000, 2000])) for p in c.preemptor_pods}
        docs += [_pod(p, cpus[p], pclass, "gang", None, {}) for p in c.preemptor_pods]
        c.cpu.update(cpus)
    if c.preemptor == "lone":
        c.cpu["lone"] = cpu
    return c


def _store(c: Cluster) -> tuple[Store, Scheduler]:
    gates = FeatureGates()
    result = load_documents(c.docs, "generated")
    errors = [str(e) for _, e in apply_defaults(item.obj for item in result.objects)]
    errors += [str(p) for p in result.problems + validate(result.objects, gates)]
    assert not errors, errors
    store = Store()
    store.add_all(item.obj for item in result.objects)
    return store, Scheduler(store, gates, seed=0)


def _over_committed(c: Cluster, pods_on: dict[str, list[str]], nodes: set[str]) -> bool:
    return any(sum(c.cpu[p] for p in pods_on[n]) > c.node_cpu[n] for n in nodes)


def _check_minimal(c: Cluster, d: Decision) -> None:
    evicted = {key[1] for key in (e.pod for e in d.evictions)}
    nominated = {n.pod[1]: n.node for n in d.nominations}
    assert nominated, "a preemption must nominate the preemptor's pods"
    pods_on: dict[str, list[str]] = defaultdict(list)
    for pod, node in c.node_of.items():
        if pod not in evicted:
            pods_on[node].append(pod)
    for pod, node in nominated.items():
        pods_on[node].append(pod)
    targets = set(nominated.values())
    assert not _over_committed(c, pods_on, targets), "the victims do not make room for the nominations"
    for unit in {c.unit_of[p] for p in evicted}:
        back: dict[str, list[str]] = defaultdict(list, {n: list(ps) for n, ps in pods_on.items()})
        for pod in evicted:
            if c.unit_of[pod] == unit:
                back[c.node_of[pod]].append(pod)
        assert _over_committed(c, back, targets), f"victim unit {unit} could have been reprieved"


def _fits_without_lower_priority(c: Cluster) -> tuple[bool, bool]:
    """(surely, maybe): whether the preemptor fits once every pod of lower priority is gone, by plain
    arithmetic. A lone pod: exactly when one node then has room. A gang: surely when the nodes then hold
    minCount pods of its largest size (placing a pod of at most that size lowers that count by at most one,
    so the cycle's first minCount pods all find a node, whatever it chooses); not at all when its minCount
    smallest pods exceed all the room left."""
    free = dict(c.node_cpu)
    for pod, node in c.node_of.items():
        if c.priority[pod] >= c.preemptor_priority:
            free[node] -= c.cpu[pod]
    if c.preemptor == "lone":
        fits = any(room >= c.cpu["lone"] for room in free.values())
        return fits, fits
    sizes = sorted(c.cpu[p] for p in c.preemptor_pods)
    surely = sum(room // sizes[-1] for room in free.values()) >= c.min_count
    maybe = sum(free.values()) >= sum(sizes[: c.min_count])
    return surely, maybe


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_preemption_invariants(c: Cluster) -> None:
    store, scheduler = _store(c)
    first = scheduler.schedule_one(0.0)
    assert first is not None
    evicted = {e.pod[1] for e in first.evictions}
    assert all(e.preemptor == f"default/{c.preemptor}" for e in first.evictions)
    for pod in evicted:
        assert c.priority[pod] < c.preemptor_priority, f"{pod} has priority {c.priority[pod]}"
    for group, members in c.all_groups.items():
        gone = evicted & set(members)
        assert not gone or gone == set(members), f"all-group {group} partly evicted: {sorted(gone)}"
    event(
        "preempted"
        if evicted
        else "nominated without victims"
        if first.nominations
        else "bound at once"
        if first.bindings
        else "nothing preempted"
    )
    target(float(bool(evicted)), label="examples that preempt")
    if first.bindings:
        assert not evicted, "preemption never happens in a cycle that binds"
        return
    # A preemption nominates the preemptor's pods; its victims may all be reprieved (the simulation can find a
    # placement the greedy cycle missed), so a preemption is its nominations, evictions or not.
    preempted = bool(first.nominations)
    surely, maybe = _fits_without_lower_priority(c)
    if surely:
        assert preempted, "the preemptor fits once lower-priority pods are gone, yet nothing was preempted"
    if not maybe:
        assert not preempted, f"{sorted(evicted)} evicted for a preemptor that cannot fit even then"
    if evicted:
        _check_minimal(c, first)
    store.apply(first)
    run_until_stable(store, scheduler)
    bound = [p for p in c.preemptor_pods if (pod := store.get("Pod", ("default", p))) and pod.spec.nodeName]
    if preempted:
        assert len(bound) >= c.min_count, f"preempted {sorted(evicted)} yet only {bound} bound"
        assert all(store.get("Pod", ("default", p)) is None for p in evicted)
