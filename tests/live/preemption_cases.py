"""The preemption scenarios of tests/scenarios/preemption as live objects, for any scheduler, with victims
that take time to leave (issue 15).

Each scenario runs in a namespace of its own: its nodes are named `<namespace>-<node>` and labelled for the
namespace (pending pods get a nodeSelector on that label, so each scheduler stays on its own nodes), its
PriorityClasses `<namespace>-<name>` (they are cluster-scoped), bound pods are created bound (schedulerName
nobody), pending pods name the scheduler under test. The namespace carries the fake kubelet's termination
label, so evicted pods stay Terminating that long.

A `PodWatch` thread records every pod event of the session with its time: when a pod was bound, when it was
gone, each nominatedNodeName it had.

    watch = PodWatch(client); watch.start()
    case = LiveScenario(client, path, namespace, scheduler_name="gangsched", termination=15)
    case.create(); result = case.settle(watch, timeout=60)
"""

from __future__ import annotations

import copy
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from lightkube import ApiError, Client, codecs
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace, Node, Pod, ServiceAccount
from lightkube.resources.scheduling_v1 import PriorityClass
from lightkube.types import PatchType

from gangsched.live.fakekubelet import TERMINATION_LABEL
from gangsched.live.fakenodes import create_node

from .podgroup_cases import NOBODY

SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios" / "preemption"
NAMESPACE_LABEL = "gangsched.test/namespace"


def _pending_member(doc: dict[str, Any]) -> bool:
    spec = doc["spec"]
    return not spec.get("nodeName") and bool((spec.get("schedulingGroup") or {}).get("podGroupName"))


def live_scenarios() -> list[Path]:
    """The preemption scenarios a live cluster can reproduce: not those that need a feature gate off (the
    cluster runs with every gate on) nor those that start from a pod already terminating (the API server
    sets deletionTimestamp only through a deletion)."""
    out = []
    only = set(filter(None, os.environ.get("GANGSCHED_LIVE_PREEMPTION_CASES", "").split(",")))  # to debug
    for path in sorted(SCENARIOS.glob("*.yaml")):
        if only and path.stem not in only:
            continue
        spec = yaml.safe_load(path.read_text())
        if spec.get("gates") or "deletionTimestamp" in path.read_text():
            continue
        out.append(path)
    return out


@dataclass
class PodHistory:
    """What the watch saw of one pod: (time, nodeName, nominatedNodeName, terminating) per event."""

    events: list[tuple[float, str | None, str | None, bool]] = field(default_factory=list)
    gone_at: float | None = None

    @property
    def bound_at(self) -> float | None:
        return next((t for t, node, _, _ in self.events if node), None)

    def nominations(self) -> list[str]:
        """The successive non-empty nominatedNodeName values written (one per change)."""
        out: list[str] = []
        last: str | None = None
        for _, node, nominated, _ in self.events:
            if nominated != last and nominated and not node:
                out.append(nominated)
            last = nominated
        return out


class PodWatch(threading.Thread):
    """Watches every pod (all namespaces) and keeps each one's history. A daemon thread: it ends with the
    test session."""

    def __init__(self, client: Client) -> None:
        super().__init__(name="pod-watch", daemon=True)
        self.client = client
        self.pods: dict[tuple[str, str], PodHistory] = {}
        self.lock = threading.Lock()
        self.ready = threading.Event()

    def run(self) -> None:
        # A watch without a resourceVersion starts with an ADDED event per existing pod: after a dropped
        # connection that repeats what was seen, which the histories tolerate.
        while True:
            try:
                for kind, pod in self.client.watch(Pod, namespace="*"):
                    self.ready.set()
                    self._record(kind, pod)
            except Exception:
                time.sleep(0.2)

    def _record(self, kind: str, pod: Any) -> None:
        now = time.time()
        key = (pod.metadata.namespace, pod.metadata.name)
        with self.lock:
            history = self.pods.setdefault(key, PodHistory())
            if kind == "DELETED":
                history.gone_at = now
                return
            nominated = pod.status.nominatedNodeName if pod.status else None
            terminating = pod.metadata.deletionTimestamp is not None
            history.events.append((now, pod.spec.nodeName, nominated, terminating))

    def history(self, namespace: str, name: str) -> PodHistory:
        with self.lock:
            return copy.deepcopy(self.pods.get((namespace, name), PodHistory()))


