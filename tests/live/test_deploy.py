"""deploy/ on the real API server (RBAC on): gangsched runs as the deployed ServiceAccount, from the installed
wheel, with the in-cluster configuration (tests/live/deployment.py), and

- every scheduling case of the side-by-side suite reaches upstream's outcome as that account;
- two replicas elect a leader, and the other takes over when the leader is killed;
- every rule of its ClusterRole and Role is needed: without it, something named breaks;
- the account cannot read Secrets or write Nodes;
- the pod template passes the namespace's Pod Security "restricted" admission;
- the dashboard, loaded in a real headless Chromium, shows the queue, the gangs and GPUs per node.
"""

from __future__ import annotations

import base64
import copy
import os
import re
import secrets
import shutil
import struct
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from lightkube import Client
from lightkube.resources.core_v1 import Event, Pod
from lightkube.types import PatchType

from gangsched.live.controlplane import LocalControlPlane, ManagedProcess, free_port
from gangsched.live.fakekubelet import FakeKubelet

from ..conftest import unavailable
from . import paired
from . import test_volumes_devices_side_by_side as vd
from .deployment import NAMESPACE, PodFiles, container_args, in_cluster_replica, install_deploy, put_object
from .podgroup_cases import CASES, Harness, ensure_priority_classes
from .test_apiserver import wait_for
from .test_gangsched_run import _get, _metric

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="replicas need a mount namespace (root)")


@pytest.fixture(scope="module")
def deployed(control_plane: LocalControlPlane) -> Iterator[list[dict[str, Any]]]:
    """deploy/*.yaml installed (the Deployment too: with no controller-manager it makes no pods)."""
    objects = install_deploy(control_plane)
    yield objects
    # The ClusterRole as deployed, whatever a test did to it.
    for obj in objects:
        if obj["kind"] in ("ClusterRole", "Role"):
            put_object(control_plane, obj)


@pytest.fixture(scope="module")
def pod_files(control_plane: LocalControlPlane, deployed: list[dict[str, Any]]) -> Iterator[PodFiles]:
    files = PodFiles(control_plane, deployed)
    yield files
    files.remove()


class Replicas:
    """Starts replicas of the Deployment; what it started is stopped at the end of the test."""

    def __init__(self, cp: LocalControlPlane, gangsched: Path, files: PodFiles, objects: list[dict[str, Any]],
                 logs: Path) -> None:  # fmt: skip
        self.cp, self.gangsched, self.files, self.objects, self.logs = cp, gangsched, files, objects, logs
        self.started: list[ManagedProcess] = []

    def start(self, *flags: str) -> tuple[ManagedProcess, int]:
        """A replica with the Deployment's args (its config file where the ConfigMap is mounted) and
        `flags` on top; listening on 127.0.0.1 (many replicas share this host). Returns it and its port."""
        port = free_port()
        args = [
            a.replace("/etc/gangsched/config.yaml", str(self.files.config))
            for a in container_args(self.objects)
        ]
        args += ["--bind-address=127.0.0.1", f"--metrics-port={port}", *flags]
        log = self.logs / f"replica-{len(self.started) + 1}-{port}.log"
        proc = in_cluster_replica(self.cp, self.gangsched, self.files, args, log)
        self.started.append(proc)
        return proc, port

    def stop_all(self) -> None:
        for proc in self.started:
            proc.stop(timeout=5)


@pytest.fixture
def replicas(
    control_plane: LocalControlPlane,
    installed_gangsched: Path,
    pod_files: PodFiles,
    deployed: list[dict[str, Any]],
    tmp_path: Path,
) -> Iterator[Replicas]:
    r = Replicas(control_plane, installed_gangsched, pod_files, deployed, tmp_path)
    yield r
    r.stop_all()


LEASE = f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/gangsched"
FAST_LEASE = ["--leader-elect-lease-duration=4", "--leader-elect-renew-deadline=3",
              "--leader-elect-retry-period=0.5"]  # fmt: skip


def _scheduler_name() -> str:
    return f"gs-sa-{secrets.token_hex(3)}"


# --- all scheduling cases, as the ServiceAccount ------------------------------------------------------------


