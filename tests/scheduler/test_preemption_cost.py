"""Preemption that counts its cost: among victim sets upstream ranks equal, the one losing the least work
since its last checkpoint (annotation gangsched.io/last-checkpoint) goes."""

from __future__ import annotations

import pytest

from gangsched.api.gates import FeatureGates
from gangsched.scheduler import Profile, Scheduler, run_until_stable
from gangsched.store import Store
from tests.scenarios.harness import load_objects
from tests.scheduler.plan_objects import node, pod


@pytest.mark.parametrize("seed", range(6))
def test_the_victim_with_the_latest_checkpoint_goes(seed: int) -> None:
    """x on n1 and y on n2: same priority (0), same start, 4 GPUs each; y saved a checkpoint an hour after
    they started, so evicting it loses an hour less. A priority-100 pod of 4 GPUs evicts y, whatever the
    seed (upstream's ranking ties and it would take the first candidate from a random offset)."""
    y = pod("y", 4, on="n2")
    y["metadata"]["annotations"] = {"gangsched.io/last-checkpoint": "2026-01-01T01:00:00Z"}
    objects = [node("n1"), node("n2"), pod("x", 4, on="n1"), y, pod("p", 4, priority=100)]
    gates = FeatureGates()
    store = Store()
    store.add_all(load_objects(objects, "test", gates))
    run_until_stable(store, Scheduler(store, gates, seed=seed, profile=Profile()))
    assert [e.pod[1] for e in store.evictions] == ["y"]
