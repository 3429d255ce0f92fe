"""Reservations and backfill on schedules computed by hand (module docstring of backfill.py).

The world is scripted: every pod runs exactly its true run time once bound, then is deleted; the scheduler
sees only the estimates (`gangsched.io/expected-duration`). Everything is created at t = 0 in input order.

Workload W on n1, n2 (4 GPUs each), running at t = 0: r1 on n1 (4 GPUs, ends 100), r2 on n2 (2 GPUs, 300).
Waiting, in order: gang G (2 x 4 GPUs, 500 s), S1 (2 GPUs, 200 s), S2 (2 GPUs, 50 s), S3 (2 GPUs, 400 s).
- gang (greedy): S1 takes n2's 2 free GPUs at 0; at 100 S2 and S3 take n1; G needs both nodes empty:
  n1 is free again at 500 (S3 ends): G 500.
- gang-strict-fifo: nothing overtakes G, which starts when r2 ends: G 300; S1, S2, S3 start when G ends, 800.
- gang-backfill depth 1: G reserves n1 + n2 from 300. S1 (0..200) ends before 300: backfilled at 0 on n2.
  S2 (100..150) too, on n1 at 100. S3 (100..500) would delay G: refused, starts when G ends, 800.
"""

from __future__ import annotations

import heapq
from typing import Any

import pytest

from gangsched.scheduler import Profile
from gangsched.scheduler.backfill import Backfill, BackfillSettings
from gangsched.scheduler.evaluator import Evaluator
from gangsched.scheduler.policy import queue_policy
from gangsched.scheduler.scheduler import Scheduler
from tests.scheduler.plan_objects import START, gang, node, pod, scheduler_for

TRUE = {"r1": 100.0, "r2": 300.0, "g-0": 500.0, "g-1": 500.0, "s1": 200.0, "s2": 50.0, "s3": 400.0}


def workload(r2_estimate: str = "300") -> list[dict[str, Any]]:
    return [
        node("n1"),
        node("n2"),
        pod("r1", 4, on="n1", duration="100"),
        pod("r2", 2, on="n2", duration=r2_estimate),
        *gang("g", 2, 4, duration="500"),
        pod("s1", 2, duration="200"),
        pod("s2", 2, duration="50"),
        pod("s3", 2, duration="400"),
    ]


def replay(
    objects: list[dict[str, Any]],
    profile: Profile,
    true: dict[str, float],
    arrivals: tuple[float, list[dict[str, Any]]] | None = None,
) -> tuple[dict[str, float], Any]:
    """Start time of every pod; each runs `true[name]` seconds once bound, then is deleted. `arrivals`:
    (time, objects) created later."""
    store, scheduler = scheduler_for(objects, profile)
    later = scheduler_for(arrivals[1])[0] if arrivals else None
    now = 0.0
    store.clock = lambda: now
    starts: dict[str, float] = {}
    keys: set[tuple[str, str]] = set()
    ends: list[tuple[float, str]] = []
    for _ in range(10_000):
        if later is not None and arrivals is not None and now >= arrivals[0]:
            kinds = ("Workload", "CompositePodGroup", "PodGroup", "Pod")
            store.add_all([o for kind in kinds for o in later.list(kind)])
            later = None
        while (decision := scheduler.schedule_one(now)) is not None:
            store.apply(decision)
        for p in store.list("Pod"):
            name = p.metadata.name
            keys.add((p.metadata.namespace, name))
            if p.spec.nodeName and name not in starts:
                starts[name] = 0.0 if p.status and p.status.startTime else now
                heapq.heappush(ends, (starts[name] + true[name], name))
        ready = scheduler.queue.next_ready_at()
        arrival = arrivals[0] if later is not None and arrivals is not None else None
        times = [t for t in (ends[0][0] if ends else None, ready, arrival) if t is not None]
        if not times:
            return starts, scheduler
        now = max(now, min(times))
        while ends and ends[0][0] <= now:
            _, name = heapq.heappop(ends)
            store.delete("Pod", next(k for k in keys if k[1] == name))
    raise AssertionError("no end")


BACKFILL = Profile(backfill=BackfillSettings(depth=1))


@pytest.mark.parametrize(
    ("profile", "want"),
    [
        (Profile(), {"g-0": 500, "s1": 0, "s2": 100, "s3": 100}),
        (
            Profile(queue_policy=queue_policy("gang-strict-fifo")),
            {"g-0": 300, "s1": 800, "s2": 800, "s3": 800},
        ),
        (BACKFILL, {"g-0": 300, "s1": 0, "s2": 100, "s3": 800}),
        (Profile(queue_policy=queue_policy("gang-backfill")), {"g-0": 300, "s1": 0, "s2": 100, "s3": 800}),
    ],
    ids=["gang", "gang-strict-fifo", "backfill-depth-1", "gang-backfill"],
)
def test_the_same_workload_under_each_policy(profile: Profile, want: dict[str, float]) -> None:
    starts, _ = replay(workload(), profile, TRUE)
    assert {k: starts[k] for k in want} == want
    assert starts["g-1"] == starts["g-0"]


