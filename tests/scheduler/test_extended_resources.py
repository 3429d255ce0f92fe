"""DRAExtendedResource (extended.py): the special claim's requests and mappings as upstream's
createRequestsAndMappings builds them, which DeviceClass serves a resource name, and the stale special
claim's cycle (Filter rejects every node, PostFilter deletes the claim, the next cycle allocates anew).
Expected values are upstream's unit tests' (dynamicresources_test.go, extendedresourcecache_test.go) or
derived by hand from their rules."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import yaml
from lightkube.models import core_v1, meta_v1, resource_v1

from gangsched.api.gates import FeatureGates
from gangsched.scheduler import Scheduler
from gangsched.scheduler.extended import (
    is_dra_extended_name,
    is_special_for,
    resource_classes,
    special_claim,
    special_claim_name,
    special_requests,
)
from gangsched.store import Store

from ..scenarios.harness import load_objects

DEVICES = Path(__file__).parent.parent / "scenarios" / "devices"
IMPLICIT = "deviceclass.resource.kubernetes.io/my-resource-class"


def _class(name: str, extended: str | None = None, created: int = 0) -> Any:
    stamp = dt.datetime(2026, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=created)
    return resource_v1.DeviceClass(
        metadata=meta_v1.ObjectMeta(name=name, creationTimestamp=stamp),
        spec=resource_v1.DeviceClassSpec(extendedResourceName=extended),
    )


def _container(name: str, limits: dict[str, str], restart: str | None = None) -> Any:
    return core_v1.Container(
        name=name, image="i", resources=core_v1.ResourceRequirements(limits=limits), restartPolicy=restart
    )


def _spec(containers: list[Any], init: list[Any] | None = None) -> Any:
    return core_v1.PodSpec(containers=containers, initContainers=init)


def _counts(requests: list[dict[str, Any]]) -> list[tuple[str, str, int]]:
    return [(r["name"], r["exactly"]["deviceClassName"], r["exactly"]["count"]) for r in requests]


def test_names_that_dra_may_serve() -> None:
    assert is_dra_extended_name("example.com/gpu")
    assert is_dra_extended_name(IMPLICIT)  # a kubernetes.io name, accepted by its prefix
    assert not is_dra_extended_name("cpu")
    assert not is_dra_extended_name("hugepages-2Mi")
    assert not is_dra_extended_name("kubernetes.io/foo")
    assert not is_dra_extended_name("requests.example.com/gpu")


def test_one_container_implicit_and_explicit_name_of_one_class() -> None:
    """podWithImplicitExtendedResourceName: one container asks for 1 by the class's implicit name and 2 by
    its extendedResourceName; sorted, the implicit name is the container's request 0 (implicitExtended
    ResourceClaim: container-0-request-0 x1, container-0-request-1 x2)."""
    classes = resource_classes([_class("my-resource-class", "example.com/gpu")])
    spec = _spec([_container("c", {IMPLICIT: "1", "example.com/gpu": "2"})])
    requests, mappings = special_requests(spec, [IMPLICIT, "example.com/gpu"], classes)
    assert _counts(requests) == [
        ("container-0-request-0", "my-resource-class", 1),
        ("container-0-request-1", "my-resource-class", 2),
    ]
    assert [m["requestName"] for m in mappings] == ["container-0-request-0", "container-0-request-1"]


def test_two_containers() -> None:
    """podWithImplicitExtendedResourceNameTwoContainers: container-0-request-0 x1, container-1-request-0
    x2."""
    classes = resource_classes([_class("my-resource-class", "example.com/gpu")])
    spec = _spec([_container("a", {IMPLICIT: "1"}), _container("b", {"example.com/gpu": "2"})])
    requests, mappings = special_requests(spec, [IMPLICIT, "example.com/gpu"], classes)
    assert _counts(requests) == [
        ("container-0-request-0", "my-resource-class", 1),
        ("container-1-request-0", "my-resource-class", 2),
    ]
    assert mappings == [
        {"containerName": "a", "resourceName": IMPLICIT, "requestName": "container-0-request-0"},
        {"containerName": "b", "resourceName": "example.com/gpu", "requestName": "container-1-request-0"},
    ]


def test_only_the_resources_dra_serves_on_the_node_get_requests() -> None:
    """On a node whose allocatable offers example.com/gpu2 (device plugin), only example.com/gpu is asked of
    DRA (extended-resource-one-device-plugin-one-dra: container-0-request-1 is gpu2's index, not asked)."""
    classes = resource_classes([_class("gpu", "example.com/gpu"), _class("gpu2", "example.com/gpu2")])
    spec = _spec([_container("c", {"example.com/gpu": "1", "example.com/gpu2": "1"})])
    requests, _ = special_requests(spec, ["example.com/gpu2"], classes)
    assert _counts(requests) == [("container-0-request-1", "gpu2", 1)]


def test_sidecar_is_long_lived_and_init_containers_reuse_later_requests() -> None:
    """A sidecar (init container with restartPolicy Always) keeps its own request; the init container
    before it reuses the sidecar's and the main container's devices (3 >= 2) and asks for nothing."""
    classes = resource_classes([_class("gpu", "example.com/gpu")])
    spec = _spec(
        [_container("main", {"example.com/gpu": "2"})],
        init=[
            _container("setup", {"example.com/gpu": "2"}),
            _container("side", {"example.com/gpu": "1"}, "Always"),
        ],
    )
    requests, mappings = special_requests(spec, ["example.com/gpu"], classes)
    assert _counts(requests) == [("container-1-request-0", "gpu", 1), ("container-2-request-0", "gpu", 2)]
    assert [(m["containerName"], m["requestName"]) for m in mappings] == [
        ("side", "container-1-request-0"),
        ("main", "container-2-request-0"),
        ("setup", "container-1-request-0"),
        ("setup", "container-2-request-0"),
    ]


def test_which_class_serves_a_name() -> None:
    """extendedresourcecache: the newer class wins a clash, equal timestamps go to the lower name, and a
    class that loses on arrival keeps no mapping at all, not even its implicit name."""
    old, new = _class("old", "example.com/gpu", 0), _class("new", "example.com/gpu", 10)
    assert resource_classes([old, new])["example.com/gpu"] is new
    served = resource_classes([new, old])
    assert served["example.com/gpu"] is new
    assert "deviceclass.resource.kubernetes.io/old" not in served
    a, b = _class("a", "example.com/gpu", 5), _class("b", "example.com/gpu", 5)
    assert resource_classes([b, a])["example.com/gpu"] is a
    assert resource_classes([a, b])["example.com/gpu"] is a
    plain = _class("plain")
    assert resource_classes([plain]) == {"deviceclass.resource.kubernetes.io/plain": plain}


def test_special_claim_metadata() -> None:
    """preFilterExtendedResources' claim: generateName from the pod, the pod as controller, annotated; its
    name is the generated one cut to 58 characters plus 5."""
    pod = core_v1.Pod(metadata=meta_v1.ObjectMeta(name="p" * 70, namespace="ns", uid="u"), spec=_spec([]))
    claim = special_claim(pod, [])
    assert claim.metadata.generateName == "p" * 70 + "-extended-resources-"
    assert claim.metadata.name == special_claim_name("p" * 70, "ns")
    assert len(claim.metadata.name) == 63 and claim.metadata.name.startswith("p" * 58)
    assert is_special_for(claim, "p" * 70, "u")
    assert not is_special_for(claim, "p" * 70, "other-uid")


def test_stale_special_claim_is_deleted_then_the_pod_is_placed() -> None:
    spec = yaml.safe_load((DEVICES / "extended-resource-stale-claim.yaml").read_text())
    store = Store()
    store.add_all(load_objects(spec["objects"], "stale", FeatureGates()))
    scheduler = Scheduler(store, FeatureGates(), seed=0)
    decision = scheduler.schedule_one(0.0)
    assert decision is not None and not decision.bindings
    assert decision.claim_deletions == [("default", "p-extended-resources-old00")]
    store.apply(decision)
    (cond,) = [c for c in store.get("Pod", ("default", "p")).status.conditions if c.type == "PodScheduled"]
    assert cond.message == (
        "0/1 nodes are available: 1 cannot schedule extended resource claim. deletion of ResourceClaim "
        "completed, preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )
    assert store.get("ResourceClaim", ("default", "p-extended-resources-old00")) is None
    decision = scheduler.schedule_one(10.0)
    assert decision is not None
    assert [(b.pod[1], b.node) for b in decision.bindings] == [("p", "node-1")]
    (claim,) = decision.claims
    assert claim.create is not None and claim.request_mappings
