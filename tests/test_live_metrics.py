"""/metrics through prometheus-client, and the small HTTP server of `gangsched run` (no cluster needed)."""

from __future__ import annotations

import asyncio

from prometheus_client.parser import text_string_to_metric_families

from gangsched.live.metrics import Gauge, Metrics, Page, serve_http


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a Prometheus text exposition, parsed by prometheus-client's own parser."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_names_labels_and_values() -> None:
    m = Metrics()
    m.attempts.inc("scheduled")
    m.attempts.inc("scheduled")
    m.bindings.inc("success", 3)
    m.cycle_seconds.observe(0.003)
    m.pod_scheduling_sli.observe(0.015)
    m.gauges.append(Gauge("gangsched_pending_pods", "Pods.", "queue", lambda: {"gated": 2.0, "active": 1.0}))
    m.gauges.append(Gauge("gangsched_pending_gangs", "Gangs.", "", lambda: {"": 4.0}))
    got = samples(m.render())
    assert got[("gangsched_schedule_attempts_total", (("result", "scheduled"),))] == 2
    assert got[("gangsched_bindings_total", (("result", "success"),))] == 3
    assert got[("gangsched_scheduling_cycle_duration_seconds_bucket", (("le", "0.0025"),))] == 0
    assert got[("gangsched_scheduling_cycle_duration_seconds_bucket", (("le", "0.005"),))] == 1
    assert got[("gangsched_scheduling_cycle_duration_seconds_count", ())] == 1
    # kube-scheduler's SLI buckets: 0.01 * 2^i, so 0.015 s falls in le=0.02, not le=0.01.
    assert got[("gangsched_pod_scheduling_sli_duration_seconds_bucket", (("le", "0.01"),))] == 0
    assert got[("gangsched_pod_scheduling_sli_duration_seconds_bucket", (("le", "0.02"),))] == 1
    assert got[("gangsched_pending_pods", (("queue", "gated"),))] == 2
    assert got[("gangsched_pending_pods", (("queue", "active"),))] == 1
    assert got[("gangsched_pending_gangs", ())] == 4
    assert not any(name.endswith("_created") for name, _ in got)


def test_two_metrics_do_not_share_counts() -> None:
    a, b = Metrics(), Metrics()
    a.attempts.inc("error")
    assert ("gangsched_schedule_attempts_total", (("result", "error"),)) not in samples(b.render())


async def _request(port: int, line: str) -> tuple[str, bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"{line}\r\nHost: x\r\n\r\n".encode())
    await writer.drain()
    data = await reader.read()
    writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return head.decode().splitlines()[0], body


def test_endpoints() -> None:
    async def scenario() -> None:
        ready = {"now": False}
        server = await serve_http(
            Metrics(),
            port=0,
            ready=lambda: ready["now"],
            pages=(Page("/", lambda: "<p>hello</p>"),),
        )
        port = server.sockets[0].getsockname()[1]
        try:
            assert await _request(port, "GET /healthz HTTP/1.1") == ("HTTP/1.0 200 OK", b"ok")
            assert (await _request(port, "GET /readyz HTTP/1.1"))[0] == "HTTP/1.0 503 Service Unavailable"
            ready["now"] = True
            assert (await _request(port, "GET /readyz HTTP/1.1"))[0] == "HTTP/1.0 200 OK"
            assert await _request(port, "GET /?refresh=1 HTTP/1.1") == ("HTTP/1.0 200 OK", b"<p>hello</p>")
            assert await _request(port, "HEAD / HTTP/1.1") == ("HTTP/1.0 200 OK", b"")
            assert (await _request(port, "POST / HTTP/1.1"))[0] == "HTTP/1.0 405 Method Not Allowed"
            assert (await _request(port, "GET /nothing HTTP/1.1"))[0] == "HTTP/1.0 404 Not Found"
            status, body = await _request(port, "GET /metrics HTTP/1.1")
            assert status == "HTTP/1.0 200 OK" and b"# TYPE gangsched_bindings_total counter" in body
        finally:
            server.close()

    asyncio.run(scenario())