@pytest.fixture(scope="module")
def sa_scheduler(
    control_plane: LocalControlPlane,
    installed_gangsched: Path,
    pod_files: PodFiles,
    deployed: list[dict[str, Any]],
    fake_kubelet: FakeKubelet,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[str, ManagedProcess, int]]:
    """One replica (no leader election) for the cases below: (its scheduler name, process, port)."""
    r = Replicas(control_plane, installed_gangsched, pod_files, deployed, tmp_path_factory.mktemp("sa"))
    name = _scheduler_name()
    proc, port = r.start(f"--scheduler-name={name}", "--no-leader-elect")
    wait_for("the replica is ready", lambda: _get(f"http://127.0.0.1:{port}/readyz")[0] == 200, 60)
    yield name, proc, port
    r.stop_all()


@pytest.fixture
def harness(fresh_namespace: Callable[[str, str | None], Harness]) -> Callable[[str, str], Harness]:
    return fresh_namespace


@pytest.mark.parametrize("case", list(CASES))
def test_every_case_as_the_service_account(
    case: str,
    kube_client: Client,
    sa_scheduler: tuple[str, ManagedProcess, int],
    harness: Callable[[str, str], Harness],
) -> None:
    name, proc, _ = sa_scheduler
    ensure_priority_classes(kube_client)
    h = harness(f"sa-{case}"[:40], name)
    checkpoints = CASES[case](h)
    failed = [(n, want, got) for n, want, got in checkpoints if want != got]
    assert not failed, f"{failed}\n{proc.log_tail()}"
    # Nothing it tried for this case was forbidden. (Only this case's lines: writes about an earlier case's
    # namespace, terminating now, are refused with 403 too, whatever the role.)
    refused = [line for line in refused_lines(proc.log_path.read_text()) if h.namespace in line]
    assert not refused, refused


# A refusal as gangsched logs one: "<what>: 403 Forbidden ..." (the applier, the Lease) or "list Pod: 403"
# (the informers). A bare "403" also matches the hex of a leader identity or a uid ("ac40338f").
_REFUSED = re.compile(r": 403\b")


def refused_lines(log: str) -> list[str]:
    """The lines of a gangsched log that report a write or read refused with 403."""
    return [line for line in log.splitlines() if _REFUSED.search(line)]


# --- installed as deployed: two replicas, leader election, hand-over ----------------------------------------


def test_two_replicas_elect_a_leader_and_hand_over(
    kube_client: Client,
    replicas: Replicas,
    harness: Callable[[str, str], Harness],
    control_plane: LocalControlPlane,
) -> None:
    name = _scheduler_name()
    started = [replicas.start(f"--scheduler-name={name}", *FAST_LEASE) for _ in range(2)]
    ports = [port for _, port in started]

    def leaders() -> list[int]:
        master = "gangsched_leader_election_master_status"
        return [i for i, p in enumerate(ports) if _metric(_get(f"http://127.0.0.1:{p}/metrics")[1], master)]

    for path in ("healthz", "readyz"):  # a standby is alive and ready too
        wait_for(f"both {path}", lambda path=path: all(_get(f"http://127.0.0.1:{p}/{path}")[0] == 200
                                                       for p in ports), 60)  # fmt: skip
    (first,) = wait_for("one leader", leaders, 30)
    other = 1 - first
    # The Lease the deployed Role allows, in the deployed namespace, held by the leader.
    code, lease = control_plane.request("GET", LEASE)
    assert code == 200 and lease["spec"]["holderIdentity"], lease

    h = harness("sa-handover", name)
    h.group("a", 2)
    for i in range(2):
        h.pod(f"a-{i}", "a")
    wait_for("gang a bound", lambda: all(h.outcome().bound.values()) and len(h.outcome().bound) == 2)
    started[first][0].stop(timeout=0)  # kill -9: the Lease is not released; the other waits for it to expire
    wait_for("the other replica leads", lambda: leaders() == [other], 30)
    h.group("b", 2)
    for i in range(2):
        h.pod(f"b-{i}", "b")
    wait_for("gang b bound", lambda: all(h.outcome().bound.values()) and len(h.outcome().bound) == 4)
    success = _metric(
        _get(f"http://127.0.0.1:{ports[other]}/metrics")[1], 'gangsched_bindings_total{result="success"}'
    )
    assert success == 2  # gang b, by the new leader
    code, lease = control_plane.request("GET", LEASE)
    assert lease["spec"]["leaseTransitions"] >= 1


# --- least privilege --------------------------------------------------------------------------------------


def _access(cp: LocalControlPlane, files: PodFiles, attributes: dict[str, str]) -> bool:
    """SelfSubjectAccessReview as the ServiceAccount: may it do this?"""
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attributes}}  # fmt: skip
    code, answer = _as_account(
        cp, files, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body
    )
    assert code == 201, answer
    return bool(answer["status"]["allowed"])


