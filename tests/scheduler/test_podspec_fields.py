"""Nothing silently ignored: every PodSpec field kube-scheduler v1.37's default profile reads is either
honoured (a case below shows the field changing the decision) or refused (the pod waits with a message naming
the field). Fields no scheduler plugin reads are listed with where upstream uses them instead. A PodSpec field
that lightkube-models gains later fails `test_every_field_is_classified` until it is placed in one list."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest
from lightkube.models import core_v1

from gangsched.api.gates import FeatureGates
from gangsched.scheduler import Profile, Scheduler, run_until_stable
from gangsched.scheduler.podinfo import pod_info
from gangsched.scheduler.scheduler import SCHEDULING_GATES_MESSAGE
from gangsched.store import Store

from .plugin_cases import evaluator, node, pod, term, verdicts

# Fields no filter, score, PreEnqueue or queue plugin of the default profile reads, with what reads them.
NOT_READ = {
    "activeDeadlineSeconds": "kubelet",
    "automountServiceAccountToken": "ServiceAccount admission, kubelet",
    "dnsConfig": "kubelet",
    "dnsPolicy": "kubelet",
    "enableServiceLinks": "kubelet",
    "ephemeralContainers": "kubelet; resource.PodRequests leaves them out of NodeResourcesFit",
    "evictionResponders": "eviction, not scheduling",
    "hostAliases": "kubelet",
    "hostIPC": "kubelet",
    "hostPID": "kubelet",
    "hostUsers": "kubelet",
    "hostname": "kubelet",
    "hostnameOverride": "kubelet",
    "imagePullSecrets": "kubelet",
    "os": "NodeDeclaredFeatures only, which is not in the default profile (gate off)",
    "readinessGates": "kubelet, endpoints",
    "restartPolicy": "kubelet (init containers' own restartPolicy is read: sidecars)",
    "runtimeClassName": "RuntimeClass admission, which sets spec.overhead (read below)",
    "securityContext": "kubelet, admission",
    "serviceAccount": "admission",
    "serviceAccountName": "admission",
    "setHostnameAsFQDN": "kubelet",
    "shareProcessNamespace": "kubelet",
    "subdomain": "kubelet, DNS",
    "terminationGracePeriodSeconds": "kubelet (preemption deletes victims with their grace period)",
}


def differs(nodes: list[Any], existing: list[Any], without: Any, with_field: Any) -> None:
    """The field changes at least one node's verdict."""
    ev = evaluator(nodes, existing)
    assert verdicts(ev, without) != verdicts(ev, with_field)


def run(objects: list[Any], profile: Profile | None = None) -> Store:
    store = Store()
    store.add_all(objects)
    run_until_stable(store, Scheduler(store, FeatureGates(), profile=profile or Profile()))
    return store


def bound(store: Store, name: str) -> str | None:
    got = store.get("Pod", ("default", name))
    assert got is not None
    node_name: str | None = got.spec.nodeName
    return node_name


def message(store: Store, name: str) -> str:
    got = store.get("Pod", ("default", name))
    assert got is not None and got.status is not None
    return next(c.message for c in got.status.conditions or [] if c.type == "PodScheduled")


TWO = [node("a", {"zone": "a", "disk": "ssd"}), node("b", {"zone": "b"})]


