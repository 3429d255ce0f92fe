"""Schedule a set of objects to a fixed point: what `gangsched schedule` and `gangsched demo` run."""

from __future__ import annotations

import gc
from collections.abc import Iterable
from typing import Any

from msgspec import Struct

from .api.gates import FeatureGates
from .scheduler import Profile, Scheduler, run_until_stable
from .scheduler.backfill_settings import BackfillSettings
from .scheduler.policy import queue_policy
from .store import Store
from .store.claim_controller import sync_claims

__all__ = ["Settled", "schedule_objects", "settle"]


def schedule_objects(objects: Iterable[Any], gates: FeatureGates, **options: Any) -> Store:
    """Load `objects` (defaulted and valid) into a fresh store, schedule until nothing changes, return it.
    `options` are `settle`'s (seed, scoring, placement_limit, backfill, policy)."""
    return settle(objects, gates, **options).store


class Settled(Struct, frozen=True):
    """A store scheduled to a fixed point, the scheduler that did it and the virtual time it reached."""

    store: Store
    scheduler: Scheduler
    now: float


def settle(
    objects: Iterable[Any],
    gates: FeatureGates,
    *,
    seed: int = 0,
    scoring: str = "LeastAllocated",
    placement_limit: bool = False,
    backfill: BackfillSettings | None = None,
    policy: str = "gang",
) -> Settled:
    """`schedule_objects`, keeping the scheduler (for `explain`, which reads its queue and snapshot)."""
    # What the run holds lives as long as it: the loaded objects, the store, the scheduler's pods, queue and
    # snapshot, each Decision applied. The cyclic GC would walk them again and again while they are made,
    # and find nothing: a run makes no reference cycles, or next to none (with the collector paused
    # throughout, `gc.collect()` after the run found no unreachable object on eight of the engine
    # benchmark's shapes, 10 on dra-template-500 and 317, a few closures, on spreading-5000). Its
    # collections took 0.05 of the run's CPU on gangs-1000x3 and 0.09 on gangs-9x1000 (a full one over the
    # 9,000 pods among them). So the collector is paused for the run, and what the run made is frozen out of
    # its reach at the end, as the `gangsched` command does with what its imports made (entry.py).
    running = gc.isenabled()
    gc.disable()
    try:
        store = Store(claim_controller=True)
        store.add_all(objects)
        # The resourceclaim controller's part: claims from templates, before the scheduler looks at the pods.
        sync_claims(store, workload_claims=gates.enabled("DRAWorkloadResourceClaims"))
        profile = Profile(
            scoring=scoring,
            placement_limit=placement_limit,
            backfill=backfill,
            queue_policy=queue_policy(policy),
        )
        scheduler = Scheduler(store, gates, seed=seed, profile=profile)
        now = run_until_stable(store, scheduler)
    finally:
        gc.freeze()
        if running:
            gc.enable()
    return Settled(store, scheduler, now)
