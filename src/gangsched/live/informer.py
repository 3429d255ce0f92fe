"""Informers: keep the store in step with the API server, one list + watch loop per kind.

Each loop lists (the store is made to equal the list: added, updated, and deleted what has gone), then
watches from the list's resourceVersion with bookmarks, so a watch that the server ends or that drops resumes
from the last version seen without losing events. A 410 Gone (the version was compacted away, e.g. after a
long outage) means events were lost: list again. Errors while the API server is down back off and retry.

    informer = Informer(api, "Pod", cache)
    task = asyncio.create_task(informer.run())
    await informer.synced.wait()

Contract: runs until cancelled; never raises out of `run` except CancelledError.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

import httpx2 as httpx
import msgspec

from .kube import KubeApi, WatchGone

__all__ = ["Informer", "Sink"]

log = logging.getLogger(__name__)
MAX_BACKOFF = 5.0


class Sink(Protocol):
    def replace(self, kind: str, objects: list[Any]) -> None: ...
    def event(self, kind: str, event_type: str, obj: Any) -> None: ...


class Informer:
    """List + watch one kind into a Sink. `relists` and `resumes` count what happened, for tests/metrics."""

    def __init__(self, api: KubeApi, kind: str, sink: Sink, *, watch_timeout: int = 300) -> None:
        self.api = api
        self.kind = kind
        self.sink = sink
        self.watch_timeout = watch_timeout
        self.resource_version: str | None = None
        self.synced = asyncio.Event()
        self.relists = 0
        self.resumes = 0

    async def run(self) -> None:
        failures = 0
        while True:
            try:
                if self.resource_version is None:
                    objects, self.resource_version = await self.api.list(self.kind)
                    self.sink.replace(self.kind, objects)
                    self.synced.set()
                await self._watch()
                failures = 0
                self.resumes += 1  # the server ended the watch (timeoutSeconds): go on from where it was
            except WatchGone:
                log.info("watch %s: 410 Gone, listing again", self.kind)
                self.resource_version = None
                self.relists += 1
            except (httpx.TransportError, httpx.HTTPStatusError, msgspec.ValidationError) as e:
                failures += 1
                self.resumes += 1
                delay = min(MAX_BACKOFF, 0.1 * 2**failures)
                # An HTTP status says why (403: this account may not list or watch the kind), and so does an
                # object the kind's model refuses (which would otherwise end the loop, and the kind would
                # never sync); a transport error's class is enough.
                why = type(e).__name__ if isinstance(e, httpx.TransportError) else str(e)
                log.warning("watch %s: %s; again in %.1fs", self.kind, why, delay)
                await asyncio.sleep(delay)

    async def _watch(self) -> None:
        assert self.resource_version is not None
        async for event_type, obj in self.api.watch(self.kind, self.resource_version, self.watch_timeout):
            if event_type == "BOOKMARK":
                self.resource_version = obj or self.resource_version
                continue
            self.resource_version = obj.metadata.resourceVersion
            self.sink.event(self.kind, event_type, obj)
