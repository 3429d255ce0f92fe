"""The one I/O seam of live mode: requests to the API server, on lightkube's async HTTP client.

lightkube builds the connection (kubeconfig, TLS, token) and decodes objects into its models; the requests
themselves are made here, because the live scheduler needs what lightkube's typed calls hide: the list's
resourceVersion with bookmarks on watches, a Binding answered with a Status (lightkube 1.0.1 raises on it),
the Eviction subresource, and every HTTP status as a value rather than an exception.

    api = KubeApi.from_kubeconfig("~/.kube/config")
    items, rv = await api.list("Pod")
    async for kind, obj_or_rv in api.watch("Pod", rv): ...
    status = await api.bind(("ns", "p"), "node-1")   # 201 is success
    await api.close()

Contract: coroutine methods, one event loop; `ApiStatus` (HTTP status and decoded body) for writes, never
raises on an HTTP error status; transport errors (server down) raise `httpx.TransportError`.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2 as httpx
import msgspec
import yaml
from lightkube import ConfigError, KubeConfig
from lightkube.config.client_adapter import ConnectionParams
from lightkube.core import decoders
from lightkube.resources import (
    coordination_v1,
    core_v1,
    policy_v1,
    resource_v1,
    scheduling_v1,
    scheduling_v1alpha3,
    scheduling_v1beta1,
    storage_v1,
)

from ..api import pod_selectors
from ..api.loader import with_go_structs

__all__ = ["RESOURCES", "ApiStatus", "KubeApi", "Resource", "WatchGone", "cluster_config"]


@dataclass(frozen=True, slots=True)
class Resource:
    """Where a kind lives on the API server and the lightkube model its objects decode into."""

    kind: str
    prefix: str  # /api/v1 or /apis/<group>/<version>
    plural: str
    model: Any
    namespaced: bool

    def path(self, namespace: str | None = None, name: str | None = None, sub: str | None = None) -> str:
        parts = [self.prefix]
        if self.namespaced and namespace:
            parts += ["namespaces", namespace]
        parts.append(self.plural)
        if name:
            parts.append(name)
        if sub:
            parts.append(sub)
        return "/".join(parts)


V1BETA1 = "/apis/scheduling.k8s.io/v1beta1"
STORAGE = "/apis/storage.k8s.io/v1"
RESOURCE_V1 = "/apis/resource.k8s.io/v1"
RESOURCES: dict[str, Resource] = {
    r.kind: r
    for r in (
        Resource("Node", "/api/v1", "nodes", core_v1.Node, False),
        Resource("Namespace", "/api/v1", "namespaces", core_v1.Namespace, False),
        Resource("Pod", "/api/v1", "pods", core_v1.Pod, True),
        Resource(
            "PriorityClass",
            "/apis/scheduling.k8s.io/v1",
            "priorityclasses",
            scheduling_v1.PriorityClass,
            False,
        ),
        Resource(
            "PodDisruptionBudget",
            "/apis/policy/v1",
            "poddisruptionbudgets",
            policy_v1.PodDisruptionBudget,
            True,
        ),
        Resource("Workload", V1BETA1, "workloads", scheduling_v1beta1.Workload, True),
        Resource("PodGroup", V1BETA1, "podgroups", scheduling_v1beta1.PodGroup, True),
        Resource(
            "CompositePodGroup",
            "/apis/scheduling.k8s.io/v1alpha3",
            "compositepodgroups",
            scheduling_v1alpha3.CompositePodGroup,
            True,
        ),
        Resource("Lease", "/apis/coordination.k8s.io/v1", "leases", coordination_v1.Lease, True),
        # Volumes and devices (the claims stage).
        Resource("StorageClass", STORAGE, "storageclasses", storage_v1.StorageClass, False),
        Resource("CSINode", STORAGE, "csinodes", storage_v1.CSINode, False),
        Resource("CSIDriver", STORAGE, "csidrivers", storage_v1.CSIDriver, False),
        Resource("CSIStorageCapacity", STORAGE, "csistoragecapacities", storage_v1.CSIStorageCapacity, True),
        Resource("VolumeAttachment", STORAGE, "volumeattachments", storage_v1.VolumeAttachment, False),
        Resource("PersistentVolume", "/api/v1", "persistentvolumes", core_v1.PersistentVolume, False),
        Resource(
            "PersistentVolumeClaim", "/api/v1", "persistentvolumeclaims", core_v1.PersistentVolumeClaim, True
        ),
        Resource("DeviceClass", RESOURCE_V1, "deviceclasses", resource_v1.DeviceClass, False),
        Resource("ResourceSlice", RESOURCE_V1, "resourceslices", resource_v1.ResourceSlice, False),
        Resource("DeviceTaintRule", RESOURCE_V1, "devicetaintrules", resource_v1.DeviceTaintRule, False),
        Resource("ResourceClaim", RESOURCE_V1, "resourceclaims", resource_v1.ResourceClaim, True),
        # Read for their pod selectors only (api/pod_selectors.py decodes nothing else).
        Resource("Service", "/api/v1", "services", pod_selectors.Service, True),
        Resource(
            "ReplicationController",
            "/api/v1",
            "replicationcontrollers",
            pod_selectors.ReplicationController,
            True,
        ),
        Resource("ReplicaSet", "/apis/apps/v1", "replicasets", pod_selectors.ReplicaSet, True),
        Resource("StatefulSet", "/apis/apps/v1", "statefulsets", pod_selectors.StatefulSet, True),
    )
}


SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def cluster_config(path: str | None, service_account_dir: str = SERVICE_ACCOUNT_DIR) -> KubeConfig:
    """Where to reach the API server and as whom, as client-go decides it: an explicit kubeconfig; else
    in-cluster (the pod's ServiceAccount token, CA and namespace under `service_account_dir` and the
    KUBERNETES_SERVICE_HOST/PORT environment kubelet sets); else the first file in $KUBECONFIG; else
    ~/.kube/config. The token file is read again on each request, so rotated tokens are picked up."""
    if path is not None:
        return _from_file(path)
    if Path(service_account_dir, "token").is_file() and os.environ.get("KUBERNETES_SERVICE_HOST"):
        try:
            return KubeConfig.from_service_account(service_account_dir)
        except KeyError as e:  # KUBERNETES_SERVICE_PORT missing beside KUBERNETES_SERVICE_HOST
            raise ValueError(f"in-cluster configuration: environment variable {e} is not set") from e
        except (ConfigError, OSError) as e:
            raise ValueError(f"in-cluster configuration in {service_account_dir}: {e}") from e
    env = [p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p]
    if env:
        return _from_file(env[0])
    if Path("~/.kube/config").expanduser().is_file():
        return _from_file("~/.kube/config")
    raise ValueError(
        "no cluster configuration: not in a cluster (no ServiceAccount token), --kubeconfig and $KUBECONFIG "
        "not given, no ~/.kube/config"
    )


def _from_file(path: str) -> KubeConfig:
    try:
        return KubeConfig.from_file(path)
    except ConfigError as e:
        raise ValueError(f"{path}: {e}") from e
    except (yaml.YAMLError, msgspec.ValidationError, TypeError, AttributeError) as e:
        raise ValueError(f"{path}: not a kubeconfig: {e}".splitlines()[0]) from e


def _decode_list(content: bytes, kind: str, model: Any) -> tuple[str | None, str | None, list[Any]]:
    """A list response's continue token, resourceVersion and objects, decoded by lightkube; if its model
    refuses an object, decoded again as a file's objects are (`with_go_structs`: the API server serves a
    Go nil slice the model requires as null, as it serves every CSINode the kubelet makes for a node
    without CSI drivers)."""
    try:
        return decoders.decode_list(content, model)
    except msgspec.ValidationError:
        raw = msgspec.json.decode(content)
        meta = raw.get("metadata") or {}
        items = [model.from_dict(with_go_structs(kind, item)) for item in raw.get("items") or []]
        return meta.get("continue") or None, meta.get("resourceVersion"), items


def _decode_object(data: bytes, kind: str, model: Any) -> Any:
    """One watched object, decoded as `_decode_list` decodes a list's."""
    try:
        return decoders.decode_object(data, model)
    except msgspec.ValidationError:
        return model.from_dict(with_go_structs(kind, msgspec.json.decode(data)))


