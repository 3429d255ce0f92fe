"""The read-only dashboard of `gangsched run`: one server-rendered HTML page on the metrics port (GET /).

    html = render_dashboard(DashboardView(store, scheduler, scheduler_name="gangsched", leading=True))

Three sections, from the scheduler's own state (the same Store and queue it decides from, nothing fetched):
- the queue in the order roots are tried (priority, then creation), with positions, where each waits
  (active, backoff, unschedulable, in-flight) and why; pods held at PreEnqueue below it, with their reason;
- each gang (PodGroup with pods of ours): bound / minCount / pods, its state and condition message; a gang
  held without progress after losing members (live/recovery.py) is `stalled`, with since when, the GPUs it
  holds and what the recovery policy does next; for a
  waiting gang, what `gangsched explain` says (scheduler/explain.py: failing checks, shortfall, what would be
  evicted, queue position) and its estimated start from the conservative plan of the queue (the first
  EXPLAIN_LIMIT waiting gangs in queue order: explaining runs the core dry, so it is bounded per page);
- GPUs per node (extended resources named `<vendor>/gpu`): free, allocated to pods that are progressing
  (Running, and their gang has minCount members running), and allocated but idle (bound pods not running,
  or members of a gang with fewer than minCount running: held, not used).

No JavaScript, no build step; the page reloads itself every few seconds. Everything shown is escaped.
"""

from __future__ import annotations

import datetime as dt
import html
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..api.quantity import milli
from ..scheduler import Scheduler
from ..scheduler.explain import explain, queue_order
from ..scheduler.explain import render as render_explanation
from ..scheduler.podinfo import is_terminal
from ..scheduler.recovery import release_at
from ..scheduler.resources import pod_requests
from ..store.store import EPOCH, Store
from .recovery import GangRecovery, is_gpu_resource

__all__ = ["EXPLAIN_LIMIT", "DashboardView", "GpuUse", "gpu_use", "render_dashboard"]

REFRESH_SECONDS = 5
EXPLAIN_LIMIT = 10


@dataclass(frozen=True, slots=True)
class DashboardView:
    store: Store
    scheduler: Scheduler | None  # None until the informers have synced
    scheduler_name: str
    leading: bool
    recovery: GangRecovery | None = None  # None until synced (or in tests without it)


@dataclass(frozen=True, slots=True)
class GpuUse:
    """GPUs of one node, in whole devices."""

    node: str
    total: int
    progressing: int
    idle: int

    @property
    def free(self) -> int:
        return max(0, self.total - self.progressing - self.idle)


def _gang_min_count(store: Store, group: tuple[str, str]) -> int:
    pg = store.get("PodGroup", group)
    gang = pg.spec.schedulingPolicy.gang if pg is not None else None
    return int(gang.minCount) if gang is not None else 1


def gpu_use(store: Store) -> list[GpuUse]:
    """GPU use per node with GPUs, by node name. A pod counts as progressing when it runs and, if it belongs
    to a gang, at least minCount members of that gang run: a gang below minCount only holds its GPUs."""
    running: Counter[tuple[str, str]] = Counter()
    holders: list[tuple[Any, dict[str, int]]] = []
    for pod in store.list("Pod"):
        if not pod.spec.nodeName or is_terminal(pod):
            continue
        gpus = {r: v for r, v in pod_requests(pod.spec).items() if is_gpu_resource(r) and v}
        group = _group_of(pod)
        is_running = pod.status is not None and pod.status.phase == "Running"
        if group is not None and is_running:
            running[group] += 1
        if gpus:
            holders.append((pod, gpus))
    used: dict[str, list[int]] = {}
    for pod, gpus in holders:
        group = _group_of(pod)
        is_running = pod.status is not None and pod.status.phase == "Running"
        progressing = is_running and (group is None or running[group] >= _gang_min_count(store, group))
        slot = used.setdefault(pod.spec.nodeName, [0, 0])
        slot[0 if progressing else 1] += sum(gpus.values()) // 1000
    out = []
    for node in sorted(store.list("Node"), key=lambda n: n.metadata.name):
        allocatable = (node.status.allocatable if node.status else None) or {}
        total = sum(milli(v) for r, v in allocatable.items() if is_gpu_resource(r)) // 1000
        progressing, idle = used.get(node.metadata.name, [0, 0])
        if total or progressing or idle:
            out.append(GpuUse(node.metadata.name, total, progressing, idle))
    return out


def _group_of(pod: Any) -> tuple[str, str] | None:
    sg = pod.spec.schedulingGroup
    return (pod.metadata.namespace, sg.podGroupName) if sg is not None and sg.podGroupName else None


