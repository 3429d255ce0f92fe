"""Kubernetes objects in and out: loading, defaulting, validation, feature gates, quantities."""

from . import _pyyaml  # noqa: F401  (first: PyYAML imported before the modules below import it)
from .errors import FieldError, Problem
from .gates import FeatureGates
from .loader import Loaded, LoadResult, load_documents, load_paths
from .quantity import milli, parse_quantity

__all__ = [
    "FeatureGates",
    "FieldError",
    "LoadResult",
    "Loaded",
    "Problem",
    "load_documents",
    "load_paths",
    "milli",
    "parse_quantity",
]
