"""Prometheus metrics and the HTTP endpoints of `gangsched run`, through prometheus-client.

    metrics = Metrics()
    metrics.attempts.inc("scheduled")
    server = await serve_http(metrics, port=10261, ready=lambda: True, host="0.0.0.0")

Endpoints: /metrics (Prometheus text format), /healthz (the process runs its loop), /readyz (informers
synced and, with leader election, this replica leads), and pages added with `pages` (the dashboard), all GET
and read-only. Each Metrics has its own registry, so several schedulers in one process (tests) do not mix.

Besides gangsched's own series, two of kube-scheduler's SLIs under gangsched's prefix (upstream's names with
`scheduler_` replaced by `gangsched_`): `gangsched_pod_scheduling_sli_duration_seconds` (from the moment a pod
of ours is first seen pending to its successful binding, across attempts, as upstream's
scheduler_pod_scheduling_sli_duration_seconds) and `gangsched_pending_pods{queue}` (pods of ours not yet bound
by where they wait: active, backoff, unschedulable, gated, in-flight; upstream's scheduler_pending_pods).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass

import prometheus_client
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client import Counter as PromCounter
from prometheus_client import Histogram as PromHistogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

__all__ = ["Counter", "Gauge", "Histogram", "Metrics", "Page", "StateCounter", "serve_http"]

log = logging.getLogger("gangsched.live.http")

# "_created" series would double every counter and histogram for a timestamp nobody here reads.
prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]

CYCLE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
# kube-scheduler's pod_scheduling_sli_duration_seconds buckets: exponential from 10 ms, factor 2, 20 of them.
SLI_BUCKETS = tuple(0.01 * 2**i for i in range(20))


class Counter:
    """A counter with one label; `name` ends in _total as it is exposed."""

    def __init__(self, registry: CollectorRegistry, name: str, help: str, label: str) -> None:
        self.name = name
        self._counter = PromCounter(name.removesuffix("_total"), help, [label], registry=registry)

    def inc(self, label_value: str, by: float = 1.0) -> None:
        self._counter.labels(label_value).inc(by)


class Histogram:
    def __init__(
        self, registry: CollectorRegistry, name: str, help: str, buckets: tuple[float, ...] = CYCLE_BUCKETS
    ) -> None:
        self.name = name
        self._histogram = PromHistogram(name, help, buckets=buckets, registry=registry)

    def observe(self, value: float) -> None:
        self._histogram.observe(value)


@dataclass
class Gauge:
    """Read when scraped: `read` returns label value -> number (or one number under label "")."""

    name: str
    help: str
    label: str
    read: Callable[[], dict[str, float]]

    def collect(self) -> Metric:
        family = GaugeMetricFamily(self.name, self.help, labels=[self.label] if self.label else None)
        for value, number in sorted(self.read().items()):
            family.add_metric([value] if self.label else [], number)
        return family


@dataclass
class StateCounter:
    """A counter kept by scheduler state and read when scraped: `read` yields (label values, total)."""

    name: str  # without _total
    help: str
    labels: tuple[str, ...]
    read: Callable[[], Iterable[tuple[tuple[str, ...], float]]]

    def collect(self) -> Metric:
        family = CounterMetricFamily(self.name, self.help, labels=list(self.labels))
        for values, total in self.read():
            family.add_metric(list(values), total)
        return family


class _ReadAtScrape(Collector):
    """Gauges or state counters attached to a Metrics (a list the runner appends to), read when scraped."""

    def __init__(self, series: list[Gauge] | list[StateCounter]) -> None:
        self.series = series

    def collect(self) -> Iterator[Metric]:
        for one in self.series:
            yield one.collect()


class Metrics:
    """Everything /metrics shows. Gauges that read scheduler state are attached by the runner."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        r = self.registry
        self.attempts = Counter(
            r, "gangsched_schedule_attempts_total", "Scheduling cycles by result.", "result"
        )
        self.bindings = Counter(r, "gangsched_bindings_total", "Pod bindings by result.", "result")
        self.rollbacks = Counter(
            r,
            "gangsched_gang_rollbacks_total",
            "Gangs whose bound members were deleted after a failed bind.",
            "kind",
        )
        self.preemptions = Counter(
            r,
            "gangsched_preemption_attempts_total",
            "Cycles that decided to preempt, by preemptor kind.",
            "kind",
        )
        self.evictions = Counter(
            r, "gangsched_preemption_victims_total", "Victims evicted, by result.", "result"
        )
        self.cycle_seconds = Histogram(
            r, "gangsched_scheduling_cycle_duration_seconds", "Duration of one cycle."
        )
        self.pod_scheduling_sli = Histogram(
            r,
            "gangsched_pod_scheduling_sli_duration_seconds",
            "From a pod of ours first seen pending to its successful binding, across attempts "
            "(as kube-scheduler's scheduler_pod_scheduling_sli_duration_seconds).",
            SLI_BUCKETS,
        )
        self.recoveries = Counter(
            r,
            "gangsched_gang_recoveries_total",
            "Gangs whose bound members were deleted by the recovery policy after losing a member, by action "
            "(restart, release).",
            "action",
        )
        self.gauges: list[Gauge] = []
        r.register(_ReadAtScrape(self.gauges))
        # Counters read from scheduler state at scrape time (attached by the runner).
        self.state_counters: list[StateCounter] = []
        r.register(_ReadAtScrape(self.state_counters))

    def render(self) -> str:
        return generate_latest(self.registry).decode()


