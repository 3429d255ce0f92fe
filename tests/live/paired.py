"""The side-by-side harness shared by the plugin and volume/device comparisons: kube-scheduler v1.37.2 and
gangsched on the same API server, each with its own namespace ("side") and nodes holding the same objects.

    with paired_sides(kube_client, "pl", ("a", "b"), zone_labels) as sides:   # {"kube": ns, "gangsched": ns}
        for side, ns in sides.items():
            create(kube_client, pod(ns, "p", SCHEDULERS[side]))
        outcomes = settle(kube_client, sides, ["p"], lambda o: o["p"] != "pending")

A pod made by `pod` selects its side's nodes (`SIDE_LABEL`), so the two schedulers never see each other's
nodes; `outcome` names a bound pod's node by its suffix (`a`, `n1`, ...) so that both sides compare equal.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from lightkube import Client, codecs
from lightkube.core.exceptions import ApiError
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace, Node, Pod, ServiceAccount

from gangsched.live.fakenodes import create_node

from .test_apiserver import wait_for

__all__ = ["SCHEDULERS", "SIDE_LABEL", "TIMEOUT", "create", "outcome", "paired_sides", "pod", "settle"]

SCHEDULERS = {"kube": "default-scheduler", "gangsched": "gangsched"}
SIDE_LABEL = "gangsched.test/namespace"
CAPACITY = {"cpu": "4", "memory": "8Gi", "pods": "20"}
QUIET_SECONDS = 2.0
TIMEOUT = 90.0  # seconds: the PV controller and two schedulers share two busy cores


@contextlib.contextmanager
def paired_sides(
    client: Client,
    tag: str,
    nodes: Sequence[str],
    labels: Callable[[str, str], dict[str, str]] = lambda ns, node: {},
) -> Iterator[dict[str, str]]:
    """One namespace per scheduler (with the default ServiceAccount), each with nodes `<ns>-<suffix>` for
    every suffix in `nodes`, labelled for the side plus `labels(ns, suffix)`. Deleted afterwards."""
    made: dict[str, str] = {}
    try:
        for side in SCHEDULERS:
            ns = f"{side}-{tag}-{secrets.token_hex(3)}"
            client.create(Namespace(metadata=ObjectMeta(name=ns)))
            made[side] = ns
            client.create(ServiceAccount(metadata=ObjectMeta(name="default", namespace=ns)))
            for suffix in nodes:
                create_node(client, f"{ns}-{suffix}", CAPACITY, labels={SIDE_LABEL: ns, **labels(ns, suffix)})
        yield made
    finally:
        for ns in made.values():
            for suffix in nodes:
                with contextlib.suppress(ApiError):
                    client.delete(Node, f"{ns}-{suffix}")
            client.delete(Namespace, ns)


def create(client: Client, doc: dict[str, Any]) -> None:
    """Create `doc`; an object that already exists (shared, cluster-scoped: made by the other side or a
    rerun) is left as it is."""
    try:
        client.create(codecs.from_dict(doc))
    except ApiError as e:
        if e.status.code != 409:
            raise


def pod(
    ns: str, name: str, scheduler: str, labels: dict[str, str] | None = None, **spec: Any
) -> dict[str, Any]:
    """A pause pod for `scheduler` on its side's nodes; `container` updates the container, the other keyword
    arguments are spec fields (`nodeSelector` entries are added to the side's)."""
    container: dict[str, Any] = {"name": "c", "image": "registry.k8s.io/pause:3.10"}
    container.update(spec.pop("container", {}))
    selector = {SIDE_LABEL: ns, **spec.pop("nodeSelector", {})}
    meta: dict[str, Any] = {"name": name, "namespace": ns, "labels": labels or {}}
    meta.update(spec.pop("metadata", {}))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {"schedulerName": scheduler, "nodeSelector": selector, "containers": [container], **spec},
    }


def outcome(client: Client, ns: str, pods: Sequence[str]) -> dict[str, str]:
    """Per pod: its node's suffix when bound, else `reason: message` of PodScheduled (or `pending`)."""
    out = {}
    for name in pods:
        p = client.get(Pod, name, namespace=ns)
        if p.spec.nodeName:
            out[name] = p.spec.nodeName.removeprefix(f"{ns}-")
            continue
        cond = next(
            (c for c in (p.status.conditions if p.status else None) or [] if c.type == "PodScheduled"),
            None,
        )
        out[name] = f"{cond.reason}: {cond.message}" if cond is not None and cond.message else "pending"
    return out


def settle(
    client: Client, sides: dict[str, str], pods: Sequence[str], done: Callable[[dict[str, str]], bool]
) -> dict[str, dict[str, str]]:
    """Wait until each side's outcome satisfies `done`, then, after a quiet period in which nothing may
    change, return both sides' outcomes."""
    for side, ns in sides.items():
        wait_for(
            f"{side}: {list(pods)}", lambda ns=ns: (o := outcome(client, ns, pods)) and done(o) and o, 90
        )
    time.sleep(QUIET_SECONDS)
    return {side: outcome(client, ns, pods) for side, ns in sides.items()}
