"""The informer on the real API server: a watch whose resourceVersion was compacted away (410 Gone) lists
again, and the store then equals the server: what was deleted meanwhile is gone, what was created is there."""

from __future__ import annotations

import asyncio
import json
import secrets
import urllib.request

import pytest
from lightkube import Client, codecs
from lightkube.resources.scheduling_v1beta1 import PodGroup
from lightkube.types import PatchType

from gangsched.live.cache import LiveCache
from gangsched.live.controlplane import LocalControlPlane
from gangsched.live.informer import Informer
from gangsched.live.kube import KubeApi
from gangsched.store import Store


def _group(namespace: str, name: str) -> object:
    return codecs.from_dict(
        {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"schedulingPolicy": {"basic": {}}},
        }
    )


def _compact_etcd(control_plane: LocalControlPlane, revision: str) -> None:
    """Compact etcd (its JSON gateway) up to `revision`: older versions are gone for good."""
    body = json.dumps({"revision": revision}).encode()
    request = urllib.request.Request(f"{control_plane.etcd_url}/v3/kv/compaction", data=body, method="POST")
    with urllib.request.urlopen(request, timeout=10) as resp:
        assert resp.status == 200


@pytest.mark.restarts_apiserver
def test_watch_from_a_compacted_version_lists_again(
    control_plane: LocalControlPlane, kube_client: Client, namespace: str
) -> None:
    kube_client.create(_group(namespace, "keep"))
    kube_client.create(_group(namespace, "gone"))

    async def run() -> tuple[set[str], int]:
        api = KubeApi.from_kubeconfig(str(control_plane.kubeconfig))
        cache = LiveCache(Store())
        try:
            objects, synced_at = await api.list("PodGroup")
            cache.replace("PodGroup", objects)  # as if an informer had synced at `synced_at` and then lost it
            kube_client.delete(PodGroup, "gone", namespace=namespace)
            # Its podgroup-protection finalizer would keep it (no controller here to remove it): drop it.
            patch = {"metadata": {"finalizers": None}}
            kube_client.patch(PodGroup, "gone", patch, namespace=namespace, patch_type=PatchType.MERGE)
            kube_client.create(_group(namespace, "new"))
            _, now = await api.list("PodGroup")
            _compact_etcd(control_plane, now)
            # A fresh kube-apiserver's watch cache starts after the compaction: `synced_at` is too old for it.
            control_plane.restart_apiserver(kill=True)
            informer = Informer(api, "PodGroup", cache)
            informer.resource_version = synced_at
            task = asyncio.create_task(informer.run())
            try:
                for _ in range(300):
                    names = {k[1] for k in ((o.metadata.namespace, o.metadata.name) for o in
                                            cache.store.list("PodGroup")) if k[0] == namespace}  # fmt: skip
                    if informer.relists and "new" in names:
                        return names, informer.relists
                    await asyncio.sleep(0.1)
                return names, informer.relists
            finally:
                task.cancel()
        finally:
            await api.close()

    names, relists = asyncio.run(run())
    assert relists == 1
    assert names == {"keep", "new"}
    assert {pg.metadata.name for pg in kube_client.list(PodGroup, namespace=namespace)} == names


def test_csinodes_the_kubelet_makes_sync(control_plane: LocalControlPlane) -> None:
    """The kubelet makes a CSINode for every node, with `drivers: []` when no CSI driver runs there; the API
    server serves it as `"drivers": null` (a Go nil slice after storage), which lightkube's model refuses.
    The informer must still list it, and see one created while it watches, with no drivers (before
    2026-12-01 the list raised out of the informer and CSINode never synced)."""
    suffix = secrets.token_hex(4)
    names = [f"kubelet-made-{suffix}-{i}" for i in range(2)]

    def create(name: str) -> None:
        doc = {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": name},
               "spec": {"drivers": []}}  # fmt: skip
        code, stored = control_plane.request("POST", "/apis/storage.k8s.io/v1/csinodes", doc)
        assert code == 201, stored
        assert stored["spec"] == {"drivers": None}  # what makes this test: the server's answer

    async def run() -> dict[str, object]:
        api = KubeApi.from_kubeconfig(str(control_plane.kubeconfig))
        cache = LiveCache(Store())
        informer = Informer(api, "CSINode", cache)
        task = asyncio.create_task(informer.run())
        try:
            await asyncio.wait_for(informer.synced.wait(), 20)
            create(names[1])
            for _ in range(200):
                seen = {n.metadata.name: n.spec.drivers for n in cache.store.list("CSINode")}
                if names[1] in seen:
                    return seen
                await asyncio.sleep(0.1)
            return seen
        finally:
            task.cancel()
            await api.close()

    create(names[0])
    seen = asyncio.run(run())
    assert seen.get(names[0]) == [] and seen.get(names[1]) == [], seen
