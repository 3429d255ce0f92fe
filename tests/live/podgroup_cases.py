"""Upstream's test/integration/scheduler/podgroup cases as steps on a real API server, for any
scheduler: the same steps run once with kube-scheduler and once with gangsched, each in its own namespace on
its own 4-CPU node, and the outcomes (which pods are bound, each PodGroup's PodGroupInitiallyScheduled
status/reason) are compared at every checkpoint with the expected one, written by hand from upstream's test.
Each outcome also carries what is compared between the two schedulers only (`Outcome.details`): the node of
each bound pod where the case makes it deterministic, and the PodScheduled and group condition messages.

    harness = Harness(client, namespace, scheduler_name=None)   # None: kube-scheduler (default-scheduler)
    checkpoints = CASES["blocker"](harness)
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lightkube import ApiError, Client, codecs
from lightkube.resources.core_v1 import Node, Pod
from lightkube.resources.scheduling_v1 import PriorityClass
from lightkube.resources.scheduling_v1alpha3 import CompositePodGroup
from lightkube.resources.scheduling_v1beta1 import PodGroup
from lightkube.types import PatchType

from gangsched.live.fakenodes import create_node

SCHEDULED = "PodGroupInitiallyScheduled"
COMPOSITE_SCHEDULED = "CompositePodGroupInitiallyScheduled"
#: Blockers are bound by their manifest (spec.nodeName); no scheduler may take them.
NOBODY = "gangsched-test-nobody"
PRIORITY_CLASSES = {"gs-test-low": 10, "gs-test-high": 100}


@dataclass(frozen=True)
class Outcome:
    """`bound` and `groups` are compared with the expected outcome; `details` (not part of ==) between the two
    schedulers: object -> node (a bound pod, where deterministic) or condition message."""

    bound: dict[str, bool]
    groups: dict[str, tuple[str, str] | None]
    details: dict[str, str] = field(default_factory=dict, compare=False)

    def __str__(self) -> str:
        pods = " ".join(f"{k}={'bound' if v else 'pending'}" for k, v in sorted(self.bound.items()))
        return f"{pods} | groups {self.groups}"


def _other_namespaces_out(message: str) -> str:
    """A FitError counts every node of the cluster, and the other tests' nodes come and go (and the two
    schedulers' cases run one after the other): keep this namespace's part of the message exact, and say
    `N` for the count of all nodes and of the nodes only the namespace's nodeSelector excludes. Its
    reasons are sorted as strings with their counts (`1 node(s)...` before `2 Insufficient cpu`), so once
    a count is `N` they are sorted again."""
    message = re.sub(r"0/\d+ nodes are available", "0/N nodes are available", message)
    selector = "node(s) didn't match Pod's node affinity/selector"
    message = re.sub(rf"\d+ {re.escape(selector)}", f"N {selector}", message)

    def resorted(m: re.Match[str]) -> str:
        return m[1] + ", ".join(sorted(m[2].split(", "))) + "."

    return re.sub(r"(0/N nodes are available: )([^.]*)\.", resorted, message)


def ensure_priority_classes(client: Client) -> None:
    for name, value in PRIORITY_CLASSES.items():
        try:
            client.create(
                codecs.from_dict(
                    {
                        "apiVersion": "scheduling.k8s.io/v1",
                        "kind": "PriorityClass",
                        "metadata": {"name": name},
                        "value": value,
                    }
                )
            )
        except ApiError as e:
            if e.status.code != 409:
                raise
    assert {n: client.get(PriorityClass, n).value for n in PRIORITY_CLASSES} == PRIORITY_CLASSES


class Harness:
    """One namespace with one Ready 4-CPU node, pods for `scheduler_name` (None: kube-scheduler)."""

    def __init__(self, client: Client, namespace: str, scheduler_name: str | None) -> None:
        self.client = client
        self.namespace = namespace
        self.scheduler_name = scheduler_name
        self.nodes: list[str] = []
        #: Outcomes `settle` stops at besides the expected one (kube-scheduler's documented differences).
        self.also_accepted: list[Outcome] = []
        #: Whether both schedulers must choose the same node for each pod (one feasible node, a full rack);
        #: a case with ties between nodes turns it off.
        self.deterministic_nodes = True
        self.node = self.add_node("n1", "4")

    def add_node(self, suffix: str, cpu: str, labels: dict[str, str] | None = None) -> str:
        name = f"{self.namespace}-{suffix}"
        create_node(
            self.client,
            name,
            {"cpu": cpu},
            labels={"gangsched.test/namespace": self.namespace, **(labels or {})},
        )
        self.nodes.append(name)
        return name

    def cleanup(self) -> None:
        for name in self.nodes:
            try:
                self.client.delete(Node, name)
            except ApiError as e:
                if e.status.code != 404:
                    raise

    # --- steps ----------------------------------------------------------------------------------------------
    def group(self, name: str, min_count: int, priority_class: str | None = None) -> None:
        spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
        if priority_class:
            spec["priorityClassName"] = priority_class
            spec["priority"] = PRIORITY_CLASSES[priority_class]
        self.client.create(
            codecs.from_dict(
                {
                    "apiVersion": "scheduling.k8s.io/v1beta1",
                    "kind": "PodGroup",
                    "metadata": {"name": name, "namespace": self.namespace},
                    "spec": spec,
                }
            )
        )

    def pod(
        self, name: str, group: str | None = None, cpu: str = "1", priority_class: str | None = None
    ) -> None:
        spec: dict[str, Any] = {
            "containers": [
                {"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": {"cpu": cpu}}}
            ],
            "nodeSelector": {"gangsched.test/namespace": self.namespace},
        }
        if self.scheduler_name:
            spec["schedulerName"] = self.scheduler_name
        if group:
            spec["schedulingGroup"] = {"podGroupName": group}
        if priority_class:
            spec["priorityClassName"] = priority_class
        self._create_pod(name, spec)

    def blocker(
        self,
        name: str,
        cpu: str,
        priority_class: str | None = None,
        labels: dict[str, str] | None = None,
        running: bool = False,
        node: str | None = None,
    ) -> None:
        """A pod already on the node (bound by its manifest), as upstream's tests make them; `running`: with
        the status a kubelet would write (Running, Ready), which the Eviction API's budget check looks at."""
        spec: dict[str, Any] = {
            "containers": [
                {"name": "c", "image": "registry.k8s.io/pause:3.10", "resources": {"requests": {"cpu": cpu}}}
            ],
            "nodeName": node or self.node,
            "schedulerName": NOBODY,
        }
        if priority_class:
            spec["priorityClassName"] = priority_class
        self._create_pod(name, spec, labels)
        if running:
            now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            ready = {"type": "Ready", "status": "True", "lastTransitionTime": now}
            status = {"status": {"phase": "Running", "conditions": [ready], "startTime": now}}
            self.client.patch(Pod.Status, name, status, namespace=self.namespace, patch_type=PatchType.MERGE)

    def pdb(self, name: str, labels: dict[str, str]) -> None:
        """A PodDisruptionBudget (minAvailable 1) over pods with `labels`. No disruption controller runs, so
        its status allows no disruption, which is what the schedulers read."""
        spec = {"minAvailable": 1, "selector": {"matchLabels": labels}}
        self.create({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name},
                     "spec": spec})  # fmt: skip

    def create(self, doc: dict[str, Any]) -> None:
        """Create any object in this namespace."""
        self.client.create(
            codecs.from_dict({**doc, "metadata": {**doc["metadata"], "namespace": self.namespace}})
        )

    def composite(
        self, min_group_count: int, children: dict[str, int], constraints: dict[str, Any] | None = None
    ) -> None:
        """A Workload `w` with a CompositePodGroup `root` (gang of `min_group_count`, `constraints` its
        schedulingConstraints) over gangs named as `children`'s keys, of their minCount, all created."""
        root_policy = {"gang": {"minGroupCount": min_group_count}}
        extra = {"schedulingConstraints": constraints} if constraints else {}
        policies = {c: {"gang": {"minCount": n}} for c, n in children.items()}
        templates = [{"name": c, "schedulingPolicy": policy} for c, policy in policies.items()]
        template = {"name": "root", "schedulingPolicy": root_policy, **extra, "podGroupTemplates": templates}
        self.create({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "w"},
                     "spec": {"compositePodGroupTemplates": [template]}})  # fmt: skip
        spec = {"workloadRef": {"workloadName": "w", "templateName": "root"}, "schedulingPolicy": root_policy}
        self.create({"apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup",
                     "metadata": {"name": "root"}, "spec": {**spec, **extra}})  # fmt: skip
        for child, policy in policies.items():
            spec = {
                "workloadRef": {"workloadName": "w", "templateName": child},
                "parentCompositePodGroupName": "root",
                "schedulingPolicy": policy,
            }
            self.create({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                         "metadata": {"name": child}, "spec": spec})  # fmt: skip

    def _create_pod(self, name: str, spec: dict[str, Any], labels: dict[str, str] | None = None) -> None:
        metadata = {"name": name, "namespace": self.namespace, "labels": labels or {}}
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata}
        self.client.create(codecs.from_dict({**body, "spec": spec}))

    def delete(self, name: str) -> None:
        self.client.delete(Pod, name, namespace=self.namespace, grace_period=0)

    # --- observing ------------------------------------------------------------------------------------------
    def outcome(self) -> Outcome:
        bound: dict[str, bool] = {}
        details: dict[str, str] = {}
        for p in self.client.list(Pod, namespace=self.namespace):
            name = p.metadata.name
            bound[name] = bool(p.spec.nodeName)
            if p.spec.nodeName:
                where = p.spec.nodeName.removeprefix(f"{self.namespace}-")
                details[f"pod/{name}"] = where if self.deterministic_nodes else "bound"
                continue
            c = next((c for c in (p.status and p.status.conditions) or [] if c.type == "PodScheduled"), None)
            if c is not None:
                message = _other_namespaces_out(c.message or "")
                details[f"pod/{name}"] = f"{c.status} {c.reason}: {message}"
        groups: dict[str, tuple[str, str] | None] = {}
        for pg in self.client.list(PodGroup, namespace=self.namespace):
            c = next((c for c in (pg.status and pg.status.conditions) or [] if c.type == SCHEDULED), None)
            groups[pg.metadata.name] = (c.status, c.reason) if c is not None else None
            if c is not None:
                message = _other_namespaces_out(c.message or "")
                details[f"podgroup/{pg.metadata.name}"] = message
        for cpg in self.client.list(CompositePodGroup, namespace=self.namespace):
            conditions = (cpg.status and cpg.status.conditions) or []
            c = next((c for c in conditions if c.type == COMPOSITE_SCHEDULED), None)
            groups[f"composite/{cpg.metadata.name}"] = (c.status, c.reason) if c is not None else None
        return Outcome(bound, groups, details)

    def settle(self, expected: Outcome, timeout: float = 30.0, quiet: float = 3.0) -> Outcome:
        """The outcome once it has equalled `expected` (or one of `self.also_accepted`), details included, for
        `quiet` seconds on end; else the outcome as it is after `timeout` seconds (then it differs, or it kept
        changing). A scheduler that reaches the right outcome and then leaves it does not pass."""
        deadline = time.monotonic() + timeout
        since: float | None = None
        last: Outcome | None = None
        while True:
            now = self.outcome()
            good = now == expected or now in self.also_accepted
            if not good or last is None or now != last or now.details != last.details:
                since = time.monotonic() if good else None
            last = now
            if since is not None and time.monotonic() - since >= quiet:
                return now
            if time.monotonic() > deadline:
                return now
            time.sleep(0.2)

    def hold(self, expected: Outcome, seconds: float = 3.0) -> Outcome:
        """For states that must last (gated pods): the first outcome that differs from `expected` within
        `seconds`, else `expected`."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            now = self.outcome()
            if now != expected:
                return now
            time.sleep(0.2)
        return self.outcome()


def _pods(prefix: str, n: int, bound: bool) -> dict[str, bool]:
    return {f"{prefix}-{i}": bound for i in range(n)}


# Each case returns [(checkpoint name, expected, observed)].
Checkpoints = list[tuple[str, Outcome, Outcome]]


def all_fit(h: Harness) -> Checkpoints:
    h.group("g", 3)
    for i in range(3):
        h.pod(f"g-{i}", "g")
    want = Outcome(_pods("g", 3, True), {"g": ("True", "Scheduled")})
    return [("scheduled", want, h.settle(want))]


def gated_until_min_count(h: Harness) -> Checkpoints:
    h.group("g", 3)
    h.pod("g-0", "g")
    h.pod("g-1", "g")
    gated = Outcome(_pods("g", 2, False), {"g": None})
    first = h.hold(gated)
    h.pod("g-2", "g")
    want = Outcome(_pods("g", 3, True), {"g": ("True", "Scheduled")})
    return [("gated", gated, first), ("third pod arrives", want, h.settle(want))]


def min_count_decrease(h: Harness) -> Checkpoints:
    """minCount is mutable: two pods of a minCount-3 gang wait; lowered to 2, the gang is admitted."""
    h.group("g", 3)
    h.pod("g-0", "g")
    h.pod("g-1", "g")
    gated = Outcome(_pods("g", 2, False), {"g": None})
    first = h.hold(gated)
    patch = {"spec": {"schedulingPolicy": {"gang": {"minCount": 2}}}}
    h.client.patch(PodGroup, "g", patch, namespace=h.namespace, patch_type=PatchType.MERGE)
    want = Outcome(_pods("g", 2, True), {"g": ("True", "Scheduled")})
    return [("gated", gated, first), ("minCount lowered to 2", want, h.settle(want))]


def pods_before_group(h: Harness) -> Checkpoints:
    for i in range(3):
        h.pod(f"g-{i}", "g")
    gated = Outcome(_pods("g", 3, False), {})
    first = h.hold(gated)
    h.group("g", 3)
    want = Outcome(_pods("g", 3, True), {"g": ("True", "Scheduled")})
    return [("gated", gated, first), ("group arrives", want, h.settle(want))]


def blocker(h: Harness) -> Checkpoints:
    h.blocker("blocker", "2")
    h.group("g", 3)
    for i in range(3):
        h.pod(f"g-{i}", "g")
    blocked = Outcome({"blocker": True, **_pods("g", 3, False)}, {"g": ("False", "Unschedulable")})
    first = h.settle(blocked)
    h.delete("blocker")
    want = Outcome(_pods("g", 3, True), {"g": ("True", "Scheduled")})
    return [("blocked", blocked, first), ("blocker deleted", want, h.settle(want))]


def beyond_min_count(h: Harness) -> Checkpoints:
    h.blocker("blocker", "1")
    h.group("g", 3)
    for i in range(4):
        h.pod(f"g-{i}", "g")
    # Pods are tried in creation order: the first three fit beside the blocker, the fourth waits.
    three = Outcome({"blocker": True, **_pods("g", 3, True), "g-3": False}, {"g": ("True", "Scheduled")})
    first = h.settle(three)
    h.delete("blocker")
    want = Outcome(_pods("g", 4, True), {"g": ("True", "Scheduled")})
    return [("three of four", three, first), ("blocker deleted", want, h.settle(want))]


def interleaved(h: Harness) -> Checkpoints:
    h.group("a", 3)
    h.group("b", 3)
    for i in range(3):
        h.pod(f"a-{i}", "a")
        h.pod(f"b-{i}", "b")
    # One gang whole and the other pending: no deadlock with half of each. The older group goes first.
    want = Outcome(
        {**_pods("a", 3, True), **_pods("b", 3, False)},
        {"a": ("True", "Scheduled"), "b": ("False", "Unschedulable")},
    )
    return [("one whole, one pending", want, h.settle(want))]


def preemption(h: Harness) -> Checkpoints:
    h.blocker("blocker", "2", priority_class="gs-test-low")
    h.group("g", 3, priority_class="gs-test-high")
    for i in range(3):
        h.pod(f"g-{i}", "g", priority_class="gs-test-high")
    # The blocker is evicted (the fake kubelet finishes its deletion) and the gang is bound.
    want = Outcome(_pods("g", 3, True), {"g": ("True", "Scheduled")})
    return [("blocker preempted", want, h.settle(want, timeout=45))]


def preemption_pdb_reprieve(h: Harness) -> Checkpoints:
    """podgrouppreemption_test 'PDB reprieve': two 1-CPU low-priority pods, one covered by a budget; the gang
    needs room for one more CPU: only the unprotected pod goes."""
    h.pdb("protect", {"app": "protected"})
    h.blocker("protected", "1", priority_class="gs-test-low", labels={"app": "protected"})
    h.blocker("free", "1", priority_class="gs-test-low")
    h.group("g", 3, priority_class="gs-test-high")
    for i in range(3):
        h.pod(f"g-{i}", "g", priority_class="gs-test-high")
    want = Outcome({"protected": True, **_pods("g", 3, True)}, {"g": ("True", "Scheduled")})
    return [("unprotected pod preempted", want, h.settle(want, timeout=45))]


def preemption_despite_pdb(h: Harness) -> Checkpoints:
    """The only possible victim is covered by a budget: preemption still takes it (upstream weighs budgets but
    may violate them). Both schedulers delete their victims (no Eviction API, which would refuse with 429 a
    running pod its budget covers)."""
    h.pdb("protect", {"app": "protected"})
    h.blocker("protected", "2", priority_class="gs-test-low", labels={"app": "protected"}, running=True)
    h.group("g", 3, priority_class="gs-test-high")
    for i in range(3):
        h.pod(f"g-{i}", "g", priority_class="gs-test-high")
    want = Outcome(_pods("g", 3, True), {"g": ("True", "Scheduled")})
    return [("protected pod preempted", want, h.settle(want, timeout=45))]


def composite_one_rack(h: Harness) -> Checkpoints:
    """cpg_tas_test: a rack-constrained CompositePodGroup (minGroupCount 2) over two gangs of 2 x 1 CPU; two
    racks of 2 x 2-CPU nodes (n1 takes no part: it has no rack label). All four pods land in one rack."""
    rack = "topology.kubernetes.io/rack"
    h.deterministic_nodes = False  # both racks are free: either may be chosen, and nodes tie inside it
    for suffix, value in (("r1-a", "r1"), ("r1-b", "r1"), ("r2-a", "r2"), ("r2-b", "r2")):
        h.add_node(suffix, "2", {rack: value})
    h.composite(2, {"a": 2, "b": 2}, {"topology": [{"key": rack}]})
    for child in ("a", "b"):
        for i in range(2):
            h.pod(f"{child}-{i}", child)
    want = Outcome(
        {**_pods("a", 2, True), **_pods("b", 2, True)},
        {"a": ("True", "Scheduled"), "b": ("True", "Scheduled"), "composite/root": ("True", "Scheduled")},
    )
    got = h.settle(want)
    racks = {
        p.spec.nodeName.rsplit("-", 2)[-2]
        for p in h.client.list(Pod, namespace=h.namespace)
        if p.spec.nodeName
    }
    # As an Outcome "bound" entry: True reads "yes, in one rack".
    one_rack = Outcome({"all in one rack": len(racks) == 1}, {})
    return [("all bound", want, got), ("one rack", Outcome({"all in one rack": True}, {}), one_rack)]


def composite_child_already_running(h: Harness) -> Checkpoints:
    """A CompositePodGroup (minGroupCount 2, no constraint) over gangs a and b of one 1-CPU pod each. Once
    both run, b's pod is replaced: the new pod joins the running tree. Upstream's default algorithm calls a
    (its member runs, nothing left to place) a Success with no pod scheduled, which counts toward the
    root's minGroupCount; only runRootSchedulingAlgorithm fails a cycle that placed no pod at all."""
    h.composite(2, {"a": 1, "b": 1})
    h.pod("a-0", "a")
    h.pod("b-0", "b")
    scheduled = {
        "a": ("True", "Scheduled"),
        "b": ("True", "Scheduled"),
        "composite/root": ("True", "Scheduled"),
    }
    both = Outcome({"a-0": True, "b-0": True}, scheduled)
    got_both = h.settle(both)
    h.delete("b-0")
    h.pod("b-1", "b")
    replaced = Outcome({"a-0": True, "b-1": True}, scheduled)
    return [("both run", both, got_both), ("b's pod replaced", replaced, h.settle(replaced))]


