"""A change to the objects the scheduler watches: what the store and the live informers emit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Change", "Key"]

Key = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Change:
    """An object was added, updated, bound or deleted. `old` is given on updates (e.g. a minCount change)."""

    action: str  # "add" | "update" | "delete" | "bind"
    kind: str
    key: Key
    obj: Any
    old: Any = None
