"""A change to the objects the scheduler watches: what the store and the live informers emit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Change", "Key"]

Key = tuple[str, str]


@dataclass(slots=True)
class Change:
    """An object was added, updated, bound or deleted. `old` is given on updates (e.g. a minCount change).

    Every listener receives the same Change and must not change it. It is not a frozen dataclass for speed
    alone: a frozen one's `__init__` sets each field through `object.__setattr__`, which made a Change cost
    five times as much, and `gangsched schedule` makes two or three for every object it reads."""

    action: str  # "add" | "update" | "delete" | "bind"
    kind: str
    key: Key
    obj: Any
    old: Any = None
