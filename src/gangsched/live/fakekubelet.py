"""The part of a kubelet a kubelet-less test cluster misses: finishing graceful deletions.

A bound pod deleted with a grace period (an eviction, a preemption by kube-scheduler) only gets a
deletionTimestamp; its kubelet would stop the containers and then delete it for good. Without kubelets the pod
would stay Terminating forever and keep its node's resources, so this does what KWOK does: it deletes such
pods with grace period 0 as soon as it sees them.

    kubelet = FakeKubelet(kubeconfig); kubelet.start(); ...; kubelet.stop()

Contract: a daemon thread with its own sync client; `stop()` is idempotent; `finished` counts deletions.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from lightkube import ApiError, Client, KubeConfig
from lightkube.resources.core_v1 import Pod

__all__ = ["FakeKubelet"]


class FakeKubelet:
    def __init__(self, kubeconfig: str) -> None:
        self.kubeconfig = kubeconfig
        self.finished = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fake-kubelet", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        client = Client(KubeConfig.from_file(self.kubeconfig))
        while not self._stop.is_set():
            try:
                for pod in client.list(Pod, namespace="*"):
                    if pod.metadata is not None and pod.metadata.deletionTimestamp is not None:
                        self._finish(client, pod)
            except Exception:  # the API server may be restarting under a test: try again shortly
                pass
            self._stop.wait(0.2)
        client.close()

    def _finish(self, client: Client, pod: Any) -> None:
        try:
            client.delete(Pod, pod.metadata.name, namespace=pod.metadata.namespace, grace_period=0)
            self.finished += 1
        except ApiError as e:
            if e.status.code != 404:
                time.sleep(0.1)