def _as_account(
    cp: LocalControlPlane, files: PodFiles, method: str, path: str, body: Any = None
) -> tuple[int, Any]:
    """A request with the ServiceAccount's token instead of the admin's."""
    admin = cp.token
    cp.token = files.token
    try:
        return cp.request(method, path, body)
    finally:
        cp.token = admin


def test_the_account_cannot_read_secrets_or_write_nodes(
    control_plane: LocalControlPlane, pod_files: PodFiles, make_node: Callable[..., Any]
) -> None:
    node = make_node("n1", {"cpu": "1"}).metadata.name
    for verb in ("get", "list", "watch"):
        assert not _access(
            control_plane, pod_files, {"verb": verb, "resource": "secrets", "namespace": NAMESPACE}
        )
        assert not _access(control_plane, pod_files, {"verb": verb, "resource": "secrets"})
    for verb in ("create", "update", "patch", "delete"):
        assert not _access(control_plane, pod_files, {"verb": verb, "resource": "nodes"})
        assert not _access(
            control_plane, pod_files, {"verb": verb, "resource": "nodes", "subresource": "status"}
        )
    # And real requests are refused.
    assert _as_account(control_plane, pod_files, "GET", f"/api/v1/namespaces/{NAMESPACE}/secrets")[0] == 403
    assert _as_account(control_plane, pod_files, "GET", "/api/v1/secrets")[0] == 403
    patch = {"metadata": {"labels": {"touched": "yes"}}}
    code, _ = _as_account(control_plane, pod_files, "PUT", f"/api/v1/nodes/{node}", patch)
    assert code == 403
    # What it needs, it has (so the refusals above are about the resource, not a broken token).
    assert _access(control_plane, pod_files, {"verb": "list", "resource": "nodes"})
    assert _as_account(control_plane, pod_files, "GET", "/api/v1/nodes?limit=1")[0] == 200


# --- every rule is needed -----------------------------------------------------------------------------------


def _rule_key(role_kind: str, rule: dict[str, Any]) -> str:
    """`ClusterRole: pods/binding create` — a rule by what it grants."""
    groups = ",".join(g or "core" for g in rule["apiGroups"])
    return f"{role_kind}: {groups} {','.join(rule['resources'])} {','.join(rule['verbs'])}"


class Probe:
    """One run of a replica under a reduced role, and what it shows."""

    def __init__(self, cp: LocalControlPlane, client: Client, replicas: Replicas, h: Harness, name: str,
                 fake_kubelet: FakeKubelet) -> None:  # fmt: skip
        self.cp, self.client, self.replicas, self.h, self.name = cp, client, replicas, h, name
        self.proc: ManagedProcess | None = None
        self.port = 0

    def start(self, *flags: str) -> None:
        self.proc, self.port = self.replicas.start(f"--scheduler-name={self.name}", *flags)

    def metric(self, line: str) -> float:
        return _metric(_get(f"http://127.0.0.1:{self.port}/metrics")[1], line)

    def ready(self) -> bool:
        return _get(f"http://127.0.0.1:{self.port}/readyz")[0] == 200

    def log(self) -> str:
        assert self.proc is not None
        return self.proc.log_path.read_text()

    def events(self) -> set[tuple[str, str]]:
        code, answer = self.cp.request("GET", f"/apis/events.k8s.io/v1/namespaces/{self.h.namespace}/events")
        assert code == 200, answer
        return {
            (e["regarding"]["name"], e["reason"])
            for e in answer["items"]
            if e["reportingController"] == self.name
        }

    def pod_condition(self, pod: str) -> Any:
        p = self.client.get(Pod, pod, namespace=self.h.namespace)
        return next((c for c in (p.status.conditions or []) if c.type == "PodScheduled"), None)


