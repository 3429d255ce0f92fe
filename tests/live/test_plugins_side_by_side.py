"""The pod-level plugins side by side with kube-scheduler v1.37.2 on the same API server: each scheduler gets
its own namespace and two nodes (zone a and zone b) with the same objects, and both must reach the outcome
upstream's rules give (written here by hand) and the same as each other: which pods are bound where, and
the pending pods' reasons and messages. The issue's three reports are the cases."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from lightkube import Client
from lightkube.resources.apps_v1 import ReplicaSet
from lightkube.resources.core_v1 import Node
from lightkube.types import PatchType

from .paired import SCHEDULERS, create, paired_sides, pod, settle

ZONE = "topology.kubernetes.io/zone"


# Both schedulers run for every case.
pytestmark = pytest.mark.usefixtures("kube_scheduler", "gangsched")


@pytest.fixture
def sides(kube_client: Client) -> Iterator[dict[str, str]]:
    """One namespace per scheduler, each with nodes `<ns>-a` (zone `<ns>-a`) and `<ns>-b` (zone `<ns>-b`)."""
    with paired_sides(kube_client, "pl", ("a", "b"), lambda ns, node: {ZONE: f"{ns}-{node}"}) as made:
        yield made


def test_anti_affinity_three_pods_on_two_nodes(kube_client: Client, sides: dict[str, str]) -> None:
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
            create(kube_client, pod(ns, name, SCHEDULERS[side], {"app": "web"}, affinity=anti))
            time.sleep(0.3)  # creation order decides which pod waits
    outcomes = settle(
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


def test_gang_with_host_port_on_two_nodes(kube_client: Client, sides: dict[str, str]) -> None:
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
        create(kube_client, group)
        for name in pods:
            doc = pod(ns, name, SCHEDULERS[side], {}, container=port, schedulingGroup={"podGroupName": "pg"})
            create(kube_client, doc)
    outcomes = settle(
        kube_client, sides, pods, lambda o: all(v.startswith("Unschedulable") for v in o.values())
    )
    for side, got in outcomes.items():
        assert not any(v in ("a", "b") for v in got.values()), (side, got)


def test_zone_spread_six_pods(kube_client: Client, sides: dict[str, str]) -> None:
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
            doc = pod(ns, name, SCHEDULERS[side], {"app": "s"}, topologySpreadConstraints=spread)
            create(kube_client, doc)
    outcomes = settle(kube_client, sides, pods, lambda o: all(v in ("a", "b") for v in o.values()))
    for side, got in outcomes.items():
        assert sorted(got.values()) == ["a"] * 3 + ["b"] * 3, (side, got)


def test_pod_affinity_follows_and_existing_anti_affinity_repels(
    kube_client: Client, sides: dict[str, str]
) -> None:
    """A db pod pinned to zone b carries anti-affinity against `app: noisy`. A web pod requiring a db pod in
    its zone goes to b although a is emptier. Then a filler takes most of a's CPU, and a noisy pod still goes
    to a: the db pod's anti-affinity keeps it out of b, which LeastAllocated would prefer."""

    def pinned(
        ns: str, name: str, side: str, labels: dict[str, str], zone: str, **spec: Any
    ) -> dict[str, Any]:
        doc = pod(ns, name, SCHEDULERS[side], labels, **spec)
        doc["spec"]["nodeSelector"]["topology.kubernetes.io/zone"] = f"{ns}-{zone}"
        return doc

    def term(app: str) -> dict[str, Any]:
        return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "topology.kubernetes.io/zone"}

    for side, ns in sides.items():
        db_anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("noisy")]}}
        create(kube_client, pinned(ns, "db", side, {"app": "db"}, "b", affinity=db_anti))
    settle(kube_client, sides, ["db"], lambda o: o["db"] == "b")
    for side, ns in sides.items():
        follow = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("db")]}}
        create(kube_client, pod(ns, "web", SCHEDULERS[side], {"app": "web"}, affinity=follow))
    outcomes = settle(kube_client, sides, ["web"], lambda o: o["web"] in ("a", "b"))
    for side, got in outcomes.items():
        assert got == {"web": "b"}, (side, got)
    for side, ns in sides.items():
        heavy = {"resources": {"requests": {"cpu": "3"}}}
        create(kube_client, pinned(ns, "filler", side, {"app": "filler"}, "a", container=heavy))
    settle(kube_client, sides, ["filler"], lambda o: o["filler"] == "a")
    for side, ns in sides.items():
        create(kube_client, pod(ns, "noisy", SCHEDULERS[side], {"app": "noisy"}))
    outcomes = settle(kube_client, sides, ["noisy"], lambda o: o["noisy"] in ("a", "b"))
    for side, got in outcomes.items():
        assert got == {"noisy": "a"}, (side, got)


