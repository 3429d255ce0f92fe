"""Run a scenario file: Kubernetes objects in, expected decisions out, optionally in several steps.

description: what is being shown
gates: "GenericWorkload=false"        # optional --feature-gates value
seed: 0                               # optional
scoring: MostAllocated                # optional NodeResourcesFit strategy (default LeastAllocated)
objects: [ ...Kubernetes objects... ]
include: path/to/manifest.yaml        # optional, relative to the scenario: more objects
expect:
  pods:
    p1: node-1                        # bound to exactly this node
    p2: [node-1, node-2]              # bound to one of these (upstream picks at random among equal scores)
    p3: {pending: "exact message"}    # PodScheduled False, reason Unschedulable, this message
    p4: {pending: "0/3 nodes are available: ..."}   # a message ending in "..." is a prefix
    p5: {gated: "exact message"}      # reason SchedulingGated
    p6: {error: "exact message"}      # reason SchedulerError
  others: pending                     # pods not listed (default): pending; or `bound`, or any form above
  groups: {pg: [True, Scheduled], pg2: [False, Unschedulable, "exact message"]}  # Scheduled: no message
  evictions: {victim: preemptor-name} # all so far, always compared: no key means no eviction at all
  count_bound: {train-a-: 6}          # pods whose name starts with the prefix that are bound (the others
                                      # with that prefix are then pending); such pods count as listed
  eviction_count: {preemptor-name: 1} # instead of evictions: how many (which ones is upstream's coin toss)
  victims_replaced_by: {preemptor-name: pod}  # the pod is bound on the node its victims were on
  per_domain: {zone: {a: 3, b: 3}}    # bound pods per value of a node label (values not listed: none)
  distinct_nodes: [m0, m1]            # these pods are bound, each on a node of its own
  volume_bindings: {ns/pvc: [pv-or-null, node]}   # every volume binding decided (and only these)
  claims: {name-prefix: {devices: [driver/pool/device], reservedFor: [pods/name], nodeSelector: ...,
                        tolerations: [[...each result's tolerations...]],
                        requests: [[name, deviceClassName, count]], results: [request names in order],
                        annotations: {...}, owner: Pod/name, finalizers: [...]}}
  no_claims: [name-prefix]            # no ResourceClaim's name starts with these
  extended_status: {pod: {claim: name-prefix, mappings: [[container, resource, request]]} or null}
steps:                                # applied in order after the first run, each with its own expect
  - {delete: [Pod/blocker], add: [...objects...], expect: {...}}
    # re-adding an existing object replaces its spec and keeps its status (an update, as kubectl apply)

The check is strict so that a broken scheduler cannot pass by accident: every pod is accounted for, a pending
pod states upstream's message (or its prefix), a bound pod names its node or the exact set of equally good
nodes, and evictions are compared even when the file lists none.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from gangsched.api.defaults import apply_defaults
from gangsched.api.gates import FeatureGates
from gangsched.api.kinds import KINDS
from gangsched.api.loader import load_documents
from gangsched.api.validation import validate
from gangsched.scheduler import Profile, Scheduler, run_until_stable
from gangsched.store import Store
from gangsched.store.change import Change
from gangsched.store.claim_controller import sync_claims


def load_objects(docs: list[Any], where: str, gates: FeatureGates, check: bool = True) -> list[Any]:
    result = load_documents(docs, where)
    errors = [str(e) for _, e in apply_defaults(item.obj for item in result.objects)]
    errors += [str(p) for p in result.problems + (validate(result.objects, gates) if check else [])]
    assert not errors, errors
    return [item.obj for item in result.objects]


REASONS = {"pending": "Unschedulable", "gated": "SchedulingGated", "error": "SchedulerError"}


def _check_pod(pod: Any, want: Any, where: str) -> None:
    """Compare one pod with one expectation in the forms the module docstring lists."""
    name, got = pod.metadata.name, pod.spec.nodeName
    cond = next(
        (c for c in (pod.status.conditions if pod.status else None) or [] if c.type == "PodScheduled"),
        None,
    )
    # "*" used to accept any node; a scenario now names the node or the candidates upstream chooses among.
    assert want != "*", f"{where}: {name}: '*' is not accepted: name the node or a list of candidate nodes"
    if want == "pending":
        assert not got, f"{where}: {name} should be pending, is on {got}"
    elif want == "bound":
        assert got, f"{where}: {name} should be bound, is pending: {cond and cond.message}"
    elif isinstance(want, list):
        why = cond and cond.message
        assert got in want, f"{where}: {name} should be on one of {want}, is on {got}: {why}"
    elif isinstance(want, dict):
        assert not got, f"{where}: {name} should be pending, is on {got}"
        ((kind, message),) = want.items()
        assert cond is not None, f"{where}: {name} has no PodScheduled condition"
        got_reason, got_message = cond.reason, cond.message or ""
        ok = got_message.startswith(message[:-3]) if message.endswith("...") else got_message == message
        assert got_reason == REASONS[kind] and ok, (
            f"{where}: {name}: got {(got_reason, got_message)!r}, want {(REASONS[kind], message)!r}"
        )
    else:
        assert got == want, f"{where}: {name} should be on {want}, is on {got}: {cond and cond.message}"


def check(
    store: Store, expect: dict[str, Any], where: str, victim_nodes: dict[tuple[str, str], str] | None = None
) -> None:
    pods = {p.metadata.name: p for p in store.list("Pod")}
    listed = expect.get("pods") or {}
    for name, want in listed.items():
        # bare `pending` says nothing about why: a listed pending pod states upstream's message
        assert want != "pending", f"{where}: {name}: write {{pending: MESSAGE}} with upstream's message"
        assert name in pods, f"{where}: pod {name} does not exist (evicted?)"
        _check_pod(pods[name], want, where)
    counted = tuple(expect.get("count_bound") or {})
    others = expect.get("others", "pending")
    for name, pod in pods.items():
        if name not in listed and not name.startswith(counted or ("\0",)):
            _check_pod(pod, others, f"{where} (not listed, expected {others})")
    for prefix, want_n in (expect.get("count_bound") or {}).items():
        n = sum(1 for name, p in pods.items() if name.startswith(prefix) and p.spec.nodeName)
        assert n == want_n, f"{where}: {n} pods named {prefix}* bound, want {want_n}"
    groups = {(k, g.metadata.name): g for k in ("PodGroup", "CompositePodGroup") for g in store.list(k)}
    for name, want in (expect.get("groups") or {}).items():
        group = groups.get(("PodGroup", name)) or groups.get(("CompositePodGroup", name))
        assert group is not None, f"{where}: group {name} missing"
        conds = [
            c
            for c in (group.status.conditions if group.status else None) or []
            if c.type.endswith("InitiallyScheduled")
        ]
        assert conds, f"{where}: group {name} has no condition"
        c = conds[0]
        got = [c.status == "True", c.reason] + ([c.message] if len(want) > 2 else [])
        assert got == list(want), f"{where}: group {name}: got {got!r}, want {want!r}"
        # a success carries no message (upstream's Scheduled condition takes a nil status' empty Message())
        assert not (c.status == "True" and c.message), f"{where}: group {name}: Scheduled with {c.message!r}"

    def label(pod_name: str, key: str) -> str | None:
        node = store.get("Node", ("", pods[pod_name].spec.nodeName or ""))
        if node is None:
            return None
        labels = {"kubernetes.io/hostname": node.metadata.name, **(node.metadata.labels or {})}
        return labels.get(key)

    for key, want_counts in (expect.get("per_domain") or {}).items():
        got_counts: dict[str, int] = {}
        for pod_name, pod in pods.items():
            if pod.spec.nodeName:
                value = str(label(pod_name, key))
                got_counts[value] = got_counts.get(value, 0) + 1
        want_str = {str(k): v for k, v in want_counts.items()}
        assert got_counts == want_str, f"{where}: bound pods per {key}: {got_counts}, want {want_str}"
    for key, names in (expect.get("same_domain") or {}).items():
        values = {n: label(n, key) for n in names}
        assert len(set(values.values())) == 1 and None not in values.values(), f"{where}: {key} {values}"
    for name, want in (expect.get("domain") or {}).items():
        group = groups.get(("PodGroup", name)) or groups.get(("CompositePodGroup", name))
        assert group is not None, f"{where}: group {name} missing"
        key = group.spec.schedulingConstraints.topology[0].key
        members = _members(store, group)
        values = {label(p, key) for p in members}
        assert values == {want}, f"{where}: {name} pods {sorted(members)} are in {key}={values}, want {want}"
    names = expect.get("distinct_nodes")
    if names:
        nodes = [pods[n].spec.nodeName for n in names]
        placed = dict(zip(names, nodes, strict=True))
        assert all(nodes) and len(set(nodes)) == len(nodes), f"{where}: {placed}"
    if "volume_bindings" in expect:
        got_vb = {f"{vb.pvc[0]}/{vb.pvc[1]}": [vb.pv, vb.node] for vb in store.volume_bindings}
        assert got_vb == (expect["volume_bindings"] or {}), f"{where}: volume bindings {got_vb!r}"
    for prefix, want in (expect.get("claims") or {}).items():
        _check_claim(store, prefix, want, where)
    for prefix in expect.get("no_claims") or []:
        found = [c.metadata.name for c in store.list("ResourceClaim") if c.metadata.name.startswith(prefix)]
        assert not found, f"{where}: claims named {prefix}* should not exist: {found}"
    for pod_name, want in (expect.get("extended_status") or {}).items():
        status = pods[pod_name].status.extendedResourceClaimStatus if pods[pod_name].status else None
        if want is None:
            assert status is None, f"{where}: {pod_name} extendedResourceClaimStatus {status}"
            continue
        assert status is not None, f"{where}: {pod_name} has no extendedResourceClaimStatus"
        assert status.resourceClaimName.startswith(want["claim"]), f"{where}: {pod_name}: {status}"
        got_m = [[m.containerName, m.resourceName, m.requestName] for m in status.requestMappings or []]
        assert got_m == want["mappings"], f"{where}: {pod_name} request mappings {got_m}"
        assert store.get("ResourceClaim", (pods[pod_name].metadata.namespace, status.resourceClaimName))
    for preemptor, want_n in (expect.get("eviction_count") or {}).items():
        n = sum(1 for e in store.evictions if e.preemptor.split("/")[-1] == preemptor)
        assert n == want_n, f"{where}: {preemptor} evicted {n} pods, want {want_n}"
    for preemptor, pod_name in (expect.get("victims_replaced_by") or {}).items():
        # the pod bound where the preemptor's victims were (the room preemption made is the room it got)
        evicted = [e.pod for e in store.evictions if e.preemptor.split("/")[-1] == preemptor]
        nodes = {(victim_nodes or {})[key] for key in evicted}
        got = pods[pod_name].spec.nodeName
        assert {got} == nodes, f"{where}: {pod_name} on {got}, its victims were on {nodes}"
    if "eviction_count" not in expect:
        got_ev = {e.pod[1]: e.preemptor.split("/")[-1] for e in store.evictions}
        assert got_ev == (expect.get("evictions") or {}), f"{where}: evictions {got_ev!r}"


def _check_claim(store: Store, prefix: str, want: dict[str, Any], where: str) -> None:
    """The one ResourceClaim whose name starts with `prefix`: its allocated devices, consumers, selector."""
    found = [c for c in store.list("ResourceClaim") if c.metadata.name.startswith(prefix)]
    assert len(found) == 1, f"{where}: claims named {prefix}*: {[c.metadata.name for c in found]}"
    status = found[0].status
    allocation = status.allocation if status is not None else None
    if "devices" in want:
        results = (allocation.devices.results or []) if allocation is not None and allocation.devices else []
        got = [f"{r.driver}/{r.pool}/{r.device}" for r in results]
        assert got == want["devices"], f"{where}: claim {prefix}* devices {got}"
    if "reservedFor" in want:
        got = [f"{r.resource}/{r.name}" for r in (status.reservedFor if status is not None else None) or []]
        assert got == want["reservedFor"], f"{where}: claim {prefix}* reservedFor {got}"
    if "tolerations" in want:  # per allocation result, in result order: that request's tolerations
        results = (allocation.devices.results or []) if allocation is not None and allocation.devices else []
        got_tol = [[t.to_dict() for t in r.tolerations or []] for r in results]
        assert got_tol == want["tolerations"], f"{where}: claim {prefix}* tolerations {got_tol}"
    if "results" in want:
        results = (allocation.devices.results or []) if allocation is not None and allocation.devices else []
        got_r = [r.request for r in results]
        assert got_r == want["results"], f"{where}: claim {prefix}* result requests {got_r}"
    if "requests" in want:
        devices = found[0].spec.devices if found[0].spec is not None else None
        got_q = [
            [r.name, r.exactly.deviceClassName, r.exactly.count, r.exactly.allocationMode]
            for r in (devices.requests if devices is not None else None) or []
        ]
        assert got_q == [[*w, "ExactCount"] for w in want["requests"]], f"{where}: claim {prefix}* {got_q}"
    meta = found[0].metadata
    if "annotations" in want:
        assert (meta.annotations or {}) == want["annotations"], f"{where}: {prefix}* {meta.annotations}"
    if "owner" in want:
        got_o = [f"{r.kind}/{r.name}" for r in meta.ownerReferences or [] if r.controller]
        assert got_o == [want["owner"]], f"{where}: claim {prefix}* controlled by {got_o}"
    if "finalizers" in want:
        assert (meta.finalizers or []) == want["finalizers"], f"{where}: {prefix}* {meta.finalizers}"
    if "nodeSelector" in want:
        selector = allocation.nodeSelector if allocation is not None else None
        got_sel = selector.to_dict() if selector is not None else None
        assert got_sel == want["nodeSelector"], f"{where}: claim {prefix}* nodeSelector {got_sel}"


def _members(store: Store, group: Any) -> list[str]:
    """Bound pods of a PodGroup, or of every PodGroup under a CompositePodGroup."""
    ns, name = group.metadata.namespace, group.metadata.name
    if group.kind == "PodGroup":
        groups = {name}
    else:
        groups, frontier = set(), {name}
        while frontier:
            parent = frontier.pop()
            for kind in ("PodGroup", "CompositePodGroup"):
                for g in store.list(kind):
                    if g.metadata.namespace == ns and g.spec.parentCompositePodGroupName == parent:
                        (groups if kind == "PodGroup" else frontier).add(g.metadata.name)
    return [
        p.metadata.name
        for p in store.list("Pod")
        if p.spec.nodeName and p.spec.schedulingGroup and p.spec.schedulingGroup.podGroupName in groups
    ]


class TerminationLog:
    """Watches a Store whose evicted pods terminate over time: when each victim started terminating and
    when it was gone, to check that no preemptor evicts again while its earlier victims still terminate."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.started: dict[tuple[str, str], float] = {}
        self.gone: dict[tuple[str, str], float] = {}
        self.nodes: dict[tuple[str, str], str] = {}  # where each deleted pod was
        store.subscribe(self._on_change)

    def _on_change(self, change: Change) -> None:
        if change.kind != "Pod":
            return
        if change.action == "delete":
            self.gone.setdefault(change.key, self.store.clock())
            self.nodes[change.key] = change.obj.spec.nodeName
        elif change.obj.metadata.deletionTimestamp is not None:
            self.started.setdefault(change.key, self.store.clock())

    def storms(self) -> list[str]:
        """Evictions decided while a victim the same preemptor evicted earlier was still terminating."""
        by_preemptor: dict[str, list[tuple[float, tuple[str, str]]]] = {}
        for e in self.store.evictions:
            at = self.started.get(e.pod, self.gone.get(e.pod, 0.0))  # terminated, or gone at once
            by_preemptor.setdefault(e.preemptor, []).append((at, e.pod))
        found = []
        for preemptor, victims in by_preemptor.items():
            for at, victim in victims:
                for earlier_at, earlier in victims:
                    if earlier_at < at < self.gone.get(earlier, float("inf")):
                        found.append(f"{preemptor} evicted {victim} at {at} while {earlier} terminated")
        return found


