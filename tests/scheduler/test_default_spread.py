"""PodTopologySpread's system default constraints (hostname maxSkew 3, zone maxSkew 5, ScheduleAnyway) with
the selector upstream's helper.DefaultSelector builds. Cases written by hand from upstream's table tests
(plugins/helper/spread_test.go TestDefaultSelector / TestGetPodServices and podtopologyspread/scoring_test.go,
v1.37.2; names are upstream's) and worked out from scoring.go where noted."""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.api.gates import FeatureGates
from gangsched.api.loader import load_documents
from gangsched.scheduler import Scheduler, run_until_stable
from gangsched.scheduler.default_spread import PodSelectors
from gangsched.scheduler.labelselector import Requirement, Selector
from gangsched.scheduler.podinfo import pod_info
from gangsched.store import Store

from .plugin_cases import evaluator, node, pod

NS = "test"


def objects(*docs: dict[str, Any]) -> Store:
    loaded = load_documents(list(docs), "test.yaml")
    assert not loaded.problems, loaded.problems
    store = Store()
    store.add_all(item.obj for item in loaded.objects)
    return store


def service(name: str, selector: dict[str, str] | None, namespace: str = NS) -> dict[str, Any]:
    spec = {} if selector is None else {"selector": selector}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def owned(kind: str, name: str, selector: Any) -> dict[str, Any]:
    api = "v1" if kind == "ReplicationController" else "apps/v1"
    return {
        "apiVersion": api,
        "kind": kind,
        "metadata": {"name": name, "namespace": NS},
        "spec": {"selector": selector},
    }


def owned_pod(
    labels: dict[str, str], owner: tuple[str, str, str] | None = None, controller: bool = True, **more: Any
) -> Any:
    p = pod("test-pod", labels, namespace=NS, **more)
    if owner is not None:
        api, kind, name = owner
        ref = {"apiVersion": api, "kind": kind, "name": name, "uid": "u", "controller": controller}
        p.metadata = type(p.metadata).from_dict({**p.metadata.to_dict(), "ownerReferences": [ref]})
    return p


def as_set(selector: Selector) -> dict[str, str]:
    """An equality-only selector as the labels.Set upstream's test compares."""
    out = {}
    for r in selector.requirements:
        assert r.operator == "In" and len(r.values) == 1, r
        out[r.key] = next(iter(r.values))
    return out


POD_LABELS = {"podLabelKey": "podLabelVal"}
SERVICE = service("test-service", POD_LABELS)
RS = owned("ReplicaSet", "test-replicaset", {"matchLabels": {"replicaSetLabelKey": "replicaSetLabelVal"}})
RC = owned(
    "ReplicationController", "test-replicationcontroller", {"replicationLabelKey": "replicationLabelVal"}
)
SS = owned("StatefulSet", "test-statefulset", {"matchLabels": {"statefulSetLabelKey": "statefulSetLabelVal"}})


@pytest.mark.parametrize(
    ("docs", "owner", "want"),
    [
        ([], None, {}),  # "DefaultSelector for default case"
        ([SERVICE], None, POD_LABELS),  # "... for no OwnerReference pod case"
        (
            [SERVICE, RS],
            ("apps/v1", "ReplicaSet", "test-replicaset"),
            {**POD_LABELS, "replicaSetLabelKey": "replicaSetLabelVal"},
        ),
        (
            [SERVICE, RC],
            ("v1", "ReplicationController", "test-replicationcontroller"),
            {**POD_LABELS, "replicationLabelKey": "replicationLabelVal"},
        ),
        (
            [SERVICE, SS],
            ("apps/v1", "StatefulSet", "test-statefulset"),
            {**POD_LABELS, "statefulSetLabelKey": "statefulSetLabelVal"},
        ),
        # worked out from spread.go: the owner must be the controller, of exactly apps/v1 or v1, and exist
        ([SERVICE, RS], ("extensions/v1beta1", "ReplicaSet", "test-replicaset"), POD_LABELS),
        ([SERVICE, RS], ("apps/v1", "ReplicaSet", "other"), POD_LABELS),
    ],
)
def test_default_selector(
    docs: list[dict[str, Any]], owner: tuple[str, str, str] | None, want: dict[str, str]
) -> None:
    got = PodSelectors(objects(*docs)).selector_for(owned_pod(POD_LABELS, owner))
    assert as_set(got) == want
    assert got.empty == (not want)