class WatchGone(Exception):
    """The watch's resourceVersion is too old (410 Gone): the informer must list again."""


class _Meta(msgspec.Struct):
    resourceVersion: str | None = None


class _Bookmark(msgspec.Struct):
    metadata: _Meta


@dataclass(frozen=True, slots=True)
class ApiStatus:
    code: int
    body: Any

    @property
    def ok(self) -> bool:
        return 200 <= self.code < 300

    @property
    def reason(self) -> str:
        return str(self.body.get("reason", "")) if isinstance(self.body, dict) else ""


def micro_time(when: dt.datetime | None = None) -> str:
    """RFC 3339 with microseconds, as MicroTime fields (Event.eventTime, Lease times) want."""
    return (when or dt.datetime.now(dt.UTC)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class KubeApi:
    """Requests to one API server. Not thread-safe (one event loop)."""

    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http

    @classmethod
    def from_kubeconfig(cls, path: str | None, *, max_connections: int = 64,
                        service_account_dir: str = SERVICE_ACCOUNT_DIR) -> KubeApi:  # fmt: skip
        """A client for `path`, or with None for the in-cluster ServiceAccount, else $KUBECONFIG, else
        ~/.kube/config (client-go's order). Raises ValueError with a one-line message if none is usable."""
        config = cluster_config(path, service_account_dir).get()
        if config is None:
            raise ValueError(f"{path}: no current context")
        # No proxies from the environment: the scheduler talks to its API server directly.
        params = ConnectionParams(timeout=httpx.Timeout(30.0), trust_env=False)
        # Many concurrent binds need many connections; keep-alive makes them cheap.
        limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
        return cls(httpx.AsyncClient(**params.httpx_params(config), limits=limits))

    async def close(self) -> None:
        await self.http.aclose()

    # --- reading ------------------------------------------------------------------------------------------

    async def list(self, kind: str) -> tuple[list[Any], str]:
        """All objects of `kind` (pages of 500) and the list's resourceVersion."""
        res = RESOURCES[kind]
        items: list[Any] = []
        params: dict[str, Any] = {"limit": 500}
        while True:
            resp = await self.http.get(res.path(), params=params)
            if resp.status_code != 200:
                raise httpx.HTTPStatusError(f"list {kind}: {resp.status_code}", request=resp.request,
                                            response=resp)  # fmt: skip
            cont, rv, chunk = _decode_list(resp.content, kind, res.model)
            items.extend(chunk)
            if not cont:
                return items, str(rv or "")
            params["continue"] = cont

    async def watch(self, kind: str, resource_version: str, timeout_seconds: int = 300) -> AsyncIterator[Any]:
        """Watch events from `resource_version`: yields (type, object) for ADDED/MODIFIED/DELETED and
        ("BOOKMARK", resourceVersion). Raises WatchGone on 410; returns when the server ends the watch."""
        res = RESOURCES[kind]
        params = {
            "watch": "true",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(timeout_seconds),
        }
        timeout = httpx.Timeout(30.0, read=timeout_seconds + 30.0)
        async with self.http.stream("GET", res.path(), params=params, timeout=timeout) as resp:
            if resp.status_code == 410:
                raise WatchGone(kind)
            if resp.status_code != 200:
                await resp.aread()
                raise httpx.HTTPStatusError(f"watch {kind}: {resp.status_code}", request=resp.request,
                                            response=resp)  # fmt: skip
            async for line in resp.aiter_lines():
                if not line:
                    continue
                event = decoders.decode_watch_event(line.encode() if isinstance(line, str) else line)
                if event.type == "ERROR":
                    status = msgspec.json.decode(event.object)
                    if status.get("code") == 410:
                        raise WatchGone(kind)
                    raise httpx.HTTPStatusError(
                        f"watch {kind}: {status}", request=resp.request, response=resp
                    )
                if event.type == "BOOKMARK":
                    yield (
                        "BOOKMARK",
                        msgspec.json.decode(event.object, type=_Bookmark).metadata.resourceVersion,
                    )
                else:
                    yield event.type, _decode_object(event.object, kind, res.model)

    async def get(self, kind: str, namespace: str | None, name: str) -> ApiStatus:
        return await self._send("GET", RESOURCES[kind].path(namespace, name))

    # --- writing ------------------------------------------------------------------------------------------

    async def _send(self, method: str, path: str, body: Any = None, content_type: str | None = None,
                    params: dict[str, str] | None = None) -> ApiStatus:  # fmt: skip
        headers = {"Accept": "application/json"}
        content = None
        if body is not None:
            content = msgspec.json.encode(body)
            headers["Content-Type"] = content_type or "application/json"
        resp = await self.http.request(method, path, content=content, headers=headers, params=params)
        try:
            decoded = msgspec.json.decode(resp.content) if resp.content else None
        except msgspec.DecodeError:
            decoded = resp.text
        return ApiStatus(resp.status_code, decoded)

    async def create(self, kind: str, namespace: str | None, body: dict[str, Any]) -> ApiStatus:
        return await self._send("POST", RESOURCES[kind].path(namespace), body)

    async def replace(self, kind: str, namespace: str | None, name: str, body: dict[str, Any]) -> ApiStatus:
        return await self._send("PUT", RESOURCES[kind].path(namespace, name), body)

    async def bind(self, pod: tuple[str, str], node: str) -> ApiStatus:
        """POST pods/binding. The server answers 201 with a Status (not a Binding): 201 means bound."""
        ns, name = pod
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": ns},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        return await self._send("POST", RESOURCES["Pod"].path(ns, name, "binding"), body)

    async def patch_status(self, kind: str, key: tuple[str, str], patch: dict[str, Any], *,
                           strategic: bool = False) -> ApiStatus:  # fmt: skip
        """Patch the /status subresource: strategic merge (Pod, PodGroup and CompositePodGroup conditions
        merge by type), or JSON merge patch (a list sent replaces the whole list)."""
        ns, name = key
        content_type = (
            "application/strategic-merge-patch+json" if strategic else "application/merge-patch+json"
        )
        return await self._send("PATCH", RESOURCES[kind].path(ns, name, "status"), patch, content_type)

    async def patch(self, kind: str, key: tuple[str, str], patch: dict[str, Any]) -> ApiStatus:
        """JSON merge patch of the object itself (not a subresource)."""
        ns, name = key
        return await self._send("PATCH", RESOURCES[kind].path(ns or None, name), patch,
                                "application/merge-patch+json")  # fmt: skip

    async def delete(self, kind: str, key: tuple[str, str]) -> ApiStatus:
        ns, name = key
        return await self._send("DELETE", RESOURCES[kind].path(ns or None, name))

    async def delete_pod(self, pod: tuple[str, str], *, grace_seconds: int | None = None,
                         uid: str | None = None) -> ApiStatus:  # fmt: skip
        ns, name = pod
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if grace_seconds is not None:
            body["gracePeriodSeconds"] = grace_seconds
        if uid is not None:
            body["preconditions"] = {"uid": uid}
        return await self._send("DELETE", RESOURCES["Pod"].path(ns, name), body)

    async def create_event(self, regarding: dict[str, str], event_type: str, reason: str, note: str,
                           controller: str, instance: str) -> ApiStatus:  # fmt: skip
        """An events.k8s.io/v1 Event about `regarding` ({kind, namespace, name, uid?})."""
        ns = regarding.get("namespace") or "default"
        body = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            # Named as client-go names events: <object>.<unix nanoseconds in hex>.
            "metadata": {"name": f"{regarding['name']}.{time.time_ns():x}", "namespace": ns},
            "eventTime": micro_time(),
            "reportingController": controller,
            "reportingInstance": instance,
            "action": "Scheduling" if reason != "Preempted" else "Preempting",
            "reason": reason,
            "type": event_type,
            "note": note[:1024],
            "regarding": {"apiVersion": "v1", **regarding},
        }
        return await self._send("POST", f"/apis/events.k8s.io/v1/namespaces/{ns}/events", body)
