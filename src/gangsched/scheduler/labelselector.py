"""metav1.LabelSelector compiled once into a hashable value (apimachinery's LabelSelectorAsSelector).

A nil selector selects nothing and an empty one (no matchLabels, no matchExpressions) selects everything, as
upstream's `labels.Nothing()` / `labels.Everything()`; callers that treat an empty selector as nothing (the
PodDisruptionBudget check, PodTopologySpread's counting) test `empty` themselves, as upstream does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from msgspec import Struct

__all__ = ["EVERYTHING", "NOTHING", "Requirement", "Selector", "compile_selector"]


class Requirement(Struct, frozen=True):
    key: str
    operator: str  # In, NotIn, Exists, DoesNotExist
    values: frozenset[str]

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        if self.operator == "In":
            return present and labels[self.key] in self.values
        if self.operator == "NotIn":
            return not present or labels[self.key] not in self.values
        if self.operator == "Exists":
            return present
        if self.operator == "DoesNotExist":
            return not present
        return False  # an unknown operator makes the selector invalid; validation reports it


class Selector(Struct, frozen=True):
    """All requirements must hold. `nothing` selects no labels at all (a nil selector)."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    @property
    def empty(self) -> bool:
        """upstream's Selector.Empty(): true for Everything (no requirements), false for Nothing."""
        return not self.nothing and not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        return not self.nothing and all(r.matches(labels) for r in self.requirements)

    def with_requirements(self, more: tuple[Requirement, ...]) -> Selector:
        return self if self.nothing or not more else Selector(self.requirements + more)


NOTHING = Selector(nothing=True)
EVERYTHING = Selector()


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def compile_selector(raw: Any) -> Selector:
    """A typed or dict metav1.LabelSelector (None: NOTHING) as a Selector."""
    if raw is None:
        return NOTHING
    reqs = [
        Requirement(k, "In", frozenset([v])) for k, v in sorted((_field(raw, "matchLabels") or {}).items())
    ]
    for e in _field(raw, "matchExpressions") or []:
        reqs.append(
            Requirement(
                str(_field(e, "key")), str(_field(e, "operator")), frozenset(_field(e, "values") or [])
            )
        )
    return Selector(tuple(reqs))