def hold(what: str, check: Callable[[], bool], seconds: float) -> None:
    """`check()` stays true for `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert check(), f"no longer true: {what}"
        time.sleep(0.25)


def broken_informer(kind: str) -> Callable[[Probe], None]:
    def probe(p: Probe) -> None:
        p.start("--no-leader-elect")
        wait_for(f"the {kind} informer refused", lambda: f"watch {kind}: list {kind}: 403" in p.log(), 30)
        hold("not ready: the informers never sync", lambda: not p.ready(), 3)

    return probe


def gang_of_two(p: Probe) -> None:
    p.h.group("g", 2)
    for i in range(2):
        p.h.pod(f"g-{i}", "g")


def broken_binding(p: Probe) -> None:
    p.start("--no-leader-elect")
    gang_of_two(p)
    wait_for("bindings refused", lambda: p.metric('gangsched_bindings_total{result="failure"}') >= 2, 30)
    hold("the gang stays unbound", lambda: not any(p.h.outcome().bound.values()), 2)


def broken_pod_status(p: Probe) -> None:
    p.start("--no-leader-elect")
    p.h.pod("too-big", cpu="8")  # the node has 4
    wait_for(
        "an unschedulable attempt",
        lambda: p.metric('gangsched_schedule_attempts_total{result="unschedulable"}'),
    )
    hold("no PodScheduled condition on the pod", lambda: p.pod_condition("too-big") is None, 3)
    assert any("condition PodScheduled on Pod" in line for line in refused_lines(p.log()))


def broken_group_status(p: Probe) -> None:
    p.start("--no-leader-elect")
    gang_of_two(p)
    wait_for("the gang bound", lambda: all(p.h.outcome().bound.values()) and len(p.h.outcome().bound) == 2)
    hold("no PodGroupInitiallyScheduled on the PodGroup", lambda: p.h.outcome().groups == {"g": None}, 3)


def preempting_gang(p: Probe) -> None:
    """A priority-100 gang of 3 x 1 CPU on the 4-CPU node, where a priority-10 pod holds 2 CPUs."""
    p.h.group("g", 3, priority_class="gs-test-high")
    for i in range(3):
        p.h.pod(f"g-{i}", "g", priority_class="gs-test-high")


def broken_delete(p: Probe) -> None:
    p.start("--no-leader-elect")
    p.h.pdb("protect", {"app": "protected"})
    p.h.blocker("protected", "2", priority_class="gs-test-low", labels={"app": "protected"}, running=True)
    preempting_gang(p)
    # Victims are deleted as kube-scheduler deletes them (a budget does not stop it); the delete is refused.
    wait_for(
        "the deletion refused", lambda: p.metric('gangsched_preemption_victims_total{result="failed"}'), 30
    )
    hold("the protected victim stays", lambda: p.h.outcome().bound.get("protected") is True, 3)


def local_volume_pod(p: Probe) -> None:
    """A WaitForFirstConsumer claim and a local PV on the node: binding the pod means writing the PV's
    claimRef first (VolumeBinding's PreBind)."""
    ns = p.h.namespace
    for doc in (vd._storage_class(), vd._local_pv(f"{ns}-local", p.h.node), vd._claim(ns, "data")):
        paired.create(p.client, doc)
    volume = {"name": "d", "persistentVolumeClaim": {"claimName": "data"}}
    paired.create(p.client, paired.pod(ns, "p", p.name, volumes=[volume]))


def device_claim_pod(p: Probe) -> None:
    """A pod with a one-device claim from a template, one device on the node: binding it means reserving
    the claim for the pod first (DynamicResources' PreBind, the claim's status)."""
    ns = p.h.namespace
    for doc in (vd._device_class(), vd._slice(f"{ns}-gpus", p.h.node, ["gpu-0"]), vd._template(ns)):
        paired.create(p.client, doc)
    claim = {"name": "gpu", "resourceClaimTemplateName": "one-gpu"}
    paired.create(p.client, paired.pod(ns, "p", p.name, resourceClaims=[claim]))


def extended_resource_pod(p: Probe) -> None:
    """A pod asking for an extended resource no node offers, which a DeviceClass serves with the node's one
    device: binding it means creating its special claim first (DynamicResources' PreBind)."""
    ns = p.h.namespace
    for doc in (vd._extended_device_class(), vd._slice(f"{ns}-gpus", p.h.node, ["gpu-0"])):
        paired.create(p.client, doc)
    container = {"resources": {"limits": {vd.EXTENDED: "1"}}}
    paired.create(p.client, paired.pod(ns, "p", p.name, container=container))


def broken_volume_binding(p: Probe) -> None:
    p.start("--no-leader-elect")
    local_volume_pod(p)
    wait_for("the PV's claimRef refused", lambda: f"bind PV {p.h.namespace}-local: 403" in p.log(), 30)
    hold("the pod stays unbound", lambda: not p.h.outcome().bound["p"], 2)


def broken_claim_status(p: Probe) -> None:
    p.start("--no-leader-elect")
    device_claim_pod(p)
    wait_for("the claim's reservation refused", lambda: "reserve claim" in p.log() and ": 403" in p.log(), 45)
    hold("the pod stays unbound", lambda: not p.h.outcome().bound["p"], 2)


def broken_claim_create(p: Probe) -> None:
    p.start("--no-leader-elect")
    extended_resource_pod(p)
    wait_for(
        "the special claim's creation refused",
        lambda: "create claim for extended resources" in p.log() and ": 403" in p.log(),
        45,
    )
    hold("the pod stays unbound", lambda: not p.h.outcome().bound["p"], 2)


def broken_events(p: Probe) -> None:
    p.start("--no-leader-elect")
    gang_of_two(p)
    wait_for("the gang bound", lambda: all(p.h.outcome().bound.values()) and len(p.h.outcome().bound) == 2)
    hold("no Scheduled events", lambda: not p.events(), 3)


def broken_lease(p: Probe) -> None:
    p.start("--leader-elect", *FAST_LEASE)
    wait_for("the Lease refused", lambda: any("lease " in line for line in refused_lines(p.log())), 30)
    hold("never leads", lambda: p.metric("gangsched_leader_election_master_status") == 0, 3)
    gang_of_two(p)
    hold("and schedules nothing", lambda: not any(p.h.outcome().bound.values()), 2)


#: What breaks without each rule of deploy/10-rbac.yaml.
BREAKS: dict[str, tuple[str, Callable[[Probe], None]]] = {
    "ClusterRole: core nodes list,watch":
        ("the Node informer cannot list: never ready", broken_informer("Node")),
    "ClusterRole: core namespaces list,watch":
        ("the Namespace informer cannot list: never ready", broken_informer("Namespace")),
    "ClusterRole: core pods get,list,watch":
        ("the Pod informer cannot list: never ready", broken_informer("Pod")),
    "ClusterRole: scheduling.k8s.io podgroups,compositepodgroups,workloads,priorityclasses list,watch":
        ("the PriorityClass informer cannot list: never ready", broken_informer("PriorityClass")),
    "ClusterRole: policy poddisruptionbudgets list,watch":
        ("the PodDisruptionBudget informer cannot list: never ready", broken_informer("PodDisruptionBudget")),
    "ClusterRole: core persistentvolumes,persistentvolumeclaims list,watch":
        ("the PersistentVolume informer cannot list: never ready", broken_informer("PersistentVolume")),
    "ClusterRole: storage.k8s.io storageclasses,csinodes,csidrivers,csistoragecapacities,volumeattachments "
    "list,watch": ("the StorageClass informer cannot list: never ready", broken_informer("StorageClass")),
    "ClusterRole: resource.k8s.io deviceclasses,resourceslices,devicetaintrules,resourceclaims list,watch":
        ("the DeviceClass informer cannot list: never ready", broken_informer("DeviceClass")),
    "ClusterRole: core services,replicationcontrollers list,watch":
        ("the Service informer cannot list: never ready", broken_informer("Service")),
    "ClusterRole: apps replicasets,statefulsets list,watch":
        ("the ReplicaSet informer cannot list: never ready", broken_informer("ReplicaSet")),
    "ClusterRole: core persistentvolumes,persistentvolumeclaims update":
        ("a pod with a local volume is not bound (its PV's claimRef refused)", broken_volume_binding),
    "ClusterRole: resource.k8s.io resourceclaims/status,resourceclaims/binding patch":
        ("a pod with a device claim is not bound (its reservation refused)", broken_claim_status),
    "ClusterRole: resource.k8s.io resourceclaims create,update,patch,delete":
        ("a pod whose extended resource devices serve is not bound (its claim refused)", broken_claim_create),
    "ClusterRole: core pods/binding create": ("no pod is bound", broken_binding),
    "ClusterRole: core pods/status patch": ("a pod never says why it waits", broken_pod_status),
    "ClusterRole: scheduling.k8s.io podgroups/status,compositepodgroups/status patch":
        ("a bound gang's PodGroup never says it is scheduled", broken_group_status),
    "ClusterRole: core pods delete": ("a preemption victim is not deleted", broken_delete),
    "ClusterRole: events.k8s.io events create": ("no Events", broken_events),
    "Role: coordination.k8s.io leases create": ("no Lease, no leader", broken_lease),
    "Role: coordination.k8s.io leases get,update": ("no Lease, no leader", broken_lease),
}  # fmt: skip


def test_every_rule_has_a_test(deployed: list[dict[str, Any]]) -> None:
    rules = [
        _rule_key(o["kind"], r) for o in deployed if o["kind"] in ("ClusterRole", "Role") for r in o["rules"]
    ]
    assert sorted(rules) == sorted(BREAKS)


@pytest.fixture
def make_probe(
    control_plane: LocalControlPlane,
    kube_client: Client,
    replicas: Replicas,
    harness: Callable[[str, str], Harness],
    fake_kubelet: FakeKubelet,
    volume_and_claim_controllers: ManagedProcess,
) -> Callable[[str], Probe]:
    """Factory: a Probe in a fresh namespace (and node) for a new scheduler name, with no Lease left over
    (the Lease's create rule matters only when there is none yet)."""

    def make(prefix: str) -> Probe:
        ensure_priority_classes(kube_client)
        control_plane.request("DELETE", LEASE)
        name = _scheduler_name()
        return Probe(control_plane, kube_client, replicas, harness(prefix, name), name, fake_kubelet)

    return make


@pytest.mark.parametrize("rule", list(BREAKS))
def test_without_the_rule_something_breaks(
    rule: str,
    control_plane: LocalControlPlane,
    deployed: list[dict[str, Any]],
    make_probe: Callable[[str], Probe],
) -> None:
    kind = rule.split(":")[0]
    (role,) = [o for o in deployed if o["kind"] == kind]
    reduced = copy.deepcopy(role)
    reduced["rules"] = [r for r in role["rules"] if _rule_key(kind, r) != rule]
    assert len(reduced["rules"]) == len(role["rules"]) - 1
    p = make_probe("rbac")
    put_object(control_plane, reduced)
    try:
        _, probe = BREAKS[rule]
        probe(p)
    finally:
        put_object(control_plane, role)


def test_with_every_rule_nothing_of_that_breaks(
    deployed: list[dict[str, Any]], make_probe: Callable[[str], Probe]
) -> None:
    """The control for the test above: with the roles as deployed, each of those things works."""
    p = make_probe("rbac-ok")
    p.start("--leader-elect", *FAST_LEASE)
    wait_for(
        "ready and leading",
        lambda: p.ready() and p.metric("gangsched_leader_election_master_status") == 1,
        30,
    )
    gang_of_two(p)
    p.h.pod("too-big", cpu="8")
    wait_for(
        "the gang bound and its PodGroup scheduled",
        lambda: p.h.outcome().groups == {"g": ("True", "Scheduled")} and p.h.outcome().bound["g-0"],
    )
    wait_for(
        "the too-big pod says why", lambda: (c := p.pod_condition("too-big")) and c.reason == "Unschedulable"
    )
    wait_for("Scheduled events", lambda: {("g-0", "Scheduled"), ("g-1", "Scheduled")} <= p.events())
    assert not refused_lines(p.log()), refused_lines(p.log())


@pytest.mark.parametrize("scenario", [local_volume_pod, device_claim_pod], ids=["volume", "device-claim"])
def test_with_every_rule_volumes_and_claims_bind(
    scenario: Callable[[Probe], None], make_probe: Callable[[str], Probe]
) -> None:
    """The control for the volume and claim rules: as deployed, those pods are bound (the PV binder and the
    resourceclaim controller of kube-controller-manager do their part)."""
    p = make_probe("rbac-ok")
    p.start("--no-leader-elect")
    scenario(p)
    wait_for("the pod bound", lambda: p.h.outcome().bound["p"], 60)
    assert not refused_lines(p.log()), refused_lines(p.log())


# --- the dashboard in a real browser ----------------------------------------------------------------------

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


@pytest.fixture
def browser() -> Iterator[Any]:
    """Debian's headless chromium through its chromedriver (Selenium); nothing downloaded."""
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        unavailable("chromium and chromium-driver (apt) are not installed")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,1000"):  # fmt: skip
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def _gpu_pod(h: Harness, name: str, group: str, gpus: int, scheduler: str) -> None:
    resources = {
        "requests": {"cpu": "1", "nvidia.com/gpu": str(gpus)},
        "limits": {"nvidia.com/gpu": str(gpus)},
    }
    h.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {
        "schedulerName": scheduler, "schedulingGroup": {"podGroupName": group},
        "nodeSelector": {"gangsched.test/namespace": h.namespace},
        "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": resources}],
    }})  # fmt: skip