def _affinity() -> None:
    differs(
        TWO,
        [],
        pod(),
        pod(node_affinity=[{"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}]),
    )
    existing = [pod("x", {"app": "x"}, node_name="a")]
    differs(TWO, existing, pod(), pod(affinity=[term("app", "In", ["x"], "zone")]))
    differs(TWO, existing, pod(), pod(anti=[term("app", "In", ["x"], "zone")]))


def _containers() -> None:
    differs(TWO, [], pod(), pod(cpu="100"))  # requests
    holder = [pod("h", node_name="a", ports=[{"containerPort": 1, "hostPort": 9000}])]
    differs(TWO, holder, pod(), pod(ports=[{"containerPort": 1, "hostPort": 9000}]))
    images = [node("a", images=[{"names": ["big:1"], "sizeBytes": 2_000_000_000}]), node("b")]
    ev = evaluator(images, [])
    assert ev.node_scores(pod_info(pod(images=["big:1"]), 0)).get("ImageLocality", {}).get("a", 0) > 0


def _init_containers() -> None:
    big_init = pod()
    big_init.spec.initContainers = [
        core_v1.Container(
            name="i", image="i", resources=core_v1.ResourceRequirements(requests={"cpu": "100"})
        )
    ]
    differs(TWO, [], pod(), core_v1.Pod.from_dict(big_init.to_dict()))


def _host_network() -> None:
    from gangsched.api.defaults import apply_defaults

    holder = [pod("h", node_name="a", ports=[{"containerPort": 1, "hostPort": 9000}])]
    on_host = pod(ports=[{"containerPort": 9000}]).to_dict()
    on_host["spec"]["hostNetwork"] = True
    for c in on_host["spec"]["containers"]:
        for p in c["ports"]:
            p.pop("hostPort", None)
    obj = core_v1.Pod.from_dict(on_host)
    apply_defaults([obj])  # kube-apiserver's defaulting: container ports become host ports
    differs(TWO, holder, pod(ports=[{"containerPort": 9000}]), obj)


def _node_name() -> None:
    placed = pod("p", node_name="b", node_selector={"disk": "ssd"})
    store = run([*TWO, placed])
    assert bound(store, "p") == "b"  # already bound: never scheduled again, whatever else it says


def _node_selector() -> None:
    differs(TWO, [], pod(), pod(node_selector={"disk": "ssd"}))


def _overhead() -> None:
    heavy = pod()
    heavy.spec.overhead = {"cpu": "100"}
    differs(TWO, [], pod(), core_v1.Pod.from_dict(heavy.to_dict()))


def _priority() -> None:
    one = [node("only", **{"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "110"}})]
    first, second = pod("first", cpu="1"), pod("second", cpu="1")
    second.spec.priority = 10
    store = run([*one, first, second])
    assert bound(store, "second") == "only" and bound(store, "first") is None


def _preemption_policy() -> None:
    one = [node("only", **{"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "110"}})]
    for policy, evicted in (("PreemptLowerPriority", True), ("Never", False)):
        victim, high = pod("victim", cpu="1", node_name="only"), pod("high", cpu="1")
        high.spec.priority, high.spec.preemptionPolicy = 10, policy
        store = run([*one, victim, high])
        assert bool(store.evictions) is evicted


def _resources() -> None:
    pod_level = pod()
    pod_level.spec.resources = core_v1.ResourceRequirements(requests={"cpu": "100"})
    differs(TWO, [], pod(), core_v1.Pod.from_dict(pod_level.to_dict()))


def _scheduler_name() -> None:
    other = pod("p")
    other.spec.schedulerName = "someone-else"
    store = run([*TWO, other], Profile(scheduler_names=frozenset({"default-scheduler"})))
    assert bound(store, "p") is None


def _scheduling_gates() -> None:
    gated = pod("p")
    gated.spec.schedulingGates = [core_v1.PodSchedulingGate(name="g")]
    store = run([*TWO, gated])
    assert bound(store, "p") is None and message(store, "p") == SCHEDULING_GATES_MESSAGE


def _scheduling_group() -> None:
    member = pod("p")
    member.spec.schedulingGroup = core_v1.PodSchedulingGroup(podGroupName="missing")
    store = run([*TWO, member])
    assert bound(store, "p") is None  # waits for its PodGroup
    assert "missing" in message(store, "p")


def _tolerations() -> None:
    tainted = [node("t", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])]
    tolerant = pod()
    tolerant.spec.tolerations = [core_v1.Toleration(key="k", operator="Exists")]
    differs(tainted, [], pod(), core_v1.Pod.from_dict(tolerant.to_dict()))


def _topology_spread() -> None:
    existing = [pod("x", {"app": "x"}, node_name="a")]
    constraint = {
        "maxSkew": 1,
        "topologyKey": "zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "x"}},
    }
    differs(TWO, existing, pod(labels={"app": "x"}), pod(labels={"app": "x"}, spread=[constraint]))


def _image_volume(spec: Any) -> None:
    spec.volumes = [core_v1.Volume(name="v", image=core_v1.ImageVolumeSource(reference="big:1"))]


def _waits_with(mutate: Callable[[Any], None], wanted: str) -> Callable[[], None]:
    def check() -> None:
        p = pod("p")
        mutate(p.spec)
        store = run([*TWO, core_v1.Pod.from_dict(p.to_dict())])
        assert bound(store, "p") is None
        assert wanted in message(store, "p")

    return check


def _volumes() -> None:
    # an image volume counts for ImageLocality; a PersistentVolumeClaim is read by VolumeBinding (here: a
    # claim that does not exist, upstream's PreFilter message); an rbd volume is compared with the node's
    # pods (an inline CSI volume is read by no filter, as upstream)
    images = [node("a", images=[{"names": ["big:1"], "sizeBytes": 2_000_000_000}]), node("b")]
    with_volume = pod()
    _image_volume(with_volume.spec)
    ev = evaluator(images, [])
    assert ev.node_scores(pod_info(core_v1.Pod.from_dict(with_volume.to_dict()), 0))["ImageLocality"]["a"] > 0
    claim = core_v1.PersistentVolumeClaimVolumeSource(claimName="d")
    _waits_with(
        lambda s: setattr(s, "volumes", [core_v1.Volume(name="d", persistentVolumeClaim=claim)]),
        'persistentvolumeclaim "d" not found',
    )()
    ephemeral = core_v1.EphemeralVolumeSource(
        volumeClaimTemplate=core_v1.PersistentVolumeClaimTemplate(
            spec=core_v1.PersistentVolumeClaimSpec(accessModes=["ReadWriteOnce"])
        )
    )
    # read by VolumeBinding as the claim `<pod>-<volume>`; without the ephemeral volume controller's claim
    # the pod waits with upstream's PreFilter message
    _waits_with(
        lambda s: setattr(s, "volumes", [core_v1.Volume(name="e", ephemeral=ephemeral)]),
        'waiting for ephemeral volume controller to create the persistentvolumeclaim "p-e"',
    )()
    # an rbd image another pod on node a mounts read-write keeps the pod off a (VolumeRestrictions)
    rbd = core_v1.RBDVolumeSource(monitors=["m"], image="disk-1")
    holder = pod("h", node_name="a")
    holder.spec.volumes = [core_v1.Volume(name="r", rbd=rbd)]
    with_rbd = pod("p")
    with_rbd.spec.volumes = [core_v1.Volume(name="r", rbd=rbd)]
    store = run([*TWO, core_v1.Pod.from_dict(holder.to_dict()), core_v1.Pod.from_dict(with_rbd.to_dict())])
    assert bound(store, "p") == "b"
    # an inline Azure disk is counted by NodeVolumeLimits once migrated to CSI (scenario
    # volumes/inline-migrated-volume-limits.yaml), but one of a kind CSI translation refuses (upstream: an
    # error on every node with a CSINode) is refused
    shared = core_v1.AzureDiskVolumeSource(diskName="d", diskURI="uri", kind="Shared")
    _waits_with(
        lambda s: setattr(
            s, "volumes", [core_v1.Volume(name="cfg"), core_v1.Volume(name="z", azureDisk=shared)]
        ),
        "spec.volumes[1].azureDisk.kind Shared is not supported by gangsched yet",
    )()


HONOURED_OR_REFUSED: dict[str, Callable[[], None]] = {
    "affinity": _affinity,
    "containers": _containers,
    "hostNetwork": _host_network,
    "initContainers": _init_containers,
    "nodeName": _node_name,
    "nodeSelector": _node_selector,
    "overhead": _overhead,
    "preemptionPolicy": _preemption_policy,
    "priority": _priority,
    "priorityClassName": _priority,  # admission resolves it into spec.priority (api/defaults.py)
    "resourceClaims": _waits_with(  # DynamicResources: a claim that does not exist, upstream's message
        lambda s: setattr(s, "resourceClaims", [core_v1.PodResourceClaim(name="c", resourceClaimName="c")]),
        'resourceclaim "c" not found',
    ),
    "resources": _resources,
    "schedulerName": _scheduler_name,
    "schedulingGates": _scheduling_gates,
    "schedulingGroup": _scheduling_group,
    "tolerations": _tolerations,
    "topologySpreadConstraints": _topology_spread,
    "volumes": _volumes,
}


def test_every_field_is_classified() -> None:
    fields = set(inspect.signature(core_v1.PodSpec).parameters)
    assert fields == set(NOT_READ) | set(HONOURED_OR_REFUSED)
    assert not set(NOT_READ) & set(HONOURED_OR_REFUSED)


@pytest.mark.parametrize("field", sorted(HONOURED_OR_REFUSED))
def test_field_is_honoured_or_refused(field: str) -> None:
    HONOURED_OR_REFUSED[field]()
