"""`gangsched run`'s shutdown on SIGTERM is bounded (issue 15): against a slow API server (a local HTTP
server that never answers a bind, and in one case nothing at all once the signal has come), the process is
done within SHUTDOWN_BUDGET, the bind in flight is abandoned, and the Lease's release is attempted (and
made, when the server answers it). No cluster needed: the server here answers lists, watches (which stay
open and silent), Leases, binds, status patches and events, as much as `run` asks of an API server.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

from gangsched.live import runner
from gangsched.live.fakenodes import node_status

LEASE_PATH = "/apis/coordination.k8s.io/v1/namespaces/default/leases/gs-shutdown"
# Past the budget, what the old shutdown took at least against this server: 5 s for the writes, then up to
# 5 s for the Lease (a test that passes with it cannot prove the bound). Scheduling noise on a busy machine
# stays well under the margin.
MARGIN = 1.5


class SlowApiServer(ThreadingHTTPServer):
    """Just enough of an API server for `gangsched run`: one 4-CPU node, one pending 1-CPU pod for
    schedulerName gangsched, empty lists of every other kind. A bind is never answered (until the server
    closes); with `silent_from_bind`, nothing is answered any more once a bind came. Requests are recorded
    as (monotonic time, method, path, body)."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.closing = threading.Event()
        self.silent_from_bind = False
        self.bind_seen = threading.Event()
        self.lease: dict[str, Any] | None = None
        self.version = 1
        self.requests: list[tuple[float, str, str, Any]] = []
        self.lock = threading.Lock()

    def list_items(self, plural: str) -> list[dict[str, Any]]:
        if plural == "nodes":
            return [{"metadata": {"name": "n1", "uid": "n1"}, "status": node_status({"cpu": "4"})}]
        if plural == "pods":
            pod = {
                "metadata": {
                    "name": "p1",
                    "namespace": "default",
                    "uid": "p1",
                    "creationTimestamp": "2026-01-01T00:00:00Z",
                },
                "spec": {
                    "schedulerName": "gangsched",
                    "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}],
                },
                "status": {"phase": "Pending"},
            }
            return [pod]
        return []


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: SlowApiServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length)) if length else None

    def _answer(self, code: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _hang(self) -> None:
        self.server.closing.wait()
        self.close_connection = True

    def _handle(self) -> None:
        server = self.server
        url = urlsplit(self.path)
        body = self._body()
        with server.lock:
            server.requests.append((time.monotonic(), self.command, url.path, body))
        if server.silent_from_bind and server.bind_seen.is_set():
            return self._hang()
        if "watch" in parse_qs(url.query):
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            return self._hang()
        if url.path.endswith("/binding"):
            server.bind_seen.set()
            return self._hang()
        if url.path.startswith(LEASE_PATH.rsplit("/", 1)[0]):
            return self._lease(body)
        if self.command == "GET":
            plural = url.path.rstrip("/").rsplit("/", 1)[-1]
            items = server.list_items(plural)
            return self._answer(200, {"metadata": {"resourceVersion": "1"}, "items": items})
        return self._answer(201 if self.command == "POST" else 200, body or {})

    def _lease(self, body: Any) -> None:
        server = self.server
        with server.lock:
            if self.command == "GET":
                if server.lease is None:
                    return self._answer(404, {"kind": "Status", "code": 404})
                return self._answer(200, server.lease)
            server.version += 1
            body["metadata"]["resourceVersion"] = str(server.version)
            server.lease = body
            return self._answer(201 if self.command == "POST" else 200, body)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle


@pytest.fixture
def api_server(tmp_path: Path) -> Iterator[tuple[SlowApiServer, Path]]:
    server = SlowApiServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "slow", "cluster": {"server": f"http://{host!s}:{port}"}}],
                "users": [{"name": "anyone", "user": {}}],
                "contexts": [{"name": "slow", "context": {"cluster": "slow", "user": "anyone"}}],
                "current-context": "slow",
            }
        )
    )
    yield server, kubeconfig
    server.closing.set()
    server.shutdown()
    server.server_close()


