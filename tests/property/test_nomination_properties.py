"""Preemption over time on random clusters (test_preemption_properties' clusters), with victims that take
30 s to leave and lower-priority pods ("intruders", priority 5) arriving pending beside the preemptor.
Checked with plain arithmetic on the generated requests, after every applied Decision:

- an intruder is bound only where it fits with every pending pod of equal or higher priority nominated to
  that node counted as running there (upstream's nominator and addGENominatedPods);
- no preemptor evicts again while a victim it evicted earlier still terminates (upstream's
  isOngoingPreemption / PodEligibleToPreemptOthers);
- progress: once its victims are gone, the preemptor is placed (its gang reaches minCount, a lone pod binds).
"""

from __future__ import annotations

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from gangsched.api.defaults import apply_defaults
from gangsched.api.gates import FeatureGates
from gangsched.api.loader import load_documents
from gangsched.api.validation import validate
from gangsched.scheduler import Scheduler
from gangsched.store import Store

from .test_preemption_properties import Cluster, _pod, clusters

TERMINATION = 30.0


@st.composite
def with_intruders(draw: st.DrawFn) -> tuple[Cluster, list[str]]:
    c = draw(clusters())  # it defines PriorityClass p5, the lowest
    intruders = []
    for i in range(draw(st.integers(1, 4))):
        name, cpu = f"intruder-{i}", draw(st.sampled_from([500, 1000]))
        c.docs.append(_pod(name, cpu, "p5", None, None, {}))
        c.cpu[name] = cpu
        intruders.append(name)
    return c, intruders


def _nominated_cpu(store: Store, c: Cluster, node: str, at_least: int) -> int:
    """cpu of pending pods nominated to `node` with priority >= `at_least`."""
    total = 0
    for pod in store.list("Pod"):
        if pod.spec.nodeName or not (pod.status and pod.status.nominatedNodeName == node):
            continue
        if (pod.spec.priority or 0) >= at_least:
            total += c.cpu[pod.metadata.name]
    return total


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(with_intruders())
def test_nominations_hold_and_no_storm(case: tuple[Cluster, list[str]]) -> None:
    c, intruders = case
    gates = FeatureGates()
    result = load_documents(c.docs, "generated")
    errors = [str(e) for _, e in apply_defaults(item.obj for item in result.objects)]
    errors += [str(p) for p in result.problems + validate(result.objects, gates)]
    assert not errors, errors
    now = 0.0
    store = Store(lambda: now, termination_seconds=TERMINATION)
    store.add_all(item.obj for item in result.objects)
    scheduler = Scheduler(store, gates, seed=0)
    terminating_since: dict[str, float] = {}  # victim -> when its preemptor evicted it
    for _ in range(10_000):
        decision = scheduler.schedule_one(now)
        if decision is None:
            gone_at, ready = store.next_termination_at(), scheduler.queue.next_ready_at()
            if gone_at is None and ready is None:
                break
            if gone_at is not None:  # unrelated events retry everyone while victims terminate
                scheduler.queue.move_all_to_active()
                now = min(t for t in (gone_at, ready, now + 1.0) if t is not None)
            else:
                now = max(now, ready or now)
            store.finish_terminations(now)
            continue
        if decision.evictions:
            still = [v for v in terminating_since if store.get("Pod", ("default", v)) is not None]
            assert not still, f"evicted {[e.pod[1] for e in decision.evictions]} while {still} terminate"
            terminating_since.update((e.pod[1], now) for e in decision.evictions)
        store.apply(decision)
        for b in decision.bindings:
            name = b.pod[1]
            if name not in intruders:
                continue
            running = sum(
                c.cpu[p.metadata.name]
                for p in store.list("Pod")
                if p.spec.nodeName == b.node and p.metadata.name in c.cpu
            )
            held = _nominated_cpu(store, c, b.node, at_least=5)
            assert running + held <= c.node_cpu[b.node], f"{name} took room held on {b.node}"
    else:
        raise AssertionError("did not settle")
    preempted = bool(terminating_since)
    event("preempted" if preempted else "no preemption")
    if preempted:
        pods = [store.get("Pod", ("default", p)) for p in c.preemptor_pods]
        bound = [p.metadata.name for p in pods if p is not None and p.spec.nodeName]
        assert len(bound) >= c.min_count, f"preempted {sorted(terminating_since)} yet only {bound} bound"