def test_default_spread_from_a_service(kube_client: Client, sides: dict[str, str]) -> None:
    """PodTopologySpread's system default constraints (hostname 3, zone 5, ScheduleAnyway) with the selector
    of the Service that selects the pod. Node a holds two app=web pods (100m, 128Mi), node b a 1-CPU, 1Gi
    filler. Before any Service, web-0 goes to a: LeastAllocated 93 vs 78, BalancedAllocation 98 vs 93, no
    spreading. Once a Service selects app=web, web-1 goes to b. By hand (2 hostnames, 2 zones, ln 4 each):
    a: 3 matching pods, 3 ln 4 + 2 + 3 ln 4 + 4 = 14.3 -> 14; b: 2 + 4 = 6; normalised 42 and 100, times 2;
    a 91 + 98 + 84 = 273, b 78 + 93 + 200 = 371."""
    small = {"resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}
    for side, ns in sides.items():
        for name in ("w-1", "w-2"):
            pinned = {ZONE: f"{ns}-a"}
            create(
                kube_client,
                pod(ns, name, SCHEDULERS[side], {"app": "web"}, container=small, nodeSelector=pinned),
            )
        heavy = {"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
        filler = pod(
            ns, "filler", SCHEDULERS[side], {"app": "other"}, container=heavy, nodeSelector={ZONE: f"{ns}-b"}
        )
        create(kube_client, filler)
    placed = ["w-1", "w-2", "filler"]
    settle(kube_client, sides, placed, lambda o: o == {"w-1": "a", "w-2": "a", "filler": "b"})
    for side, ns in sides.items():
        create(kube_client, pod(ns, "web-0", SCHEDULERS[side], {"app": "web"}, container=small))
    outcomes = settle(kube_client, sides, ["web-0"], lambda o: o["web-0"] in ("a", "b"))
    assert outcomes == {"kube": {"web-0": "a"}, "gangsched": {"web-0": "a"}}
    for ns in sides.values():
        service = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web", "namespace": ns},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
        }
        create(kube_client, service)
    time.sleep(1)  # both schedulers' informers see the Service before the pod
    for side, ns in sides.items():
        create(kube_client, pod(ns, "web-1", SCHEDULERS[side], {"app": "web"}, container=small))
    outcomes = settle(kube_client, sides, ["web-1"], lambda o: o["web-1"] in ("a", "b"))
    assert outcomes == {"kube": {"web-1": "b"}, "gangsched": {"web-1": "b"}}


def _requests(cpu: str, memory: str = "128Mi") -> dict[str, Any]:
    return {"resources": {"requests": {"cpu": cpu, "memory": memory}}}


def _filler_on_b(kube_client: Client, sides: dict[str, str]) -> None:
    """A 2-CPU filler on node b, so that without the plugin under test LeastAllocated (95 vs 71) and
    BalancedAllocation (99 vs 75) would put a small pod on node a."""
    for side, ns in sides.items():
        doc = pod(ns, "filler", SCHEDULERS[side], {"app": "filler"}, container=_requests("2"))
        doc["spec"]["nodeSelector"][ZONE] = f"{ns}-b"
        create(kube_client, doc)


def test_node_ports_alone(kube_client: Client, sides: dict[str, str]) -> None:
    """NodePorts without other constraints: a holder of hostPort 9000 on node a; the emptier a is filtered
    for p-1 (same port), which goes to the loaded b; p-2 then finds the port taken on both nodes and waits
    with NodePorts' reason for both, in the same message from both schedulers."""
    _filler_on_b(kube_client, sides)
    port = {**_requests("100m"), "ports": [{"containerPort": 80, "hostPort": 9000}]}
    for side, ns in sides.items():
        holder = pod(ns, "holder", SCHEDULERS[side], {}, container=port)
        holder["spec"]["nodeSelector"][ZONE] = f"{ns}-a"
        create(kube_client, holder)
    settle(kube_client, sides, ["filler", "holder"], lambda o: o == {"filler": "b", "holder": "a"})
    for side, ns in sides.items():
        create(kube_client, pod(ns, "p-1", SCHEDULERS[side], {}, container=port))
    outcomes = settle(kube_client, sides, ["p-1"], lambda o: o["p-1"] in ("a", "b"))
    assert outcomes == {"kube": {"p-1": "b"}, "gangsched": {"p-1": "b"}}
    for side, ns in sides.items():
        create(kube_client, pod(ns, "p-2", SCHEDULERS[side], {}, container=port))
    outcomes = settle(kube_client, sides, ["p-2"], lambda o: o["p-2"].startswith("Unschedulable"))
    for side, got in outcomes.items():
        assert "2 node(s) didn't have free ports for the requested pod ports" in got["p-2"], (side, got)
    assert outcomes["kube"] == outcomes["gangsched"]


def _web_beside_db(
    kube_client: Client, sides: dict[str, str], db_node: str, kind: str
) -> dict[str, dict[str, str]]:
    """The preferred-affinity setup both InterPodAffinity score cases share: a filler loads node b, a db pod
    (app=db) runs on `db_node`, then a web pod prefers (weight 100) by `kind` (podAffinity or
    podAntiAffinity) a hostname with app=db. Returns where web went on each side."""
    _filler_on_b(kube_client, sides)
    for side, ns in sides.items():
        db = pod(ns, "db", SCHEDULERS[side], {"app": "db"}, container=_requests("100m"))
        db["spec"]["nodeSelector"][ZONE] = f"{ns}-{db_node}"
        create(kube_client, db)
    settle(kube_client, sides, ["filler", "db"], lambda o: o == {"filler": "b", "db": db_node})
    term = {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}
    affinity = {kind: {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "podAffinityTerm": term}
    ]}}  # fmt: skip
    for side, ns in sides.items():
        create(
            kube_client, pod(ns, "web", SCHEDULERS[side], {}, container=_requests("100m"), affinity=affinity)
        )
    return settle(kube_client, sides, ["web"], lambda o: o["web"] in ("a", "b"))