def single_feasible_node(h: Harness) -> Checkpoints:
    """Only one node can take the gang's 2-CPU pods (n1, 4 CPU; n2 has 1 CPU): both schedulers must put both
    pods there, and a third pod beyond minCount waits with the same message."""
    h.add_node("n2", "1")
    h.group("g", 2)
    for i in range(3):
        h.pod(f"g-{i}", "g", cpu="2")
    want = Outcome({**_pods("g", 2, True), "g-2": False}, {"g": ("True", "Scheduled")})
    return [("two on n1, one waits", want, h.settle(want))]


def full_rack(h: Harness) -> Checkpoints:
    """A rack-constrained gang of 4 x 1 CPU with one rack (r1) half taken by a blocker: only r2 (2 x 2 CPU)
    holds it, which it fills: both schedulers must use exactly r2's two nodes, two pods on each."""
    rack = "topology.kubernetes.io/rack"
    # which pod goes to which of r2's two nodes is a tie; which nodes are used, and how full, is not
    h.deterministic_nodes = False
    for suffix, value in (("r1-a", "r1"), ("r1-b", "r1"), ("r2-a", "r2"), ("r2-b", "r2")):
        h.add_node(suffix, "2", {rack: value})
    h.blocker("blocker", "2", node=f"{h.namespace}-r1-a")
    h.create({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "g"},
              "spec": {"schedulingPolicy": {"gang": {"minCount": 4}},
                       "schedulingConstraints": {"topology": [{"key": rack}]}}})  # fmt: skip
    for i in range(4):
        h.pod(f"g-{i}", "g")
    want = Outcome({"blocker": True, **_pods("g", 4, True)}, {"g": ("True", "Scheduled")})
    got = h.settle(want)
    used = sorted(
        p.spec.nodeName.removeprefix(f"{h.namespace}-")
        for p in h.client.list(Pod, namespace=h.namespace)
        if p.spec.nodeName and p.metadata.name.startswith("g-")
    )
    # As an Outcome "bound" entry: True reads "r2-a and r2-b hold two pods each".
    filled = Outcome({"r2 filled": used == ["r2-a", "r2-a", "r2-b", "r2-b"]}, {})
    return [("all bound", want, got), ("r2 filled", Outcome({"r2 filled": True}, {}), filled)]


