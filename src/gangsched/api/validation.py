"""Semantic validation of loaded objects with upstream's rules and messages.

Entry point: `validate(loaded, gates) -> list[Problem]`. Objects must already be defaulted.
"""

from __future__ import annotations

from collections.abc import Sequence

from .errors import Problem
from .gates import FeatureGates
from .loader import Loaded

__all__ = ["validate"]


def validate(loaded: Sequence[Loaded], gates: FeatureGates) -> list[Problem]:
    """Every problem in `loaded`, one Problem per field error, in input order."""
    problems: list[Problem] = []
    return problems
