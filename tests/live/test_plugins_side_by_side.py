"""The pod-level plugins side by side with kube-scheduler v1.37.2 on the same API server: each scheduler gets
its own namespace and two nodes (zone a and zone b) with the same objects, and both must reach the outcome
upstream's rules give (written here by hand) and the same as each other: which pods are bound where, and
the pending pods' reasons and messages. The issue's three reports are the cases."""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from lightkube import Client, codecs
from lightkube.core.exceptions import ApiError
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace, Node, Pod, ServiceAccount

from gangsched.live.controlplane import ManagedProcess
from gangsched.live.fakenodes import create_node

SCHEDULERS = {"kube": "default-scheduler", "gangsched": "gangsched"}
SIDE_LABEL = "gangsched.test/plugins-side"


def _wait(what: str, check: Callable[[], Any], timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.5)


@pytest.fixture
def sides(kube_client: Client) -> Iterator[dict[str, str]]:
    """One namespace per scheduler, each with nodes `<ns>-a` (zone a) and `<ns>-b` (zone b)."""
    made: dict[str, str] = {}
    for side in SCHEDULERS:
        ns = f"{side}-pl-{secrets.token_hex(3)}"
        kube_client.create(Namespace(metadata=ObjectMeta(name=ns)))
        kube_client.create(ServiceAccount(metadata=ObjectMeta(name="default", namespace=ns)))
        for zone in ("a", "b"):
            labels = {SIDE_LABEL: ns, "topology.kubernetes.io/zone": f"{ns}-{zone}"}
            create_node(
                kube_client, f"{ns}-{zone}", {"cpu": "4", "memory": "8Gi", "pods": "20"}, labels=labels
            )
        made[side] = ns
    yield made
    for ns in made.values():
        for zone in ("a", "b"):
            with contextlib.suppress(ApiError):
                kube_client.delete(Node, f"{ns}-{zone}")
        kube_client.delete(Namespace, ns)


def _pod(ns: str, name: str, scheduler: str, labels: dict[str, str], **spec: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "registry.k8s.io/pause:3.10"}
    container.update(spec.pop("container", {}))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {
            "schedulerName": scheduler,
            "nodeSelector": {SIDE_LABEL: ns},
            "containers": [container],
            **spec,
        },
    }


def _outcome(client: Client, ns: str, pods: list[str]) -> dict[str, str]:
    """Per pod: the node's zone suffix (`a` / `b`) when bound, else `reason: message` of PodScheduled."""
    out = {}
    for name in pods:
        pod = client.get(Pod, name, namespace=ns)
        if pod.spec.nodeName:
            out[name] = pod.spec.nodeName.removeprefix(f"{ns}-")
            continue
        cond = next(
            (c for c in (pod.status.conditions if pod.status else None) or [] if c.type == "PodScheduled"),
            None,
        )
        out[name] = f"{cond.reason}: {cond.message}" if cond is not None and cond.message else "pending"
    return out


def _settle(
    client: Client, sides: dict[str, str], pods: list[str], done: Callable[[dict[str, str]], bool]
) -> dict[str, dict[str, str]]:
    outcomes = {}
    for side, ns in sides.items():
        outcomes[side] = _wait(
            f"{side}: {pods}", lambda ns=ns: (o := _outcome(client, ns, pods)) and done(o) and o
        )
    time.sleep(2)  # and nothing more changes
    return {side: _outcome(client, ns, pods) for side, ns in sides.items()}


def test_anti_affinity_three_pods_on_two_nodes(
    kube_client: Client, kube_scheduler: ManagedProcess, gangsched: ManagedProcess, sides: dict[str, str]
) -> None:
    """Required anti-affinity on hostname: two pods bound, one per node; the third pending with
    InterPodAffinity's reason for both nodes of its side, in the same message from both schedulers."""
    pods = ["web-1", "web-2", "web-3"]
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
            ]
        }
    }
    for side, ns in sides.items():
        for name in pods:
            kube_client.create(
                codecs.from_dict(_pod(ns, name, SCHEDULERS[side], {"app": "web"}, affinity=anti))
            )
            time.sleep(0.3)  # creation order decides which pod waits
    outcomes = _settle(
        kube_client,
        sides,
        pods,
        lambda o: sum(v in ("a", "b") for v in o.values()) == 2 and "web-3" in o and ":" in o["web-3"],
    )
    for side, got in outcomes.items():
        assert sorted(got[p] for p in ("web-1", "web-2")) == ["a", "b"], (side, got)
        assert got["web-3"].startswith("Unschedulable: 0/"), (side, got)
        assert "2 node(s) didn't match pod anti-affinity rules" in got["web-3"], (side, got)
    assert outcomes["kube"]["web-3"] == outcomes["gangsched"]["web-3"]


