"""What the backfill planner keeps between plans is what it would compute afresh, and the release walks it
bounds wake the roots they would wake reading every root.

The planner keeps the running work (plan.RunningIndex, refreshed from the pods that changed), the waiting
roots in sorted lists (waiting.py), each namespace's usage and dominant share (for fair share), and the last
plan's earliest starts (plan.EarliestStarts, reused while what they read stands), rather than reading every
pod and root at every plan. At every plan of replays with gangs, members exiting and nodes failing (so pods
end early, gangs lose members and nodes go), each must equal its definition computed from scratch:
plan.running_work from the snapshot's placed pods, the waiting roots sorted by the order's key over every
queued root with attempts, each namespace's usage summed over the placed pods, every reused earliest start
(those the capacity bound spared a search included) plan.earliest_start run again; and a snapshot version
seen again must name the same counts.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from msgspec.structs import replace

from gangsched.api.gates import FeatureGates
from gangsched.scheduler import Profile, hints
from gangsched.scheduler.backfill import Backfill, BackfillSettings
from gangsched.scheduler.earliest_starts import EarliestStarts
from gangsched.scheduler.hints import Fits, RoomWaiters
from gangsched.scheduler.plan import INFINITE, Running, earliest_start, running_work
from gangsched.sim import SimOptions, Simulation, Workload
from gangsched.sim.failures import FailurePlan
from gangsched.sim.inputs import GPU, gang_job, gpu_nodes
from tests.scenarios.harness import load_objects
from tests.scheduler.plan_objects import gang, node, pod, scheduler_for


def _jobs(seed: int) -> list[Any]:
    """Jobs of three namespaces: mostly small ones, now and then a gang as large as the cluster."""
    rng = np.random.default_rng(seed)
    jobs, t = [], 0.0
    for i in range(120):
        t += float(np.round(rng.exponential(60)))
        big = rng.random() < 0.1
        per_pod = 8 if big else int(rng.choice([1, 2, 4]))
        pods = int(rng.choice([3, 4])) if big else int(rng.choice([1, 1, 2]))
        duration = float(np.round(rng.exponential(1800 if big else 600)) + 1)
        ns = ["a", "b", "c"][int(rng.integers(3))]
        jobs.append(gang_job(f"j{i}", t, duration, pods, {GPU: str(per_pod)}, per_pod, namespace=ns))
    return jobs


def _running(r: Running) -> tuple[Any, ...]:
    works = [(w.root, frozenset(w.pods), w.nodes, w.start, w.end, w.overrun, w.estimate) for w in r.works]
    pods = sorted(  # the columns no pod holds left out, and they give nothing back
        (int(w), int(n), tuple(u.tolist()))
        for w, n, u, t in zip(r.pod_work, r.pod_node, r.pod_use.T, r.pod_release, strict=True)
        if w >= 0 or t < np.inf
    )
    assert all(r.pod_release[c] == t for cs, t in zip(r.work_columns, r.releases, strict=True) for c in cs)
    return works, r.releases.tolist(), pods


def _usage(backfill: Backfill) -> dict[str, list[int]]:
    snap = backfill.scheduler.snapshot()
    used: dict[str, np.ndarray] = {}
    for (ns, _), (_, vec) in snap.placed.items():
        row_use = used.setdefault(ns, np.zeros(len(snap.resources), dtype=np.int64))
        for row, v in vec.rows:
            row_use[row] += v
    return {ns: u.tolist() for ns, u in used.items() if u.any()}


def _first_start(backfill: Backfill) -> float:
    return min((r.start for r in backfill.reservations.values()), default=INFINITE)


@pytest.mark.parametrize(("seed", "depth", "fair"), [(0, 1, True), (1, 4, False), (2, 1, False)])
def test_kept_state_equals_a_fresh_computation_at_every_plan(
    seed: int, depth: int, fair: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked = {
        "plans": 0,
        "running": 0,
        "waiting": 0,
        "reused": 0,
        "bounded": 0,
        "narrowed": 0,
        "taken_over": 0,
    }
    replan, get = Backfill.replan, EarliestStarts.get
    # snapshot version -> (the snapshot, what it counted then); the snapshot itself, not its id(): a dropped
    # snapshot's id may be reused by the next one, whose versions start again
    counts: dict[int, Any] = {}

    def checking(self: Backfill, now: float) -> None:
        assert self._first_start == _first_start(self)  # as the forgets since the last plan left it
        settings = self.settings
        snap = self.scheduler.snapshot()
        seen = (snap, dict(snap.placed), dict(snap.nominated), len(snap.resources))
        assert counts.setdefault(snap.version, seen) == seen or counts[snap.version][0] is not snap
        counts[snap.version] = seen
        fresh = running_work(self.scheduler, now, settings.plan, self.history, {})
        assert _running(self.running(now)) == _running(fresh)
        kept = self._index().namespace_use()
        assert kept is not None  # a replay binds every pod it places
        assert {ns: u.tolist() for ns, u in kept.items() if u.any()} == _usage(self)
        shares = self.dominant_shares() if settings.fair_share is not None else {}
        waiting = [r for r in self.scheduler.queue.roots() if r.attempts > 0]
        expected = sorted(waiting, key=lambda r: (-r.priority, shares.get(r.key[1], 0.0), r.timestamp, r.seq))
        assert [r.key for r in self.order(now)] == [r.key for r in expected]
        assert [r.key for r in self.order(now, 3)] == [r.key for r in expected[:3]]
        checked["plans"] += 1
        checked["running"] += bool(fresh.works)
        checked["waiting"] += len(waiting) > 3
        if settings.fair_share is not None:
            self._shares = None
            afresh = self.dominant_shares()
            assert shares == afresh
        replan(self, now)
        assert self._first_start == _first_start(self)

    def reuse_checked(self: EarliestStarts, *args: Any, **kwargs: Any) -> Any:
        reused, bounded, narrowed, taken_over = (
            self.reused + self.partly,
            self.bounded,
            self.narrowed,
            self.taken_over,
        )
        found = get(self, *args, **kwargs)
        if self.reused + self.partly > reused:
            start_only = kwargs.get("start_only", False)
            assert found == earliest_start(*args[:8], start_only=start_only).found
            checked["reused"] += 1
            checked["bounded"] += self.bounded > bounded
            checked["narrowed"] += self.narrowed > narrowed
            checked["taken_over"] += self.taken_over > taken_over
        return found

    monkeypatch.setattr(Backfill, "replan", checking)
    monkeypatch.setattr(EarliestStarts, "get", reuse_checked)
    backfill = BackfillSettings(depth=depth, fair_share=(("a", 2.0),) if fair else None)
    failures = FailurePlan(exit_per_h=1.0, node_per_h=0.2, node_repair_s=1800.0)
    options = SimOptions(policy="gang-backfill", backfill=backfill, failures=failures, seed=seed)
    sim = Simulation(Workload(gpu_nodes(4, 8), _jobs(seed)), options).run()
    assert sum(r.end is not None for r in sim.runs) == 120  # every job ran to its end
    # The checks saw plans with work running and with more roots waiting than a limited order takes.
    assert checked["running"] >= 20 and checked["waiting"] >= 5, checked
    # Earliest starts were reused (fair share plans at most every interval after any start or end, often
    # with nothing changed in between; without it plans are made when something changed).
    assert checked["reused"] >= (5 if fair else 0), checked
    # Some partial searches were spared by the capacity bound (EarliestStarts.bounded), and some narrowed
    # by it (work that only took room since: EarliestStarts.narrowed), and still equal.
    assert checked["bounded"] >= (5 if fair else 0), checked
    assert checked["narrowed"] >= (5 if fair else 0), checked
    # Some of those searches took the old trial over (plan.KnownTrial), and still equal.
    assert checked["taken_over"] >= (1 if fair else 0), checked


def _walks(seed: int, depth: int, bounded: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], int]:
    """The replay's decisions and every root each release walk woke, and how many roots walks asked the
    planner about; `bounded=False`: the walks read every root (no bound by estimates)."""
    woken: list[Any] = []
    asked = [0]
    wake, rewake, room_check = RoomWaiters.wake, RoomWaiters.rewake, Backfill.room_check

    def wake_logged(self: RoomWaiters, *args: Any, **kwargs: Any) -> Any:
        if not bounded:
            self.estimate = None
        out = list(wake(self, *args, **kwargs))
        woken.append(("wake", out))
        return iter(out)

    def rewake_logged(self: RoomWaiters, *args: Any, **kwargs: Any) -> Any:
        out = list(rewake(self, *args, **kwargs))
        woken.append(("rewake", out))
        return iter(out)

    def counting(self: Backfill, now: float) -> Fits | None:
        fits = room_check(self, now)
        if fits is None:
            return None

        def check(*args: Any) -> bool:
            asked[0] += 1
            return fits.check(*args)

        return replace(fits, check=check)

    monkeypatch.setattr(RoomWaiters, "wake", wake_logged)
    monkeypatch.setattr(RoomWaiters, "rewake", rewake_logged)
    monkeypatch.setattr(Backfill, "room_check", counting)
    options = SimOptions(policy="gang-backfill", backfill=BackfillSettings(depth=depth), seed=seed)
    sim = Simulation(Workload(gpu_nodes(4, 8), _jobs(seed)), options).run()
    decisions = [(r.job.name, r.start, r.end) for r in sim.runs]
    assert sum(r.end is not None for r in sim.runs) == 120
    return decisions + woken, asked[0]


@pytest.mark.parametrize(("seed", "depth"), [(3, 1), (4, 4)])
def test_release_walks_bounded_by_estimates_wake_the_same_roots(
    seed: int, depth: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """hints.py: a walk that stops once it has met every root the plan could let through (by their
    estimates) wakes the same roots, in the same order, as one that reads them all, and reads fewer."""
    with monkeypatch.context() as m:
        every, asked_all = _walks(seed, depth, False, m)
    bounded, asked = _walks(seed, depth, True, monkeypatch)
    assert bounded == every
    assert asked < asked_all


@pytest.mark.parametrize(("seed", "depth"), [(5, 1), (6, 4)])
def test_the_bands_of_waiting_roots_are_the_live_entries_at_every_walk(
    seed: int, depth: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """hints.py keeps each class's waiting roots in lists by (need, estimate band) for walks bounded by
    estimates: before every walk, they must hold exactly the live entries (each root's latest), grouped by
    its need and the band of its estimate (the one kept with its entry), each list in queue order, and every
    band's lower end at most the estimates it holds."""
    checked = {"walks": 0, "entries": 0}
    wake_class = RoomWaiters._wake_class

    def checking(self: RoomWaiters, cls: Any, *args: Any, **kwargs: Any) -> Any:
        for signature, waiting in self._classes.items():
            expected: dict[tuple[int, float], list[Any]] = {}
            for root, (c, seq, need, estimate, entry, band) in self._entry.items():
                if c == signature:
                    assert entry[1:4] == (seq, root, need)
                    assert band == hints._band(estimate)  # the band kept with the entry is its estimate's
                    assert hints._band_start(band) <= estimate
                    expected.setdefault((need, band), []).append(entry)
            assert waiting.bands == {k: sorted(v) for k, v in expected.items()}
            assert waiting.live == sum(len(v) for v in expected.values())
            assert waiting.least == min((need for need, _ in expected), default=0)
            checked["entries"] += waiting.live
        checked["walks"] += 1
        return wake_class(self, cls, *args, **kwargs)

    monkeypatch.setattr(RoomWaiters, "_wake_class", checking)
    failures = FailurePlan(exit_per_h=1.0, node_per_h=0.2, node_repair_s=1800.0)
    options = SimOptions(
        policy="gang-backfill", backfill=BackfillSettings(depth=depth), failures=failures, seed=seed
    )
    sim = Simulation(Workload(gpu_nodes(4, 8), _jobs(seed)), options).run()
    assert sum(r.end is not None for r in sim.runs) == 120
    assert checked["walks"] >= 50 and checked["entries"] >= 200, checked


def test_a_pod_group_joining_a_tree_moves_its_running_work_to_the_tree() -> None:
    """The running work is kept by root between plans. A PodGroup in no tree is its pods' root whatever else
    it says, so its changes leave the kept work as it is (Backfill.objects_changed); but one that joins a
    tree (parentCompositePodGroupName) makes the tree its running pods' root, and the kept work must follow,
    as running_work computed afresh does."""
    one = {"gang": {"minGroupCount": 1}}
    member = {"name": "g", "schedulingPolicy": {"gang": {"minCount": 1}}}
    template = {"name": "t", "schedulingPolicy": one, "podGroupTemplates": [member]}
    workload = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "w"},
        "spec": {"compositePodGroupTemplates": [template]},
    }
    tree = {
        "apiVersion": "scheduling.k8s.io/v1alpha3",
        "kind": "CompositePodGroup",
        "metadata": {"name": "t"},
        "spec": {"schedulingPolicy": one, "workloadRef": {"workloadName": "w", "templateName": "t"}},
    }
    group, _ = gang("g", 1, 4)
    store, scheduler = scheduler_for(
        [workload, tree, node("n1"), group, pod("g-0", 4, group="g", on="n1", duration="100")],
        Profile(backfill=BackfillSettings(depth=1)),
    )
    backfill = scheduler.backfill
    assert backfill is not None
    settings = backfill.settings.plan

    def roots() -> list[Any]:
        fresh = running_work(scheduler, 0.0, settings)
        assert _running(backfill.running(0.0)) == _running(fresh)
        return [w.root for w in fresh.works]

    assert roots() == [("PodGroup", "default", "g")]
    group["metadata"]["annotations"] = {"note": "outside any tree still"}
    store.add(load_objects([group], "test", FeatureGates())[0])
    assert roots() == [("PodGroup", "default", "g")]
    group["spec"]["parentCompositePodGroupName"] = "t"
    group["spec"]["workloadRef"] = {"workloadName": "w", "templateName": "g"}
    store.add(load_objects([workload, tree, group], "test", FeatureGates())[2])
    assert roots() == [("CompositePodGroup", "default", "t")]


