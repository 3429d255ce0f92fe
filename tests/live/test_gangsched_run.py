"""`gangsched run` on the real API server: topology, a failed bind rolling a gang back, kill -9 in the middle
of binding a 100-pod gang, an API-server restart, leader election between two replicas, metrics and health."""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest
from lightkube import AsyncClient, Client, KubeConfig, codecs
from lightkube.resources.core_v1 import Pod
from lightkube.resources.scheduling_v1beta1 import PodGroup
from lightkube.types import PatchType

from gangsched.live.controlplane import LocalControlPlane, ManagedProcess, free_port

from .conftest import StartGangsched
from .test_apiserver import condition, wait_for

MakeNode = Callable[..., Any]


def _group(namespace: str, name: str, min_count: int, topology: str | None = None) -> Any:
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
    if topology:
        spec["schedulingConstraints"] = {"topology": [{"key": topology}]}
    return codecs.from_dict(
        {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace},
            "spec": spec,
        }
    )


def _pod(namespace: str, name: str, group: str, scheduler: str, cpu: str = "1") -> Any:
    return codecs.from_dict(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "schedulerName": scheduler,
                "schedulingGroup": {"podGroupName": group},
                "nodeSelector": {"gangsched.test/namespace": namespace},
                "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}],
            },
        }
    )


def _create_all(control_plane: LocalControlPlane, objects: list[Any]) -> None:
    """Create many objects at once with the async client (a gang's members arrive together)."""

    async def run() -> None:
        client = AsyncClient(KubeConfig.from_file(str(control_plane.kubeconfig)))
        try:
            await asyncio.gather(*(client.create(obj) for obj in objects))
        finally:
            await client.close()

    asyncio.run(run())


def _nodes_of(client: Client, namespace: str) -> dict[str, str | None]:
    return {p.metadata.name: p.spec.nodeName for p in client.list(Pod, namespace=namespace)}


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return 0, ""


def _metric(text: str, line_start: str) -> float:
    for line in text.splitlines():
        if line.startswith(line_start + " "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_gang_goes_to_the_one_rack_that_fits(
    gangsched: ManagedProcess, kube_client: Client, namespace: str, make_node: MakeNode
) -> None:
    """tas_test 'only one rack fits': rack r1 has 2 CPU, rack r2 4; a rack-constrained gang of 3 x 1 CPU."""
    rack = "topology.kubernetes.io/rack"
    make_node("r1-a", {"cpu": "2"}, labels={rack: "r1"})
    r2 = {make_node(s, {"cpu": "2"}, labels={rack: "r2"}).metadata.name for s in ("r2-a", "r2-b")}
    kube_client.create(_group(namespace, "g", 3, topology=rack))
    for i in range(3):
        kube_client.create(_pod(namespace, f"g-{i}", "g", "gangsched"))
    placed = wait_for(
        "3 pods bound", lambda: (n := _nodes_of(kube_client, namespace)) and all(n.values()) and n
    )
    assert set(placed.values()) <= r2, placed
    scheduled = wait_for(
        "PodGroupInitiallyScheduled",
        lambda: condition(kube_client.get(PodGroup, "g", namespace=namespace), "PodGroupInitiallyScheduled"),
    )
    assert (scheduled.status, scheduled.reason) == ("True", "Scheduled")


def test_no_rack_fits_leaves_the_gang_pending(
    gangsched: ManagedProcess, kube_client: Client, namespace: str, make_node: MakeNode
) -> None:
    rack = "topology.kubernetes.io/rack"
    make_node("r1-a", {"cpu": "2"}, labels={rack: "r1"})
    make_node("r2-a", {"cpu": "2"}, labels={rack: "r2"})
    kube_client.create(_group(namespace, "g", 3, topology=rack))
    for i in range(3):
        kube_client.create(_pod(namespace, f"g-{i}", "g", "gangsched"))
    failed = wait_for(
        "PodGroupInitiallyScheduled",
        lambda: condition(kube_client.get(PodGroup, "g", namespace=namespace), "PodGroupInitiallyScheduled"),
    )
    assert (failed.status, failed.reason) == ("False", "Unschedulable")
    # wrapped in errPodGroupUnschedulable, as kube-scheduler writes it (see the side-by-side test)
    want = "pod group is unschedulable, 0/2 placements are available"
    assert failed.message.startswith(want), failed.message
    assert not any(_nodes_of(kube_client, namespace).values())


def _deny_binding(control_plane: LocalControlPlane, namespace: str, pod: str) -> str:
    """A ValidatingAdmissionPolicy (the API server's own CEL admission) refusing to bind one pod: a real
    failed bind, not a simulated one. Returns the policy name."""
    name = f"deny-bind-{namespace}"[:60]
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["pods/binding"],
                    }
                ]
            },
            "validations": [
                {
                    "expression": f"!(request.namespace == '{namespace}' && request.name == '{pod}')",
                    "message": "test: this pod may not be bound",
                }
            ],
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {"policyName": name, "validationActions": ["Deny"]},
    }
    for path, body in (
        ("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies", policy),
        ("/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings", binding),
    ):
        code, answer = control_plane.request("POST", path, body)
        assert code == 201, answer
    return name


