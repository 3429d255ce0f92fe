"""CompositePodGroup hierarchies (KEP-6012): evaluation of a tree, top-down, in one cycle.

A composite node tries its placements (one per topology value, or one placement of all its parent's nodes);
inside a placement its children are evaluated in creation order, each restricted to the placement, with no
backtracking between siblings. After each child the composite's feasibility is checked over children
(minGroupCount: success S >= M, keep going while S + R >= M). A placement's reservations are reverted after
it is scored; the chosen placement's pod positions are re-reserved exactly. Everything is rolled back when
the root fails. As upstream (CompositePodGroup requires TopologyAwareWorkloadScheduling), every group goes
through the placement algorithm, so a group none of whose placements is feasible, one without a constraint
included, reports `0/N placements are available, ...`; a group that succeeds without placing a pod counts
as a success for its parent, and only the root fails such a cycle (`evaluate_root`).
"""

from __future__ import annotations

from collections.abc import Callable

from msgspec import Struct, field

from .cycle import (
    GROUP_UNSCHEDULABLE,
    Code,
    GroupAttempt,
    GroupResult,
    group_unschedulable,
    min_count_feasibility,
    run_group_cycle,
)
from .evaluator import Evaluator
from .plugins import BoolArray
from .podinfo import PodInfo
from .topology import (
    NO_PLACEMENTS,
    Pin,
    Placement,
    choose,
    in_one_placement,
    most_allocated,
    place_with_topology,
    placements,
    placements_status,
)

__all__ = ["GroupKey", "TreeNode", "TreeResult", "evaluate", "evaluate_root"]

GroupKey = tuple[str, str, str]  # (kind, namespace, name)
MAX_DEPTH = 4


class TreeNode(Struct):
    """A PodGroup (with `attempt`) or a CompositePodGroup (with `children`) in a scheduling tree."""

    key: GroupKey
    gang: bool
    min_count: int  # minCount for a PodGroup, minGroupCount for a composite
    topology_key: str | None
    children: list[TreeNode] = field(default_factory=list)
    attempt: GroupAttempt | None = None
    pinned: Pin = field(default_factory=Pin)  # where members already run (topology.pin), when constrained
    # members already running, (namespace, name, node) (PodGroups)
    running: list[tuple[str, str, str]] = field(default_factory=list)

    def walk(self) -> list[TreeNode]:
        out = [self]
        for c in self.children:
            out.extend(c.walk())
        return out


class TreeResult(Struct):
    code: Code
    message: str
    placed: list[tuple[PodInfo, int]] = field(default_factory=list)
    per_group: dict[GroupKey, tuple[Code, str]] = field(default_factory=dict)
    failures: dict[tuple[str, str], str] = field(default_factory=dict)  # each pod's own FitError
    revert: Callable[[], None] = lambda: None
    wrapped: bool = False  # the status carries upstream's errPodGroupUnschedulable (see GroupResult)
    fit: set[tuple[str, str]] = field(default_factory=set)  # pods that fit in a PodGroup that then failed


def _from_group(node: TreeNode, r: GroupResult) -> TreeResult:
    per_group = {node.key: (r.code, r.message)}
    placed, failures = list(r.placed), dict(r.failures)
    return TreeResult(r.code, r.message, placed, per_group, failures, r.revert, r.wrapped, set(r.fit))


def _whole_tree(node: TreeNode, code: Code, message: str) -> TreeResult:
    """A composite that failed before any child was tried (its placements could not be generated)."""
    return TreeResult(code, message, per_group={node.key: (code, message)})


def _composite_feasibility(node: TreeNode, scheduled: int, remaining: int) -> tuple[Code, str]:
    # upstream's GangScheduling plugin checks a composite too, with minGroupCount in its minCount message
    return min_count_feasibility(node.min_count if node.gang else 1, scheduled, remaining)


def _no_placement_fits(node: TreeNode, first: TreeResult, count: int) -> TreeResult:
    """The composite's first placement's subtree reported under upstream's status for none of `count`
    placements feasible (topology.placements_status)."""
    first.code, first.message = Code.UNSCHEDULABLE, placements_status(first.message, first.wrapped, count)
    first.wrapped = True
    first.per_group[node.key] = (first.code, first.message)
    return first


