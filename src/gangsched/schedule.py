"""Schedule a set of objects to a fixed point: what `gangsched schedule` and `gangsched demo` run."""

from __future__ import annotations

import gc
from collections.abc import Iterable
from typing import Any

from .api.gates import FeatureGates
from .scheduler import Profile, Scheduler, run_until_stable
from .store import Store

__all__ = ["schedule_objects"]


def schedule_objects(
    objects: Iterable[Any],
    gates: FeatureGates,
    *,
    seed: int = 0,
    scoring: str = "LeastAllocated",
    placement_limit: bool = False,
) -> Store:
    """Load `objects` (defaulted and valid) into a fresh store, schedule until nothing changes, return it."""
    store = Store()
    store.add_all(objects)
    # The objects live as long as the run: keep the cyclic GC from walking them again and again.
    gc.freeze()
    scheduler = Scheduler(
        store, gates, seed=seed, profile=Profile(scoring=scoring, placement_limit=placement_limit)
    )
    run_until_stable(store, scheduler)
    return store
