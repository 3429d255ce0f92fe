"""A lone pod's PostFilter when nothing of lower priority runs: a node whose allocatable is below the pod's
request is not a candidate (NodeResourcesFit's Unresolvable: `Preemption is not helpful for scheduling`),
the others find no victims. Upstream: fit.go fitsRequest (InsufficientResource.Unresolvable) and
preemption.go findCandidates (nodesWherePreemptionMightHelp)."""

from __future__ import annotations

from gangsched.store import Store

from .builders import build, node, pod

EXPECTED = (
    "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: "
    "1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling."
)


def _message(store: Store, name: str) -> str:
    conditions = store.get("Pod", ("default", name)).status.conditions
    (scheduled,) = [c for c in conditions if c.type == "PodScheduled"]
    assert (scheduled.status, scheduled.reason) == ("False", "Unschedulable")
    return str(scheduled.message)


def test_the_node_too_small_for_the_pod_is_not_helpful_the_full_one_has_no_victims() -> None:
    """`small` allocates 1 cpu, below p's 2: no eviction there could help. `big` (4 cpu) is full with r,
    of p's own priority: nothing to evict. q, of p's template, fails the same way on the same nodes (the
    snapshot keeps the nodes below a request: the answer must not change from one failure to the next)."""
    store, scheduler = build(
        [
            node("small", "1"),
            node("big", "4"),
            pod("r", cpu="4", node="big"),
            pod("p", cpu="2"),
            pod("q", cpu="2"),
        ]
    )
    for name in ("p", "q"):
        decision = scheduler.schedule_one(0.0)
        assert decision is not None and not decision.bindings and not decision.evictions
        store.apply(decision)
        assert _message(store, name) == EXPECTED
