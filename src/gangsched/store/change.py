"""A change to the objects the scheduler watches: what the store and the live informers emit."""

from __future__ import annotations

from typing import Any

from msgspec import Struct

__all__ = ["Change", "Key"]

Key = tuple[str, str]


class Change(Struct, gc=False):
    """An object was added, updated, bound or deleted. `old` is given on updates (e.g. a minCount change).

    Every listener receives the same Change and must not change it. A msgspec Struct, made in C several
    times faster than a dataclass: `gangsched schedule` makes two or three for every object it reads. Not
    tracked by the garbage collector (half the cost of making one): the objects it carries never refer to
    it, so it is never part of a reference cycle."""

    action: str  # "add" | "update" | "delete" | "bind"
    kind: str
    key: Key
    obj: Any
    old: Any = None