#: (case, checkpoint) -> what kube-scheduler v1.37.2 shows instead of the expected outcome, and why gangsched
#: keeps to the expected one (README, live mode). Only the conditions differ; the test still compares pods.
KUBE_SCHEDULER_DIFFERENCES: dict[tuple[str, str], Outcome] = {
    # After binding three pods it writes True, then retries the fourth at once (a bound member requeues the
    # group) and, when its informer has not yet brought back its own True, overwrites it with
    # False/Unschedulable, although the API says PodGroupInitiallyScheduled never goes back from True. It
    # depends on timing.
    ("beyond-min-count", "three of four"): Outcome(
        {"blocker": True, **_pods("g", 3, True), "g-3": False}, {"g": ("False", "Unschedulable")}
    ),
    # The same race with a pod beyond minCount on a single feasible node (seen in a full CI run).
    ("single-feasible-node", "two on n1, one waits"): Outcome(
        {**_pods("g", 2, True), "g-2": False}, {"g": ("False", "Unschedulable")}
    ),
    # It writes no CompositePodGroupInitiallyScheduled on the root, which the API documents for the tree.
    ("composite-one-rack", "all bound"): Outcome(
        {**_pods("a", 2, True), **_pods("b", 2, True)},
        {"a": ("True", "Scheduled"), "b": ("True", "Scheduled"), "composite/root": None},
    ),
    ("composite-child-already-running", "both run"): Outcome(
        {"a-0": True, "b-0": True},
        {"a": ("True", "Scheduled"), "b": ("True", "Scheduled"), "composite/root": None},
    ),
    ("composite-child-already-running", "b's pod replaced"): Outcome(
        {"a-0": True, "b-1": True},
        {"a": ("True", "Scheduled"), "b": ("True", "Scheduled"), "composite/root": None},
    ),
}

CASES: dict[str, Callable[[Harness], Checkpoints]] = {
    "all-fit": all_fit,
    "gated-until-min-count": gated_until_min_count,
    "pods-before-group": pods_before_group,
    "min-count-decrease": min_count_decrease,
    "blocker": blocker,
    "beyond-min-count": beyond_min_count,
    "interleaved-gangs": interleaved,
    "preemption": preemption,
    "preemption-pdb-reprieve": preemption_pdb_reprieve,
    "preemption-despite-pdb": preemption_despite_pdb,
    "composite-one-rack": composite_one_rack,
    "composite-child-already-running": composite_child_already_running,
    "single-feasible-node": single_feasible_node,
    "full-rack": full_rack,
}
