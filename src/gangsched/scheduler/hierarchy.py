"""Groups as the scheduler sees them: which root a PodGroup belongs to, whether a composite tree meets its
quorum, and the tree of one root built for a cycle. Reads objects only; decides nothing."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .cycle import GroupAttempt
from .podinfo import PodInfo, PodKey
from .queue import RootKey
from .topology import Pin, pin
from .tree import MAX_DEPTH, GroupKey, TreeNode

__all__ = ["Hierarchy", "gang_policy", "topology_key"]

GroupRef = tuple[str, str]
_MAX_HOPS = 16  # beyond any valid depth: a longer chain is a cycle or invalid anyway


def gang_policy(obj: Any) -> tuple[bool, int]:
    """(is gang, minCount or minGroupCount) of a PodGroup or CompositePodGroup; basic counts as 1."""
    gang = obj.spec.schedulingPolicy.gang
    if gang is None:
        return False, 1
    return True, int(getattr(gang, "minCount", None) or getattr(gang, "minGroupCount", None) or 1)


def _own_topology_key(spec: Any) -> str | None:
    constraints = spec.schedulingConstraints
    topology = constraints.topology if constraints is not None else None
    return topology[0].key if topology else None


def _find_template(templates: list[Any] | None, name: str) -> Any | None:
    for t in templates or []:
        if t.name == name:
            return t
        found = _find_template(getattr(t, "podGroupTemplates", None), name) or _find_template(
            getattr(t, "compositePodGroupTemplates", None), name
        )
        if found is not None:
            return found
    return None


def topology_key(obj: Any, store: Any) -> str | None:
    """The group's topology key: its own constraint, else that of the Workload template it references."""
    own = _own_topology_key(obj.spec)
    ref = obj.spec.workloadRef
    if own is not None or ref is None:
        return own
    workload = store.get("Workload", (obj.metadata.namespace, ref.workloadName))
    if workload is None:
        return None
    spec = workload.spec
    template = _find_template(spec.podGroupTemplates, ref.templateName) or _find_template(
        spec.compositePodGroupTemplates, ref.templateName
    )
    return _own_topology_key(template) if template is not None else None


