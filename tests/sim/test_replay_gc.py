"""A replay runs with the cyclic GC paused and what existed before it frozen, and leaves the collector as it
found it (simulation.py `_replay_gc`)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest

from gangsched.sim import SimOptions, Simulation, Workload
from gangsched.sim.inputs import GPU, gang_job, gpu_nodes
from gangsched.store import Change


@pytest.fixture
def collector() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.enable()  # as a process starts, whatever this one had
    yield
    if not enabled:
        gc.disable()


def test_the_replay_pauses_the_collector_freezes_what_exists_and_restores_both(collector: None) -> None:
    jobs = [gang_job(f"j{i}", 10.0 * i, 60.0, 2, {GPU: "4"}, 4) for i in range(4)]
    sim = Simulation(Workload(gpu_nodes(1, 8), jobs), SimOptions())
    during: list[tuple[bool, int]] = []

    def seen(change: Change) -> None:
        during.append((gc.isenabled(), gc.get_freeze_count()))

    sim.store.subscribe(seen)
    frozen = gc.get_freeze_count()
    sim.run()
    assert during and not any(enabled for enabled, _ in during)
    assert all(count > frozen for _, count in during)  # the workload and store, frozen at the start
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0  # unfrozen: collectable again, as is all that was frozen before


def test_what_the_replay_keeps_joins_the_oldest_generation_unwalked(
    collector: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The submissions are fed with the collector paused, and what the replay made and keeps is in the oldest
    generation afterwards, where the next young collection does not walk it (it was all young: the first
    collection after the replay walked it, the next middle one again)."""
    jobs = [gang_job(f"j{i}", 10.0 * i, 60.0, 2, {GPU: "4"}, 4) for i in range(4)]
    sim = Simulation(Workload(gpu_nodes(1, 8), jobs), SimOptions())
    fed: list[bool] = []
    at_each = sim.timeline.at_each

    def feed(*args: Any, **kwargs: Any) -> None:
        fed.append(gc.isenabled())
        at_each(*args, **kwargs)

    monkeypatch.setattr(sim.timeline, "at_each", feed)
    made: list[Any] = []
    sim.store.subscribe(lambda change: made.append(change.obj))  # pods and their statuses, made in the loop
    sim.run()
    assert fed == [False]
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    assert made and all(id(obj) in oldest for obj in made)
