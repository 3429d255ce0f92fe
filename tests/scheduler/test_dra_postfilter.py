"""DynamicResources' PostFilter, cycle by cycle: the first failed cycle of a pod whose allocated claim is
unavailable where it could otherwise run deallocates that claim (one status write), says so in the pod's
message before preemption's reason, and the claim's update brings the pod back."""

from __future__ import annotations

from pathlib import Path

import yaml

from gangsched.api.gates import FeatureGates
from gangsched.scheduler import Scheduler
from gangsched.scheduler.decision import Decision
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


#: With TopologyAwareWorkloadScheduling on, every PodGroup is placed in one placement of all nodes.
PLACEMENT = "pod group is unschedulable, 0/1 placements are available, first placement status: "


def _cycle(name: str, *, never: bool = False) -> tuple[Store, Decision]:
    """The first cycle of scenario `name`, applied; `never`: the PodGroup and its pods say preemptionPolicy
    Never, so that preemption is merely Unschedulable and DynamicResources' reason shows in the message."""
    spec = yaml.safe_load((DEVICES / name).read_text())
    if never:
        for doc in spec["objects"]:
            if doc["kind"] == "PodGroup" or (
                doc["kind"] == "Pod" and doc["metadata"]["name"] in ("m0", "m1")
            ):
                doc["spec"]["preemptionPolicy"] = "Never"
    store = Store()
    store.add_all(load_objects(spec["objects"], name, FeatureGates()))
    decision = Scheduler(store, FeatureGates(), seed=0).schedule_one(0.0)
    assert decision is not None
    store.apply(decision)
    return store, decision


def _group_message(store: Store) -> str:
    (cond,) = [
        c for c in store.get("PodGroup", ("default", "pg")).status.conditions if c.type.endswith("Scheduled")
    ]
    return str(cond.message)


def test_group_cycle_deallocates_a_member_claim_then_binds() -> None:
    """PodGroupPostFilter step 1: m0's own claim, reserved for nobody, is deallocated as m0's PostFilter
    would; preemption then finds no victims (UnschedulableAndUnresolvable), whose status alone is the
    reason."""
    store, decision = _cycle("group-postfilter-deallocates-member-claim.yaml")
    assert decision.deallocations == [("default", "stale")] and not decision.unreservations
    assert not decision.bindings
    assert _group_message(store) == (
        PLACEMENT + "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining, "
        "pod group preemption: No preemption victims found for incoming preemptor"
    )
    claim = store.get("ResourceClaim", ("default", "stale"))
    assert claim.status.allocation is None and not claim.status.reservedFor
    # m1 was never tried (the cycle stopped when minCount could no longer be met), m0 found its claim: the
    # group pass does not run, and the reason is the plugin's default.
    store, decision = _cycle("group-postfilter-deallocates-member-claim.yaml", never=True)
    assert decision.deallocations == [("default", "stale")]
    assert _group_message(store) == (
        PLACEMENT
        + "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining, deallocation and deletion of "
        "ResourceClaims completed, pod group preemption: not eligible due to preemptionPolicy=Never."
    )


def test_group_cycle_deallocates_the_group_claim() -> None:
    """Step 2: the claim is reserved for the PodGroup (not a pod), no member runs: deallocated for it."""
    store, decision = _cycle("group-postfilter-deallocates-group-claim.yaml", never=True)
    assert decision.deallocations == [("default", "stale")] and not decision.unreservations
    claim = store.get("ResourceClaim", ("default", "stale"))
    assert claim.status.allocation is None and not claim.status.reservedFor
    assert _group_message(store) == (
        PLACEMENT + "minCount (2) cannot be satisfied: 1 scheduled, 0 remaining, deallocation of PodGroup "
        "ResourceClaim completed, pod group preemption: not eligible due to preemptionPolicy=Never."
    )


def test_group_cycle_unreserves_the_group_claim_and_says_so() -> None:
    """Step 2, nothing unavailable: the PodGroup leaves the claim's reservedFor, the allocation stays, and the
    reason comes before preemption's, which is only Unschedulable (preemptionPolicy Never)."""
    store, decision = _cycle("group-postfilter-unreserves-group-claim.yaml")
    assert not decision.deallocations
    assert [(u.claim, u.consumer["uid"]) for u in decision.unreservations] == [
        (("default", "held"), "6b1f7d6e-0000-4000-8000-0000000000a2")
    ]
    assert _group_message(store) == (
        PLACEMENT
        + "minCount (2) cannot be satisfied: 1 scheduled, 0 remaining, ResourceClaim unreserved for "
        "PodGroup, pod group preemption: not eligible due to preemptionPolicy=Never."
    )
    claim = store.get("ResourceClaim", ("default", "held"))
    assert claim.status.allocation is not None and not claim.status.reservedFor


def test_group_with_a_running_member_keeps_its_group_claim() -> None:
    """Step 2 only runs while no member of the group is scheduled: with one member running, the group claim
    stays reserved for the group (nothing written, the plugin's default reason)."""
    spec = yaml.safe_load((DEVICES / "group-postfilter-unreserves-group-claim.yaml").read_text())
    for doc in spec["objects"]:
        if doc["kind"] == "Pod" and doc["metadata"]["name"] == "m0":
            doc["spec"]["nodeName"] = "node-2"
        if doc["kind"] == "Pod" and doc["metadata"]["name"] == "m1":
            doc["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "6"  # fits on neither node
    store = Store()
    store.add_all(load_objects(spec["objects"], "running-member", FeatureGates()))
    scheduler = Scheduler(store, FeatureGates(), seed=0)
    decision = scheduler.schedule_one(0.0)
    assert decision is not None
    store.apply(decision)
    assert not decision.deallocations and not decision.unreservations
    assert _group_message(store).endswith(
        ", deallocation and deletion of ResourceClaims completed, "
        "pod group preemption: not eligible due to preemptionPolicy=Never."
    )
    claim = store.get("ResourceClaim", ("default", "held"))
    assert [r.name for r in claim.status.reservedFor] == ["pg"]
