"""Live tests: a real etcd + kube-apiserver v1.37.2 (and kube-scheduler v1.37.2 on demand) on 127.0.0.1.

The binaries come from scripts/kube-binaries.sh (built once, cached under ~/.cache/gangsched). When they
cannot be had, the live tests are skipped on a developer machine and FAIL under CI=true: CI must never go
green without having talked to a real API server.
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from lightkube import ApiError, Client, KubeConfig
from lightkube.models.core_v1 import Taint
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace, Node, ServiceAccount

from gangsched.live.controlplane import Binaries, LocalControlPlane, ManagedProcess
from gangsched.live.fakekubelet import FakeKubelet
from gangsched.live.fakenodes import create_node

from .podgroup_cases import Harness

REPO = Path(__file__).resolve().parents[2]
#: The console script installed next to the interpreter running the tests.
GANGSCHED = str(Path(sys.executable).parent / "gangsched")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).is_relative_to(Path(__file__).parent):
            item.add_marker(pytest.mark.live)
    # Tests that restart kube-apiserver (or compact etcd under it) run last: the session's kube-scheduler
    # takes a while to relist after them, and the side-by-side tests must not measure that.
    items.sort(key=lambda item: item.get_closest_marker("restarts_apiserver") is not None)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "live: runs against a real kube-apiserver started by the test session")
    config.addinivalue_line(
        "markers", "restarts_apiserver: restarts the session's kube-apiserver (runs last)"
    )


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"live tests cannot run under CI=true: {reason}", pytrace=False)
    pytest.skip(f"live tests skipped (they would fail under CI=true): {reason}")


@pytest.fixture(scope="session")
def kube_binaries() -> Binaries:
    """kube-apiserver, kube-scheduler and etcd, built or found in the cache by scripts/kube-binaries.sh."""
    script = REPO / "scripts" / "kube-binaries.sh"
    try:
        done = subprocess.run([str(script)], capture_output=True, text=True, timeout=3600, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        _unavailable(f"{script}: {e}")
        raise AssertionError("unreachable") from e
    if done.returncode != 0:
        _unavailable(f"{script} exited with {done.returncode}:\n{done.stderr[-3000:]}")
    return Binaries.from_script_output(done.stdout)


@pytest.fixture(scope="session")
def control_plane(
    kube_binaries: Binaries, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalControlPlane]:
    """etcd + kube-apiserver for the whole session; everything it started is gone afterwards."""
    cp = LocalControlPlane(kube_binaries, tmp_path_factory.mktemp("controlplane"))
    try:
        cp.start()
        yield cp
    finally:
        started = cp.pids()
        cp.stop()
        leaked = [pid for pid in started if _running(pid)]
        assert not leaked, f"control-plane processes still running after stop: {leaked}"


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is already dead; only the parent's wait() would remove it, and stop() waited.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


@pytest.fixture(scope="session")
def kube_client(control_plane: LocalControlPlane) -> Client:
    """A lightkube client (sync) authenticated as the admin user (system:masters)."""
    return Client(KubeConfig.from_file(str(control_plane.kubeconfig)), field_manager="gangsched-tests")


@pytest.fixture(scope="session")
def kube_scheduler(control_plane: LocalControlPlane) -> Iterator[ManagedProcess]:
    """kube-scheduler v1.37.2 (default-scheduler) against the session's API server, same feature gates.
    Started by the first test that asks for it and kept for the rest of the session: pods meant for it should
    select their own test's nodes (nodeSelector `gangsched.test/namespace: <namespace>`), pods bound by hand
    should name another schedulerName."""
    proc = control_plane.start_scheduler()
    yield proc
    proc.stop()


@pytest.fixture(scope="session")
def volume_and_claim_controllers(control_plane: LocalControlPlane) -> Iterator[ManagedProcess]:
    """kube-controller-manager v1.37.2 running only the persistentvolume-binder, resourceclaim and
    ephemeral-volume controllers, so that volume binding, claims from templates and generic ephemeral
    volumes' claims complete as on a real cluster."""
    proc = control_plane.start_controller_manager(
        ["persistentvolume-binder-controller", "resourceclaim-controller", "ephemeral-volume-controller"]
    )
    yield proc
    proc.stop()