def test_preferred_anti_affinity_outweighs_load(kube_client: Client, sides: dict[str, str]) -> None:
    """InterPodAffinity's score: a db pod on node a; a pod preferring (weight 100) not to share a hostname
    with app=db goes to the loaded b. By hand: a -100, b 0, normalised 0 and 100, times weight 2; totals
    a 95 + 99 + 0 = 194, b 71 + 75 + 200 = 346."""
    outcomes = _web_beside_db(kube_client, sides, db_node="a", kind="podAntiAffinity")
    assert outcomes == {"kube": {"web": "b"}, "gangsched": {"web": "b"}}


def test_image_locality(kube_client: Client, sides: dict[str, str]) -> None:
    """ImageLocality: node b of each side lists an 800 MiB image in status.images, so 2 of the cluster's 4
    nodes hold it: 800 MiB x 2 / 4 = 400 MiB, score 100 (400 - 23) / (1000 - 23) = 38 on b, 0 on a. A pod
    of that image goes to b, the nodes being otherwise equal."""
    image = "registry.k8s.io/gangsched-test-big:1.0"
    for ns in sides.values():
        status = {"status": {"images": [{"names": [image], "sizeBytes": 800 * 1024 * 1024}]}}
        kube_client.patch(Node.Status, f"{ns}-b", status, patch_type=PatchType.MERGE)
    for side, ns in sides.items():
        create(
            kube_client, pod(ns, "p", SCHEDULERS[side], {}, container={**_requests("100m"), "image": image})
        )
    outcomes = settle(kube_client, sides, ["p"], lambda o: o["p"] in ("a", "b"))
    assert outcomes == {"kube": {"p": "b"}, "gangsched": {"p": "b"}}


