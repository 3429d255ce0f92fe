"""What a controller allows: the workloadbuilder's BuildOptions and its allow-list values.

Allow-lists, not deny-lists: a policy or disruption mode a controller does not list is refused, so a
building block added to the API later stays refused until the controller opts in (upstream's rule).
"""

from __future__ import annotations

import enum
from collections.abc import Collection
from dataclasses import dataclass

from lightkube.models import meta_v1

__all__ = ["BuildOptions", "DisruptionModeOption", "SchedulingPolicyOption"]


class SchedulingPolicyOption(enum.Enum):
    """A scheduling policy a controller opts into (upstream's BasicPolicy / GangPolicy)."""

    BASIC = "basic"
    GANG = "gang"


class DisruptionModeOption(enum.Enum):
    """A disruption mode a controller opts into (upstream's SingleMode / AllMode)."""

    SINGLE = "single"
    ALL = "all"


@dataclass(frozen=True, slots=True, kw_only=True)
class BuildOptions:
    """Identity of the Workload to build and the controller's allow-lists. Keyword-only; immutable.

    An empty allow-list allows nothing. `owner` becomes the Workload's controller owner reference and its
    `spec.controllerRef`, and the owner of every PodGroup built from it.

    >>> opts = BuildOptions(name="trainer-wl", namespace="ml",
    ...                     allowed_policies=[SchedulingPolicyOption.BASIC, SchedulingPolicyOption.GANG],
    ...                     allowed_disruption_modes=[DisruptionModeOption.SINGLE])
    >>> SchedulingPolicyOption.GANG in opts.allowed_policies
    True
    """

    name: str = ""
    namespace: str = ""
    owner: meta_v1.OwnerReference | None = None
    allowed_policies: Collection[SchedulingPolicyOption] = frozenset()
    allowed_disruption_modes: Collection[DisruptionModeOption] = frozenset()
    disable_declarative_validation: bool = False

    def __post_init__(self) -> None:
        # Accept any iterable (a list reads best at call sites) but keep an immutable set.
        object.__setattr__(self, "allowed_policies", frozenset(self.allowed_policies))
        object.__setattr__(self, "allowed_disruption_modes", frozenset(self.allowed_disruption_modes))