def test_a_failed_bind_rolls_the_gang_back(
    control_plane: LocalControlPlane,
    start_gangsched: StartGangsched,
    kube_client: Client,
    namespace: str,
    make_node: MakeNode,
) -> None:
    """One member of a 3-pod gang cannot be bound: the members bound in that cycle are deleted, so the gang is
    never left bound below minCount, and the refused member waits."""
    make_node("n1", {"cpu": "8"})
    policy = _deny_binding(control_plane, namespace, "g-2")
    try:
        # The policy takes effect once the API server's policy informer has it: probe with a pod nobody
        # schedules, bound by hand (and made again if a binding got through before the policy).
        path = f"/api/v1/namespaces/{namespace}/pods/g-2/binding"
        body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "g-2"},
                "target": {"apiVersion": "v1", "kind": "Node", "name": f"{namespace}-n1"}}  # fmt: skip

        def refused() -> bool:
            if "g-2" not in _nodes_of(kube_client, namespace):
                kube_client.create(_pod(namespace, "g-2", "probe", "gangsched-test-nobody"))
            code, answer = control_plane.request("POST", path, body)
            if code == 201:
                kube_client.delete(Pod, "g-2", namespace=namespace, grace_period=0)
            return code == 422 and "this pod may not be bound" in str(answer)

        wait_for("the policy to refuse the binding", refused)
        kube_client.delete(Pod, "g-2", namespace=namespace, grace_period=0)
        wait_for("probe gone", lambda: "g-2" not in _nodes_of(kube_client, namespace))

        name = f"gs-rollback-{secrets.token_hex(3)}"
        port = free_port()
        proc = start_gangsched("--scheduler-name", name, "--metrics-port", str(port))
        wait_for("gangsched ready", lambda: _get(f"http://127.0.0.1:{port}/readyz")[0] == 200, 30)
        kube_client.create(_group(namespace, "g", 3))
        _create_all(control_plane, [_pod(namespace, f"g-{i}", "g", name) for i in range(3)])
        metrics = wait_for(
            "a gang rollback",
            lambda: (
                (t := _get(f"http://127.0.0.1:{port}/metrics")[1])
                and _metric(t, 'gangsched_gang_rollbacks_total{kind="gang"}') >= 1
                and t
            ),
        )
        assert _metric(metrics, 'gangsched_bindings_total{result="failure"}') >= 1
        # The two members bound in that cycle are deleted; g-2 stays unbound: nothing is bound below minCount.
        left = wait_for(
            "rollback done", lambda: n if len(n := _nodes_of(kube_client, namespace)) == 1 else None
        )
        assert left == {"g-2": None}
        assert proc.alive()
    finally:
        control_plane.request(
            "DELETE", f"/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings/{policy}"
        )
        control_plane.request(
            "DELETE", f"/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/{policy}"
        )


def test_kill_9_while_binding_a_100_pod_gang_then_restart(
    control_plane: LocalControlPlane,
    start_gangsched: StartGangsched,
    kube_client: Client,
    namespace: str,
    make_node: MakeNode,
) -> None:
    """gangsched is killed (SIGKILL) once the first member of a 100-pod gang is bound; a new gangsched
    finishes the gang from what the API server says: no gang is left below minCount."""
    for s in ("a", "b"):
        make_node(s, {"cpu": "64", "pods": "110"})
    name = f"gs-kill-{secrets.token_hex(3)}"
    # Two writes at a time: binding 100 pods takes long enough that the kill lands in the middle of it.
    first = start_gangsched("--scheduler-name", name, "--api-concurrency", "2")
    kube_client.create(_group(namespace, "big", 100))
    seen_bound = threading.Event()

    def kill_on_first_bind() -> None:
        watcher = Client(KubeConfig.from_file(str(control_plane.kubeconfig)))
        for _, pod in watcher.watch(Pod, namespace=namespace):
            if pod.spec.nodeName:
                assert first.pid is not None
                os.kill(first.pid, signal.SIGKILL)
                seen_bound.set()
                return

    thread = threading.Thread(target=kill_on_first_bind, daemon=True)
    thread.start()
    _create_all(control_plane, [_pod(namespace, f"big-{i}", "big", name, cpu="100m") for i in range(100)])
    assert seen_bound.wait(60), "gangsched bound nothing"
    wait_for("gangsched killed", lambda: not first.alive(), 10)
    time.sleep(1)  # binds already on the wire land
    at_kill = sum(1 for n in _nodes_of(kube_client, namespace).values() if n)
    assert 0 < at_kill < 100, f"the kill was meant to land mid-binding; {at_kill} of 100 were bound"

    second = start_gangsched("--scheduler-name", name)
    done = wait_for(
        "the gang bound whole", lambda: all((n := _nodes_of(kube_client, namespace)).values()) and n
    )
    assert len(done) == 100
    assert second.alive()
    assert "recovery: 1 gang(s) bound below minCount at start" in second.log_path.read_text()
    wait_for(
        "recovery to report",
        lambda: f"recovery: gang {namespace}/big finished" in second.log_path.read_text(),
    )