def _condition(obj: Any, ctype: str) -> Any:
    conditions = (obj.status.conditions if obj is not None and obj.status else None) or []
    return next((c for c in conditions if c.type == ctype), None)


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _table(headers: Iterable[str], rows: list[list[str]], empty: str, css: str = "") -> str:
    if not rows:
        return f'<p class="empty">{_e(empty)}</p>'
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _queue_section(view: DashboardView) -> str:
    scheduler, store = view.scheduler, view.store
    if scheduler is None:
        return '<p class="empty">Not synced yet: the informers are still listing.</p>'
    waiting = scheduler.waiting_pods()
    per_root: Counter[tuple[str, str, str]] = Counter()
    gated_rows = []
    for key, where in sorted(waiting.items()):
        pod = store.get("Pod", key)
        if pod is None:
            continue
        group = _group_of(pod)
        if where in ("gated", "incomplete"):  # held before the queue either way
            gated_rows.append([_e(f"{key[0]}/{key[1]}"), _e(group[1] if group else "-"),
                               _e(scheduler.gate_of(key) or "")])  # fmt: skip
            continue
        per_root[scheduler.root_of(scheduler.pod(key))] += 1
    rows = []
    for position, root in enumerate(scheduler.queue.in_order(), start=1):
        kind, ns, name = root.key
        obj = store.get(kind, (ns, name))
        ctype = "PodScheduled" if kind == "Pod" else f"{kind}InitiallyScheduled"
        cond = _condition(obj, ctype)
        why = cond.message if cond is not None and cond.status != "True" and cond.message else ""
        rows.append([
            str(position), _e(kind), _e(f"{ns}/{name}"), str(root.priority),
            f'<span class="state {_e(root.state)}">{_e(root.state)}</span>', str(root.attempts),
            str(per_root.get(root.key, 0)), _e(why),
        ])  # fmt: skip
    queue = _table(
        ["#", "kind", "root", "priority", "waits in", "attempts", "pods waiting", "last reason"],
        rows,
        "The queue is empty.",
        "queue",
    )
    gated = _table(["pod", "pod group", "held because"], gated_rows, "No pod is held at PreEnqueue.", "gated")
    return f"{queue}<h3>Held before the queue (PreEnqueue)</h3>{gated}"


def _explanations(
    view: DashboardView, members: dict[tuple[str, str], list[Any]], now: dt.datetime
) -> dict[tuple[str, str], tuple[str, str]]:
    """(explanation as HTML lines, estimated start) of the gangs with pods waiting, for the first
    EXPLAIN_LIMIT of them in queue order (gated ones after the queued ones)."""
    scheduler = view.scheduler
    assert scheduler is not None
    seconds = (now - EPOCH).total_seconds()  # the clock the plan counts in (pods' start times)
    waiting = scheduler.waiting_pods()
    roots = {
        scheduler.hierarchy.root_of_group(g): g
        for g, pods in members.items()
        if any((p.metadata.namespace, p.metadata.name) in waiting for p in pods)
    }
    queued = [r for r in queue_order(scheduler) if r in roots]
    order = queued + [r for r in roots if r not in set(queued)]
    out: dict[tuple[str, str], tuple[str, str]] = {}
    for n, root in enumerate(order):
        if n >= EXPLAIN_LIMIT:
            out[roots[root]] = (f"not explained here: only the first {EXPLAIN_LIMIT} waiting gangs are", "-")
            continue
        try:
            e = explain(scheduler, root, seconds)
        except Exception as error:  # the page must render whatever one explanation does
            out[roots[root]] = (_e(f"explain failed: {error}"), "-")
            continue
        lines = [line.strip() for line in render_explanation(e).splitlines()[1:]]
        text = "<br>".join(_e(line) for line in lines if not line.startswith("estimated start"))
        if e.state == "gated":
            eta = "once it can enter the queue (see the held pods)"
        elif e.eta is None:
            eta = "unknown within the planning window"
        else:
            wait = e.eta.start - seconds
            eta = "now" if wait <= 0 else f"in {wait:.0f}s"
        out[roots[root]] = (text or "-", eta)
    return out


def _gang_section(view: DashboardView, now: dt.datetime) -> str:
    store = view.store
    members: dict[tuple[str, str], list[Any]] = {}
    for pod in store.list("Pod"):
        group = _group_of(pod)
        if group is not None and pod.spec.schedulerName == view.scheduler_name and not is_terminal(pod):
            members.setdefault(group, []).append(pod)
    waiting = view.scheduler.waiting_pods() if view.scheduler is not None else {}
    explained = _explanations(view, members, now) if view.scheduler is not None else {}
    rows = []
    for group in sorted(members):
        pg = store.get("PodGroup", group)
        pods = members[group]
        bound = sum(1 for p in pods if p.spec.nodeName)
        running = sum(1 for p in pods if p.spec.nodeName and p.status and p.status.phase == "Running")
        min_count = _gang_min_count(store, group)
        places = {waiting[(p.metadata.namespace, p.metadata.name)] for p in pods
                  if (p.metadata.namespace, p.metadata.name) in waiting}  # fmt: skip
        if pg is None:
            state = "no PodGroup"
        elif bound >= min_count:
            state = "running" if running >= min_count else "admitted"
        elif "gated" in places:
            state = "gated"
        else:
            state = "pending"
        cond = _condition(pg, "PodGroupInitiallyScheduled")
        message = (
            "-"
            if cond is None
            else f"{cond.status}/{cond.reason}" + (f": {cond.message}" if cond.message else "")
        )
        why, eta = explained.get(group, ("-", "-")) if state in ("pending", "gated") else ("-", "-")
        stalled = _stalled(view.recovery, group, now)
        if stalled:
            state = "stalled"
        rows.append([
            _e(f"{group[0]}/{group[1]}"), f'<span class="state {state}">{state}</span>',
            f"{bound} / {min_count} / {len(pods)}", str(running), _e(message), why, _e(eta),
            _e(stalled or "-"),
        ])  # fmt: skip
    headers = ["gang", "state", "bound / minCount / pods", "running", "condition", "explanation", "ETA",
               "after a loss"]  # fmt: skip
    return _table(
        headers,
        rows,
        "No gang has pods for this scheduler.",
        "gangs",
    )


