"""DynamicResources' PostFilter, cycle by cycle: the first failed cycle of a pod whose allocated claim is
unavailable where it could otherwise run deallocates that claim (one status write), says so in the pod's
message before preemption's reason, and the claim's update brings the pod back."""

from __future__ import annotations

from pathlib import Path

import yaml

from gangsched.api.gates import FeatureGates
from gangsched.scheduler import Scheduler
from gangsched.store import Store
from gangsched.store.claim_controller import sync_claims

from ..scenarios.harness import load_objects

DEVICES = Path(__file__).parent.parent / "scenarios" / "devices"


def _scheduler(name: str) -> tuple[Store, Scheduler]:
    spec = yaml.safe_load((DEVICES / name).read_text())
    store = Store()
    store.add_all(load_objects(spec["objects"], name, FeatureGates()))
    sync_claims(store, workload_claims=True)
    return store, Scheduler(store, FeatureGates(), seed=0)


def _message(store: Store, pod: str) -> str:
    conditions = store.get("Pod", ("default", pod)).status.conditions
    (scheduled,) = [c for c in conditions if c.type == "PodScheduled"]
    assert (scheduled.status, scheduled.reason) == ("False", "Unschedulable")
    return str(scheduled.message)


def test_first_cycle_deallocates_then_the_next_allocates_where_the_pod_fits() -> None:
    store, scheduler = _scheduler("postfilter-deallocates-unavailable-claim.yaml")
    decision = scheduler.schedule_one(0.0)
    assert decision is not None
    assert decision.deallocations == [("default", "stale")]
    assert not decision.bindings and not decision.evictions
    store.apply(decision)
    assert _message(store, "p") == (
        "0/2 nodes are available: 1 Insufficient cpu, 1 resourceclaim not available on the node. "
        "deallocation of ResourceClaim completed, preemption: 0/2 nodes are available: "
        "1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling."
    )
    claim = store.get("ResourceClaim", ("default", "stale"))
    assert claim.status.allocation is None and not claim.status.reservedFor
    # The claim's update requeued p (after its backoff): the next cycle binds it to node-2.
    decision = scheduler.schedule_one(10.0)
    assert decision is not None
    assert [(b.pod[1], b.node) for b in decision.bindings] == [("p", "node-2")]
    assert not decision.deallocations


def test_nothing_to_deallocate_leaves_the_message_as_it_was() -> None:
    """q's claim is reserved for the running r: no deallocation, and upstream's message has no part of it."""
    store, scheduler = _scheduler("postfilter-deallocation-not-enough.yaml")
    decisions = []
    for now in range(60):  # virtual seconds: long enough for p's backoff after its first cycle
        while (d := scheduler.schedule_one(float(now))) is not None:
            decisions.append(d)
            store.apply(d)
    assert [k for d in decisions for k in d.deallocations] == [("default", "stale")]
    assert "deallocation" not in _message(store, "q")
    assert "deallocation" not in _message(store, "p")  # its second cycle: nothing allocated any more