def settle(store: Store, scheduler: Scheduler) -> None:
    """run_until_stable, except that while victims terminate every waiting root is woken each virtual second,
    as the unrelated events of a real cluster would (a preemptor must not preempt again when retried)."""
    if not store.termination_seconds:
        # bounded, so that a scheduler retrying the same root for ever fails the scenario within seconds
        run_until_stable(store, scheduler, max_cycles=20_000)
        return
    now = store.clock()
    store.clock = lambda: now
    for _ in range(1_000_000):
        decision = scheduler.schedule_one(now)
        if decision is not None:
            store.apply(decision)
            continue
        gone_at, ready = store.next_termination_at(), scheduler.queue.next_ready_at()
        if gone_at is None and ready is None:
            return
        if gone_at is not None:
            scheduler.queue.move_all_to_active()
            now = min(t for t in (gone_at, ready, now + 1.0) if t is not None)
        else:
            now = max(now, ready or now)
        store.finish_terminations(now)
    raise AssertionError("the scheduler did not settle")


def run_scenario(path: Path, termination_seconds: float = 0.0) -> Store:
    """Run the scenario file; with `termination_seconds` evicted pods terminate that long before they are
    gone, and the same expectations must hold once they are (with no preemptor evicting twice meanwhile)."""
    spec = yaml.safe_load(path.read_text())
    includes = spec.get("include") or []
    for include in [includes] if isinstance(includes, str) else includes:
        # manifests shared with examples/, so that the example is what is tested
        spec["objects"] += list(yaml.safe_load_all((path.parent / include).read_text()))
    gates = FeatureGates.parse(spec.get("gates"))
    store = Store(termination_seconds=termination_seconds)
    log = TerminationLog(store)
    # `admitted_invalid: true` loads objects an API server of another version (or a race) let through, to
    # show what the scheduler does with them; validation is skipped for that scenario.
    store.add_all(load_objects(spec["objects"], str(path), gates, check=not spec.get("admitted_invalid")))
    sync_claims(store, workload_claims=gates.enabled("DRAWorkloadResourceClaims"))
    scheduler = Scheduler(
        store, gates, seed=spec.get("seed", 0), profile=Profile(scoring=spec.get("scoring", "LeastAllocated"))
    )
    settle(store, scheduler)
    check(store, spec.get("expect") or {}, f"{path.name}", log.nodes)
    for i, step in enumerate(spec.get("steps") or [], 1):
        for ref in step.get("delete") or []:
            kind, _, name = ref.partition("/")
            ns, _, name = name.rpartition("/")
            namespaced = KINDS[kind].namespaced
            key = (ns or "default", name) if namespaced else ("", name)
            assert store.delete(kind, key) is not None, f"step {i}: no {ref}"
        for obj in load_objects(step.get("add") or [], f"{path}:step{i}", gates):
            old = store.get(obj.kind, (obj.metadata.namespace or "", obj.metadata.name))
            if old is not None and getattr(obj, "status", None) is None:
                obj.status = old.status  # a spec update keeps the status, as with the API server's /status
            store.add(obj)
        sync_claims(store, workload_claims=gates.enabled("DRAWorkloadResourceClaims"))
        settle(store, scheduler)
        check(store, step.get("expect") or {}, f"{path.name} step {i}", log.nodes)
    assert not log.storms(), log.storms()
    return store
