"""Failures after admission on the real API server: each recovery policy of `gangsched run --recovery` against
each way a gang loses a member (its pod fails or is deleted; its node goes NotReady or is deleted).

The gang: PodGroup g, minCount 2, three members of 1 GPU each on three 1-GPU nodes, and one spare 1-GPU node.
The test plays the owner (a Job controller): it creates the replacement pods. What each policy must do, by
its rules (docs/deploy.md, "Failures after admission"):
- wait: gangsched deletes nothing; g-1 and g-2 (2 GPUs) are held without progress from the loss until the
  replacement, created REPLACE_AFTER s later, is bound: the GPU-second counter is 2 x that time;
- continue: 2 members stay in place = minCount, so it goes on: nothing deleted, the counter stays 0;
- restart: every member still bound (g-0 too when its node failed: it is still bound there) is deleted at
  once, before any stall: the counter stays 0; the test recreates the group, which is bound whole;
- release-after:T: held for T s, then g-1 and g-2 are deleted: the counter is 2 x T; recreated, bound whole.

Tolerances come from the timing: gangsched sees a change within DETECT s of the test making it (watch
delivery plus one turn of its loop on this loaded machine), and the test polls every 0.2 s.
"""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest
from lightkube import ApiError, Client, codecs
from lightkube.resources.core_v1 import Event, Node, Pod
from lightkube.types import PatchType

from gangsched.live.controlplane import ManagedProcess, free_port
from gangsched.live.fakekubelet import FakeKubelet

from .conftest import StartGangsched
from .test_apiserver import wait_for

MakeNode = Callable[..., Any]
GPU = "example.com/gpu"
RELEASE_AFTER = 3.0
REPLACE_AFTER = 3.0
DETECT = 1.5
POLICIES = ("wait", "continue", "restart", f"release-after:{RELEASE_AFTER:g}")
FAILURES = ("pod-failed", "pod-deleted", "node-not-ready", "node-deleted")


def _group(namespace: str) -> Any:
    return codecs.from_dict({
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": namespace},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
    })  # fmt: skip


def _member(namespace: str, name: str, scheduler: str) -> Any:
    return codecs.from_dict({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "schedulerName": scheduler,
            "schedulingGroup": {"podGroupName": "g"},
            "nodeSelector": {"gangsched.test/namespace": namespace},
            "containers": [{"name": "c", "image": "pause",
                            "resources": {"requests": {"cpu": "100m", GPU: "1"}, "limits": {GPU: "1"}}}],
        },
    })  # fmt: skip


def _bound(client: Client, namespace: str) -> dict[str, str]:
    """Members bound and not being deleted -> node."""
    return {
        p.metadata.name: p.spec.nodeName
        for p in client.list(Pod, namespace=namespace)
        if p.spec.nodeName and p.metadata.deletionTimestamp is None and (p.status.phase != "Failed")
    }


def _gone(client: Client, namespace: str, name: str) -> bool:
    try:
        pod = client.get(Pod, name, namespace=namespace)
    except ApiError as e:
        return e.status.code == 404
    return pod.metadata.deletionTimestamp is not None


