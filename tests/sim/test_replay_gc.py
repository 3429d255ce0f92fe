"""A replay runs with the cyclic GC's first threshold raised and what existed before it frozen, and leaves the
collector as it found it (simulation.py `_replay_gc`)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from gangsched.sim import SimOptions, Simulation, Workload
from gangsched.sim.inputs import GPU, gang_job, gpu_nodes
from gangsched.sim.simulation import REPLAY_GC_THRESHOLD
from gangsched.store import Change


@pytest.fixture
def thresholds() -> Iterator[tuple[int, int, int]]:
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)  # CPython's defaults, whatever the process had
    yield gc.get_threshold()
    gc.set_threshold(*before)


def test_the_replay_raises_the_threshold_freezes_what_exists_and_restores_both(
    thresholds: tuple[int, int, int],
) -> None:
    jobs = [gang_job(f"j{i}", 10.0 * i, 60.0, 2, {GPU: "4"}, 4) for i in range(4)]
    sim = Simulation(Workload(gpu_nodes(1, 8), jobs), SimOptions())
    during: list[tuple[tuple[int, int, int], int]] = []

    def seen(change: Change) -> None:
        during.append((gc.get_threshold(), gc.get_freeze_count()))

    sim.store.subscribe(seen)
    frozen = gc.get_freeze_count()
    sim.run()
    assert during and all(t == (REPLAY_GC_THRESHOLD, 10, 10) for t, _ in during)
    assert all(count > frozen for _, count in during)  # the workload and store, frozen at the start
    assert gc.get_threshold() == thresholds
    assert gc.get_freeze_count() == 0  # unfrozen: collectable again, as is all that was frozen before
