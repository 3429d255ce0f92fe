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
    # The objects live as long as the run: keep the cyclic GC from walking them again and again, from
    # here on (storing thousands of them would otherwise set off full collections over all of them).
    gc.freeze()
    store = Store(claim_controller=True)
    store.add_all(objects)
    # The resourceclaim controller's part: claims from templates, before the scheduler looks at the pods.
    sync_claims(store, workload_claims=gates.enabled("DRAWorkloadResourceClaims"))
    gc.freeze()  # and the claims just made
    profile = Profile(
        scoring=scoring, placement_limit=placement_limit, backfill=backfill, queue_policy=queue_policy(policy)
    )
    scheduler = Scheduler(store, gates, seed=seed, profile=profile)
    now = run_until_stable(store, scheduler)
    return Settled(store, scheduler, now)
