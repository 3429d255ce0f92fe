"""The one way inputs become objects: load, default, validate. Used by every command."""

from __future__ import annotations

from collections.abc import Iterable

from .defaults import apply_defaults
from .errors import Problem
from .gates import FeatureGates
from .loader import LoadResult, load_paths
from .validation import validate

__all__ = ["read_inputs"]


def read_inputs(paths: Iterable[str], gates: FeatureGates) -> LoadResult:
    """Load, default and validate. Problems from every stage are collected; objects are returned even
    when there are problems so that `validate` can report them all, but callers that act on objects
    must act on none when `problems` is not empty."""
    result = load_paths(paths)
    by_id = {id(item.obj): item for item in result.objects}
    for obj, error in apply_defaults(item.obj for item in result.objects):
        item = by_id[id(obj)]
        meta = obj.metadata
        result.problems.append(
            Problem(item.file, item.info.kind, meta.namespace or "", meta.name or "", error)
        )
    result.problems.extend(validate(result.objects, gates))
    return result