def test_restart_deletes_a_partial_gang_it_cannot_finish(
    control_plane: LocalControlPlane,
    start_gangsched: StartGangsched,
    kube_client: Client,
    namespace: str,
    make_node: MakeNode,
) -> None:
    """A gang of 3 x 1 CPU found with one member bound (as a scheduler killed mid-binding leaves it) on a node
    with room for only one more: the first pass cannot finish it, so gangsched deletes the bound member rather
    than hold part of a gang; the two pending members stay pending."""
    node = make_node("n1", {"cpu": "2"}).metadata.name
    name = f"gs-partial-{secrets.token_hex(3)}"
    kube_client.create(_group(namespace, "g", 3))
    for i in range(3):
        kube_client.create(_pod(namespace, f"g-{i}", "g", name))
    body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "g-0"},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node}}  # fmt: skip
    code, answer = control_plane.request("POST", f"/api/v1/namespaces/{namespace}/pods/g-0/binding", body)
    assert code == 201, answer
    proc = start_gangsched("--scheduler-name", name)
    left = wait_for(
        "the bound member deleted", lambda: n if len(n := _nodes_of(kube_client, namespace)) == 2 else None
    )
    assert left == {"g-1": None, "g-2": None}
    log = proc.log_path.read_text()
    assert f"recovery: gang {namespace}/g has 1 of 3 members bound and cannot be finished" in log


@pytest.mark.restarts_apiserver
def test_scheduling_continues_across_an_apiserver_restart(
    control_plane: LocalControlPlane,
    gangsched: ManagedProcess,
    kube_client: Client,
    namespace: str,
    make_node: MakeNode,
) -> None:
    """kube-apiserver is killed while gangsched binds 20 gangs; after it comes back the rest are bound
    (watches resume or relist) and so is a gang created afterwards. No gang ends up bound below minCount."""
    make_node("n1", {"cpu": "64", "pods": "110"})
    objects: list[Any] = []
    for g in range(20):
        objects.append(_group(namespace, f"g{g}", 3))
        objects += [_pod(namespace, f"g{g}-{i}", f"g{g}", "gangsched", cpu="100m") for i in range(3)]
    _create_all(control_plane, objects)
    control_plane.restart_apiserver(kill=True, down=1.0)
    kube_client.create(_group(namespace, "after", 3))
    for i in range(3):
        kube_client.create(_pod(namespace, f"after-{i}", "after", "gangsched", cpu="100m"))
    bound = wait_for(
        "all 63 pods bound", lambda: all((n := _nodes_of(kube_client, namespace)).values()) and n, 90
    )
    assert len(bound) == 63

    def admitted() -> set[str]:
        groups = kube_client.list(PodGroup, namespace=namespace)
        return {
            g.metadata.name
            for g in groups
            if (c := condition(g, "PodGroupInitiallyScheduled")) and c.status == "True"
        }

    # Condition writes that met the outage were sent again once the server was back.
    wait_for("every group's condition True", lambda: len(admitted()) == 21)
    assert gangsched.alive()


