"""The part of a kubelet a kubelet-less test cluster misses: finishing graceful deletions.

A bound pod deleted with a grace period (an eviction, a preemption by kube-scheduler) only gets a
deletionTimestamp; its kubelet would stop the containers and then delete it for good. Without kubelets the pod
would stay Terminating forever and keep its node's resources, so this deletes such pods with grace period 0
once they have been terminating for `termination_seconds` (0: as soon as it sees them, as KWOK does). A
namespace labelled `gangsched.test/termination-seconds: "N"` gets N seconds instead, so that tests with slow
victims share one kubelet with the rest.

    kubelet = FakeKubelet(kubeconfig, termination_seconds=15); kubelet.start(); ...; kubelet.stop()

Contract: a daemon thread with its own sync client; `stop()` is idempotent; `finished` counts deletions and
`gone_at` says when each pod ("namespace/name") was deleted for good (time.time()).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from lightkube import ApiError, Client, KubeConfig
from lightkube.resources.core_v1 import Namespace, Pod

__all__ = ["TERMINATION_LABEL", "FakeKubelet"]

TERMINATION_LABEL = "gangsched.test/termination-seconds"
POLL = 0.2


class FakeKubelet:
    def __init__(self, kubeconfig: str, termination_seconds: float = 0.0) -> None:
        self.kubeconfig = kubeconfig
        self.termination_seconds = termination_seconds
        self.finished = 0
        self.gone_at: dict[str, float] = {}
        self._seen: dict[str, float] = {}  # pod uid -> when this kubelet first saw it terminating
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fake-kubelet", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _delays(self, client: Client) -> dict[str, float]:
        delays: dict[str, float] = {}
        for ns in client.list(Namespace, labels={TERMINATION_LABEL: None}):
            meta: Any = ns.metadata
            try:
                delays[meta.name] = float(meta.labels[TERMINATION_LABEL])
            except ValueError:
                continue
        return delays

    def _run(self) -> None:
        client = Client(KubeConfig.from_file(self.kubeconfig))
        while not self._stop.is_set():
            try:
                delays = self._delays(client)
                now = time.monotonic()
                for pod in client.list(Pod, namespace="*"):
                    meta: Any = pod.metadata
                    if meta is None or meta.deletionTimestamp is None:
                        continue
                    seen = self._seen.setdefault(meta.uid, now)
                    if now - seen >= delays.get(meta.namespace, self.termination_seconds):
                        self._finish(client, pod)
            except Exception:  # the API server may be restarting under a test: try again shortly
                pass
            self._stop.wait(POLL)
        client.close()

    def _finish(self, client: Client, pod: Any) -> None:
        try:
            client.delete(Pod, pod.metadata.name, namespace=pod.metadata.namespace, grace_period=0)
            self.finished += 1
            self.gone_at[f"{pod.metadata.namespace}/{pod.metadata.name}"] = time.time()
            self._seen.pop(pod.metadata.uid, None)
        except ApiError as e:
            if e.status.code != 404:
                time.sleep(0.1)
