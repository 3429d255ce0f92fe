"""The informer on the real API server: a watch whose resourceVersion was compacted away (410 Gone) lists
again, and the store then equals the server: what was deleted meanwhile is gone, what was created is there."""

from __future__ import annotations

import asyncio
import json
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
