"""DESIGN.md's invariants on random clusters and workloads, checked after every Decision the store
applies: no node over-committed, no gang bound below minCount, PodGroupInitiallyScheduled never back from
True; a failed cycle leaves the snapshot as it was; same input and seed give the same output."""

from __future__ import annotations

import copy
import json
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import HealthCheck, assume, event, given, settings, target
from hypothesis import strategies as st

from gangsched.api.gates import FeatureGates
from gangsched.report.schedule_output import as_json
from gangsched.scheduler import Code, Decision, GroupAttempt, Scheduler, run_group_cycle, run_until_stable
from gangsched.scheduler.evaluator import Evaluator
from gangsched.scheduler.podinfo import pod_info
from gangsched.scheduler.snapshot import Snapshot
from gangsched.store import Store
from tests.scenarios.harness import load_objects

from .cluster_strategies import RESOURCES, LoneGang, World, lone_gangs, worlds

GATES = FeatureGates()
PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _load(world: World) -> list[Any]:
    return load_objects(copy.deepcopy(world.docs), "generated", GATES)


def _bound_per_group(store: Store) -> Counter[str]:
    return Counter(
        p.spec.schedulingGroup.podGroupName
        for p in store.list("Pod")
        if p.spec.nodeName and p.spec.schedulingGroup
    )


def _check_invariants(store: Store, world: World, ever_true: set[str], bound_now: set[str]) -> None:
    """`bound_now`: groups that the last Decision bound pods of."""
    used: dict[str, Counter[str]] = {}
    for pod in store.list("Pod"):
        if pod.spec.nodeName:
            node = used.setdefault(pod.spec.nodeName, Counter())
            node.update(world.pod_requests[pod.metadata.name])
            node["pods"] += 1
    for node, amounts in used.items():
        alloc = world.node_alloc[node]
        over = {r: (amounts[r], alloc[r]) for r in (*RESOURCES, "pods") if amounts[r] > alloc[r]}
        assert not over, f"{node} over-committed (used, allocatable): {over}"
    bound = _bound_per_group(store)
    for group in bound_now:
        pg = store.get("PodGroup", ("default", group))
        gang = pg.spec.schedulingPolicy.gang if pg is not None else None
        if gang is not None:
            assert bound[group] >= gang.minCount, (
                f"gang {group} bound {bound[group]} < minCount {gang.minCount}"
            )
    for pg in store.list("PodGroup"):
        cond = next(
            (c for c in (pg.status.conditions if pg.status else None) or [] if c.type.endswith("Scheduled")),
            None,
        )
        if cond is not None and cond.status == "True":
            ever_true.add(pg.metadata.name)
        elif pg.metadata.name in ever_true:
            raise AssertionError(f"PodGroupInitiallyScheduled of {pg.metadata.name} went back from True")


def _checked_store(world: World, ever_true: set[str]) -> Store:
    """A store that checks the invariants after every Decision it applies."""
    store = Store()
    apply: Callable[[Decision], None] = store.apply

    def apply_and_check(decision: Decision) -> None:
        groups = [store.get("Pod", b.pod).spec.schedulingGroup for b in decision.bindings]
        apply(decision)
        _check_invariants(store, world, ever_true, {g.podGroupName for g in groups if g is not None})

    store.apply = apply_and_check  # type: ignore[method-assign]
    return store


@PROPERTY
@given(world=worlds(), steps=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 50)), max_size=4))
def test_invariants_hold_after_every_decision(world: World, steps: list[tuple[int, int]]) -> None:
    """Steps: 0 deletes a bound pod (room frees up), 1 lowers a gang's minCount, 2 raises it."""
    ever_true: set[str] = set()
    store = _checked_store(world, ever_true)
    store.add_all(_load(world))
    _check_invariants(store, world, ever_true, set())
    scheduler = Scheduler(store, GATES, seed=0)
    run_until_stable(store, scheduler)
    for action, pick in steps:
        if action == 0:
            bound = sorted(p.metadata.name for p in store.list("Pod") if p.spec.nodeName)
            if bound:
                store.delete("Pod", ("default", bound[pick % len(bound)]))
        elif world.min_counts:
            name = sorted(world.min_counts)[pick % len(world.min_counts)]
            pg = copy.deepcopy(store.get("PodGroup", ("default", name)))
            new_min = max(1, world.min_counts[name] + (-1 if action == 1 else 1))
            pg.spec.schedulingPolicy.gang.minCount = new_min
            world.min_counts[name] = new_min
            store.add(pg)
        run_until_stable(store, scheduler)


