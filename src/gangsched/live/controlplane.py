"""A real Kubernetes control plane on loopback: etcd + kube-apiserver (+ kube-scheduler on demand).

Made for the live tests (and the live benchmark to come); never a mock. There are no kubelets and no
controller-manager: nodes are API objects made Ready by fakenodes.py (as KWOK does), and the tests' namespace
fixture creates the default ServiceAccount the controller-manager would.

Usage::

    cp = LocalControlPlane(binaries, workdir)
    cp.start()                    # etcd, then kube-apiserver; waits for /readyz
    client = lightkube.Client(lightkube.KubeConfig.from_file(cp.kubeconfig))
    sched = cp.start_scheduler()  # kube-scheduler against it, same feature gates
    ...
    cp.stop()                     # stops everything it started, scheduler included

Contract: every process is started in its own session with a parent-death signal, so even a killed test run
leaves no etcd or kube-apiserver behind; `stop()` is idempotent. Not thread-safe.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import secrets
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

__all__ = [
    "API_FEATURE_GATES",
    "RUNTIME_CONFIG",
    "Binaries",
    "ControlPlaneError",
    "LocalControlPlane",
    "ManagedProcess",
    "free_port",
]

#: The v1.37 workload-scheduling gates, all on (upstream ships them off).
API_FEATURE_GATES: Mapping[str, bool] = {
    "GenericWorkload": True,
    "TopologyAwareWorkloadScheduling": True,
    "CompositePodGroup": True,
    "WorkloadWithJob": True,
    "DRAWorkloadResourceClaims": True,
    "PodGroupPreemptionPolicy": True,
}
#: PodGroup and Workload are served in scheduling.k8s.io/v1beta1, CompositePodGroup in v1alpha3.
RUNTIME_CONFIG = "scheduling.k8s.io/v1beta1=true,scheduling.k8s.io/v1alpha3=true"
ADMIN_USER = "gangsched-admin"
SERVICE_CIDR = "10.96.0.0/16"


class ControlPlaneError(RuntimeError):
    """A component did not start or did not become ready; the message ends with the tail of its log."""


@dataclass(frozen=True, slots=True)
class Binaries:
    kube_apiserver: Path
    kube_scheduler: Path
    etcd: Path
    kube_controller_manager: Path | None = None

    @classmethod
    def from_script_output(cls, text: str) -> Binaries:
        """Parse `scripts/kube-binaries.sh` output (`name=/path` lines)."""
        paths = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
        kcm = paths.get("kube-controller-manager")
        return cls(
            kube_apiserver=Path(paths["kube-apiserver"]),
            kube_scheduler=Path(paths["kube-scheduler"]),
            etcd=Path(paths["etcd"]),
            kube_controller_manager=Path(kcm) if kcm else None,
        )


def free_port() -> int:
    """A loopback TCP port nobody listens on right now (the caller retries if it loses a race for it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:
    """In the child before exec: get SIGKILL when the process that started us dies (Linux prctl).

    SIGKILL, not SIGTERM: orphaned, kube-apiserver's graceful shutdown and etcd's wait for its clients' watch
    streams keep each other alive for a long time, and the data is throw-away anyway."""
    os.setsid()
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, int(signal.SIGKILL))


@dataclass(slots=True)
class ManagedProcess:
    """One child process and its log file; `stop()` sends SIGTERM, then SIGKILL; idempotent."""

    name: str
    args: list[str]
    log_path: Path
    _proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _log: IO[bytes] | None = field(default=None, repr=False)

    def start(self) -> None:
        self._log = self.log_path.open("ab")
        self._proc = subprocess.Popen(
            self.args,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent,
            close_fds=True,
        )

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def wait(self, timeout: float) -> int | None:
        """Its exit code once it exits within `timeout` seconds, else None (still running)."""
        if self._proc is None:
            return None
        try:
            return self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM, and SIGKILL after `timeout` seconds (at once for 0)."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            if timeout > 0:
                proc.terminate()
            else:
                proc.kill()
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    def fail(self, what: str) -> ControlPlaneError:
        code = self._proc.poll() if self._proc else None
        state = f"exited with {code}" if code is not None else "still running"
        return ControlPlaneError(
            f"{self.name} {what} ({state}); last lines of {self.log_path}:\n{self.log_tail()}"
        )