def _run_until_sigterm(
    server: SlowApiServer, kubeconfig: Path, hold_loop: float = 0.0
) -> tuple[int, float, float]:
    """`gangsched run --leader-elect` until the bind is in flight, then SIGTERM, and the event loop held
    `hold_loop` seconds after it (as a long scheduling cycle would). Returns (exit code, when the signal was
    sent, seconds from the signal to run's end)."""
    options = runner.RunOptions(
        kubeconfig=str(kubeconfig), leader_elect=True, lease_namespace="default", lease_name="gs-shutdown"
    )

    async def main() -> tuple[int, float, float]:
        task = asyncio.create_task(runner.run(options, watchdog=False))
        while not server.bind_seen.is_set():
            assert not task.done(), f"run ended before binding: {task.result()}"
            await asyncio.sleep(0.05)
        signalled = time.monotonic()
        os.kill(os.getpid(), signal.SIGTERM)  # run's own handler (the bind is in flight: it is installed)
        time.sleep(hold_loop)
        code = await task
        return code, signalled, time.monotonic() - signalled

    return asyncio.run(main())


def _lease_requests_after(server: SlowApiServer, when: float) -> list[tuple[str, Any]]:
    return [(method, body) for t, method, path, body in server.requests if path == LEASE_PATH and t >= when]


def test_a_bind_that_never_returns_is_abandoned_and_the_lease_released_within_the_budget(
    api_server: tuple[SlowApiServer, Path], caplog: pytest.LogCaptureFixture
) -> None:
    server, kubeconfig = api_server
    caplog.set_level(logging.INFO, logger="gangsched.live")
    code, signalled, took = _run_until_sigterm(server, kubeconfig)
    assert code == 0
    assert took <= runner.SHUTDOWN_BUDGET + MARGIN, f"shutdown took {took:.1f} s"
    puts = [body for method, body in _lease_requests_after(server, signalled) if method == "PUT"]
    assert puts and puts[-1]["spec"]["holderIdentity"] is None, "the Lease was not released"
    assert server.lease is not None and server.lease["spec"]["holderIdentity"] is None
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("shutdown: ")]
    # The bind (and what waits on it, its event) abandoned; nothing else was in flight.
    assert any(re.search(r"writes in flight in .*\(0 finished, [12] abandoned\)", s) for s in said), said
    assert any(s.startswith("shutdown: lease in ") and "(released)" in s for s in said), said
    assert said[0].startswith("shutdown: 5 s budget from the signal"), said
    assert said[-1].startswith("shutdown: done in "), said


def test_an_api_server_that_stops_answering_still_gets_the_release_tried_within_the_budget(
    api_server: tuple[SlowApiServer, Path], caplog: pytest.LogCaptureFixture
) -> None:
    """Nothing is answered from the bind on (the signal follows it): the writes and the release are both
    abandoned, so the whole shutdown takes about the budget (the old one took the writes' 5 s, then the
    Lease's 5 s)."""
    server, kubeconfig = api_server
    caplog.set_level(logging.INFO, logger="gangsched.live")
    server.silent_from_bind = True
    code, signalled, took = _run_until_sigterm(server, kubeconfig)
    assert code == 0
    assert took <= runner.SHUTDOWN_BUDGET + MARGIN, f"shutdown took {took:.1f} s"
    assert [m for m, _ in _lease_requests_after(server, signalled)] == ["GET"], "no release was tried"
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("shutdown: ")]
    assert any("release abandoned" in s for s in said), said


def test_the_budget_counts_from_the_signal_though_a_long_cycle_holds_the_loop(
    api_server: tuple[SlowApiServer, Path],
) -> None:
    """The loop is busy for 4 s when the signal comes: the writes get what is left of the budget after it
    (none: abandoned at once), not a fresh 5 s counted from when the loop got to it."""
    server, kubeconfig = api_server
    code, _, took = _run_until_sigterm(server, kubeconfig, hold_loop=4.0)
    assert code == 0
    assert took <= runner.SHUTDOWN_BUDGET + MARGIN, f"shutdown took {took:.1f} s"
    assert server.lease is not None and server.lease["spec"]["holderIdentity"] is None, "not released"


def test_the_watchdog_ends_a_process_whose_shutdown_blocks() -> None:
    """A step that blocks the event loop cannot be abandoned by a deadline: the watchdog ends the process
    with the exit code run would have returned."""
    script = (
        "import logging, time\n"
        "from gangsched.live.shutdown import Watchdog\n"
        "logging.basicConfig()\n"
        "watchdog = Watchdog(0.5)\n"
        "time.sleep(1.0)\n"  # not armed yet: nothing happens
        "watchdog.arm(3)\n"
        "time.sleep(60)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30)
    assert done.returncode == 3, done.stderr
    assert "shutdown: not finished 0.5 s after it began" in done.stderr
