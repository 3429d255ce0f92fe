"""Objects as manifests: upstream field names only, the usual key order, YAML or a JSON `List`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import yaml

__all__ = ["dump_json", "dump_yaml", "manifest"]

_HEAD = ("apiVersion", "kind", "metadata", "spec", "status")


def manifest(obj: Any) -> dict[str, Any]:
    """The object's dict with apiVersion, kind, metadata, spec, status first, as kubectl prints them."""
    raw: dict[str, Any] = obj.to_dict()
    ordered = {k: raw[k] for k in _HEAD if k in raw}
    ordered.update((k, v) for k, v in raw.items() if k not in ordered)
    return ordered


def dump_yaml(objects: Iterable[Any]) -> str:
    """Multi-document YAML that `gangsched validate -f -` reads back."""
    return yaml.safe_dump_all((manifest(o) for o in objects), sort_keys=False, explicit_start=True)


def dump_json(objects: Iterable[Any]) -> str:
    """A `v1` `List`, the shape kubectl prints for several objects."""
    import json  # here: `build -o json` alone needs it

    return json.dumps({"apiVersion": "v1", "kind": "List", "items": [manifest(o) for o in objects]}, indent=2)