def test_backfilled_job_ends_before_the_reservation_and_a_delaying_one_is_refused() -> None:
    starts, scheduler = replay(workload(), BACKFILL, TRUE)
    assert starts["s1"] + TRUE["s1"] <= starts["g-0"]  # S1 and S2 were backfilled ahead of G ...
    assert starts["s2"] < starts["g-0"] and starts["s2"] + TRUE["s2"] <= starts["g-0"]
    assert starts["s3"] == starts["g-0"] + TRUE["g-0"]  # ... S3 was not: it would have delayed G
    assert scheduler.backfill.first_eta[("PodGroup", "default", "g")] == 300.0
    assert scheduler.backfill.slips == []


def test_overrun_pushes_the_reservation_and_the_slip_names_its_cause() -> None:
    """r2 is estimated at 300 s but runs 400 s: G, planned for 300, starts at 400 and the slip says why."""
    true = {**TRUE, "r2": 400.0}
    starts, scheduler = replay(workload(), BACKFILL, true)
    assert starts["g-0"] == 400.0
    (slip,) = scheduler.backfill.slips
    assert (slip.root, slip.old_start, slip.new_start) == (("PodGroup", "default", "g"), 300.0, 400.0)
    assert slip.causes == ("Pod default/r2 ran past its estimate of 300s (expected to end at t=300s)",)


def starved(aging: BackfillSettings) -> dict[str, float]:
    """n1 (4 GPUs) runs h0..h3 (1 GPU each, ending 100, 200, 300, 400). Waiting: l (4 GPUs, priority 0,
    100 s, created 2000 s ago) and then h-1..h-8 (1 GPU, priority 10, 400 s each, created now).
    Without aging the priority-10 pods head the plan one after another and take every GPU that frees:
    h-1..h-4 at 100..400, h-5..h-8 at 500..800, l only at 1200 when the last ends. With aging at 36
    points/hour (0.01/s) capped at 20, l's effective priority is 20 from the start (2000 s waited), the h's
    stay below 20 until t = 1000 and tie after (l is older): l heads the plan, is reserved from 400 when h3
    ends, no h may start before (each would run past 400), l runs 400..500, then h-1..h-4 at 500 and
    h-5..h-8 at 900."""
    objects = [
        node("n1"),
        *[pod(f"h{i}", 1, on="n1", duration=str(100 * (i + 1)), priority=10) for i in range(4)],
    ]
    objects.append(pod("l", 4, duration="100", priority=0, created="2025-12-31T23:26:40Z"))
    objects += [pod(f"h-{i}", 1, duration="400", priority=10, created=START) for i in range(1, 9)]
    true = (
        {f"h{i}": 100.0 * (i + 1) for i in range(4)} | {"l": 100.0} | {f"h-{i}": 400.0 for i in range(1, 9)}
    )
    starts, _ = replay(objects, Profile(backfill=aging), true)
    return {k: v for k, v in starts.items() if not k.startswith("h") or k.startswith("h-")}


def test_without_aging_the_big_pod_waits_for_every_higher_priority_one() -> None:
    starts = starved(BackfillSettings(depth=1))
    assert starts == {"l": 1200.0} | {f"h-{i}": 100.0 * i for i in range(1, 9)}


def test_aging_lets_the_starved_pod_overtake() -> None:
    starts = starved(BackfillSettings(depth=1, aging_rate=36.0, aging_cap=20.0))
    assert starts == {"l": 400.0} | {f"h-{i}": 500.0 for i in range(1, 5)} | {
        f"h-{i}": 900.0 for i in range(5, 9)
    }


def _behind_a_reservation(urgent: list[dict[str, Any]], name: str) -> list[Any]:
    """n1 runs x (4 GPUs, 1000 s), n2 runs y (4 GPUs, 100 s); gang g (2 x 4 GPUs, 500 s, priority 100, never
    preempts) is reserved from 1000. At 50 `urgent` arrives (priority 100, one pod `name` of 4 GPUs, 2000 s),
    behind g: under gang-backfill its preemption would hold a node past 1000, so nothing is evicted (its pod
    is told why), and when y ends at 100 it may not take n2 either: g starts at 1000 and it when g ends
    (1500). Returns the evictions under gang, where it preempts at once."""
    objects = [
        node("n1"),
        node("n2"),
        pod("x", 4, on="n1", duration="1000"),
        pod("y", 4, on="n2", duration="100"),
        *gang("g", 2, 4, duration="500", priority=100, preempts=False),
    ]
    true = {"x": 1000.0, "y": 100.0, "g-0": 500.0, "g-1": 500.0, name: 2000.0}
    starts, scheduler = replay(objects, BACKFILL, true, (50.0, urgent))
    assert scheduler.store.evictions == []
    assert (starts["g-0"], starts[name]) == (1000.0, 1500.0)
    events = [e.message for e in scheduler.store.events if e.object == f"Pod default/{name}"]
    assert any(m.endswith("backfill: preemption would delay the reservation of default/g") for m in events), (
        events
    )
    return list(replay(objects, Profile(), true, (50.0, urgent))[1].store.evictions)