def _children(ev: Evaluator, node: TreeNode, nodes: BoolArray | None, use_limit: bool) -> TreeResult:
    """Evaluate the children of a composite inside one placement."""
    undo: list[Callable[[], None]] = []

    def revert() -> None:
        while undo:
            undo.pop()()

    result = TreeResult(Code.WAIT, "", revert=revert)
    scheduled, remaining = 0, len(node.children)
    result.code, result.message = _composite_feasibility(node, scheduled, remaining)
    for child in node.children:
        if result.code >= Code.UNSCHEDULABLE:
            break
        r = evaluate(ev, child, nodes, use_limit)
        remaining -= 1
        result.per_group.update(r.per_group)
        result.failures.update(r.failures)
        result.fit |= r.fit
        if r.code == Code.ERROR:
            message = f"composite pod group evaluation failed due to child error: {r.message}"
            result.code, result.message = Code.ERROR, message
            break
        if r.code == Code.SUCCESS:
            scheduled += 1
            result.placed.extend(r.placed)
            undo.append(r.revert)
        result.code, result.message = _composite_feasibility(node, scheduled, remaining)
    if result.code == Code.WAIT:
        result.code, result.message = Code.UNSCHEDULABLE, group_unschedulable(result.message)
        result.wrapped = True
    if result.code != Code.SUCCESS:
        revert()
        result.placed = []
    result.per_group[node.key] = (result.code, result.message)
    return result


def evaluate_root(
    ev: Evaluator, root: TreeNode, candidates: BoolArray | None, use_limit: bool = False
) -> TreeResult:
    """Evaluate a whole tree from its `root` as one cycle does (upstream's runRootSchedulingAlgorithm): a
    tree that succeeded without placing a pod (its running members meet every quorum) is Unschedulable at
    the root alone, `pod group is unschedulable`; its groups that succeeded then share that status."""
    result = evaluate(ev, root, candidates, use_limit)
    if result.code == Code.SUCCESS and not result.placed:
        result.revert()
        result.code, result.message, result.wrapped = Code.UNSCHEDULABLE, GROUP_UNSCHEDULABLE, True
        result.per_group[root.key] = (result.code, result.message)
    return result


def evaluate(
    ev: Evaluator, node: TreeNode, candidates: BoolArray | None, use_limit: bool = False
) -> TreeResult:
    """Evaluate `node` and its subtree on `candidates`; on success the subtree stays reserved. A subtree
    may succeed without placing a pod: only the root fails that (`evaluate_root`)."""
    # CompositePodGroup needs TopologyAwareWorkloadScheduling: every group of a tree, constrained or not, is
    # placed by upstream's placement algorithm (an unconstrained one in one placement of its parent's nodes).
    if node.attempt is not None:
        if node.topology_key:
            group = place_with_topology(
                ev, node.attempt, node.topology_key, candidates, node.pinned, use_limit=use_limit
            )
        else:
            group = in_one_placement(run_group_cycle(ev, node.attempt, candidates))
        if group.none_placed:
            # Its running members meet its minCount and none of its pending pods fit: upstream's default
            # algorithm calls that a Success (anyScheduled false), which counts for its parent's quorum.
            ok = TreeResult(Code.SUCCESS, "", per_group={node.key: (Code.SUCCESS, "")})
            ok.failures = dict(group.failures)
            return ok
        return _from_group(node, group)
    if not node.topology_key:
        result = _children(ev, node, candidates, use_limit)
        return _no_placement_fits(node, result, 1) if result.code == Code.UNSCHEDULABLE else result
    if node.pinned.error is not None:
        return _whole_tree(node, Code.ERROR, node.pinned.error)
    options: list[Placement] = placements(ev, node.topology_key, candidates)
    if node.pinned.domains:
        options = [p for p in options if p.value in node.pinned.domains]
    if not options:
        return _whole_tree(node, Code.UNSCHEDULABLE, NO_PLACEMENTS)
    first: TreeResult | None = None
    feasible: list[tuple[int, TreeResult]] = []
    scores: list[tuple[int, int]] = []
    for i, p in enumerate(options):
        r = _children(ev, node, p.nodes, use_limit)
        first = first or r
        if r.code == Code.ERROR:
            return r
        if r.code == Code.SUCCESS:
            count = len(r.placed) + sum(n.attempt.scheduled for n in node.walk() if n.attempt is not None)
            scores.append((count, most_allocated(ev.snap, p.nodes)))
            feasible.append((i, r))
            r.revert()
    if not feasible:
        assert first is not None  # options is not empty
        return _no_placement_fits(node, first, len(options))
    _, best = feasible[choose([p for p, _ in scores], [m for _, m in scores], ev)]
    undo = [ev.reserve(pi, n) for pi, n in best.placed]

    def revert() -> None:
        while undo:
            undo.pop()()

    best.revert = revert
    return best
