"""The dashboard page, rendered from a scheduler's own state (no cluster; tests/live/test_deploy.py loads it
in a real browser). Expectations by hand: the queue in upstream's order (priority, then creation), a gang
below minCount held at PreEnqueue with upstream's message, GPU counts from the pods' requests."""

from __future__ import annotations

import datetime as dt
from html.parser import HTMLParser
from typing import Any

import yaml

from gangsched.api.gates import FeatureGates
from gangsched.live.dashboard import DashboardView, gpu_use, render_dashboard
from gangsched.live.recovery import GangRecovery
from gangsched.scheduler import Profile, Scheduler, run_until_stable
from gangsched.scheduler.recovery import Recovery
from gangsched.store import Store
from gangsched.store.store import EPOCH

from .scenarios.harness import load_objects

OBJECTS = """
- {apiVersion: v1, kind: Node, metadata: {name: n1},
   status: {allocatable: {cpu: "32", memory: 64Gi, pods: "110", nvidia.com/gpu: "8"}}}
- {apiVersion: v1, kind: Node, metadata: {name: n2},
   status: {allocatable: {cpu: "32", memory: 64Gi, pods: "110", nvidia.com/gpu: "4"}}}
- {apiVersion: v1, kind: Node, metadata: {name: cpu-only},
   status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}}
"""


def group(name: str, min_count: int) -> list[dict[str, Any]]:
    return [{
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "ml"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
    }]  # fmt: skip