def test_the_dashboard_in_a_browser(
    kube_client: Client,
    replicas: Replicas,
    harness: Callable[[str, str], Harness],
    browser: Any,
    tmp_path: Path,
) -> None:
    from selenium.webdriver.common.by import By

    from gangsched.live.fakenodes import create_node

    name = _scheduler_name()
    h = harness("dashboard", name)
    for suffix in ("gpu-a", "gpu-b"):
        capacity = {"cpu": "32", "memory": "64Gi", "nvidia.com/gpu": "8"}
        create_node(
            kube_client, f"{h.namespace}-{suffix}", capacity, labels={"gangsched.test/namespace": h.namespace}
        )
        h.nodes.append(f"{h.namespace}-{suffix}")
    _, port = replicas.start(f"--scheduler-name={name}", "--no-leader-elect")
    wait_for("ready", lambda: _get(f"http://127.0.0.1:{port}/readyz")[0] == 200, 60)
    h.group("train", 2)  # 2 x 8 GPUs: both nodes, runs
    h.group("tune", 2)  # 2 x 8 GPUs: nothing left, waits (and still when 8 are freed below)
    h.group("eval", 3)  # 1 pod of 3: held at PreEnqueue
    for i in range(2):
        _gpu_pod(h, f"train-{i}", "train", 8, name)
        _gpu_pod(h, f"tune-{i}", "tune", 8, name)
    _gpu_pod(h, "eval-0", "eval", 1, name)
    wait_for("train bound", lambda: h.outcome().bound.get("train-0") and h.outcome().bound.get("train-1"))
    # A kubelet would report one member running; the other is still starting: the gang is below minCount
    # running, so its 16 GPUs are allocated but idle except ... none: progressing needs minCount running.
    kube_client.patch(Pod.Status, "train-0", {"status": {"phase": "Running"}}, namespace=h.namespace,
                      patch_type=PatchType.MERGE)  # fmt: skip

    url = f"http://127.0.0.1:{port}/"
    browser.get(url)
    wait_for(
        "the page shows tune waiting",
        lambda: browser.get(url) or f"{h.namespace}/tune" in browser.page_source,
    )

    def rows(css: str) -> list[list[str]]:
        table = browser.find_element(By.CSS_SELECTOR, f"table.{css}")
        return [
            [c.text for c in r.find_elements(By.CSS_SELECTOR, "td")]
            for r in table.find_elements(By.CSS_SELECTOR, "tbody tr")
        ]

    queue = rows("queue")
    assert [r[0] for r in queue] == [str(i) for i in range(1, len(queue) + 1)]  # positions
    assert [r[2] for r in queue] == [f"{h.namespace}/tune"]
    assert "minCount (2) cannot be satisfied" in queue[0][7]
    assert [r[0] for r in rows("gated")] == [f"{h.namespace}/eval-0"]
    gangs = {r[0].split("/")[1]: r for r in rows("gangs")}
    assert gangs["train"][1] == "admitted" and gangs["train"][2] == "2 / 2 / 2" and gangs["train"][3] == "1"
    assert gangs["tune"][1] == "pending" and "queue position: 1 of 1" in gangs["tune"][5]  # gangsched explain
    assert gangs["tune"][6] == "unknown within the planning window"  # nothing running has a run-time estimate
    assert gangs["eval"][1] == "gated"
    gpus = {r[0]: r[1:5] for r in rows("gpus") if r[0].startswith(h.namespace)}
    # Each node: 8 GPUs, all held by one train member; one member of two runs: below minCount, so idle.
    assert sorted(gpus.values()) == [["8", "0", "0", "8"], ["8", "0", "0", "8"]]

    kube_client.patch(Pod.Status, "train-1", {"status": {"phase": "Running"}}, namespace=h.namespace,
                      patch_type=PatchType.MERGE)  # fmt: skip
    browser.get(url)

    def mine() -> list[list[str]]:
        return sorted(r[1:5] for r in rows("gpus") if r[0].startswith(h.namespace))

    wait_for("both running: progressing", lambda: browser.get(url) or mine() == [["8", "0", "8", "0"]] * 2)
    assert {r[0].split("/")[1]: r[1] for r in rows("gangs")}["train"] == "running"

    # A member fails after admission: under the deployed recovery policy (wait) the gang is held without
    # progress until a replacement is bound, and the page says since when.
    kube_client.patch(Pod.Status, "train-1", {"status": {"phase": "Failed"}}, namespace=h.namespace,
                      patch_type=PatchType.MERGE)  # fmt: skip

    def train() -> list[str]:
        return {r[0].split("/")[1]: r for r in rows("gangs")}.get("train", [])

    wait_for("train stalled", lambda: browser.get(url) or (train()[1:2] == ["stalled"]))
    assert train()[7].startswith("held without progress since ") and "recovery wait" in train()[7], train()
    assert "recovery policy wait" in browser.page_source
    # The 8 GPUs train-1 held are free; train-0's 8 are held without progress; tune (16) still waits.
    wait_for(
        "train-1's GPUs freed",
        lambda: browser.get(url) or mine() == [["8", "0", "0", "8"], ["8", "8", "0", "0"]],
    )
    assert [r[2] for r in rows("queue")] == [f"{h.namespace}/tune"]

    # The whole page, not the window: the GPU table is below the fold at 1400 x 1000.
    height = browser.execute_script("return document.documentElement.scrollHeight")
    width = browser.execute_script("return document.documentElement.scrollWidth")
    png = base64.b64decode(browser.execute_cdp_cmd("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1},
    })["data"])  # fmt: skip
    shot = tmp_path / "dashboard.png"
    shot.write_bytes(png)
    artifacts = Path(os.environ.get("GANGSCHED_ARTIFACTS", Path(__file__).resolve().parents[2] / "out"))
    artifacts.mkdir(parents=True, exist_ok=True)
    shutil.copy(shot, artifacts / "dashboard.png")
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    # IHDR: width and height in device pixels, as big-endian 32-bit integers at bytes 16-24
    png_width, png_height = struct.unpack(">II", png[16:24])
    ratio = browser.execute_script("return window.devicePixelRatio")
    assert png_height >= height * ratio, (png_width, png_height, height, ratio)


