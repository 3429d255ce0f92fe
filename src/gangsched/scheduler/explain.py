"""Why is it pending, and when will it start: `gangsched explain` for a pod or a group.

Every answer comes from the decision core itself, never from a second copy of its rules:
- the failing checks are the filters' own FitFailure histograms for the group's pending pods (what
  `0/N nodes are available: ...` says), on the scheduler's snapshot;
- how far short the best domain is: the group's pods run through the cycle (`run_group_cycle`, basic, so
  that it counts how many fit) inside each topology domain, or the whole cluster, and what they need against
  what the nodes that pass their filters have free;
- what would have to be evicted: workload-aware preemption (a PodGroup or a CompositePodGroup tree) or
  default preemption run dry (no Decision), or, where it would not help a topology-constrained group, the
  lower-priority units in the best domain;
- which jobs block it and when it starts: the conservative plan of the queue (plan.py), in queue order.

It reads the scheduler and leaves its snapshot as found; it draws from its own random generator so that
explaining changes no later decision.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .cycle import GroupAttempt, run_group_cycle
from .estimates import Estimate, History
from .evaluator import Evaluator, FitFailure
from .hierarchy import topology_key
from .plan import PlanSettings, Reservation, plan_queue, root_estimate
from .pod_preemption import preempt_pod
from .podinfo import PodInfo, is_terminal
from .preemption import PreemptionView, lower_priority_units, preempt_pod_group
from .queue import RootKey
from .topology import placements

if TYPE_CHECKING:
    from .scheduler import Scheduler

__all__ = ["Explanation", "Shortfall", "as_dict", "explain", "queue_order", "render"]


@dataclass(frozen=True, slots=True)
class Shortfall:
    """The best domain for the group (a topology value, or the whole cluster) and what it lacks there."""

    key: str | None  # topology key; None: the cluster
    domain: str | None
    fits: int  # pods of the group that fit there now (pods tried one by one, as its cycle does)
    needs: int  # pods it needs placed at once (minCount less those running; 1 for a basic group)
    feasible_domains: int
    domains: int
    short: tuple[tuple[str, int, int], ...]  # (resource, needed, free) where needed > free, milli-units


@dataclass(slots=True)
class Explanation:
    """Everything `explain` says about one root; `render` turns it into text."""

    root: RootKey
    state: str  # "scheduled", "gated", "pending", "not queued"
    message: str | None = None  # the core's own reason (condition message)
    failing: Counter[str] = field(default_factory=Counter)  # filter reason -> nodes, for its pods
    nodes: int = 0
    shortfall: Shortfall | None = None
    evict: list[str] = field(default_factory=list)  # "ns/name (priority P)" units
    preemption: str | None = None  # why preemption does not help, when it does not
    position: int = 0
    queued: int = 0
    ahead: list[RootKey] = field(default_factory=list)
    estimate: Estimate = field(default_factory=lambda: Estimate(None))
    eta: Reservation | None = None
    node_names: list[str] = field(default_factory=list)
    now: float = 0.0


def queue_order(scheduler: Scheduler) -> list[RootKey]:
    """Every root in the queue (whatever its state), most important first: the order cycles take them."""
    return [r.key for r in sorted(scheduler.queue.roots(), key=lambda r: r.sort_key())]


def _pending_pods(scheduler: Scheduler, root: RootKey) -> list[PodInfo]:
    """The root's pods that are neither bound nor finished."""
    kind, ns, name = root
    if kind == "Pod":
        pod = scheduler.store.get("Pod", (ns, name))
        keys = [(ns, name)] if pod is not None else []
    else:
        groups = scheduler.hierarchy.tree_groups(root) if kind == "CompositePodGroup" else [(ns, name)]
        keys = [k for g in groups for k in scheduler.members(g)]
    pods = [scheduler.pod(k) for k in keys]
    return [pi for pi in pods if not pi.pod.spec.nodeName and not is_terminal(pi.pod)]


def _needs(scheduler: Scheduler, root: RootKey, pending: list[PodInfo]) -> int:
    if root[0] != "PodGroup":
        return len(pending) if root[0] == "CompositePodGroup" else 1
    pg = scheduler.store.get("PodGroup", root[1:])
    gang = pg.spec.schedulingPolicy.gang if pg is not None else None
    if gang is None:
        return 1
    running = sum(1 for k in scheduler.members(root[1:]) if scheduler.pod(k).pod.spec.nodeName)
    return max(1, min(len(pending), int(gang.minCount) - running))


def _failing(ev: Evaluator, pending: list[PodInfo]) -> tuple[Counter[str], int]:
    """The filters' verdict for each distinct pod of the group alone on the current snapshot."""
    failing: Counter[str] = Counter()
    seen = set()
    for pi in pending:
        if pi.signature in seen:
            continue
        seen.add(pi.signature)
        found = ev.find_node(pi)
        if isinstance(found, FitFailure):
            for reason, count in found.histogram.items():
                failing[reason] = max(failing[reason], count)
    return failing, len(ev.snap)