def test_only_the_controller_owner_counts() -> None:
    store = objects(SERVICE, RS)
    p = owned_pod(POD_LABELS, ("apps/v1", "ReplicaSet", "test-replicaset"), controller=False)
    assert as_set(PodSelectors(store).selector_for(p)) == POD_LABELS


def test_services_that_select_the_pod() -> None:
    # TestGetPodServices: service-i selects app=test-i; pods 3 and 4 match none. Plus: a Service without a
    # selector selects nothing, one in another namespace does not count, and a replication controller's
    # selector wins a key it shares with a Service (labels.Merge), matching the pod or not.
    docs = [service(f"service-{i}", {"app": f"test-{i}"}) for i in range(3)]
    docs += [service("no-selector", None), service("elsewhere", {"label": "label-0"}, namespace="other")]
    selectors = PodSelectors(objects(*docs))
    for i in range(5):
        got = selectors.selector_for(owned_pod({"app": f"test-{i}", "label": f"label-{i}"}))
        assert as_set(got) == ({"app": f"test-{i}"} if i < 3 else {})
    rc = owned("ReplicationController", "rc", {"app": "from-rc"})
    got = PodSelectors(objects(*docs, rc)).selector_for(
        owned_pod({"app": "test-0"}, ("v1", "ReplicationController", "rc"))
    )
    assert as_set(got) == {"app": "from-rc"}


def test_replica_set_expressions_are_added() -> None:
    rs = owned("ReplicaSet", "rs1", {"matchExpressions": [{"key": "foo", "operator": "Exists"}]})
    got = PodSelectors(objects(rs)).selector_for(owned_pod({"foo": "tar"}, ("apps/v1", "ReplicaSet", "rs1")))
    assert got == Selector((Requirement("foo", "Exists", frozenset()),))


def spread_scores(nodes: list[Any], existing: list[Any], incoming: Any, store: Store) -> dict[str, int]:
    selector = PodSelectors(store).selector_for(incoming)
    scores = evaluator(nodes, existing).node_scores(pod_info(incoming, 10_000, default_selector=selector))
    return scores.get("PodTopologySpread", {})


def placed(*where: str) -> list[Any]:
    return [pod(f"p-{n}-{i}", {"foo": ""}, namespace=NS, node_name=n) for i, n in enumerate(where)]


def test_system_defaulting_nodes_without_zone_pods_match_service() -> None:
    # "system defaulting, nodes don't have zone, pods match service": matching pods 4/3/2/1; the same scores
    # as one hostname constraint with maxSkew 3 (44/66/77/100).
    nodes = [node(n, {"kubernetes.io/hostname": n}) for n in ("node-a", "node-b", "node-c", "node-d")]
    existing = placed(*["node-a"] * 4, *["node-b"] * 3, *["node-c"] * 2, "node-d")
    incoming = pod("p", {"foo": ""}, namespace=NS)
    store = objects(service("svc", {"foo": ""}))
    assert spread_scores(nodes, existing, incoming, store) == {
        "node-a": 44,
        "node-b": 66,
        "node-c": 77,
        "node-d": 100,
    }
    # Control: nothing selects the pod, so there are no default constraints and no spread score at all.
    assert spread_scores(nodes, existing, incoming, objects(service("svc", {"foo": "other"}))) == {}


def mars_nodes() -> list[Any]:
    # "system default constraints and a replicaset": nodes without a zone are not excluded, they are one
    # more zone (the empty value).
    zone = "topology.kubernetes.io/zone"
    return [
        node("node-a", {"kubernetes.io/hostname": "node-a", zone: "mars"}),
        node("node-b", {"kubernetes.io/hostname": "node-b", zone: "mars"}),
        node("node-c", {"kubernetes.io/hostname": "node-c"}),
        node("node-d", {"kubernetes.io/hostname": "node-d"}),
    ]