def test_no_preemption_that_would_delay_a_reservation() -> None:
    """A lone pod p as the urgent arrival (see _behind_a_reservation)."""
    evictions = _behind_a_reservation([pod("p", 4, duration="2000", priority=100)], "p")
    assert [e.pod[1] for e in evictions] in (["x"], ["y"])


def test_no_tree_preemption_that_would_delay_a_reservation() -> None:
    """A CompositePodGroup tree t (one gang of one pod) as the urgent arrival: a tree root preempts as a
    PodGroup does, and backfill drops its preemption the same way, a preemption that needs no victim
    included (y gone, its dry run finds n2 free and would nominate it there, holding g's room)."""
    one = {"gang": {"minGroupCount": 1}}
    templates = [
        {
            "name": "t",
            "schedulingPolicy": one,
            "podGroupTemplates": [{"name": "t-pg", "schedulingPolicy": {"gang": {"minCount": 1}}}],
        }
    ]
    workload = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "w"},
        "spec": {"compositePodGroupTemplates": templates},
    }
    tree = {
        "apiVersion": "scheduling.k8s.io/v1alpha3",
        "kind": "CompositePodGroup",
        "metadata": {"name": "t", "annotations": {"gangsched.io/expected-duration": "2000"}},
        "spec": {
            "schedulingPolicy": one,
            "priority": 100,
            "workloadRef": {"workloadName": "w", "templateName": "t"},
        },
    }
    child, member = gang("t-pg", 1, 4, priority=100)
    child["spec"]["parentCompositePodGroupName"] = "t"
    child["spec"]["workloadRef"] = {"workloadName": "w", "templateName": "t-pg"}
    urgent = [workload, tree, child, member]
    evictions = _behind_a_reservation(urgent, "t-pg-0")
    assert [(e.pod[1], e.preemptor) for e in evictions] in ([("x", "default/t")], [("y", "default/t")])


@pytest.mark.parametrize(
    ("fair_share", "want"),
    [
        (None, {"a-big-0": 100.0, "b-big-0": 400.0}),
        ((("team-a", 1.0),), {"a-big-0": 400.0, "b-big-0": 100.0}),
    ],
    ids=["fifo", "fair-share"],
)
def test_fair_share_gives_the_reservation_to_the_namespace_with_the_smaller_dominant_share(
    fair_share: tuple[tuple[str, float], ...] | None, want: dict[str, float]
) -> None:
    """team-a runs a1 (4 GPUs on n1) and a2 (1 GPU on n2), both ending at 100, and a3 (2 GPUs on n3, for
    10,000 s). Waiting at the same priority: team-a's gang a-big (2 x 4 GPUs, 300 s), then team-b's b-big (the
    same); only n1 + n2 can take one of them, from 100. The plan at 100 orders them: by creation a-big first
    (a-big 100, b-big 400); with fair share team-a's dominant share is 2/12 of the GPUs (a3), team-b's 0, so
    b-big heads the plan and starts at 100, a-big at 400."""
    objects = [
        node("n1"),
        node("n2"),
        node("n3"),
        pod("a1", 4, on="n1", duration="100", namespace="team-a"),
        pod("a2", 1, on="n2", duration="100", namespace="team-a"),
        pod("a3", 2, on="n3", duration="10000", namespace="team-a"),
        *gang("a-big", 2, 4, duration="300", namespace="team-a"),
        *gang("b-big", 2, 4, duration="300", namespace="team-b"),
    ]
    true = {"a1": 100.0, "a2": 100.0, "a3": 10_000.0}
    true |= {f"{g}-{i}": 300.0 for g in ("a-big", "b-big") for i in range(2)}
    profile = Profile(backfill=BackfillSettings(depth=1, fair_share=fair_share))
    starts, _ = replay(objects, profile, true)
    assert {k: starts[k] for k in want} == want