def test_spread_min_domains(kube_client: Client, sides: dict[str, str]) -> None:
    """A DoNotSchedule zone spread with maxSkew 1 and minDomains 3 over the side's two zones: while there
    are fewer domains than minDomains the global minimum is 0, so each zone takes one matching pod and the
    third waits with PodTopologySpread's reason for both nodes (without minDomains it would be bound)."""
    pods = ["s-0", "s-1", "s-2"]
    spread = [
        {
            "maxSkew": 1,
            "minDomains": 3,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "s"}},
        }
    ]
    for side, ns in sides.items():
        for name in pods:
            create(
                kube_client, pod(ns, name, SCHEDULERS[side], {"app": "s"}, topologySpreadConstraints=spread)
            )
            time.sleep(0.3)  # creation order decides which pod waits
    outcomes = settle(
        kube_client, sides, pods, lambda o: sum(v in ("a", "b") for v in o.values()) == 2 and ":" in o["s-2"]
    )
    for side, got in outcomes.items():
        assert sorted(got[p] for p in ("s-0", "s-1")) == ["a", "b"], (side, got)
        assert "2 node(s) didn't match pod topology spread constraints" in got["s-2"], (side, got)
    assert outcomes["kube"]["s-2"] == outcomes["gangsched"]["s-2"]


def test_preferred_affinity_outweighs_load(kube_client: Client, sides: dict[str, str]) -> None:
    """InterPodAffinity's score the other way: a db pod on the loaded node b; a pod preferring (weight 100)
    to share a hostname with app=db goes there. By hand: a 0, b 100 (times weight 2); totals
    a 95 + 99 + 0 = 194, b 70 + 74 + 200 = 344."""
    outcomes = _web_beside_db(kube_client, sides, db_node="b", kind="podAffinity")
    assert outcomes == {"kube": {"web": "b"}, "gangsched": {"web": "b"}}


def _owned_by_web(client: Client, ns: str) -> dict[str, Any]:
    """metadata naming the ReplicaSet `web` of `ns` as the pod's controller."""
    uid = client.get(ReplicaSet, "web", namespace=ns).metadata.uid
    ref = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": uid, "controller": True}
    return {"ownerReferences": [ref]}


def test_default_spread_from_a_replica_set(kube_client: Client, sides: dict[str, str]) -> None:
    """The system default constraints with the selector of the pod's controller, an apps/v1 ReplicaSet
    (replicas 0: no controller makes pods; the test makes them, owned by it). Node a holds two of its pods,
    node b a 1-CPU filler; web-0, owned too, goes to b. By hand (2 hostnames, 2 zones, ln 4 each): a
    2 ln 4 + 2 + 2 ln 4 + 4 = 11.5 -> 12, b 6; normalised 50 and 100, times 2; a 93 + 98 + 100 = 291,
    b 78 + 93 + 200 = 371. Without the defaults a would win (191 vs 171)."""
    small = {"resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}
    heavy = {"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
    for side, ns in sides.items():
        template = {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "i"}]},
        }
        rs = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "web", "namespace": ns},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}}, "template": template},
        }
        create(kube_client, rs)
        owner = _owned_by_web(kube_client, ns)
        for name in ("w-1", "w-2"):
            doc = pod(ns, name, SCHEDULERS[side], {"app": "web"}, container=small, metadata=owner)
            doc["spec"]["nodeSelector"][ZONE] = f"{ns}-a"
            create(kube_client, doc)
        filler = pod(ns, "filler", SCHEDULERS[side], {"app": "other"}, container=heavy)
        filler["spec"]["nodeSelector"][ZONE] = f"{ns}-b"
        create(kube_client, filler)
    settle(
        kube_client, sides, ["w-1", "w-2", "filler"], lambda o: o == {"w-1": "a", "w-2": "a", "filler": "b"}
    )
    for side, ns in sides.items():
        owner = _owned_by_web(kube_client, ns)
        create(
            kube_client, pod(ns, "web-0", SCHEDULERS[side], {"app": "web"}, container=small, metadata=owner)
        )
    outcomes = settle(kube_client, sides, ["web-0"], lambda o: o["web-0"] in ("a", "b"))
    assert outcomes == {"kube": {"web-0": "b"}, "gangsched": {"web-0": "b"}}