def test_recovery_restart_as_the_service_account(
    kube_client: Client, replicas: Replicas, harness: Callable[[str, str], Harness], fake_kubelet: FakeKubelet
) -> None:
    """The deployed rules suffice for recovery (tests/live/test_recovery.py has every policy and failure): a
    member of an admitted gang fails; under restart the replica deletes the other member and says why in an
    Event on the PodGroup, with no request refused."""
    name = _scheduler_name()
    h = harness("recovery", name)
    proc, port = replicas.start(f"--scheduler-name={name}", "--no-leader-elect", "--recovery=restart")
    wait_for("ready", lambda: _get(f"http://127.0.0.1:{port}/readyz")[0] == 200, 60)
    h.group("g", 2)
    for i in range(2):
        _gpu_pod(h, f"g-{i}", "g", 0, name)
    wait_for("g bound", lambda: all(h.outcome().bound.get(f"g-{i}") for i in range(2)))
    time.sleep(0.5)  # admitted once the replica has looked at it after binding
    kube_client.patch(Pod.Status, "g-0", {"status": {"phase": "Failed"}}, namespace=h.namespace,
                      patch_type=PatchType.MERGE)  # fmt: skip

    def g1_deleted() -> bool:
        pods = {p.metadata.name: p for p in kube_client.list(Pod, namespace=h.namespace)}
        return "g-1" not in pods or pods["g-1"].metadata.deletionTimestamp is not None

    wait_for("g-1 deleted by the restart", g1_deleted, 20)
    wait_for(
        "the GangRestart event",
        lambda: any(e.reason == "GangRestart" for e in kube_client.list(Event, namespace=h.namespace)),
        20,
    )
    assert not refused_lines(proc.log_tail(200)), proc.log_tail(200)


def test_the_pod_template_passes_restricted_pod_security(
    control_plane: LocalControlPlane, deployed: list[dict[str, Any]]
) -> None:
    """The namespace enforces Pod Security `restricted`; a pod from the Deployment's template is admitted
    (server-side dry run), and the same pod without its securityContext is refused: the check is on."""
    (deployment,) = [o for o in deployed if o["kind"] == "Deployment"]
    template = deployment["spec"]["template"]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "template-check", **template["metadata"]},
           "spec": template["spec"]}  # fmt: skip
    path = f"/api/v1/namespaces/{NAMESPACE}/pods?dryRun=All"
    code, answer = control_plane.request("POST", path, pod)
    assert code == 201, answer
    loose = copy.deepcopy(pod)
    del loose["spec"]["securityContext"]
    del loose["spec"]["containers"][0]["securityContext"]
    code, answer = control_plane.request("POST", path, loose)
    assert code == 403 and 'violates PodSecurity "restricted' in answer["message"], answer