def test_system_default_constraints_and_a_replicaset() -> None:
    # Upstream's case checks the preScoreState: hostname over 4 domains (weight ln 6), zone over 2 (mars and
    # "", weight ln 4). With matching pods on node-a (1) and node-c (2), by hand:
    #   node-a: 1*ln6 + 2 + (1*ln4 + 4) = 9.18 -> 9      node-b: 0 + 2 + (1*ln4 + 4) = 7.39 -> 7
    #   node-c: 2*ln6 + 2 (no zone label: no zone term) = 5.58 -> 6      node-d: 2
    #   normalised 100 * (9 + 2 - s) / 9: 22, 44, 55, 100.
    rs = owned("ReplicaSet", "rs1", {"matchExpressions": [{"key": "foo", "operator": "Exists"}]})
    incoming = owned_pod({"foo": "tar", "baz": "sup"}, ("apps/v1", "ReplicaSet", "rs1"))
    existing = placed("node-a", "node-c", "node-c")
    assert spread_scores(mars_nodes(), existing, incoming, objects(rs)) == {
        "node-a": 22,
        "node-b": 44,
        "node-c": 55,
        "node-d": 100,
    }


def test_pod_with_constraints_of_its_own_gets_no_defaults() -> None:
    # "default constraints and a replicaset, but pod has constraints": only the pod's own (here a hard one,
    # so nothing to score).
    rs = owned("ReplicaSet", "rs1", {"matchExpressions": [{"key": "foo", "operator": "Exists"}]})
    hard = {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule"}
    incoming = owned_pod({"foo": "tar"}, ("apps/v1", "ReplicaSet", "rs1"), spread=[hard])
    assert spread_scores(mars_nodes(), placed("node-a"), incoming, objects(rs)) == {}


def test_empty_zone_value_shares_the_unlabelled_domain() -> None:
    # Worked out from scoring.go: a missing zone label reads as "", so a node labelled zone="" counts the
    # matching pods of unlabelled nodes. Nodes a (zone x), e (zone ""), c (none); 2 matching pods on c.
    # Hostname: 3 domains (ln 5); zone: 2 domains, x and "" (ln 4).
    #   a: 2 + (0 + 4) = 6      e: 2 + (2*ln4 + 4) = 8.77 -> 9      c: 2*ln5 + 2 = 5.22 -> 5
    #   normalised 100 * (9 + 5 - s) / 9: a 88, e 55, c 100.
    zone = "topology.kubernetes.io/zone"
    nodes = [
        node("a", {"kubernetes.io/hostname": "a", zone: "x"}),
        node("e", {"kubernetes.io/hostname": "e", zone: ""}),
        node("c", {"kubernetes.io/hostname": "c"}),
    ]
    store = objects(service("svc", {"foo": ""}))
    got = spread_scores(nodes, placed("c", "c"), pod("p", {"foo": ""}, namespace=NS), store)
    assert got == {"a": 88, "e": 55, "c": 100}


def _bound_node(service_when: str | None) -> str:
    """Where a pending pod labelled foo goes: node-a holds one pod labelled foo (100m), node-b one that is
    not (2 CPUs), both 4 CPUs. A Service selecting foo is in the store before the scheduler starts
    ("before"), added once it runs ("after"), or absent (None)."""
    room = {"cpu": "4", "memory": "32Gi", "pods": "110"}
    nodes = [node(n, {"kubernetes.io/hostname": n}, allocatable=room) for n in ("node-a", "node-b")]
    store = objects(*([service("svc", {"foo": ""})] if service_when == "before" else []))
    store.add_all(nodes)
    store.add(pod("m", {"foo": ""}, namespace=NS, node_name="node-a"))
    store.add(pod("x", {}, namespace=NS, node_name="node-b", cpu="2"))
    store.add(pod("p", {"foo": ""}, namespace=NS))
    scheduler = Scheduler(store, FeatureGates())
    if service_when == "after":
        store.add(objects(service("svc", {"foo": ""})).get("Service", (NS, "svc")))
    run_until_stable(store, scheduler)
    bound = store.get("Pod", (NS, "p"))
    assert bound is not None
    return str(bound.spec.nodeName)


def test_a_service_added_while_the_scheduler_runs_gives_the_default_constraints() -> None:
    # Without a Service the less allocated node-a wins; a Service selecting foo brings the default hostname
    # constraint, which scores node-b (no pod labelled foo) above node-a, with twice NodeResourcesFit's
    # weight. The scheduler must see a Service that arrives after it started as one that was there before.
    assert _bound_node(None) == "node-a"
    assert _bound_node("before") == "node-b"
    assert _bound_node("after") == "node-b"