def _stalled(recovery: GangRecovery | None, group: tuple[str, str], now: dt.datetime) -> str:
    """'held without progress since ...' for a gang stalled after losing members, else ''."""
    since = recovery.stalled_since(group) if recovery is not None else None
    if recovery is None or since is None:
        return ""
    state = recovery.gangs[group]
    at = EPOCH + dt.timedelta(seconds=since)
    held = max(0.0, (now - at).total_seconds())
    text = (
        f"held without progress since {at.strftime('%H:%M:%S')} UTC ({held:.0f}s, {state.gpus:g} GPUs "
        f"in place): recovery {recovery.recovery.name}"
    )
    release = release_at(recovery.recovery, since)
    if release is not None:
        text += f", released at {(EPOCH + dt.timedelta(seconds=release)).strftime('%H:%M:%S')} UTC"
    else:
        text += ", waiting for replacements"
    return text


def _gpu_section(view: DashboardView) -> str:
    rows = []
    for use in gpu_use(view.store):
        total = max(use.total, use.progressing + use.idle, 1)
        bar = "".join(
            f'<span class="{css}" style="width:{100 * n / total:.1f}%" title="{css}: {n}"></span>'
            for css, n in (("progressing", use.progressing), ("idle", use.idle), ("free", use.free))
            if n
        )
        rows.append([_e(use.node), str(use.total), str(use.free), str(use.progressing), str(use.idle),
                     f'<div class="bar">{bar}</div>'])  # fmt: skip
    return _table(
        ["node", "GPUs", "free", "allocated, progressing", "allocated, idle", ""],
        rows,
        "No node has GPUs (extended resources named <vendor>/gpu).",
        "gpus",
    )


STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em;margin:0 0 .2em}h2{font-size:1.15em;margin-top:1.6em}h3{font-size:1em}
table{border-collapse:collapse;margin:.4em 0}th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;
vertical-align:top}th{background:#f0f0f0}.meta{color:#555}.empty{color:#777;font-style:italic}
.state{padding:0 .4em;border-radius:3px;background:#eee}.state.active,.state.running{background:#cfe8cf}
.state.unschedulable,.state.gated,.state.pending{background:#f6dcc0}.state.admitted{background:#d6e4f5}
.state.stalled{background:#f3c0c0}
.bar{width:16em;height:1em;display:flex;border:1px solid #999}.bar span{display:block;height:100%}
.bar .progressing{background:#3a8f3a}.bar .idle{background:#e0a030}.bar .free{background:#e8e8e8}
"""


def render_dashboard(view: DashboardView, now: dt.datetime | None = None) -> str:
    """The whole page. Cheap enough to render on every request (O(pods + nodes + queue))."""
    now = now or dt.datetime.now(dt.UTC)
    role = "leading" if view.leading else "standing by (another replica holds the Lease)"
    synced = "synced" if view.scheduler is not None else "not synced"
    return (
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
        f'<meta http-equiv="refresh" content="{REFRESH_SECONDS}">'
        f"<title>gangsched: {_e(view.scheduler_name)}</title><style>{STYLE}</style></head><body>"
        f"<h1>gangsched <code>{_e(view.scheduler_name)}</code></h1>"
        f'<p class="meta">This replica is {_e(role)}, {synced}; '
        f"{view.store.count('Node')} nodes, {view.store.count('Pod')} pods; "
        + (f"recovery policy {_e(view.recovery.recovery.name)}; " if view.recovery is not None else "")
        + f"rendered {now.strftime('%Y-%m-%d %H:%M:%S')} UTC. Read-only.</p>"
        f'<h2 id="queue">Queue</h2>{_queue_section(view)}'
        f'<h2 id="gangs">Gangs</h2>{_gang_section(view, now)}'
        f'<h2 id="gpus">GPUs per node</h2>{_gpu_section(view)}'
        "</body></html>"
    )
