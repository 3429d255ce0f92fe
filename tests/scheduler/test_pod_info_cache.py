"""pod_info finds a pod's traits by its spec's encoding (less schedulingGroup) and the few other fields
pod_traits reads: namespace, labels, deletionTimestamp, and the default spread selector. Pods that differ in
any of these must not share traits; pods of one template in different gangs must."""

from __future__ import annotations

import datetime as dt
from typing import Any

import msgspec

from gangsched.api.gates import FeatureGates
from gangsched.scheduler import podinfo
from gangsched.scheduler.labelselector import Requirement, Selector
from gangsched.scheduler.podinfo import pod_info

from ..scenarios.harness import load_objects


def _pod(name: str, *, namespace: str = "team", group: str | None = "g", labels: Any = None,
         host_port: int | None = None) -> Any:  # fmt: skip
    container: dict[str, Any] = {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}
    if host_port is not None:
        container["ports"] = [{"containerPort": 80, "hostPort": host_port}]
    spec: dict[str, Any] = {"containers": [container]}
    if group is not None:
        spec["schedulingGroup"] = {"podGroupName": group}
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels is not None:
        meta["labels"] = labels
    doc = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
    [obj] = load_objects([doc], "test", FeatureGates())
    return obj


def test_one_template_in_two_gangs_shares_traits_and_keeps_its_group() -> None:
    a, b = _pod("a", group="g1", labels={"app": "w"}), _pod("b", group="g2", labels={"app": "w"})
    pa, pb = pod_info(a, 1), pod_info(b, 2)
    assert pa.traits is pb.traits
    assert pa.signature == pb.signature
    assert (pa.group, pb.group) == (("team", "g1"), ("team", "g2"))
    # the spec is left as it was (its group is taken out only while it is encoded)
    assert a.spec.schedulingGroup.podGroupName == "g1"
    assert b.spec.schedulingGroup.podGroupName == "g2"


def test_labels_namespace_ports_and_termination_each_make_other_traits() -> None:
    base = pod_info(_pod("a", labels={"app": "w"}), 1).traits
    relabelled = pod_info(_pod("b", labels={"app": "v"}), 2).traits
    assert relabelled.labels == {"app": "v"} and base.labels == {"app": "w"}
    unlabelled = pod_info(_pod("c"), 3).traits
    assert unlabelled.labels == {}
    elsewhere = pod_info(_pod("d", namespace="other", labels={"app": "w"}), 4).traits
    assert elsewhere.namespace == "other" and base.namespace == "team"
    ported = pod_info(_pod("e", labels={"app": "w"}, host_port=8080), 5).traits
    assert ported.host_ports == (("0.0.0.0", "TCP", 8080),) and base.host_ports == ()
    going = _pod("f", labels={"app": "w"})
    going.metadata.deletionTimestamp = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    assert pod_info(going, 6).traits.terminating and not base.terminating
    assert len({id(t) for t in (base, relabelled, unlabelled, elsewhere, ported)}) == 5


def test_labels_in_another_order_share_traits() -> None:
    one = pod_info(_pod("a", labels={"x": "1", "y": "2"}), 1).traits
    other = pod_info(_pod("b", labels={"y": "2", "x": "1"}), 2).traits
    assert one is other


def test_the_default_spread_selector_is_read() -> None:
    selector = Selector((Requirement("app", "In", frozenset(["w"])),))
    plain = pod_info(_pod("a", labels={"app": "w"}), 1).traits
    spread = pod_info(_pod("b", labels={"app": "w"}), 2, default_selector=selector).traits
    assert plain.spread == () and not plain.spread_defaulted
    assert spread.spread_defaulted and [c.topology_key for c in spread.spread] == [
        "kubernetes.io/hostname",
        "topology.kubernetes.io/zone",
    ]


def test_what_the_caches_give_is_what_a_pod_makes_afresh() -> None:
    """One lookup finds both what the spec gives and the traits: each pod's PodInfo, taken from the caches
    filled by the pods before it, equals the one made with the caches empty."""
    pods = [
        _pod("a", labels={"app": "w"}),
        _pod("b", group="g2", labels={"app": "w"}),
        _pod("c", labels={"app": "v"}),
        _pod("d", namespace="other", labels={"app": "w"}),
        _pod("e", labels={"app": "w"}, host_port=8080),
        _pod("f", group=None, labels={"app": "w"}, host_port=8080),
    ]
    cached = [pod_info(p, i) for i, p in enumerate(pods + pods)][len(pods) :]
    for i, (p, got) in enumerate(zip(pods, cached, strict=True)):
        for cache in (podinfo._POD_CACHE, podinfo._SPEC_CACHE, podinfo._REQUESTS_CACHE):
            cache.clear()
        assert msgspec.structs.asdict(got) == msgspec.structs.asdict(pod_info(p, len(pods) + i))