def test_leader_election_one_binds_and_the_other_takes_over(
    start_gangsched: StartGangsched, kube_client: Client, namespace: str, make_node: MakeNode
) -> None:
    make_node("n1", {"cpu": "16"})
    name = f"gs-le-{secrets.token_hex(3)}"
    ports = [free_port(), free_port()]
    flags = ["--scheduler-name", name, "--leader-elect", "--leader-elect-resource-name", name,
             "--leader-elect-lease-duration", "4", "--leader-elect-renew-deadline", "3",
             "--leader-elect-retry-period", "0.5"]  # fmt: skip
    replicas = [start_gangsched(*flags, "--metrics-port", str(p)) for p in ports]

    def leaders() -> list[int]:
        master = "gangsched_leader_election_master_status"
        return [i for i, p in enumerate(ports) if _metric(_get(f"http://127.0.0.1:{p}/metrics")[1], master)]

    # Both are alive and ready from the start (the standby is ready to stand by: a PodDisruptionBudget
    # counts it); only the leader says it leads.
    for path in ("healthz", "readyz"):
        wait_for(
            f"both replicas {path}",
            lambda path=path: all(_get(f"http://127.0.0.1:{p}/{path}")[0] == 200 for p in ports),
            30,
        )
    leader = wait_for("a leader", lambda: leaders() or None, 30)
    assert len(leader) == 1, leader
    first, other = leader[0], 1 - leader[0]
    kube_client.create(_group(namespace, "a", 2))
    for i in range(2):
        kube_client.create(_pod(namespace, f"a-{i}", "a", name))
    wait_for("gang a bound", lambda: all(_nodes_of(kube_client, namespace).values()))
    success = 'gangsched_bindings_total{result="success"}'
    bound_by = [_metric(_get(f"http://127.0.0.1:{p}/metrics")[1], success) for p in ports]
    assert bound_by[first] == 2 and bound_by[other] == 0, bound_by

    replicas[first].stop(timeout=0)  # kill -9: the Lease is not released, the other waits for it to expire
    wait_for("the other replica leads", lambda: leaders() == [other], 30)
    kube_client.create(_group(namespace, "b", 2))
    for i in range(2):
        kube_client.create(_pod(namespace, f"b-{i}", "b", name))
    wait_for("gang b bound", lambda: all(_nodes_of(kube_client, namespace).values()))
    text = _get(f"http://127.0.0.1:{ports[other]}/metrics")[1]
    assert _metric(text, 'gangsched_bindings_total{result="success"}') == 2


