"""A replay runs with the cyclic GC paused and what existed before it frozen, and leaves the collector as it
found it (simulation.py `_replay_gc`)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

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
