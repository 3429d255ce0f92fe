"""Prometheus metrics and health endpoints of `gangsched run`, with the standard library only.

    metrics = Metrics()
    metrics.attempts.inc("scheduled")
    server = await serve_http(metrics, port=10259, ready=lambda: True)

Served on 127.0.0.1: /metrics (text format 0.0.4), /healthz (the process runs its loop), /readyz (informers
synced and, with leader election, this replica leads).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["Counter", "Gauge", "Histogram", "Metrics", "serve_http"]

CYCLE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


def _labels(name: str, value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'{{{name}="{escaped}"}}'


@dataclass
class Counter:
    name: str
    help: str
    label: str
    values: dict[str, float] = field(default_factory=dict)

    def inc(self, label_value: str, by: float = 1.0) -> None:
        self.values[label_value] = self.values.get(label_value, 0.0) + by

    def render(self) -> list[str]:
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} counter"]
        lines += [f"{self.name}{_labels(self.label, k)} {v:g}" for k, v in sorted(self.values.items())]
        return lines


@dataclass
class Gauge:
    """Read when scraped: `read` returns label value -> number (or one number under label "")."""

    name: str
    help: str
    label: str
    read: Callable[[], dict[str, float]]

    def render(self) -> list[str]:
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} gauge"]
        for k, v in sorted(self.read().items()):
            lines.append(f"{self.name}{_labels(self.label, k) if k else ''} {v:g}")
        return lines


@dataclass
class Histogram:
    name: str
    help: str
    buckets: tuple[float, ...] = CYCLE_BUCKETS
    counts: list[int] = field(default_factory=list)
    total: float = 0.0
    n: int = 0

    def observe(self, value: float) -> None:
        if not self.counts:
            self.counts = [0] * len(self.buckets)
        for i, bound in enumerate(self.buckets):
            if value <= bound:
                self.counts[i] += 1
        self.total += value
        self.n += 1

    def render(self) -> list[str]:
        lines = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} histogram"]
        counts = self.counts or [0] * len(self.buckets)
        for bound, count in zip(self.buckets, counts, strict=True):
            lines.append(f'{self.name}_bucket{{le="{bound:g}"}} {count}')
        lines.append(f'{self.name}_bucket{{le="+Inf"}} {self.n}')
        lines.append(f"{self.name}_sum {self.total:.6f}")
        lines.append(f"{self.name}_count {self.n}")
        return lines


class Metrics:
    """Everything /metrics shows. Gauges that read scheduler state are attached by the runner."""

    def __init__(self) -> None:
        self.attempts = Counter("gangsched_schedule_attempts_total", "Scheduling cycles by result.", "result")
        self.bindings = Counter("gangsched_bindings_total", "Pod bindings by result.", "result")
        self.rollbacks = Counter(
            "gangsched_gang_rollbacks_total",
            "Gangs whose bound members were deleted after a failed bind.",
            "kind",
        )
        self.preemptions = Counter(
            "gangsched_preemption_attempts_total",
            "Cycles that decided to preempt, by preemptor kind.",
            "kind",
        )
        self.evictions = Counter(
            "gangsched_preemption_victims_total", "Victims evicted, by result.", "result"
        )
        self.cycle_seconds = Histogram(
            "gangsched_scheduling_cycle_duration_seconds", "Duration of one cycle."
        )
        self.gauges: list[Gauge] = []

    def render(self) -> str:
        lines: list[str] = []
        for metric in (self.attempts, self.bindings, self.rollbacks, self.preemptions, self.evictions):
            lines += metric.render()
        lines += self.cycle_seconds.render()
        for gauge in self.gauges:
            lines += gauge.render()
        return "\n".join(lines) + "\n"


async def serve_http(
    metrics: Metrics, *, port: int, ready: Callable[[], bool], host: str = "127.0.0.1"
) -> asyncio.Server:
    """A tiny HTTP/1.0 server for /metrics, /healthz and /readyz (GET only)."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readline(), 5)
            while (await asyncio.wait_for(reader.readline(), 5)) not in (b"\r\n", b"\n", b""):
                pass
            parts = request.decode("latin-1").split()
            path = parts[1].split("?", 1)[0] if len(parts) > 1 else "/"
            if path == "/metrics":
                code, body, ctype = 200, metrics.render(), "text/plain; version=0.0.4; charset=utf-8"
            elif path == "/healthz":
                code, body, ctype = 200, "ok", "text/plain"
            elif path == "/readyz":
                ok = ready()
                code, body, ctype = (200, "ok", "text/plain") if ok else (503, "not ready", "text/plain")
            else:
                code, body, ctype = 404, "not found", "text/plain"
            data = body.encode()
            reason = {200: "OK", 404: "Not Found", 503: "Service Unavailable"}[code]
            head = f"HTTP/1.0 {code} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {len(data)}\r\n\r\n"
            writer.write(head.encode() + data)
            await writer.drain()
        except (TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()

    return await asyncio.start_server(handle, host, port)