@dataclass(frozen=True)
class Page:
    """A read-only page served beside /metrics: `render()` returns the body (HTML)."""

    path: str
    render: Callable[[], Awaitable[str] | str]
    content_type: str = "text/html; charset=utf-8"


_REASONS = {200: "OK", 404: "Not Found", 405: "Method Not Allowed", 500: "Internal Server Error",
            503: "Service Unavailable"}  # fmt: skip


async def serve_http(
    metrics: Metrics,
    *,
    port: int,
    ready: Callable[[], bool],
    host: str = "127.0.0.1",
    pages: tuple[Page, ...] = (),
) -> asyncio.Server:
    """A small HTTP/1.0 server (GET and HEAD only) for /metrics, /healthz, /readyz and `pages`."""
    by_path = {p.path: p for p in pages}

    async def respond(method: str, path: str) -> tuple[int, str, str]:
        if method not in ("GET", "HEAD"):
            return 405, "method not allowed", "text/plain"
        if path == "/metrics":
            return 200, metrics.render(), prometheus_client.CONTENT_TYPE_LATEST
        if path == "/healthz":
            return 200, "ok", "text/plain"
        if path == "/readyz":
            return (200, "ok", "text/plain") if ready() else (503, "not ready", "text/plain")
        page = by_path.get(path)
        if page is None:
            return 404, "not found", "text/plain"
        body = page.render()
        return 200, body if isinstance(body, str) else await body, page.content_type

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readline(), 5)
            while (await asyncio.wait_for(reader.readline(), 5)) not in (b"\r\n", b"\n", b""):
                pass
            parts = request.decode("latin-1").split()
            method = parts[0] if parts else "GET"
            path = parts[1].split("?", 1)[0] if len(parts) > 1 else "/"
            try:
                code, body, ctype = await respond(method, path)
            except Exception:  # a page that fails to render must not take the server down
                log.exception("GET %s", path)
                code, body, ctype = 500, "internal error", "text/plain"
            data = body.encode()
            head = (
                f"HTTP/1.0 {code} {_REASONS[code]}\r\nContent-Type: {ctype}\r\n"
                f"Content-Length: {len(data)}\r\nCache-Control: no-store\r\n\r\n"
            )
            writer.write(head.encode() + (b"" if method == "HEAD" else data))
            await writer.drain()
        except (TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()

    return await asyncio.start_server(handle, host, port)