def _shortfall(scheduler: Scheduler, root: RootKey, pending: list[PodInfo], needs: int) -> Shortfall:
    ev = scheduler.evaluator()
    snap = ev.snap
    pg = scheduler.store.get("PodGroup", root[1:]) if root[0] == "PodGroup" else None
    key = topology_key(pg, scheduler.store) if pg is not None else None
    options: list[tuple[str | None, Any]] = (
        [(p.value, p.nodes) for p in placements(ev, key, None)] if key else []
    )
    if not options:
        options = [(None, np.ones(len(snap), dtype=bool))]
    attempt = GroupAttempt(min_count=1, gang=False, scheduled=0, pods=pending)
    best: tuple[int, str | None, Any] | None = None
    feasible = 0
    for value, nodes in options:
        result = run_group_cycle(ev, attempt, nodes)
        fits = len(result.placed)
        result.revert()
        feasible += fits >= needs
        if best is None or fits > best[0]:
            best = (fits, value, nodes)
    assert best is not None
    fits, value, nodes = best
    usable = nodes & ev.equivalence_class(pending[0]).static_ok
    free = snap.alloc - snap.used
    short = []
    served = snap.dra_rows()  # served by devices where no node offers them: no capacity to add up
    for row, amount in ev.vector(pending[0]).rows:
        if row in served:
            continue
        needed = amount * needs
        have = int(np.clip(free[row, usable], 0, None).sum())
        if needed > have:
            short.append((snap.resources[row], needed, have))
    return Shortfall(key, value, fits, needs, feasible, len(options) if key else 1, tuple(short))


def _preemption(
    scheduler: Scheduler, root: RootKey, pending: list[PodInfo], shortfall: Shortfall | None
) -> tuple[list[str], str | None]:
    """Victims preemption would take (run dry), or why it would not help. Where it would not help a
    topology-constrained PodGroup, the lower-priority units in its best domain are listed with the reason."""
    ev = scheduler.evaluator()
    snap = ev.snap
    view = PreemptionView(
        ev,
        {pi.key: pi for pi in scheduler.pods()},
        scheduler.store,
        np.random.default_rng(0),
        scheduler.gates.pod_group_preemption_policy,
    )
    kind, ns, name = root
    group = scheduler.store.get(kind, (ns, name)) if kind != "Pod" else None  # PodGroup or tree root
    pg = group if kind == "PodGroup" else None
    place = scheduler.placer(root)
    if kind == "Pod":
        outcome = preempt_pod(view, pending[0])
    elif group is None or place is None:
        return [], None
    else:
        outcome = preempt_pod_group(view, group, pending, lambda: place(None))
    if isinstance(outcome, str):
        if pg is None or shortfall is None or shortfall.key is None or shortfall.domain is None:
            return [], outcome
        code = snap.label_values[shortfall.key][shortfall.domain]
        in_domain = snap.label_codes(shortfall.key) == code
        units = [
            u
            for u in lower_priority_units(view, int(pg.spec.priority or 0))
            if any(in_domain[snap.placed[pi.key][0]] for pi in u.pods if pi.key in snap.placed)
        ]
        return [f"{_unit_name(u)} (priority {u.priority})" for u in units], outcome
    return [f"{_unit_name(u)} (priority {u.priority})" for u in outcome.victims], None


def _unit_name(unit: Any) -> str:
    if unit.whole_group is not None:
        return f"{unit.whole_group[0]} {unit.whole_group[1]}/{unit.whole_group[2]}"
    groups = sorted({pi.group for pi in unit.pods if pi.group is not None})
    if groups:
        return "PodGroup " + ", ".join(f"{g[0]}/{g[1]}" for g in groups) + f" ({len(unit.pods)} pods)"
    return "Pod " + ", ".join(pi.name for pi in unit.pods)


def explain(
    scheduler: Scheduler,
    root: RootKey,
    now: float,
    *,
    settings: PlanSettings | None = None,
    history: History | None = None,
) -> Explanation:
    """Explain root `root` (kind, namespace, name) on the scheduler's current state at time `now`."""
    out = Explanation(root, "not queued", now=now, node_names=list(scheduler.snapshot().node_names))
    pending = _pending_pods(scheduler, root)
    gated = [pi for pi in pending if scheduler.gate_of(pi.key) is not None]
    out.estimate = root_estimate(scheduler, root, history)
    if not pending:
        out.state = "scheduled"
        return out
    if gated:
        out.state, out.message = "gated", scheduler.gate_of(gated[0].key)
        return out
    out.message = _condition_message(scheduler, root, pending)
    order = queue_order(scheduler)
    if root not in order:
        return out
    out.state = "pending"
    out.position, out.queued = order.index(root) + 1, len(order)
    out.ahead = order[: order.index(root)]
    ev = scheduler.evaluator()
    out.failing, out.nodes = _failing(ev, pending)
    out.shortfall = _shortfall(scheduler, root, pending, _needs(scheduler, root, pending))
    out.evict, out.preemption = _preemption(scheduler, root, pending, out.shortfall)
    plan = plan_queue(scheduler, order[: out.position], now, settings or PlanSettings(), history=history)
    out.eta = plan.get(root)
    return out