class Hierarchy:
    """Answers questions about group hierarchies from the store and the scheduler's pod index."""

    def __init__(
        self,
        store: Any,
        members: dict[GroupRef, set[PodKey]],
        pods: dict[PodKey, PodInfo],
        *,
        composite: bool,
        topology: bool,
    ) -> None:
        self.store = store
        self.members = members
        self.pods = pods
        self.composite = composite
        self.topology = topology

    def parent_of(self, obj: Any) -> str | None:
        return (obj.spec.parentCompositePodGroupName or None) if self.composite else None

    def ancestry(self, ns: str, name: str) -> tuple[list[str], str | None]:
        """Composite names from `name` up to the root, and what is wrong with the chain, if anything."""
        chain: list[str] = []
        current: str | None = name
        while current is not None:
            if current in chain:
                return chain, f"composite pod group hierarchy has a cycle through {current!r}"
            if len(chain) >= _MAX_HOPS:
                break
            chain.append(current)
            cpg = self.store.get("CompositePodGroup", (ns, current))
            if cpg is None:
                return chain, f'waiting for composite pod group "{current}" to appear in scheduling queue'
            current = self.parent_of(cpg)
        return chain, None

    def root_of_composite(self, composite: GroupRef) -> RootKey:
        chain, _ = self.ancestry(*composite)
        return ("CompositePodGroup", composite[0], chain[-1] if chain else composite[1])

    def root_of_group(self, group: GroupRef, pg: Any = None) -> RootKey:
        """`pg`: the group's PodGroup, when the caller holds it already (None: looked up)."""
        if pg is None:
            pg = self.store.get("PodGroup", group)
        parent = self.parent_of(pg) if pg is not None else None
        if parent is None:
            return ("PodGroup", *group)
        chain, _ = self.ancestry(group[0], parent)
        return ("CompositePodGroup", group[0], chain[-1])

    # --- quorum (PreEnqueue for trees) ------------------------------------------------------------------
    def _children(self, ns: str, name: str) -> list[tuple[str, Any]]:
        out = [
            (kind, obj)
            for kind in ("PodGroup", "CompositePodGroup")
            for obj in self.store.list(kind)
            if obj.metadata.namespace == ns and self.parent_of(obj) == name
        ]
        return sorted(out, key=lambda ko: self.store.timestamp(ko[0], (ns, ko[1].metadata.name)))

    def _ready(self, kind: str, obj: Any, depth: int = 0) -> bool:
        ns, name = obj.metadata.namespace, obj.metadata.name
        gang, minimum = gang_policy(obj)
        if kind == "PodGroup":
            return len(self.members.get((ns, name), ())) >= (minimum if gang else 1)
        if depth > MAX_DEPTH:
            return False
        ready = sum(1 for k, child in self._children(ns, name) if self._ready(k, child, depth + 1))
        return ready >= (minimum if gang else 1)

    def gate_message(self, root: RootKey) -> str | None:
        """Why the pods of a composite tree may not be queued yet, or None."""
        kind, ns, name = root
        if kind != "CompositePodGroup":
            return None
        cpg = self.store.get("CompositePodGroup", (ns, name))
        if cpg is None:
            return f'waiting for composite pod group "{name}" to appear in scheduling queue'
        if not self._ready("CompositePodGroup", cpg):
            return f'waiting for composite pod group "{name}" tree to meet quorum'
        return None

    def tree_groups(self, root: RootKey) -> list[GroupRef]:
        """Every PodGroup under a root (the root itself for a PodGroup root)."""
        if root[0] == "PodGroup":
            return [(root[1], root[2])]
        return [g for g in self.members if g[0] == root[1] and self.root_of_group(g) == root]

    # --- building a tree for a cycle ------------------------------------------------------------------------
    def build(
        self,
        root: RootKey,
        pending: Callable[[PodInfo], bool],
        labels_of: Callable[[str], Mapping[str, str] | None],
    ) -> tuple[TreeNode | None, str | None]:
        """The tree under `root` with each PodGroup's attempt, or why the tree is Invalid."""
        kind, ns, name = root
        obj = self.store.get(kind, (ns, name))
        if obj is None:
            return None, None
        workloads: set[str] = set()
        problem: list[str] = []
        seen: set[str] = set()

        def node(kind: str, obj: Any, depth: int) -> TreeNode:
            ref = obj.spec.workloadRef
            if ref is not None:
                workloads.add(ref.workloadName)
            if depth > MAX_DEPTH and not problem:
                problem.append(f"composite pod group hierarchy is deeper than {MAX_DEPTH} levels")
            gang, minimum = gang_policy(obj)
            key: GroupKey = (kind, ns, obj.metadata.name)
            tkey = topology_key(obj, self.store) if self.topology else None
            if kind == "PodGroup":
                members = [self.pods[k] for k in self.members.get((ns, obj.metadata.name), ())]
                todo = sorted((p for p in members if pending(p)), key=lambda p: (-p.priority, p.order))
                bound = [p for p in members if p.pod.spec.nodeName]
                attempt = GroupAttempt(min_count=minimum, gang=gang, scheduled=len(bound), pods=todo)
                running = [(*p.key, p.pod.spec.nodeName) for p in bound]
                pinned = pin(running, tkey, labels_of) if tkey else Pin()
                return TreeNode(key, gang, minimum, tkey, attempt=attempt, pinned=pinned, running=running)
            seen.add(obj.metadata.name)
            children = [
                node(k, child, depth + 1)
                for k, child in self._children(ns, obj.metadata.name)
                if k == "PodGroup" or child.metadata.name not in seen  # a cycle is reported, not walked
            ]
            tree = TreeNode(key, gang, minimum, tkey, children=children)
            if tkey:  # members already running pin the composite to their domain
                below = [r for c in children for d in c.walk() for r in d.running]
                tree.pinned = pin(below, tkey, labels_of)
            return tree

        if kind == "CompositePodGroup":
            _, chain_problem = self.ancestry(ns, name)
            if chain_problem and "cycle" in chain_problem:
                problem.append(chain_problem)
        tree = node(kind, obj, 1)
        if problem:
            return tree, problem[0]
        if len(workloads) > 1:
            return tree, "composite pod group hierarchy spans several workloads: " + ", ".join(
                sorted(workloads)
            )
        return tree, None