def test_dominant_shares_by_hand(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three nodes of 32 CPUs, 128Gi, 4 GPUs and 2 pod slots. team-a runs 4 + 2 GPUs and 2 CPUs: GPUs 6/12
    = 0.5, CPUs 2/96, so its dominant share is 0.5, over its weight 2: 0.25. team-b runs 1 GPU and 1 CPU:
    1/12. The pod count is no resource to share (team-b's 1 of 6 pod slots counts for nothing), nor is
    memory, which no pod asks for. The same from the running work's sums and from the snapshot's placed
    pods."""
    nodes = [node(name) for name in ("n1", "n2", "n3")]
    for n in nodes:
        n["status"]["allocatable"]["pods"] = "2"
    objects = [
        *nodes,
        pod("a1", 4, on="n1", namespace="team-a"),
        pod("a2", 2, on="n2", namespace="team-a"),
        pod("b1", 1, on="n3", namespace="team-b"),
    ]
    profile = Profile(backfill=BackfillSettings(depth=1, fair_share=(("team-a", 2.0),)))
    _, scheduler = scheduler_for(objects, profile)
    assert scheduler.backfill is not None
    want = {"team-a": 0.25, "team-b": 1 / 12}
    assert scheduler.backfill.dominant_shares() == want
    assert scheduler.backfill.dominant_shares() == want  # kept, the usage unchanged
    monkeypatch.setattr(type(scheduler.backfill._index()), "namespace_use", lambda self: None)
    assert scheduler.backfill.dominant_shares() == want


def test_the_room_bound_counts_only_the_room_no_reservation_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workload W under depth 1: G holds n1 + n2 from 300 to 800. When r1 ends at 100, n1's 4 GPUs are free
    room for S2 and S3 (2 GPUs each). S2 (100..150) may use n1 and binds; S3 (100..500) may use no node (both
    are reserved before it would end), so the room it may use holds none of it: the release does not wake
    it (the hint asks the planner, Backfill.room_check), nor do S2's end at 150 and S1's at 200, which free
    2 GPUs each on reserved nodes, nor r2's at 300, just before G takes both nodes. S3 gets its one cycle
    when G ends at 800.
    - Without the planner's word, the hint wakes S3 at 100, 150, 200 and 300, and the bound before the
      cycle sends it back each time: 4 skipped tries.
    - With neither, those 4 are failing cycles. The schedule is the same in all three."""
    starts, scheduler = replay(workload(), BACKFILL, TRUE)
    want = {"g-0": 300.0, "g-1": 300.0, "s1": 0.0, "s2": 100.0, "s3": 800.0}
    assert {k: starts[k] for k in want} == want
    assert scheduler.backfill.first_eta[("PodGroup", "default", "g")] == 300.0
    assert scheduler.skipped == 0

    monkeypatch.setattr(Backfill, "room_check", lambda self, now: None)
    same, bounded = replay(workload(), BACKFILL, TRUE)
    assert same == starts
    assert (bounded.skipped, bounded.cycles) == (4, scheduler.cycles)

    room_for = Evaluator.room_for
    monkeypatch.setattr(Evaluator, "room_for", lambda self, pi, nodes=None: room_for(self, pi))
    _, all_room = replay(workload(), BACKFILL, TRUE)
    assert (all_room.skipped, all_room.cycles - scheduler.cycles) == (1, 3)  # S3 at 100, 150, 200

    monkeypatch.setattr(Scheduler, "_bound_fails", lambda self, *args: False)
    every, unbounded = replay(workload(), BACKFILL, TRUE)
    assert every == starts
    assert unbounded.backfill.first_eta == scheduler.backfill.first_eta
    assert unbounded.backfill.slips == scheduler.backfill.slips == []
    assert (unbounded.skipped, unbounded.cycles - scheduler.cycles) == (0, 4)


def test_work_ending_early_brings_the_reservation_forward() -> None:
    """n1 runs A (4 GPUs, estimated to end at 1000, ends at 50), n2 runs B (4 GPUs, ends at 300 as estimated);
    gang G (2 x 4 GPUs, 500 s) waits. At 0 G reserves n1 + n2 from 1020 (1000 on the 60 s grid). A ends
    early at 50: the plan made then (due 30 s after the last) moves G's start to 300, when B ends. S (2
    GPUs, 600 s) comes at 100: ending at 700 it would delay G, so it waits until G ends at 800 (with G's
    start left at 1020 it would have been backfilled at 100, and G pushed to 700)."""
    objects = [
        node("n1"),
        node("n2"),
        pod("a", 4, on="n1", duration="1000"),
        pod("b", 4, on="n2", duration="300"),
        *gang("g", 2, 4, duration="500"),
    ]
    true = {"a": 50.0, "b": 300.0, "g-0": 500.0, "g-1": 500.0, "s": 600.0}
    starts, scheduler = replay(objects, BACKFILL, true, arrivals=(100.0, [pod("s", 2, duration="600")]))
    assert {k: starts[k] for k in ("g-0", "g-1", "s")} == {"g-0": 300.0, "g-1": 300.0, "s": 800.0}
    assert scheduler.backfill.first_eta[("PodGroup", "default", "g")] == 1020.0