def test_gang_with_host_port_on_two_nodes(
    kube_client: Client, kube_scheduler: ManagedProcess, gangsched: ManagedProcess, sides: dict[str, str]
) -> None:
    """A 3-pod gang all asking for hostPort 9000 on two nodes: nothing is bound."""
    pods = ["m-1", "m-2", "m-3"]
    port = {"ports": [{"containerPort": 80, "hostPort": 9000}]}
    for side, ns in sides.items():
        group = {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": "pg", "namespace": ns},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 3}}},
        }
        kube_client.create(codecs.from_dict(group))
        for name in pods:
            doc = _pod(ns, name, SCHEDULERS[side], {}, container=port, schedulingGroup={"podGroupName": "pg"})
            kube_client.create(codecs.from_dict(doc))
    outcomes = _settle(
        kube_client, sides, pods, lambda o: all(v.startswith("Unschedulable") for v in o.values())
    )
    for side, got in outcomes.items():
        assert not any(v in ("a", "b") for v in got.values()), (side, got)


def test_zone_spread_six_pods(
    kube_client: Client, kube_scheduler: ManagedProcess, gangsched: ManagedProcess, sides: dict[str, str]
) -> None:
    """Six pods with a DoNotSchedule zone spread (maxSkew 1) over the side's two zones: 3 + 3."""
    pods = [f"s-{i}" for i in range(6)]
    for side, ns in sides.items():
        spread = [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "s"}},
            }
        ]
        for name in pods:
            doc = _pod(ns, name, SCHEDULERS[side], {"app": "s"}, topologySpreadConstraints=spread)
            kube_client.create(codecs.from_dict(doc))
    outcomes = _settle(kube_client, sides, pods, lambda o: all(v in ("a", "b") for v in o.values()))
    for side, got in outcomes.items():
        assert sorted(got.values()) == ["a"] * 3 + ["b"] * 3, (side, got)


def test_pod_affinity_follows_and_existing_anti_affinity_repels(
    kube_client: Client, kube_scheduler: ManagedProcess, gangsched: ManagedProcess, sides: dict[str, str]
) -> None:
    """A db pod pinned to zone b carries anti-affinity against `app: noisy`. A web pod requiring a db pod in
    its zone goes to b although a is emptier. Then a filler takes most of a's CPU, and a noisy pod still goes
    to a: the db pod's anti-affinity keeps it out of b, which LeastAllocated would prefer."""

    def pinned(
        ns: str, name: str, side: str, labels: dict[str, str], zone: str, **spec: Any
    ) -> dict[str, Any]:
        doc = _pod(ns, name, SCHEDULERS[side], labels, **spec)
        doc["spec"]["nodeSelector"]["topology.kubernetes.io/zone"] = f"{ns}-{zone}"
        return doc

    def term(app: str) -> dict[str, Any]:
        return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "topology.kubernetes.io/zone"}

    for side, ns in sides.items():
        db_anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("noisy")]}}
        kube_client.create(codecs.from_dict(pinned(ns, "db", side, {"app": "db"}, "b", affinity=db_anti)))
    _settle(kube_client, sides, ["db"], lambda o: o["db"] == "b")
    for side, ns in sides.items():
        follow = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("db")]}}
        kube_client.create(
            codecs.from_dict(_pod(ns, "web", SCHEDULERS[side], {"app": "web"}, affinity=follow))
        )
    outcomes = _settle(kube_client, sides, ["web"], lambda o: o["web"] in ("a", "b"))
    for side, got in outcomes.items():
        assert got == {"web": "b"}, (side, got)
    for side, ns in sides.items():
        heavy = {"resources": {"requests": {"cpu": "3"}}}
        kube_client.create(
            codecs.from_dict(pinned(ns, "filler", side, {"app": "filler"}, "a", container=heavy))
        )
    _settle(kube_client, sides, ["filler"], lambda o: o["filler"] == "a")
    for side, ns in sides.items():
        kube_client.create(codecs.from_dict(_pod(ns, "noisy", SCHEDULERS[side], {"app": "noisy"})))
    outcomes = _settle(kube_client, sides, ["noisy"], lambda o: o["noisy"] in ("a", "b"))
    for side, got in outcomes.items():
        assert got == {"noisy": "a"}, (side, got)
