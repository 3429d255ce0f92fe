"""Where each pending pod waits (Scheduler.waiting_pods, behind the gangsched_pending_pods gauge), with
upstream's scheduler_pending_pods queue labels: a pod whose PodGroup has not been seen is "incomplete"
(upstream's incompletePodGroupPods), one held at PreEnqueue for another reason "gated", the rest where their
root is in the queue."""

from __future__ import annotations

from gangsched.scheduler import run_until_stable

from .builders import build, group, node, pod


def test_each_pending_pod_is_where_upstream_counts_it() -> None:
    store, scheduler = build(
        [
            node("n1", "2"),
            pod("orphan", "never-created"),  # its PodGroup does not exist
            group("short", 2),
            pod("short-0", "short"),  # 1 of minCount 2: PreEnqueue holds it
            pod("huge", cpu="3"),  # fits no node: unschedulable after its cycle
            pod("small"),  # fits: bound, so not pending
        ]
    )
    run_until_stable(store, scheduler)
    assert scheduler.waiting_pods() == {
        ("default", "orphan"): "incomplete",
        ("default", "short-0"): "gated",
        ("default", "huge"): "unschedulable",
    }
    store.add_all(build([group("never-created", 1)])[0].list("PodGroup"))  # the group appears
    assert scheduler.waiting_pods()[("default", "orphan")] != "incomplete"
