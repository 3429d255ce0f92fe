"""The live store: what the informers saw, plus the bindings in flight (kube-scheduler's "assumed" pods).

A pod the scheduler has placed counts as bound at once (its nodeName is set in the cached object) until the
API server says so or the binding fails; a watch event that still shows it unbound (an older status write)
keeps the assumed node, so the scheduler never places the same pod twice. Updates that only touch status (the
conditions gangsched itself writes) refresh the cached object in place without a change event: a write of
`Unschedulable` must not requeue the group it describes (kube-scheduler ignores those updates too). The
exception is a pending pod's `status.nominatedNodeName` set to something other than what the scheduler's
nominator holds (`nominated`): another writer moved or cleared it, and the nominator must follow.

Contract: single-threaded (the event loop); `changed` is set after every change the scheduler can act on.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from typing import Any

from ..scheduler.decision import Binding, Decision
from ..scheduler.default_spread import SELECTING_KINDS
from ..store.store import Store, key_of

__all__ = ["LiveCache"]

Key = tuple[str, str]


def _quiet_update(kind: str, old: Any, new: Any) -> bool:
    """True when `new` differs from `old` only in ways no scheduling decision reads."""
    if kind in ("PodGroup", "CompositePodGroup"):
        # Not metadata.generation: v1.37.2 does not set it on these kinds. minCount is mutable, and a
        # deletion (deletionTimestamp) matters too.
        return bool(old.spec == new.spec and old.metadata.deletionTimestamp == new.metadata.deletionTimestamp)
    if kind == "Pod":
        return bool(
            old.spec == new.spec
            and old.metadata.deletionTimestamp == new.metadata.deletionTimestamp
            and old.metadata.labels == new.metadata.labels
            and (old.status.phase if old.status else None) == (new.status.phase if new.status else None)
            # the resourceclaim controller records the claims it made for the pod: they may let it fit
            and (old.status.resourceClaimStatuses if old.status else None)
            == (new.status.resourceClaimStatuses if new.status else None)
        )
    if kind in SELECTING_KINDS:  # only the selector is decoded; status writes (replica counts) change nothing
        return bool(old.spec == new.spec)
    return False


class LiveCache:
    """A Store fed by informers (the Sink they write to), with assumed bindings on top."""

    def __init__(self, store: Store, nominated: Callable[[Key], str | None] = lambda key: None) -> None:
        self.store = store
        self.nominated = nominated  # where the scheduler's nominator holds room for a pod (runner sets it)
        self.assumed: dict[Key, str] = {}
        # When each unbound pod was first seen (monotonic seconds): the start of its scheduling SLI.
        self.first_pending: dict[Key, float] = {}
        self.changed = asyncio.Event()

    # --- informer side --------------------------------------------------------------------------------------
    def replace(self, kind: str, objects: list[Any]) -> None:
        """Make the store's `kind` equal a fresh list (initial sync and relists after 410 Gone)."""
        seen = set()
        for obj in objects:
            seen.add(key_of(obj))
            self._put(kind, obj)
        for obj in list(self.store.list(kind)):
            key = key_of(obj)
            if key not in seen:
                if kind == "Pod":
                    self.assumed.pop(key, None)
                    self.first_pending.pop(key, None)
                self.store.delete(kind, key)
        self.changed.set()

    def event(self, kind: str, event_type: str, obj: Any) -> None:
        if event_type == "DELETED":
            key = key_of(obj)
            if kind == "Pod":
                self.assumed.pop(key, None)
                self.first_pending.pop(key, None)
            self.store.delete(kind, key)
        else:
            self._put(kind, obj)
        self.changed.set()

    def _put(self, kind: str, obj: Any) -> None:
        key = key_of(obj)
        if kind == "Pod":
            if not obj.spec.nodeName:
                self.first_pending.setdefault(key, time.monotonic())
            node = self.assumed.get(key)
            if node is not None:
                if obj.spec.nodeName:
                    del self.assumed[key]  # the API server confirms (or another binder won: it is the truth)
                else:
                    obj.spec.nodeName = node
        old = self.store.get(kind, key)
        if old is not None:
            if old.metadata.resourceVersion == obj.metadata.resourceVersion:
                return  # a relist repeating what the watch already delivered
            moved = kind == "Pod" and self._nomination_moved(key, old, obj)
            if _quiet_update(kind, old, obj) and not moved:
                old.metadata = obj.metadata
                if kind not in SELECTING_KINDS:  # those decode no status
                    old.status = obj.status
                return
        self.store.add(obj)

    def _nomination_moved(self, key: Key, old: Any, new: Any) -> bool:
        """True when `new` sets the pod's nominatedNodeName to other than what the scheduler holds (the
        echo of gangsched's own write says what it holds already: that one stays quiet)."""
        before = old.status.nominatedNodeName if old.status else None
        after = new.status.nominatedNodeName if new.status else None
        return before != after and (after or None) != self.nominated(key)

    # --- scheduler side -------------------------------------------------------------------------------------
    def assume(self, bindings: Iterable[Binding]) -> None:
        """Count these pods as bound now (the scheduler already reserved them in its snapshot)."""
        bindings = list(bindings)
        for b in bindings:
            self.assumed[b.pod] = b.node
        self.store.apply(Decision(bindings=bindings))

    def forget(self, key: Key, node: str) -> bool:
        """Undo an assumed binding that failed; True if the cached pod is unbound again."""
        if self.assumed.get(key) != node:
            return False
        del self.assumed[key]
        pod = self.store.get("Pod", key)
        if pod is None or pod.spec.nodeName != node:
            return False
        pod.spec.nodeName = None
        return True