def _metrics(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as resp:
        text: str = resp.read().decode()
    return text


def _value(text: str, series: str) -> float:
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def _ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


def _fail(client: Client, namespace: str, kind: str, pod: str, node: str) -> None:
    """The failure, as the component that causes it on a real cluster would write it."""
    if kind == "pod-failed":  # the kubelet: the container exited with an error
        client.patch(Pod.Status, pod, {"status": {"phase": "Failed"}}, namespace=namespace,
                     patch_type=PatchType.MERGE)  # fmt: skip
    elif kind == "pod-deleted":  # a user, or an eviction that has completed
        client.delete(Pod, pod, namespace=namespace, grace_period=0)
    elif kind == "node-not-ready":
        # The node lifecycle controller: Ready turns Unknown/False, then the not-ready taints.
        ready = {
            "type": "Ready",
            "status": "False",
            "reason": "KubeletNotReady",
            "message": "test: node down",
        }
        client.patch(Node.Status, node, {"status": {"conditions": [ready]}}, patch_type=PatchType.STRATEGIC)
        taints = [{"key": "node.kubernetes.io/not-ready", "effect": e} for e in ("NoSchedule", "NoExecute")]
        client.patch(Node, node, {"spec": {"taints": taints}}, patch_type=PatchType.MERGE)
    else:  # node-deleted: the cloud provider's node controller, or an admin
        client.delete(Node, node)


@pytest.mark.parametrize("failure", FAILURES)
@pytest.mark.parametrize("policy", POLICIES)
def test_a_member_lost_after_admission(
    policy: str,
    failure: str,
    start_gangsched: StartGangsched,
    fake_kubelet: FakeKubelet,
    kube_client: Client,
    namespace: str,
    make_node: MakeNode,
) -> None:
    for i in range(4):
        make_node(f"n{i}", {"cpu": "4", GPU: "1"})
    scheduler = f"recovery-{namespace}"[:63]
    port = free_port()
    proc: ManagedProcess = start_gangsched(
        "--scheduler-name", scheduler, "--metrics-port", str(port), "--recovery", policy
    )
    wait_for("gangsched ready", lambda: _ready(port), timeout=60)
    kube_client.create(_group(namespace))
    for i in range(3):
        kube_client.create(_member(namespace, f"g-{i}", scheduler))
    placed = wait_for("the gang bound", lambda: len(b := _bound(kube_client, namespace)) == 3 and b)
    time.sleep(0.5)  # gangsched looks at the gang once its cycle is done: it is admitted
    node = placed["g-0"]
    series = f'gangsched_gpu_seconds_below_min_count_total{{namespace="{namespace}",podgroup="g"}}'

    t0 = time.time()
    _fail(kube_client, namespace, failure, "g-0", node)
    others = ("g-1", "g-2")
    originals = (*others, "g-0") if failure.startswith("node") else others

    if policy in ("wait", "continue"):
        time.sleep(REPLACE_AFTER)
        created = time.time()
        kube_client.create(_member(namespace, "g-0-r", scheduler))
        wait_for("the replacement bound", lambda: "g-0-r" in _bound(kube_client, namespace))
        t1 = time.time()
        assert all(not _gone(kube_client, namespace, p) for p in others), f"{policy} deleted a member"
        time.sleep(DETECT)  # the counter has stopped: read it
        held = _value(_metrics(port), series)
        print(f"\n{policy} x {failure}: replacement made +{created - t0:.2f}s, bound +{t1 - t0:.2f}s; "
              f"held {held:.2f} GPU-s")  # fmt: skip
        if policy == "wait":
            # g-1 and g-2 held from the loss (seen within DETECT) until the replacement is bound
            assert 2 * (created - t0 - DETECT) <= held <= 2 * (t1 - t0 + 0.2), (held, created - t0, t1 - t0)
        else:
            assert held == 0.0
        assert _value(_metrics(port), "gangsched_gangs_below_min_count") == 0.0
        return

    if policy == "restart":
        wait_for("the members still bound deleted",
                 lambda: all(_gone(kube_client, namespace, p) for p in originals), timeout=10)  # fmt: skip
        deleted = time.time()
        assert deleted - t0 <= DETECT + 0.2 + 1.0, deleted - t0  # + the deletions' own round trips
        action = "restart"
    else:
        wait_for("the members released",
                 lambda: all(_gone(kube_client, namespace, p) for p in originals), timeout=20)  # fmt: skip
        deleted = time.time()
        assert RELEASE_AFTER <= deleted - t0 <= RELEASE_AFTER + DETECT + 1.0, deleted - t0
        action = "release"
    text = _metrics(port)
    held = _value(text, series)
    print(f"\n{policy} x {failure}: members deleted by +{deleted - t0:.2f}s; held {held:.2f} GPU-s")
    if policy == "restart":
        assert held == 0.0
    else:
        assert 2 * RELEASE_AFTER <= held <= 2 * (RELEASE_AFTER + DETECT), held
    assert _value(text, f'gangsched_gang_recoveries_total{{action="{action}"}}') == 1.0
    reasons = {e.reason for e in kube_client.list(Event, namespace=namespace)}
    assert ("GangRestart" if action == "restart" else "GangReleased") in reasons, reasons
    # The owner creates the group again; it is scheduled whole.
    for name in ("g-0-r", "g-1-r", "g-2-r"):
        kube_client.create(_member(namespace, name, scheduler))
    again = wait_for(
        "the new gang bound",
        lambda: {"g-0-r", "g-1-r", "g-2-r"} <= set(b := _bound(kube_client, namespace)) and b,
    )
    if failure.startswith("node"):
        assert node not in {again[p] for p in ("g-0-r", "g-1-r", "g-2-r")}
    assert proc.alive(), proc.log_tail()