def test_metrics_health_and_events(
    control_plane: LocalControlPlane,
    start_gangsched: StartGangsched,
    kube_client: Client,
    namespace: str,
    make_node: MakeNode,
) -> None:
    make_node("n1", {"cpu": "4"})
    name = f"gs-metrics-{secrets.token_hex(3)}"
    port = free_port()
    start_gangsched("--scheduler-name", name, "--metrics-port", str(port))
    wait_for("ready", lambda: _get(f"http://127.0.0.1:{port}/readyz")[0] == 200, 30)
    assert _get(f"http://127.0.0.1:{port}/healthz") == (200, "ok")
    kube_client.create(_group(namespace, "fits", 2))
    kube_client.create(_group(namespace, "too-big", 2))
    for i in range(2):
        kube_client.create(_pod(namespace, f"fits-{i}", "fits", name))
        kube_client.create(_pod(namespace, f"too-big-{i}", "too-big", name, cpu="3"))
    kube_client.create(_group(namespace, "short", 3))  # 1 pod of 3: held at PreEnqueue
    kube_client.create(_pod(namespace, "short-0", "short", name))
    kube_client.create(_pod(namespace, "orphan-0", "not-created", name))  # its PodGroup never comes
    text = wait_for(
        "both attempts counted",
        lambda: (
            (t := _get(f"http://127.0.0.1:{port}/metrics")[1])
            and _metric(t, 'gangsched_schedule_attempts_total{result="unschedulable"}') >= 1
            and _metric(t, 'gangsched_schedule_attempts_total{result="scheduled"}') == 1
            and _metric(t, 'gangsched_bindings_total{result="success"}') == 2
            and _metric(t, 'gangsched_pending_pods{queue="gated"}') == 1
            and _metric(t, 'gangsched_pending_pods{queue="incomplete"}') == 1
            and t
        ),
    )
    assert _metric(text, "gangsched_pending_gangs") == 2
    assert _metric(text, "gangsched_scheduling_cycle_duration_seconds_count") >= 2
    assert 'gangsched_queue_depth{state="unschedulable"}' in text
    # Upstream-style SLIs: the two bound pods' scheduling latency; the two pods of the gang that does not fit
    # wait in the unschedulable pool or backoff; the short gang's one pod is gated.
    assert _metric(text, "gangsched_pod_scheduling_sli_duration_seconds_count") == 2
    assert _metric(text, 'gangsched_pod_scheduling_sli_duration_seconds_bucket{le="+Inf"}') == 2
    waiting = {q: _metric(text, f'gangsched_pending_pods{{queue="{q}"}}') for q in
               ("active", "backoff", "unschedulable", "gated", "in-flight")}  # fmt: skip
    assert waiting["unschedulable"] + waiting["backoff"] + waiting["active"] + waiting["in-flight"] == 2
    assert _get(f"http://127.0.0.1:{port}/nothing")[0] == 404

    def events() -> set[tuple[str, str, str]]:
        code, answer = control_plane.request("GET", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events")
        assert code == 200, answer
        return {(e["regarding"]["name"], e["reason"], e["reportingController"]) for e in answer["items"]}

    expected = {
        ("fits-0", "Scheduled", name),
        ("fits-1", "Scheduled", name),
        ("too-big-0", "FailedScheduling", name),
        ("too-big-1", "FailedScheduling", name),
    }
    wait_for("events", lambda: events() >= expected)


def test_why_pending_condition_and_event_beside_upstreams(
    control_plane: LocalControlPlane,
    start_gangsched: StartGangsched,
    kube_client: Client,
    namespace: str,
    make_node: MakeNode,
) -> None:
    """--explain-pending: a gang of 2 x 3 CPU on one 4-CPU node waits; upstream's condition keeps upstream's
    message, and the explanation lands in gangsched.io/WhyPending and a WhyPending Event on the PodGroup."""
    make_node("n1", {"cpu": "4"})
    name = f"gs-explain-{secrets.token_hex(3)}"
    start_gangsched("--scheduler-name", name, "--explain-pending", "--backfill", "1")
    kube_client.create(_group(namespace, "too-big", 2))
    for i in range(2):
        kube_client.create(_pod(namespace, f"too-big-{i}", "too-big", name, cpu="3"))

    def why() -> Any:
        return condition(kube_client.get(PodGroup, "too-big", namespace=namespace), "gangsched.io/WhyPending")

    explained = wait_for("WhyPending", why)
    assert explained.reason == "Pending"
    assert explained.message.startswith(f"PodGroup {namespace}/too-big: pending\n"), explained.message
    assert "needs 6 cpu, the cluster has 4 free" in explained.message, explained.message
    # The two conditions are separate writes: upstream's may land a moment after gangsched's own.
    upstream = wait_for(
        "PodGroupInitiallyScheduled",
        lambda: condition(
            kube_client.get(PodGroup, "too-big", namespace=namespace), "PodGroupInitiallyScheduled"
        ),
    )
    assert (upstream.status, upstream.reason) == ("False", "Unschedulable")
    # TopologyAwareWorkloadScheduling is on: the group's one placement (all nodes) was not feasible
    placement = "pod group is unschedulable, 0/1 placements are available, first placement status: "
    assert upstream.message.startswith(placement + "minCount (2) cannot be satisfied"), upstream.message

    def events() -> set[tuple[str, str]]:
        code, answer = control_plane.request("GET", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events")
        assert code == 200, answer
        return {(e["regarding"]["kind"], e["reason"]) for e in answer["items"]}

    wait_for("WhyPending event", lambda: ("PodGroup", "WhyPending") in events())


def test_a_finished_gang_lets_the_waiting_gang_bind_within_seconds(
    gangsched: ManagedProcess, kube_client: Client, namespace: str, make_node: MakeNode
) -> None:
    """One node of 3 CPU, a running gang of 3 x 1 CPU and a second gang waiting. The first gang's pods turn
    Succeeded (as a finished Job's pods do): the second gang binds within seconds, as kube-scheduler's does
    (its informer sees a finished pod as a delete), not at the 5-minute flush of the unschedulable pool."""
    make_node("n", {"cpu": "3"})
    for group in ("first", "second"):
        kube_client.create(_group(namespace, group, 3))
    for i in range(3):
        kube_client.create(_pod(namespace, f"first-{i}", "first", "gangsched"))
    wait_for("first gang bound", lambda: all(_nodes_of(kube_client, namespace).values()))
    for i in range(3):
        kube_client.create(_pod(namespace, f"second-{i}", "second", "gangsched"))

    def second_failed() -> bool:
        group = kube_client.get(PodGroup, "second", namespace=namespace)
        c = condition(group, "PodGroupInitiallyScheduled")
        return c is not None and c.status == "False"

    wait_for("second gang Unschedulable", second_failed)
    finished = time.monotonic()
    for i in range(3):
        kube_client.patch(
            Pod.Status, f"first-{i}", {"status": {"phase": "Succeeded"}}, namespace=namespace,
            patch_type=PatchType.MERGE,
        )  # fmt: skip
    wait_for(
        "second gang bound",
        lambda: all(n for name, n in _nodes_of(kube_client, namespace).items() if name.startswith("second")),
        timeout=15.0,
    )
    assert time.monotonic() - finished < 15.0