@PROPERTY
@given(case=lone_gangs(), seed=st.integers(0, 3))
def test_a_group_that_fits_alone_on_the_empty_cluster_binds(case: LoneGang, seed: int) -> None:
    """Progress: a group whose minCount fits on the empty cluster binds, as many of its pods as fit; one
    that does not fit binds nothing. (A scheduler that never binds, or binds below minCount, fails here.)"""
    store = Store()
    store.add_all(load_objects(copy.deepcopy(case.docs), "generated", GATES))
    run_until_stable(store, Scheduler(store, GATES, seed=seed))
    bound = sum(1 for p in store.list("Pod") if p.spec.nodeName)
    fits = case.capacity >= case.min_count
    event("fits" if fits else "does not fit")
    target(float(fits), label="examples where the group fits")
    want = min(case.pods, case.capacity) if fits else 0
    assert bound == want, f"{bound} bound; capacity {case.capacity}, minCount {case.min_count}"


@PROPERTY
@given(world=worlds(), seed=st.integers(0, 3))
def test_same_input_and_seed_give_the_same_output(world: World, seed: int) -> None:
    outputs = []
    for _ in range(2):
        store = Store()
        store.add_all(_load(world))
        run_until_stable(store, Scheduler(store, GATES, seed=seed))
        outputs.append(json.dumps(as_json(store), sort_keys=True))
    assert outputs[0] == outputs[1]


def _snapshot_state(snap: Snapshot) -> tuple[Any, ...]:
    return (snap.used.copy(), snap.nonzero_used.copy(), dict(snap.placed))


@PROPERTY
@given(world=worlds(), data=st.data())
def test_a_failed_cycle_leaves_the_snapshot_as_it_was(world: World, data: st.DataObject) -> None:
    objects = _load(world)
    pods = [o for o in objects if o.kind == "Pod"]
    snap = Snapshot(o for o in objects if o.kind == "Node")
    ev = Evaluator(snap, np.random.default_rng(0))
    infos = [pod_info(p, i) for i, p in enumerate(pods)]
    for pi in infos:
        ev.vector(pi)  # a resource no node offers adds a row: do it before taking the "before" picture
        if pi.node_name:
            snap.place(pi.key, snap.index[pi.node_name], ev.vector(pi))
    # only a group with a pending pod runs a cycle at all: choose among those, never a vacuous example
    with_pending = sorted({pi.group[1] for pi in infos if pi.group is not None and not pi.node_name})
    assume(with_pending)
    name = data.draw(st.sampled_from(with_pending), label="group")
    members = [pi for pi in infos if pi.group == ("default", name)]
    pending = [pi for pi in members if not pi.node_name]
    gang = name in world.min_counts
    attempt = GroupAttempt(
        min_count=world.min_counts.get(name, 1),
        gang=gang,
        scheduled=len(members) - len(pending),
        pods=pending,
    )
    before = _snapshot_state(snap)
    result = run_group_cycle(ev, attempt)
    event("cycle failed" if result.code != Code.SUCCESS else "cycle succeeded")
    target(float(result.code != Code.SUCCESS), label="failed cycles")
    if result.code == Code.SUCCESS:
        assert result.placed, "a successful cycle places at least one new pod"
        assert snap.placed != before[2], "a success keeps its reservations until reverted"
        result.revert()  # a success hands back its undo; it must restore the snapshot too
    else:
        assert result.placed == []
    after = _snapshot_state(snap)
    assert np.array_equal(before[0], after[0]) and np.array_equal(before[1], after[1])
    assert before[2] == after[2]