@pytest.fixture
def namespace(kube_client: Client, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace per test, with the default ServiceAccount the (absent) controller-manager makes."""
    base = re.sub(r"[^a-z0-9-]+", "-", request.node.name.lower()).strip("-")[:40].strip("-")
    name = f"{base}-{secrets.token_hex(3)}"
    kube_client.create(Namespace(metadata=ObjectMeta(name=name)))
    kube_client.create(ServiceAccount(metadata=ObjectMeta(name="default", namespace=name)))
    yield name
    # Without a namespace controller the namespace stays Terminating; the session's etcd goes away anyway.
    kube_client.delete(Namespace, name)


@pytest.fixture
def make_node(kube_client: Client, namespace: str) -> Iterator[Callable[..., Any]]:
    """Factory: make_node(suffix, {"cpu": "4"}, labels=..., taints=...) creates a Ready fake node named
    `<namespace>-<suffix>` labelled `gangsched.test/namespace=<namespace>`; deleted after the test."""
    made: list[str] = []

    def make(
        suffix: str,
        capacity: Mapping[str, str] | None = None,
        *,
        labels: Mapping[str, str] | None = None,
        taints: list[Taint] | None = None,
    ) -> Any:
        name = f"{namespace}-{suffix}"
        node = create_node(
            kube_client,
            name,
            capacity or {},
            labels={"gangsched.test/namespace": namespace, **(labels or {})},
            taints=taints or [],
        )
        made.append(name)
        return node

    yield make
    for name in made:
        try:
            kube_client.delete(Node, name)
        except ApiError as e:
            if e.status.code != 404:
                raise


@pytest.fixture(scope="session")
def fake_kubelet(control_plane: LocalControlPlane) -> Iterator[FakeKubelet]:
    """Finishes graceful deletions of bound pods (evictions, preemptions), as kubelets would."""
    kubelet = FakeKubelet(str(control_plane.kubeconfig))
    kubelet.start()
    yield kubelet
    kubelet.stop()


StartGangsched = Callable[..., ManagedProcess]


class _GangschedLauncher:
    """Starts `gangsched run` against the session's API server as child processes, logs in one temp dir."""

    def __init__(self, control_plane: LocalControlPlane, logs: Path) -> None:
        self.control_plane = control_plane
        self.logs = logs
        self.count = 0

    def start(self, *args: str) -> ManagedProcess:
        self.count += 1
        proc = ManagedProcess(
            "gangsched",
            [GANGSCHED, "run", f"--kubeconfig={self.control_plane.kubeconfig}", *args],
            self.logs / f"gangsched-{self.count}.log",
        )
        proc.start()
        return proc


@pytest.fixture(scope="session")
def gangsched_launcher(
    control_plane: LocalControlPlane, tmp_path_factory: pytest.TempPathFactory
) -> _GangschedLauncher:
    return _GangschedLauncher(control_plane, tmp_path_factory.mktemp("gangsched"))


@pytest.fixture
def start_gangsched(gangsched_launcher: _GangschedLauncher) -> Iterator[StartGangsched]:
    """Factory: start_gangsched("--scheduler-name", "x", ...) runs `gangsched run` and returns its handle;
    what a test started is stopped when it ends (so that idle schedulers do not load later tests)."""
    started: list[ManagedProcess] = []

    def start(*args: str) -> ManagedProcess:
        proc = gangsched_launcher.start(*args)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.stop(timeout=5)


@pytest.fixture(scope="session")
def gangsched(gangsched_launcher: _GangschedLauncher, fake_kubelet: FakeKubelet) -> Iterator[ManagedProcess]:
    """`gangsched run --scheduler-name gangsched` for the whole session (as kube_scheduler is)."""
    proc = gangsched_launcher.start("--scheduler-name", "gangsched")
    yield proc
    proc.stop(timeout=5)


MakeHarness = Callable[[str, str | None], Harness]


@pytest.fixture
def fresh_namespace(kube_client: Client) -> Iterator[MakeHarness]:
    """Factory: a new namespace with its own 4-CPU node, pods for `scheduler_name` (None: kube-scheduler)."""
    made: list[Harness] = []

    def make(prefix: str, scheduler_name: str | None) -> Harness:
        name = f"{prefix}-{secrets.token_hex(3)}"
        kube_client.create(Namespace(metadata=ObjectMeta(name=name)))
        kube_client.create(ServiceAccount(metadata=ObjectMeta(name="default", namespace=name)))
        harness = Harness(kube_client, name, scheduler_name)
        made.append(harness)
        return harness

    yield make
    for harness in made:
        harness.cleanup()
        kube_client.delete(Namespace, harness.namespace)