@dataclass
class Result:
    """How a scenario ended: pods bound (name -> node suffix), victims (pods gone or terminating)."""

    bound: dict[str, str]
    victims: set[str]
    pending: set[str]


class LiveScenario:
    def __init__(
        self, client: Client, path: Path, namespace: str, scheduler_name: str | None, termination: float
    ) -> None:
        self.client = client
        self.path = path
        self.spec = yaml.safe_load(path.read_text())
        self.ns = namespace
        self.scheduler_name = scheduler_name or "default-scheduler"
        self.termination = termination
        self.nodes: list[str] = []
        self.classes: dict[str, int] = {}
        self.class_policies: dict[str, str] = {}
        self.bound_at_start: set[str] = set()
        self.pending_at_start: set[str] = set()

    # --- creating ---------------------------------------------------------------------------------------
    def _node(self, name: str) -> str:
        return f"{self.ns}-{name}"

    def _class(self, name: str | None) -> str | None:
        return f"{self.ns}-{name}" if name else None

    def create(self) -> None:
        labels = {TERMINATION_LABEL: str(int(self.termination))}
        self.client.create(Namespace(metadata=ObjectMeta(name=self.ns, labels=labels)))
        self.client.create(ServiceAccount(metadata=ObjectMeta(name="default", namespace=self.ns)))
        docs = self.spec["objects"]

        def create(*kinds: str) -> None:
            for kind in kinds:
                for doc in (d for d in docs if d["kind"] == kind):
                    getattr(self, f"_create_{kind.lower()}", self._create_namespaced)(copy.deepcopy(doc))

        pods = [d for d in docs if d["kind"] == "Pod"]
        waiting = {d["spec"]["schedulingGroup"]["podGroupName"] for d in pods if _pending_member(d)}
        for d in docs:  # and the composite groups above them
            if d["kind"] == "PodGroup" and d["metadata"]["name"] in waiting:
                waiting.add(d["spec"].get("parentCompositePodGroupName") or "")
        groups = [d for d in docs if d["kind"] in ("CompositePodGroup", "PodGroup")]
        create("PriorityClass", "Node", "Workload", "PodDisruptionBudget")
        for doc in groups:
            if doc["metadata"]["name"] not in waiting:
                self._create_namespaced(copy.deepcopy(doc))  # the victims' groups: before any preemptor
        for doc in sorted(pods, key=lambda d: not d["spec"].get("nodeName")):  # running pods first
            self._create_pod(copy.deepcopy(doc))
        # Groups with pending members last: their members wait for them at PreEnqueue, so that a group's first
        # cycle has all of them, whichever scheduler and however fast (as the in-memory scenario has).
        for doc in groups:
            if doc["metadata"]["name"] in waiting:
                self._create_namespaced(copy.deepcopy(doc))

    def _create_priorityclass(self, doc: dict[str, Any]) -> None:
        self.classes[doc["metadata"]["name"]] = int(doc["value"])
        if doc.get("preemptionPolicy"):
            self.class_policies[doc["metadata"]["name"]] = doc["preemptionPolicy"]
        doc["metadata"]["name"] = self._class(doc["metadata"]["name"])
        self.client.create(codecs.from_dict(doc))

    def _create_node(self, doc: dict[str, Any]) -> None:
        name = self._node(doc["metadata"]["name"])
        allocatable = doc["status"]["allocatable"]
        labels = {NAMESPACE_LABEL: self.ns, **(doc["metadata"].get("labels") or {})}
        create_node(self.client, name, allocatable, labels=labels, taints=[])
        self.nodes.append(name)

    def _priority(self, obj: Any) -> None:
        """Rename every priorityClassName in `obj` (templates nest them) to this namespace's class."""
        if isinstance(obj, dict):
            for key, value in obj.items():
                if key == "priorityClassName" and value:
                    obj[key] = self._class(value)
                else:
                    self._priority(value)
        elif isinstance(obj, list):
            for item in obj:
                self._priority(item)

    def _create_namespaced(self, doc: dict[str, Any]) -> None:
        doc["metadata"]["namespace"] = self.ns
        spec = doc.get("spec") or {}
        policy = self.class_policies.get(spec.get("priorityClassName") or "")
        if doc["kind"] in ("PodGroup", "CompositePodGroup") and policy:
            # v1.37.2 defaults a group's preemptionPolicy before its priority admission reads the class,
            # then refuses the mismatch: a group of a Never class must say Never itself.
            spec.setdefault("preemptionPolicy", policy)
        self._priority(spec)  # the priority admission plugin resolves the class, for groups as for pods
        self.client.create(codecs.from_dict(doc))

    def _create_pod(self, doc: dict[str, Any]) -> None:
        meta, spec = doc["metadata"], doc["spec"]
        meta["namespace"] = self.ns
        status = doc.pop("status", None) or {}
        self._priority(spec)
        if spec.get("nodeName"):
            spec["nodeName"] = self._node(spec["nodeName"])
            # Bound already; a group's members must name one scheduler (the group's), a lone pod nobody.
            grouped = spec.get("schedulingGroup") and any(
                d["kind"] == "Pod"
                and not d["spec"].get("nodeName")
                and d["spec"].get("schedulingGroup") == spec["schedulingGroup"]
                for d in self.spec["objects"]
            )
            spec["schedulerName"] = self.scheduler_name if grouped else NOBODY
            self.bound_at_start.add(meta["name"])
        else:
            spec["schedulerName"] = self.scheduler_name
            spec["nodeSelector"] = {**(spec.get("nodeSelector") or {}), NAMESPACE_LABEL: self.ns}
            self.pending_at_start.add(meta["name"])
        for c in spec["containers"]:
            c["image"] = "registry.k8s.io/pause:3.10"
        self.client.create(codecs.from_dict(doc))
        if status.get("startTime"):
            patch = {"status": {"startTime": status["startTime"], "phase": "Running"}}
            self.client.patch(Pod.Status, meta["name"], patch, namespace=self.ns, patch_type=PatchType.MERGE)

    def cleanup(self) -> None:
        for resource, names in ((Node, self.nodes), (PriorityClass, [self._class(n) for n in self.classes])):
            for name in names:
                try:
                    self.client.delete(resource, name)
                except ApiError as e:
                    if e.status.code != 404:
                        raise
        self.client.delete(Namespace, self.ns)

    # --- observing --------------------------------------------------------------------------------------
    def result(self) -> Result:
        pods = {p.metadata.name: p for p in self.client.list(Pod, namespace=self.ns)}
        bound = {
            name: p.spec.nodeName.removeprefix(f"{self.ns}-")
            for name, p in pods.items()
            if p.spec.nodeName and p.metadata.deletionTimestamp is None
        }
        victims = {
            name
            for name in self.bound_at_start
            if name not in pods or pods[name].metadata.deletionTimestamp is not None
        }
        return Result(bound, victims, {n for n in self.pending_at_start if n not in bound})

    def expected_bound(self) -> set[str]:
        """Pods the scenario expects bound in the end (its first `expect`)."""
        pods = (self.spec.get("expect") or {}).get("pods") or {}
        out = {name for name, want in pods.items() if isinstance(want, list) or want not in ("pending", None)}
        out -= {name for name, want in pods.items() if isinstance(want, dict)}
        for prefix, n in ((self.spec.get("expect") or {}).get("count_bound") or {}).items():
            if n:
                out |= {p for p in self.pending_at_start if p.startswith(prefix)}
        return out & self.pending_at_start

    def settle(self, timeout: float, quiet: float) -> Result:
        """Wait until the pods the scenario expects bound are bound and no victim still terminates, or until
        `timeout`; then `quiet` seconds more (nothing else may happen)."""
        deadline = time.monotonic() + timeout
        want = self.expected_bound()
        while time.monotonic() < deadline:
            now = self.result()
            terminating = any(
                p.metadata.deletionTimestamp is not None for p in self.client.list(Pod, namespace=self.ns)
            )
            if want <= set(now.bound) and not terminating:
                break
            time.sleep(0.5)
        time.sleep(quiet)
        return self.result()
