"""Live throughput: gangsched and kube-scheduler v1.37.2 on the same real API server, one after the other.

    python benchmarks/live.py [--nodes 500] [--small-gangs 300] [--large-gangs 3] [--large-size 300]

A real etcd + kube-apiserver v1.37.2 (scripts/kube-binaries.sh) with `--nodes` fake Ready nodes (4 CPU,
32Gi, 110 pods). For each scheduler in turn, in a fresh namespace: the scheduler is started and waits ready,
then all PodGroups (gangs of 3 and gangs of `--large-size`, minCount = size) and their pods (100m CPU,
100Mi, as scheduler_perf's gangscheduling workload) are created at once with concurrent async creates, and a
watch notes when the last pod is bound. Figure: pods/s from the first create to the last bind. The scheduler
is then stopped and the namespace's pods deleted before the next one runs. The pod creation is the same code
for both, so the ratio compares the schedulers. Prints figures; asserts nothing on time.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import msgspec
from lightkube import AsyncClient, Client, KubeConfig, codecs
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace, Node, ServiceAccount
from lightkube.types import PatchType

from gangsched.live.controlplane import Binaries, LocalControlPlane, ManagedProcess, free_port
from gangsched.live.fakenodes import node_status
from gangsched.live.kube import KubeApi

REPO = Path(__file__).resolve().parents[1]
GANGSCHED = str(Path(sys.executable).parent / "gangsched")
CREATE_CONCURRENCY = 32
NODE_CAPACITY = {"cpu": "4", "memory": "32Gi", "pods": "110"}


async def _gather_limited(coros: list[Any], limit: int = CREATE_CONCURRENCY) -> None:
    gate = asyncio.Semaphore(limit)

    async def one(coro: Any) -> None:
        async with gate:
            await coro

    await asyncio.gather(*(one(c) for c in coros))


async def create_nodes(kubeconfig: str, count: int) -> None:
    """Ready fake nodes (as fakenodes.create_node, concurrently): create, status, drop the not-ready taint."""
    client = AsyncClient(KubeConfig.from_file(kubeconfig), field_manager="bench")

    async def make(i: int) -> None:
        name = f"bench-node-{i:04d}"
        labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}
        await client.create(codecs.from_dict({"apiVersion": "v1", "kind": "Node",
                                              "metadata": {"name": name, "labels": labels}}))  # fmt: skip
        await client.patch(
            Node.Status, name, {"status": node_status(NODE_CAPACITY)}, patch_type=PatchType.MERGE
        )
        await client.patch(Node, name, {"spec": {"taints": None}}, patch_type=PatchType.MERGE)

    try:
        await _gather_limited([make(i) for i in range(count)])
    finally:
        await client.close()


def workload(namespace: str, scheduler: str, gangs: list[tuple[str, int]]) -> tuple[list[bytes], list[bytes]]:
    """PodGroups and pods as JSON bodies, encoded before the clock starts."""
    groups, pods = [], []
    for name, size in gangs:
        groups.append(msgspec.json.encode({
            "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"schedulingPolicy": {"gang": {"minCount": size}}},
        }))  # fmt: skip
        for i in range(size):
            pods.append(msgspec.json.encode({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"{name}-{i}", "namespace": namespace},
                "spec": {
                    "schedulerName": scheduler,
                    "schedulingGroup": {"podGroupName": name},
                    "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                    "resources": {"requests": {"cpu": "100m", "memory": "100Mi"}}}],
                },
            }))  # fmt: skip
    return groups, pods


async def create_and_wait(
    kubeconfig: str, namespace: str, groups: list[bytes], pods: list[bytes]
) -> tuple[float, float]:
    """Create everything at once (raw POSTs of pre-encoded bodies on lightkube's connection, so that the
    client costs little); returns (seconds from first create to last bind, seconds creating)."""
    api = KubeApi.from_kubeconfig(kubeconfig, max_connections=CREATE_CONCURRENCY + 2)
    bound: set[str] = set()
    done = asyncio.Event()
    last_bind = 0.0

    async def watch(rv: str) -> None:
        nonlocal last_bind
        while True:  # the server may end a watch; resume from where it was
            async for kind, pod in api.watch("Pod", rv):
                if kind == "BOOKMARK":
                    rv = pod
                    continue
                rv = pod.metadata.resourceVersion
                if (
                    pod.metadata.namespace == namespace
                    and pod.spec.nodeName
                    and pod.metadata.name not in bound
                ):
                    bound.add(pod.metadata.name)
                    last_bind = time.perf_counter()
                    if len(bound) == len(pods):
                        done.set()
                        return

    async def post(path: str, body: bytes) -> None:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        resp = await api.http.post(path, content=body, headers=headers)
        if resp.status_code != 201:
            raise RuntimeError(f"create: {resp.status_code} {resp.text[:300]}")

    watcher = asyncio.create_task(watch(await _resource_version(api)))
    await asyncio.sleep(0.2)
    start = time.perf_counter()
    await _gather_limited([post(f"/apis/scheduling.k8s.io/v1beta1/namespaces/{namespace}/podgroups", g)
                           for g in groups])  # fmt: skip
    await _gather_limited([post(f"/api/v1/namespaces/{namespace}/pods", p) for p in pods])
    created = time.perf_counter() - start
    try:
        await asyncio.wait_for(done.wait(), 600)
    finally:
        watcher.cancel()
        await api.close()
    return last_bind - start, created


async def _resource_version(api: KubeApi) -> str:
    _, rv = await api.list("Pod")
    return rv


def _fresh_namespace(client: Client, name: str) -> None:
    client.create(Namespace(metadata=ObjectMeta(name=name)))
    client.create(ServiceAccount(metadata=ObjectMeta(name="default", namespace=name)))


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as resp:
            return resp.status == 200
    except OSError:
        return False


def start_gangsched(cp: LocalControlPlane, workdir: Path) -> ManagedProcess:
    port = free_port()
    proc = ManagedProcess(
        "gangsched",
        [GANGSCHED, "run", f"--kubeconfig={cp.kubeconfig}", "--metrics-port", str(port)],
        workdir / "gangsched.log",
    )
    proc.start()
    deadline = time.monotonic() + 60
    while not _ready(f"http://127.0.0.1:{port}/readyz"):
        if time.monotonic() > deadline or not proc.alive():
            raise proc.fail("not ready")
        time.sleep(0.2)
    return proc


def run_one(
    cp: LocalControlPlane, client: Client, which: str, gangs: list[tuple[str, int]], workdir: Path
) -> float:
    namespace = f"bench-{which}"
    _fresh_namespace(client, namespace)
    scheduler = "gangsched" if which == "gangsched" else "default-scheduler"
    proc = start_gangsched(cp, workdir) if which == "gangsched" else cp.start_scheduler()
    groups, pods = workload(namespace, scheduler, gangs)
    try:
        elapsed, created = asyncio.run(create_and_wait(str(cp.kubeconfig), namespace, groups, pods))
    finally:
        proc.stop()
    rate = len(pods) / elapsed
    print(f"{which:>15}: {len(pods)} pods bound in {elapsed:6.2f}s (creating took {created:5.2f}s): "
          f"{rate:7.1f} pods/s", flush=True)  # fmt: skip
    # Free the nodes for the next scheduler: bound pods without kubelets need a forced delete.
    cp.request("DELETE", f"/api/v1/namespaces/{namespace}/pods?gracePeriodSeconds=0")
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--small-gangs", type=int, default=300)
    parser.add_argument("--large-gangs", type=int, default=3)
    parser.add_argument("--large-size", type=int, default=300)
    parser.add_argument("--order", default="kube-scheduler,gangsched", help="who runs first")
    args = parser.parse_args()
    binaries = subprocess.run([str(REPO / "scripts" / "kube-binaries.sh")], capture_output=True, text=True,
                              check=True).stdout  # fmt: skip
    gangs = [(f"small-{i}", 3) for i in range(args.small_gangs)]
    gangs += [(f"large-{i}", args.large_size) for i in range(args.large_gangs)]
    with tempfile.TemporaryDirectory(prefix="live-bench-") as tmp:
        workdir = Path(tmp)
        cp = LocalControlPlane(Binaries.from_script_output(binaries), workdir / "cp")
        cp.start()
        try:
            client = Client(KubeConfig.from_file(str(cp.kubeconfig)), field_manager="bench")
            started = time.perf_counter()
            asyncio.run(create_nodes(str(cp.kubeconfig), args.nodes))
            print(f"{args.nodes} nodes ready in {time.perf_counter() - started:.1f}s; "
                  f"{len(gangs)} gangs, {sum(s for _, s in gangs)} pods", flush=True)  # fmt: skip
            rates = {which: run_one(cp, client, which, gangs, workdir) for which in args.order.split(",")}
        finally:
            cp.stop()
    ratio = rates["gangsched"] / rates["kube-scheduler"]
    print(f"gangsched / kube-scheduler: {ratio:.2f}x")


if __name__ == "__main__":
    main()
