"""`explain` and the planner's earliest start on schedules computed by hand.

Cluster: racks r1 (n1, n2) and r2 (n3, n4), 4 GPUs per node. Running since time 0, by annotation:
a on n1 (4 GPUs, 600 s), b on n3 (1 GPU, 300 s), c on n4 (1 GPU, 900 s).
Pending: gang g of 2 x 4 GPUs in one rack (300 s), then gang h, the same shape, 1000 s.
- g now: r1 has n2 only (one pod fits), r2 has 3 + 3 free GPUs (no pod fits): best rack r1, 4 of 8 GPUs.
- g at 300 (b ends): r2 has n3 4, n4 3: still one pod at most. At 600 (a ends) r1 is empty: g starts
  at 600 on n1, n2, blocked by a.
- h (conservative, behind g): r1 is held over [600, 900) and h would run past 600; r2 frees at 900 (c ends);
  at 900 g's hold has ended too: h starts at 900.
"""

from __future__ import annotations

from typing import Any

from gangsched.cli import main
from gangsched.scheduler import run_until_stable
from gangsched.scheduler.explain import as_dict, explain, queue_order, render
from gangsched.scheduler.plan import PlanSettings, plan_queue
from tests.scheduler.plan_objects import gang, node, pod, scheduler_for


def cluster() -> list[dict[str, Any]]:
    return [
        node("n1", rack="r1"),
        node("n2", rack="r1"),
        node("n3", rack="r2"),
        node("n4", rack="r2"),
        pod("a", 4, on="n1", duration="600"),
        pod("b", 1, on="n3", duration="5m"),
        pod("c", 1, on="n4", duration="15m"),
        *gang("g", 2, 4, duration="300", rack=True),
        *gang("h", 2, 4, duration="1000", rack=True),
    ]


def settled() -> Any:
    store, scheduler = scheduler_for(cluster())
    now = run_until_stable(store, scheduler)
    return store, scheduler, now


def test_rack_reservation_waits_for_the_work_that_frees_one_rack() -> None:
    _store, scheduler, _now = settled()
    plan = plan_queue(scheduler, queue_order(scheduler), 0.0, PlanSettings())
    g, h = plan[("PodGroup", "default", "g")], plan[("PodGroup", "default", "h")]
    names = scheduler.snapshot().node_names
    assert g is not None and h is not None
    assert (g.start, g.end, sorted(names[i] for i in g.nodes), g.domain) == (600.0, 900.0, ["n1", "n2"], "r1")
    assert [w.root for w in g.blockers] == [("Pod", "default", "a")]
    assert h.start == 900.0 and h.end == 1900.0
    assert h.ahead == (("PodGroup", "default", "g"),)


def test_explain_says_what_fails_how_far_short_and_when() -> None:
    _store, scheduler, _now = settled()
    e = explain(scheduler, ("PodGroup", "default", "g"), 0.0)
    assert e.state == "pending"
    assert (e.position, e.queued) == (1, 2)
    s = e.shortfall
    assert s is not None
    assert (s.key, s.domain, s.fits, s.needs, s.feasible_domains, s.domains) == ("rack", "r1", 1, 2, 0, 2)
    assert s.short == (("nvidia.com/gpu", 8000, 4000),)
    # Each pod alone fits n2; the rack constraint is what fails; nothing of lower priority runs to preempt.
    assert e.failing == {}
    assert e.preemption == "No preemption victims found for incoming preemptor"
    text = render(e)
    assert "needs 8 nvidia.com/gpu, best rack r1 has 4 free" in text
    assert "0/2 rack domains fit it now" in text
    assert "blocked by: Pod default/a (expected to end t=600s (in 600s))" in text
    assert "estimated start: t=600s (in 600s) on n1, n2 in rack r1; run time 300s (annotation)" in text
    h = as_dict(explain(scheduler, ("PodGroup", "default", "h"), 0.0))
    assert (h["queuePosition"], h["estimatedStart"], h["ahead"]) == (2, 900.0, ["PodGroup/default/g"])


