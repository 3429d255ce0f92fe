"""Preemption when victims take time to leave (issue 15), on the real API server, side by side with
kube-scheduler v1.37.2: every preemption scenario of tests/scenarios/preemption that a live cluster can
reproduce, with evicted pods confirmed gone at once (0 s) and after 15 s Terminating (the fake kubelet's
namespace label), all at once in one cluster (each scenario twice: once per scheduler, each in its own
namespace).

For every scenario: the same victims as kube-scheduler (and as the scenario expects), the same pods bound; and
for gangsched, each pod bound within 2 s of its last victim's departure, and at most one nominatedNodeName
written per pod (each scenario has one preemption decision). Also: SIGTERM while a preemption waits ends
the process within the shutdown bound and releases the Lease.
"""

from __future__ import annotations

import os
import secrets
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from lightkube import Client
from lightkube.resources.coordination_v1 import Lease

from gangsched.live.controlplane import ManagedProcess
from gangsched.live.fakekubelet import FakeKubelet

from .conftest import StartGangsched
from .preemption_cases import LiveScenario, PodWatch, Result, live_scenarios

TERMINATION = 15.0
BIND_AFTER_DEPARTURE = 2.0
SHUTDOWN_BOUND = 5.0


@pytest.fixture(scope="module")
def pod_watch(kube_client: Client) -> PodWatch:
    watch = PodWatch(kube_client)
    watch.start()
    # The first event arrives once the watch stream is open (the session has pods by now, or soon will).
    watch.ready.wait(10)
    return watch


def _namespace(who: str, path: Path) -> str:
    return f"{who}-{path.stem}"[:45].rstrip("-") + f"-{secrets.token_hex(2)}"


def _victims_expected(case: LiveScenario) -> set[str] | int | None:
    """The scenario's own expectation: the exact victims, or how many when which ones is a coin toss."""
    expect = case.spec.get("expect") or {}
    if "evictions" in expect:
        return set((expect["evictions"] or {}).keys())
    counts = expect.get("eviction_count") or {}
    return sum(counts.values()) if counts else None


def _compare(case: str, kube: Result, ours: Result, expected: set[str] | int | None) -> list[str]:
    problems = []
    if isinstance(expected, int):  # which victims is a coin toss: how many, and which pending pods bound
        if not len(kube.victims) == len(ours.victims) == expected:
            problems.append(f"{case}: victims kube {kube.victims} gangsched {ours.victims}, want {expected}")
        if kube.pending != ours.pending:
            problems.append(f"{case}: still pending kube {kube.pending} gangsched {ours.pending}")
        return problems
    if kube.victims != ours.victims or (expected is not None and ours.victims != expected):
        problems.append(f"{case}: victims kube {kube.victims} gangsched {ours.victims}, expected {expected}")
    if set(kube.bound) != set(ours.bound):
        problems.append(f"{case}: bound kube {sorted(kube.bound)} gangsched {sorted(ours.bound)}")
    return problems


def _timing(case: LiveScenario, watch: PodWatch, result: Result) -> tuple[list[str], list[float]]:
    """gangsched's pods: bound within BIND_AFTER_DEPARTURE of their last victim's departure, one nomination
    written at most. Returns (problems, the delays measured)."""
    problems, delays = [], []
    gone = [watch.history(case.ns, v).gone_at for v in result.victims]
    last_gone = max((t for t in gone if t is not None), default=None)
    for name in sorted(case.pending_at_start):
        history = watch.history(case.ns, name)
        written = history.nominations()
        if len(written) > 1:
            problems.append(f"{case.path.stem}: {name} nominated {len(written)} times: {written}")
        bound_at = history.bound_at
        if written and bound_at is not None and last_gone is not None:
            delay = bound_at - last_gone
            delays.append(delay)
            if delay > BIND_AFTER_DEPARTURE:
                problems.append(f"{case.path.stem}: {name} bound {delay:.1f} s after its last victim left")
    return problems, delays


@pytest.mark.parametrize("termination", [0.0, TERMINATION], ids=["victims-leave-at-once", "victims-take-15s"])
def test_preemption_scenarios_with_slow_victims_side_by_side(
    termination: float,
    kube_client: Client,
    kube_scheduler: ManagedProcess,
    gangsched: ManagedProcess,
    fake_kubelet: FakeKubelet,
    pod_watch: PodWatch,
) -> None:
    pairs = [
        (
            LiveScenario(kube_client, path, _namespace("kube", path), None, termination),
            LiveScenario(kube_client, path, _namespace("gs", path), "gangsched", termination),
        )
        for path in live_scenarios()
    ]
    runs = [run for pair in pairs for run in pair]
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(LiveScenario.create, runs))
            results = list(pool.map(lambda r: r.settle(timeout=termination + 45, quiet=3.0), runs))
        by_run = dict(zip((id(r) for r in runs), results, strict=True))
        problems: list[str] = []
        delays: list[float] = []
        for kube, ours in pairs:
            problems += _compare(ours.path.stem, by_run[id(kube)], by_run[id(ours)], _victims_expected(ours))
            found, measured = _timing(ours, pod_watch, by_run[id(ours)])
            problems += found
            delays += measured
        assert not problems, "\n".join(problems)
        assert delays, "no preemptor was bound after its victims left: the timing was never checked"
        print(f"bound after the last victim left: max {max(delays):.2f} s over {len(delays)} pods")
    finally:
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(LiveScenario.cleanup, runs))


def test_sigterm_while_a_preemption_waits_exits_promptly_and_releases_the_lease(
    start_gangsched: StartGangsched, kube_client: Client, fake_kubelet: FakeKubelet, pod_watch: PodWatch
) -> None:
    name = f"gs-stop-{secrets.token_hex(3)}"
    path = next(p for p in live_scenarios() if p.stem == "gang-vs-blocker")
    case = LiveScenario(kube_client, path, _namespace("gs-stop", path), name, TERMINATION)
    proc = start_gangsched(
        "--scheduler-name", name, "--leader-elect", "--leader-elect-resource-name", name,
        "--leader-elect-resource-namespace", "default",
    )  # fmt: skip
    try:
        case.create()
        deadline = time.monotonic() + 30
        while not case.result().victims and time.monotonic() < deadline:
            time.sleep(0.2)
        assert case.result().victims, "gangsched did not preempt"
        assert proc.pid is not None
        started = time.monotonic()
        os.kill(proc.pid, signal.SIGTERM)
        code = proc.wait(SHUTDOWN_BOUND + 5)
        took = time.monotonic() - started
        assert code == 0, f"exit code {code}:\n{proc.log_tail()}"
        assert took <= SHUTDOWN_BOUND + 2, f"exit took {took:.1f} s"
        print(f"exited {took:.2f} s after SIGTERM")
        lease = kube_client.get(Lease, name, namespace="default")
        assert lease.spec is not None and not lease.spec.holderIdentity, lease.spec
    finally:
        case.cleanup()