def pod(
    name: str, group_name: str | None, gpus: int, cpu: str = "1", priority: int = 0
) -> list[dict[str, Any]]:
    spec: dict[str, Any] = {
        "schedulerName": "gangsched", "priority": priority,
        "containers": [{"name": "c", "image": "i", "resources": {
            "requests": {"cpu": cpu, "nvidia.com/gpu": str(gpus)}, "limits": {"nvidia.com/gpu": str(gpus)}}}],
    }  # fmt: skip
    if group_name:
        spec["schedulingGroup"] = {"podGroupName": group_name}
    return [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ml"}, "spec": spec}]


def scheduled_store() -> tuple[Store, Scheduler]:
    docs = yaml.safe_load(OBJECTS)
    docs += group("a", 2) + pod("a-0", "a", 3) + pod("a-1", "a", 3)  # 6 GPUs, both will run
    docs += group("b", 2) + pod("b-0", "b", 2) + pod("b-1", "b", 2)  # 4 GPUs, only one will run
    docs += group("c", 2) + pod("c-0", "c", 4) + pod("c-1", "c", 4)  # 8 GPUs: 2 are left, cannot fit
    docs += group("d", 3) + pod("d-0", "d", 1)  # 1 pod of 3: held at PreEnqueue
    docs += pod("huge", None, 0, cpu="100", priority=1000)  # fits nowhere, first in the queue
    gates = FeatureGates()
    store = Store()
    store.add_all(load_objects(docs, "dashboard", gates))
    scheduler = Scheduler(store, gates, profile=Profile(scheduler_names=frozenset({"gangsched"})))
    run_until_stable(store, scheduler)
    for name in ("a-0", "a-1", "b-0"):
        p = store.get("Pod", ("ml", name))
        assert p.spec.nodeName, name
        p.status.phase = "Running"
    return store, scheduler


class Tables(HTMLParser):
    """Text of every table cell, by the table's class: {class: [[cell, ...], ...]} (header row first)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self._rows: list[list[str]] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self._rows = self.tables.setdefault(dict(attrs).get("class") or "", [])
        elif tag == "tr" and self._rows is not None:
            self._rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._rows is not None:
            self._rows[-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "table":
            self._rows = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def tables(html: str) -> dict[str, list[list[str]]]:
    parser = Tables()
    parser.feed(html)
    return parser.tables


def column(rows: list[list[str]], name: str) -> list[str]:
    index = rows[0].index(name)
    return [r[index] for r in rows[1:]]


def test_gpu_use_per_node() -> None:
    store, _ = scheduled_store()
    use = {u.node: u for u in gpu_use(store)}
    assert set(use) == {"n1", "n2"}  # the node without GPUs is not listed
    assert sum(u.progressing for u in use.values()) == 6  # gang a: both members run
    assert sum(u.idle for u in use.values()) == 4  # gang b: bound, 1 of minCount 2 running: held
    assert sum(u.free for u in use.values()) == 2
    for u in use.values():
        assert u.free == u.total - u.progressing - u.idle >= 0
    assert (use["n1"].total, use["n2"].total) == (8, 4)


def test_the_page() -> None:
    store, scheduler = scheduled_store()
    page = render_dashboard(DashboardView(store, scheduler, "gangsched", leading=True))
    got = tables(page)

    queue = got["queue"]
    assert column(queue, "#") == ["1", "2"]
    # The priority-1000 pod first, then gang c; gangs a and b are bound and left the queue; d is gated.
    assert column(queue, "root") == ["ml/huge", "ml/c"]
    assert column(queue, "kind") == ["Pod", "PodGroup"]
    assert column(queue, "priority") == ["1000", "0"]
    assert column(queue, "pods waiting") == ["1", "2"]
    assert all(state in ("unschedulable", "backoff") for state in column(queue, "waits in"))
    # the group's condition as upstream writes it with TopologyAwareWorkloadScheduling on (gangsched default)
    assert column(queue, "last reason")[1].startswith(
        "pod group is unschedulable, 0/1 placements are available, first placement status: "
        "minCount (2) cannot be satisfied"
    )

    gated = got["gated"]
    assert column(gated, "pod") == ["ml/d-0"]
    assert column(gated, "held because") == [scheduler.gate_of(("ml", "d-0"))]

    gangs = {row[0]: dict(zip(got["gangs"][0], row, strict=True)) for row in got["gangs"][1:]}
    assert set(gangs) == {"ml/a", "ml/b", "ml/c", "ml/d"}
    assert gangs["ml/a"]["state"] == "running" and gangs["ml/a"]["bound / minCount / pods"] == "2 / 2 / 2"
    assert gangs["ml/b"]["state"] == "admitted" and gangs["ml/b"]["running"] == "1"
    assert gangs["ml/c"]["state"] == "pending" and gangs["ml/c"]["bound / minCount / pods"] == "0 / 2 / 2"
    assert gangs["ml/d"]["state"] == "gated" and gangs["ml/d"]["bound / minCount / pods"] == "0 / 3 / 1"
    # What `gangsched explain` says: c is second in the queue, behind the priority-1000 pod; with no run-time
    # estimate for anything running, its start cannot be planned.
    assert "queue position: 2 of 2 (behind ml/huge)" in gangs["ml/c"]["explanation"]
    assert "nvidia.com/gpu" in gangs["ml/c"]["explanation"]
    assert gangs["ml/c"]["ETA"] == "unknown within the planning window"
    assert gangs["ml/d"]["explanation"] == f"scheduler: {scheduler.gate_of(('ml', 'd-0'))}"
    assert gangs["ml/a"]["explanation"] == gangs["ml/a"]["ETA"] == "-"

    gpus = got["gpus"]
    assert column(gpus, "node") == ["n1", "n2"]
    totals = [
        sum(int(v) for v in column(gpus, c)) for c in ("free", "allocated, progressing", "allocated, idle")
    ]
    assert totals == [2, 6, 4]


def test_before_sync_and_standing_by() -> None:
    page = render_dashboard(DashboardView(Store(), None, "gangsched", leading=False))
    assert "standing by" in page and "not synced" in page
    assert "Not synced yet" in page
    assert "No node has GPUs" in page


def test_names_are_escaped() -> None:
    page = render_dashboard(DashboardView(Store(), None, "<b>x</b>", leading=True))
    assert "<b>x</b>" not in page and "&lt;b&gt;x&lt;/b&gt;" in page


def test_a_gang_stalled_after_a_loss() -> None:
    """Gang a (2 x 3 GPUs, minCount 2) loses a-1 at t=100 under release-after:600; at t=130 the page says it
    is held without progress since then, with 3 GPUs in place, released at t=700."""
    store, scheduler = scheduled_store()
    recovery = GangRecovery(store, Recovery.parse("release-after:600"), scheduler_name="gangsched")
    recovery.observe(50.0)
    store.delete("Pod", ("ml", "a-1"))
    recovery.observe(100.0)
    now = EPOCH + dt.timedelta(seconds=130)
    page = render_dashboard(
        DashboardView(store, scheduler, "gangsched", leading=True, recovery=recovery), now
    )
    got = tables(page)
    gangs = {row[0]: dict(zip(got["gangs"][0], row, strict=True)) for row in got["gangs"][1:]}
    assert gangs["ml/a"]["state"] == "stalled"
    since = (EPOCH + dt.timedelta(seconds=100)).strftime("%H:%M:%S")
    release = (EPOCH + dt.timedelta(seconds=700)).strftime("%H:%M:%S")
    assert gangs["ml/a"]["after a loss"] == (
        f"held without progress since {since} UTC (30s, 3 GPUs in place): recovery release-after:600, "
        f"released at {release} UTC"
    )
    assert gangs["ml/b"]["after a loss"] == "-"  # b was never whole: nothing lost
    assert "recovery policy release-after:600" in page