def test_failing_filters_are_the_cores_own_counts() -> None:
    """A pod of 5 GPUs fits no 4-GPU node: the filter histogram says so for all four nodes."""
    store, scheduler = scheduler_for([*cluster()[:4], pod("big", 5, duration="60")])
    now = run_until_stable(store, scheduler)
    e = explain(scheduler, ("Pod", "default", "big"), now)
    assert e.failing == {"Insufficient nvidia.com/gpu": 4}
    assert e.eta is None  # no end of any running work ever makes 5 GPUs on one node
    assert "estimated start: unknown within the planning window" in render(e)


def test_preemption_run_dry_names_the_victims() -> None:
    """A priority-100 pod needing all of n1 (priority-0 work x there) would evict x."""
    objects = [node("n1", gpus=2), pod("x", 2, on="n1"), pod("urgent", 2, priority=100, duration="60")]
    _store, scheduler = scheduler_for(objects)
    scheduler.queue.add(("Pod", "default", "urgent"), 100, (0.0, 0))
    e = explain(scheduler, ("Pod", "default", "urgent"), 0.0)
    assert e.evict == ["Pod default/x (priority 0)"]
    assert e.preemption is None


def test_cli_explain_a_member_pod_explains_its_group(tmp_path: Any) -> None:
    import yaml
    from click.testing import CliRunner

    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all(cluster()))
    result = CliRunner().invoke(main, ["explain", "-f", str(path), "default/g-1"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("PodGroup default/g: pending\n")
    assert "estimated start: t=600s" in result.output
    missing = CliRunner().invoke(main, ["explain", "-f", str(path), "podgroup/default/nope"])
    assert missing.exit_code == 1
    assert "podgroup/default/nope: no PodGroup default/nope in the input" in missing.output


def test_why_pending_goes_into_a_condition_of_its_own_and_an_event() -> None:
    """Live mode's --explain-pending: upstream's condition keeps upstream's message; the explanation goes
    into gangsched.io/WhyPending and a WhyPending Event on the PodGroup."""
    from gangsched.scheduler import Profile
    from gangsched.scheduler.scheduler import WHY_PENDING

    plain_store, plain = scheduler_for(cluster())
    run_until_stable(plain_store, plain)
    store, scheduler = scheduler_for(cluster(), Profile(explain_pending=True))
    run_until_stable(store, scheduler)
    conditions = {c.type: c for c in store.get("PodGroup", ("default", "g")).status.conditions}
    upstream = {c.type: c for c in plain_store.get("PodGroup", ("default", "g")).status.conditions}
    key = "PodGroupInitiallyScheduled"
    assert (conditions[key].reason, conditions[key].message) == (upstream[key].reason, upstream[key].message)
    assert "estimated start: t=600s (in 600s) on n1, n2 in rack r1" in conditions[WHY_PENDING].message
    assert (conditions[WHY_PENDING].status, conditions[WHY_PENDING].reason) == ("True", "Pending")
    events = [e for e in store.events if e.reason == "WhyPending"]
    assert {e.object for e in events} == {"PodGroup default/g", "PodGroup default/h"}
    assert not [e for e in plain_store.events if e.reason == "WhyPending"]


def test_bad_backfill_options_exit_1(tmp_path: Any) -> None:
    import yaml
    from click.testing import CliRunner

    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all(cluster()))
    for args, message in [
        (["--backfill", "x"], "--backfill x: want a number of reservations or 'all'"),
        (["--backfill", "-1"], "reservation depth must be >= 0 or 'all'"),
        (["--backfill", "1", "--bf-resolution", "0"], "planning window and resolution must be > 0 seconds"),
    ]:
        result = CliRunner().invoke(main, ["schedule", "-f", str(path), *args])
        assert result.exit_code == 1 and message in result.output, (args, result.output)
    ok = CliRunner().invoke(main, ["explain", "-f", str(path), "default/h", "--backfill", "all"])
    assert ok.exit_code == 0 and "estimated start: t=900s" in ok.output, ok.output
