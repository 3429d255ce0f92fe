"""PodDisruptionBudgets as preemption reads them: which victims would break a budget if evicted.

Upstream's scheduler reads `status.disruptionsAllowed`, which the disruption controller keeps up to date.
There is no such controller in a manifest-driven run, so `disruptions_allowed` computes it the way the
controller does (pkg/controller/disruption): desiredHealthy from minAvailable or maxUnavailable
(percentages scaled on the expected pod count and rounded up), currentHealthy = matching pods that are
bound and not finished, and disruptionsAllowed = max(0, currentHealthy - desiredHealthy). The controller
takes the expected count from the pods' controllers' scale; here it is the number of matching pods, which
is the same for pods without an owner and for owners whose pods all exist.

`split_by_violation` is upstream's filterVictimsWithPDBViolation over victim units: each pod of a unit that
a budget selects (and that is not already listed in the budget's disruptedPods) uses one allowed
disruption; a unit violates when any of its pods drives a budget below zero.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from .labelselector import compile_selector
from .podinfo import is_terminal

__all__ = ["Budget", "budgets", "disruptions_allowed", "selector_matches", "split_by_violation"]

_PERCENT = re.compile(r"^(\d+)%\Z")


def selector_matches(selector: Any, labels: Mapping[str, str]) -> bool:
    """A metav1.LabelSelector against pod labels. Nil or empty selects nothing, as the scheduler's
    PDB check treats it (policy/v1 itself lets an empty selector select the whole namespace)."""
    compiled = compile_selector(selector)
    return not compiled.empty and compiled.matches(labels)


def _scaled(value: int | str, total: int) -> int | None:
    """intstr.GetScaledValueFromIntOrPercent with roundUp=true; None where it fails: a string that is not
    a percentage ("3" as well as "x%"), which the controller answers with disruptionsAllowed 0 (failSafe)."""
    if isinstance(value, int):
        return value
    m = _PERCENT.match(value)
    if m is None:
        return None
    return math.ceil(int(m.group(1)) * total / 100)


def _pod_labels(pod: Any) -> Mapping[str, str]:
    return (pod.metadata.labels or {}) if pod.metadata else {}


def _healthy(pod: Any) -> bool:
    return bool(pod.spec.nodeName) and not is_terminal(pod)


def disruptions_allowed(pdb: Any, pods: Iterable[Any]) -> int:
    """How many of the budget's pods may be evicted now (the disruption controller's arithmetic)."""
    spec = pdb.spec
    if spec is None:
        return 0
    namespace = pdb.metadata.namespace or ""
    matching = [
        p
        for p in pods
        if (p.metadata.namespace or "") == namespace and selector_matches(spec.selector, _pod_labels(p))
    ]
    expected = len(matching)
    current_healthy = sum(1 for p in matching if _healthy(p))
    if spec.maxUnavailable is not None:
        max_unavailable = _scaled(spec.maxUnavailable, expected)
        if max_unavailable is None:
            return 0
        desired_healthy = max(0, expected - max_unavailable)
    elif spec.minAvailable is not None:
        min_available = _scaled(spec.minAvailable, expected)
        if min_available is None:
            return 0
        desired_healthy = min_available
    else:
        return 0
    return max(0, current_healthy - desired_healthy)


@dataclass(slots=True)
class Budget:
    """One PodDisruptionBudget, reduced to what the victim split needs."""

    namespace: str
    selector: Any
    allowed: int
    already_disrupted: frozenset[str]


def budgets(pdbs: Iterable[Any], pods: Sequence[Any]) -> list[Budget]:
    """Budgets with their allowed disruptions computed from `pods` (every pod the store holds)."""
    out = []
    for pdb in pdbs:
        disrupted = (pdb.status.disruptedPods or {}) if pdb.status is not None else {}
        out.append(
            Budget(
                namespace=pdb.metadata.namespace or "",
                selector=pdb.spec.selector if pdb.spec is not None else None,
                allowed=disruptions_allowed(pdb, pods),
                already_disrupted=frozenset(disrupted),
            )
        )
    return out


class _HasPods(Protocol):
    @property
    def pod_objects(self) -> Sequence[Any]: ...


UnitT = TypeVar("UnitT", bound=_HasPods)


def split_by_violation(
    units: Sequence[UnitT], pdbs: Sequence[Budget]
) -> tuple[list[tuple[UnitT, int]], list[UnitT]]:
    """(violating units with how many of their pods break a budget, non-violating units), in the order
    given; budgets are spent in that order, as upstream."""
    if not pdbs:
        return [], list(units)
    allowed = [b.allowed for b in pdbs]
    violating: list[tuple[UnitT, int]] = []
    fine: list[UnitT] = []
    for unit in units:
        violations = 0
        for pod in unit.pod_objects:
            labels = _pod_labels(pod)
            if not labels:
                continue  # a pod without labels matches no budget
            pod_violates = False
            for i, b in enumerate(pdbs):
                if b.namespace != (pod.metadata.namespace or "") or not selector_matches(b.selector, labels):
                    continue
                if pod.metadata.name in b.already_disrupted:
                    continue  # already counted by the API server
                allowed[i] -= 1
                if allowed[i] < 0:
                    pod_violates = True
            violations += pod_violates
        if violations:
            violating.append((unit, violations))
        else:
            fine.append(unit)
    return violating, fine