def _condition_message(scheduler: Scheduler, root: RootKey, pending: list[PodInfo]) -> str | None:
    kind, ns, name = root
    obj = scheduler.store.get(kind, (ns, name)) if kind != "Pod" else pending[0].pod
    conditions = (obj.status.conditions if obj is not None and obj.status else None) or []
    for c in conditions:
        if c.status == "False" and c.message:
            return str(c.message)
    return None


def _quantity(resource: str, milli: int) -> str:
    if resource in ("memory", "ephemeral-storage"):
        units = milli // 1000
        for suffix, size in (("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if units % size == 0 and units >= size:
                return f"{units // size}{suffix}"
        return str(units)
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def _when(t: float, now: float) -> str:
    return f"t={t:.0f}s (in {t - now:.0f}s)" if t > now else f"now (t={t:.0f}s)"


def render(e: Explanation) -> str:
    """The explanation as text, one fact per line."""
    kind, ns, name = e.root
    lines = [f"{kind} {ns}/{name}: {e.state}"]
    if e.message:
        lines.append(f"  scheduler: {e.message}")
    if e.state != "pending":
        return "\n".join(lines)
    if e.failing:
        parts = ", ".join(f"{reason} on {count}" for reason, count in sorted(e.failing.items()))
        lines.append(f"  failing checks (nodes of {e.nodes}): {parts}")
    else:
        lines.append("  no filter fails for any of its pods alone: they do not fit all at once")
    s = e.shortfall
    if s is not None:
        where = f"one {s.key}" if s.key else "the cluster"
        best = f"best {s.key} {s.domain}" if s.key else "the cluster"
        need = f"needs {s.needs} pod(s) placed at once in {where}"
        if s.short:
            need += "; " + "; ".join(
                f"needs {_quantity(r, n)} {r}, {best} has {_quantity(r, f)} free" for r, n, f in s.short
            )
        else:
            need += f"; {best} fits {s.fits} of them (enough free in total, but not on few enough nodes)"
        if s.key:
            need += f"; {s.feasible_domains}/{s.domains} {s.key} domains fit it now"
        lines.append(f"  {need}")
    if e.evict:
        verb = "would have to evict" if not e.preemption else "lower-priority work in its best domain"
        lines.append(f"  {verb}: {', '.join(e.evict)}")
    if e.preemption:
        lines.append(f"  preemption: {e.preemption}")
    ahead = ", ".join(f"{k}/{n}" for _, k, n in e.ahead[:5]) + (" ..." if len(e.ahead) > 5 else "")
    lines.append(f"  queue position: {e.position} of {e.queued}" + (f" (behind {ahead})" if ahead else ""))
    est = e.estimate
    run = f"{est.seconds:.0f}s ({est.source})" if est.seconds is not None else "unknown"
    if e.eta is None:
        lines.append(f"  estimated start: unknown within the planning window (run time {run})")
        return "\n".join(lines)
    blockers = [
        f"{w.root[0]} {w.root[1]}/{w.root[2]} (expected to end {_when(w.end, e.now)}"
        + (", overran its estimate)" if w.overrun else ")")
        for w in e.eta.blockers
    ]
    if blockers:
        lines.append(f"  blocked by: {'; '.join(blockers)}")
    if e.eta.ahead:
        lines.append("  waits for nodes held for: " + ", ".join(f"{k}/{n}" for _, k, n in e.eta.ahead))
    nodes = ", ".join(e.node_names[i] for i in sorted(e.eta.nodes))
    where = f" in {s.key} {e.eta.domain}" if s is not None and s.key and e.eta.domain else ""
    lines.append(f"  estimated start: {_when(e.eta.start, e.now)} on {nodes}{where}; run time {run}")
    return "\n".join(lines)


def as_dict(e: Explanation) -> dict[str, Any]:
    """The explanation as plain data (`explain -o json`); times in seconds, resources in their units."""
    s = e.shortfall
    eta = e.eta
    return {
        "kind": e.root[0],
        "namespace": e.root[1],
        "name": e.root[2],
        "state": e.state,
        "message": e.message,
        "failing": dict(sorted(e.failing.items())),
        "nodes": e.nodes,
        "shortfall": None
        if s is None
        else {
            "topologyKey": s.key,
            "bestDomain": s.domain,
            "podsFit": s.fits,
            "podsNeeded": s.needs,
            "feasibleDomains": s.feasible_domains,
            "domains": s.domains,
            "short": [
                {"resource": r, "needed": _quantity(r, n), "free": _quantity(r, f)} for r, n, f in s.short
            ],
        },
        "wouldEvict": e.evict,
        "preemption": e.preemption,
        "queuePosition": e.position,
        "queued": e.queued,
        "ahead": [f"{k}/{ns}/{n}" for k, ns, n in e.ahead],
        "estimateSeconds": e.estimate.seconds,
        "estimateSource": e.estimate.source,
        "now": e.now,
        "estimatedStart": None if eta is None else eta.start,
        "reservedNodes": [] if eta is None else [e.node_names[i] for i in sorted(eta.nodes)],
        "blockedBy": []
        if eta is None
        else [{"root": "/".join(w.root), "expectedEnd": w.end, "overrun": w.overrun} for w in eta.blockers],
    }