def _run(args: Sequence[str], cwd: Path) -> None:
    subprocess.run(args, cwd=cwd, check=True, capture_output=True)


def _own_child_context() -> ssl.SSLContext:
    """For kube-scheduler's and kube-controller-manager's secure ports: each serves a self-signed certificate
    it generated in memory, on loopback, and is our own child, so there is nothing to verify it against."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def _poll(url: str, *, context: ssl.SSLContext | None, token: str | None, expect: bytes) -> bool:
    req = urllib.request.Request(url)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=2, context=context) as resp:
            return resp.status == 200 and expect in resp.read()
    except (urllib.error.URLError, OSError, ssl.SSLError):
        return False


class LocalControlPlane:
    """etcd + kube-apiserver on 127.0.0.1 with the workload-scheduling gates, token auth and RBAC."""

    def __init__(
        self,
        binaries: Binaries,
        workdir: Path,
        *,
        feature_gates: Mapping[str, bool] = API_FEATURE_GATES,
        runtime_config: str = RUNTIME_CONFIG,
        extra_apiserver_args: Sequence[str] = (),
    ) -> None:
        self.binaries = binaries
        self.workdir = workdir
        self.feature_gates = dict(feature_gates)
        self.runtime_config = runtime_config
        self.extra_apiserver_args = list(extra_apiserver_args)
        self.token = secrets.token_hex(24)
        self.kubeconfig = workdir / "kubeconfig"
        self.ca_file = workdir / "pki" / "ca.crt"
        self.server = ""
        self.etcd_url = ""
        self.etcd: ManagedProcess | None = None
        self.apiserver: ManagedProcess | None = None
        self._schedulers: list[ManagedProcess] = []

    # --- life cycle ---------------------------------------------------------------------------------------

    def start(self, timeout: float = 90.0, attempts: int = 3) -> None:
        """Start etcd and kube-apiserver and wait until /readyz answers ok. Retries on a lost port race."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._write_pki()
        error: ControlPlaneError | None = None
        for _ in range(attempts):
            try:
                self._start_etcd(timeout)
                self._start_apiserver(timeout)
                self._write_kubeconfig()
                return
            except ControlPlaneError as e:
                error = e
                self.stop()
        assert error is not None
        raise error

    def stop(self) -> None:
        """Stop the schedulers, kube-apiserver and etcd (in that order). Idempotent."""
        for sched in self._schedulers:
            sched.stop()
        self._schedulers.clear()
        for proc in (self.apiserver, self.etcd):
            if proc is not None:
                proc.stop()
        self.apiserver = self.etcd = None

    def pids(self) -> list[int]:
        """Process ids of everything running that this control plane started."""
        procs = [self.etcd, self.apiserver, *self._schedulers]
        return [p.pid for p in procs if p is not None and p.alive() and p.pid is not None]

    def feature_gates_flag(self) -> str:
        return ",".join(f"{k}={str(v).lower()}" for k, v in self.feature_gates.items())

    def ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_file))

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """A raw JSON request as the admin user: (HTTP status, decoded body). For what a typed client hides
        (/version, discovery, the exact status code of a write); error statuses are returned, not raised."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"{self.server}{path}", data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=30, context=self.ssl_context()) as resp:
                return resp.status, json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    # --- components ---------------------------------------------------------------------------------------

    def _start_etcd(self, timeout: float) -> None:
        client, peer = free_port(), free_port()
        data = self.workdir / f"etcd-data-{client}"
        self.etcd_url = f"http://127.0.0.1:{client}"
        self.etcd = ManagedProcess(
            "etcd",
            [
                str(self.binaries.etcd),
                "--name=gangsched-test",
                f"--data-dir={data}",
                f"--listen-client-urls={self.etcd_url}",
                f"--advertise-client-urls={self.etcd_url}",
                f"--listen-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-cluster=gangsched-test=http://127.0.0.1:{peer}",
                # Throw-away data: no fsync keeps the tests fast on slow disks.
                "--unsafe-no-fsync",
                "--log-level=warn",
            ],
            self.workdir / "etcd.log",
        )
        self.etcd.start()
        self._wait(self.etcd, f"{self.etcd_url}/health", None, None, b'"health":"true"', timeout)

    def restart_apiserver(self, *, kill: bool = False, down: float = 0.0, timeout: float = 90.0) -> None:
        """Stop kube-apiserver (SIGKILL if `kill`, else a graceful stop), stay down `down` seconds, start it
        again on the same port with the same etcd; returns when it is ready. Clients and the kubeconfig stay
        valid; watches drop, as in a real control-plane restart."""
        if self.apiserver is None:
            raise ControlPlaneError("kube-apiserver is not running")
        port = int(self.server.rsplit(":", 1)[1])
        self.apiserver.stop(timeout=0.0 if kill else 15.0)
        time.sleep(down)
        self._start_apiserver(timeout, port)

    def _start_apiserver(self, timeout: float, port: int | None = None) -> None:
        port = port or free_port()
        pki = self.workdir / "pki"
        self.server = f"https://127.0.0.1:{port}"
        self.apiserver = ManagedProcess(
            "kube-apiserver",
            [str(self.binaries.kube_apiserver), *self.apiserver_args(port, pki), *self.extra_apiserver_args],
            self.workdir / "kube-apiserver.log",
        )
        self.apiserver.start()
        self._wait(self.apiserver, f"{self.server}/readyz", self.ssl_context(), self.token, b"ok", timeout)

    def apiserver_args(self, port: int, pki: Path) -> list[str]:
        """The kube-apiserver flags for this control plane, serving on `port` with the files in `pki`."""
        return [
            f"--etcd-servers={self.etcd_url}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            # The kubernetes Service endpoint may not be a loopback address, and nothing here needs it.
            "--endpoint-reconciler-type=none",
            f"--secure-port={port}",
            f"--tls-cert-file={pki / 'apiserver.crt'}",
            f"--tls-private-key-file={pki / 'apiserver.key'}",
            f"--token-auth-file={pki / 'tokens.csv'}",
            "--anonymous-auth=false",
            # As a real cluster: kubelets limited to their own node's objects, everyone else by RBAC
            # (deploy/'s ServiceAccount is tested with exactly the rules it ships).
            "--authorization-mode=Node,RBAC",
            f"--service-account-key-file={pki / 'sa.pub'}",
            f"--service-account-signing-key-file={pki / 'sa.key'}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            f"--feature-gates={self.feature_gates_flag()}",
            f"--runtime-config={self.runtime_config}",
            "--profiling=false",
            "--v=1",
        ]

    def start_scheduler(self, *, timeout: float = 60.0, extra_args: Sequence[str] = ()) -> ManagedProcess:
        """Start kube-scheduler (schedulerName default-scheduler) against this API server with the same
        feature gates; returns once its /readyz answers. Stopped by `stop()` or by the returned handle."""
        port = free_port()
        config = self.workdir / f"kube-scheduler-{port}.yaml"
        # JSON is YAML: a KubeSchedulerConfiguration with the default profile, no leader election.
        config.write_text(
            json.dumps(
                {
                    "apiVersion": "kubescheduler.config.k8s.io/v1",
                    "kind": "KubeSchedulerConfiguration",
                    "clientConnection": {"kubeconfig": str(self.kubeconfig), "qps": 500, "burst": 1000},
                    "leaderElection": {"leaderElect": False},
                },
                indent=2,
            )
        )
        proc = ManagedProcess(
            "kube-scheduler",
            [
                str(self.binaries.kube_scheduler),
                f"--config={config}",
                f"--authentication-kubeconfig={self.kubeconfig}",
                f"--authorization-kubeconfig={self.kubeconfig}",
                # No client-certificate or request-header CA to look up in kube-system: tokens only.
                "--authentication-skip-lookup=true",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                f"--feature-gates={self.feature_gates_flag()}",
                "--v=2",
                *extra_args,
            ],
            self.workdir / f"kube-scheduler-{port}.log",
        )
        self._schedulers.append(proc)
        proc.start()
        self._wait(proc, f"https://127.0.0.1:{port}/readyz", _own_child_context(), None, b"ok", timeout)
        return proc

    def start_controller_manager(
        self, controllers: Sequence[str], *, timeout: float = 60.0
    ) -> ManagedProcess:
        """Start kube-controller-manager running only `controllers` (e.g. persistentvolume-binder-controller,
        resourceclaim-controller) against this API server, with the same feature gates; returns once its
        /healthz answers. Stopped by `stop()` or by the returned handle."""
        if self.binaries.kube_controller_manager is None:
            raise ControlPlaneError("no kube-controller-manager binary (scripts/kube-binaries.sh builds it)")
        port = free_port()
        proc = ManagedProcess(
            "kube-controller-manager",
            [
                str(self.binaries.kube_controller_manager),
                f"--kubeconfig={self.kubeconfig}",
                f"--authentication-kubeconfig={self.kubeconfig}",
                f"--authorization-kubeconfig={self.kubeconfig}",
                "--authentication-skip-lookup=true",
                f"--controllers={','.join(controllers)}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                f"--feature-gates={self.feature_gates_flag()}",
                "--v=2",
            ],
            self.workdir / f"kube-controller-manager-{port}.log",
        )
        self._schedulers.append(proc)  # stopped with the schedulers
        proc.start()
        self._wait(proc, f"https://127.0.0.1:{port}/healthz", _own_child_context(), None, b"ok", timeout)
        return proc

    def _wait(
        self,
        proc: ManagedProcess,
        url: str,
        context: ssl.SSLContext | None,
        token: str | None,
        expect: bytes,
        timeout: float,
    ) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not proc.alive():
                raise proc.fail("exited before becoming ready")
            if _poll(url, context=context, token=token, expect=expect):
                return
            time.sleep(0.2)
        raise proc.fail(f"not ready after {timeout:.0f}s at {url}")

    # --- files --------------------------------------------------------------------------------------------

    def _write_pki(self) -> None:
        """CA, serving certificate for 127.0.0.1/localhost, service-account key pair, token file."""
        pki = self.workdir / "pki"
        pki.mkdir(parents=True, exist_ok=True)
        if not (pki / "apiserver.crt").exists():
            (pki / "san.ext").write_text(
                "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                "extendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
            )
            for args in (
                ["openssl", "genrsa", "-out", "ca.key", "2048"],
                ["openssl", "req", "-x509", "-new", "-key", "ca.key", "-subj", "/CN=gangsched-test-ca",
                 "-days", "7", "-out", "ca.crt"],
                ["openssl", "genrsa", "-out", "apiserver.key", "2048"],
                ["openssl", "req", "-new", "-key", "apiserver.key", "-subj", "/CN=kube-apiserver",
                 "-out", "apiserver.csr"],
                ["openssl", "x509", "-req", "-in", "apiserver.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                 "-CAcreateserial", "-days", "7", "-extfile", "san.ext", "-out", "apiserver.crt"],
                ["openssl", "genrsa", "-out", "sa.key", "2048"],
                ["openssl", "rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub"],
            ):  # fmt: skip
                _run(args, pki)
        # token,user,uid,"groups": the admin is in system:masters, which RBAC lets do everything.
        (pki / "tokens.csv").write_text(f'{self.token},{ADMIN_USER},{ADMIN_USER},"system:masters"\n')
        for secret in ("ca.key", "apiserver.key", "sa.key", "tokens.csv"):
            (pki / secret).chmod(0o600)

    def _write_kubeconfig(self) -> None:
        config: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "local",
                    "cluster": {"server": self.server, "certificate-authority": str(self.ca_file)},
                }
            ],
            "users": [{"name": ADMIN_USER, "user": {"token": self.token}}],
            "contexts": [{"name": "local", "context": {"cluster": "local", "user": ADMIN_USER}}],
            "current-context": "local",
        }
        self.kubeconfig.write_text(json.dumps(config, indent=2))
        self.kubeconfig.chmod(0o600)