@pytest.mark.parametrize(("seed", "depth"), [(7, 1), (8, 4)])
def test_the_planners_bound_on_estimates_never_grows_with_the_need(
    seed: int, depth: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """hints.py asks `Fits.longest` only for the least need of each class it walks: at every release walk,
    the bound the planner gives a root needing more pods must be at most the bound of one needing fewer."""
    checked = {"walks": 0, "differ": 0}
    room_check = Backfill.room_check

    def checking(self: Backfill, now: float) -> Fits | None:
        fits = room_check(self, now)
        if fits is not None and fits.longest is not None:
            for waiting in self.scheduler.waiters._classes.values():
                bounds = [fits.longest(waiting.like, need) for need in range(1, 9)]
                assert bounds == sorted(bounds, reverse=True), bounds
                checked["walks"] += 1
                checked["differ"] += len(set(bounds)) > 1
        return fits

    monkeypatch.setattr(Backfill, "room_check", checking)
    options = SimOptions(policy="gang-backfill", backfill=BackfillSettings(depth=depth), seed=seed)
    sim = Simulation(Workload(gpu_nodes(4, 8), _jobs(seed)), options).run()
    assert sum(r.end is not None for r in sim.runs) == 120
    assert checked["walks"] >= 50 and checked["differ"] >= 10, checked
