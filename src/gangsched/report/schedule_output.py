"""The output of `gangsched schedule` (DESIGN.md's contract): JSON, YAML to feed back in, or tables."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec
import yaml
from msgspec import Struct

from ..api.kinds import KINDS
from ..store.store import Store

__all__ = ["FLOAT_FREE_ROWS", "as_json", "as_table", "as_yaml", "json_bytes", "json_document"]

_Dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


# The rows as msgspec Structs: made several times faster than dicts, and written faster too (msgspec writes a
# Struct's fields as the keys of a JSON object, in order, from names it encoded once), the same text. On
# gangs-1000x3 the document and its JSON took 53M instructions as dicts, 36M as Structs.


class _PodRow(Struct):
    namespace: str | None
    name: str
    nodeName: str | None
    nominatedNodeName: str | None
    reason: str | None
    message: str | None


class _ConditionRow(Struct):
    type: str
    status: str
    reason: str | None
    message: str | None


class _GroupRow(Struct):
    namespace: str | None
    name: str
    conditions: list[_ConditionRow]


def _pod_rows(pods: Iterable[Any]) -> list[_PodRow]:
    """Each pod's row: its node, or why it is pending (the reason and message of its PodScheduled condition
    when that says False). A bound pod's conditions are not read: looking through them took three quarters
    of the rows' time. One loop, no call per pod."""
    rows = []
    for pod in pods:
        status, node_name = pod.status, pod.spec.nodeName
        reason = message = nominated = None
        if status is not None:
            nominated = status.nominatedNodeName
            if not node_name:
                for condition in status.conditions or ():
                    if condition.type == "PodScheduled":
                        if condition.status == "False":
                            reason, message = condition.reason, condition.message
                        break
        metadata = pod.metadata
        rows.append(
            _PodRow(metadata.namespace, metadata.name, node_name or None, nominated or None, reason, message)
        )
    return rows


def _group_rows(groups: Iterable[Any]) -> list[_GroupRow]:
    rows = []
    for group in groups:
        conditions = (group.status.conditions if group.status else None) or ()
        rows.append(
            _GroupRow(
                group.metadata.namespace,
                group.metadata.name,
                [_ConditionRow(c.type, c.status, c.reason, c.message) for c in conditions],
            )
        )
    return rows


def json_document(store: Store) -> dict[str, Any]:
    """`as_json`'s document with its rows as Structs, for `json_bytes` (`gangsched schedule -o json`)."""
    return {
        "pods": _pod_rows(store.list("Pod")),
        "podGroups": _group_rows(store.list("PodGroup")),
        "compositePodGroups": _group_rows(store.list("CompositePodGroup")),
        "evictions": [
            {"namespace": e.pod[0], "name": e.pod[1], "preemptor": e.preemptor} for e in store.evictions
        ],
        "events": list(store.events),  # a Notice's fields are an event row's keys, in its order
        "volumeBindings": [
            {"pvc": f"{vb.pvc[0]}/{vb.pvc[1]}", "pv": vb.pv, "node": vb.node} for vb in store.volume_bindings
        ],
        "claims": [_claim_row(c) for c in store.list("ResourceClaim")],
    }


def as_json(store: Store) -> dict[str, Any]:
    """The report as plain dicts and lists: what `gangsched schedule -o json` writes, read back."""
    document: dict[str, Any] = msgspec.to_builtins(json_document(store))
    return document


# The keys of `as_json` whose rows hold only strings, None, and lists and dicts of them: each value comes from
# a string-typed field of a decoded object (names, node names, condition and event texts), where a float
# cannot be. The claims' rows copy allocations as they are, so those may hold anything JSON holds.
FLOAT_FREE_ROWS = frozenset(
    {"pods", "podGroups", "compositePodGroups", "evictions", "events", "volumeBindings"}
)


def _stdlib_json(doc: Any) -> bytes:
    """`json.dumps(doc, indent=2)`, encoded (Structs written as the dicts `msgspec.to_builtins` makes of
    them): `json_bytes`'s fallback, whose module is imported only then (with the report it cost every
    `schedule` 1.5 ms of CPU)."""
    import json

    return json.dumps(doc, indent=2, default=msgspec.to_builtins).encode()


def json_bytes(doc: Any, *, float_free: frozenset[str] = frozenset()) -> bytes:
    """`json.dumps(doc, indent=2)`, the same text (ASCII: json.dumps escapes the rest), encoded in C: the
    stdlib's indented encoder is pure Python (about a tenth of a second for 10,000 pods). msgspec writes
    non-ASCII characters and DEL (0x7f, which json.dumps escapes as \\u007f) as they are and floats in its
    own notation (1e16 for 1e+16), so a document with any of them goes through json.dumps (a float is found by
    reading the encoding back, which is C too, but builds the whole document again: a third of the time of
    writing it). `float_free` names keys of a dict `doc` whose values the caller knows hold no float
    (FLOAT_FREE_ROWS for `as_json`): only the rest is read back. Not the same for infinities and NaN, which
    are not JSON: written null here, Infinity/NaN by json.dumps; the report has no floats at all.

    Bytes, which click.echo writes to stdout as they are: a str would be decoded here, then searched for
    terminal colour codes (click strips them when stdout is not a terminal) and encoded again, 2-3 ms of
    `schedule`'s CPU for 3,000 pods."""
    encoded = msgspec.json.encode(doc)
    if not encoded.isascii() or b"\x7f" in encoded:
        return _stdlib_json(doc)
    if float_free:
        rest = {key: value for key, value in doc.items() if key not in float_free}
        if rest and _has_float(msgspec.json.encode(rest)):
            return _stdlib_json(doc)
    elif _has_float(encoded):
        return _stdlib_json(doc)
    return msgspec.json.format(encoded, indent=2)


class _FloatSeen(Exception):
    pass


def _float_seen(_text: str) -> Any:
    raise _FloatSeen


_FLOAT_FINDER = msgspec.json.Decoder(float_hook=_float_seen)


def _has_float(encoded: bytes) -> bool:
    try:
        _FLOAT_FINDER.decode(encoded)
    except _FloatSeen:
        return True
    return False


def _claim_row(claim: Any) -> dict[str, Any]:
    status = claim.status
    allocation = status.allocation if status is not None else None
    return {
        "namespace": claim.metadata.namespace,
        "name": claim.metadata.name,
        "allocation": allocation.to_dict() if allocation is not None else None,
        "reservedFor": [r.to_dict() for r in (status.reservedFor if status is not None else None) or []],
    }


def as_yaml(store: Store) -> str:
    """Every object in its final state, in kind order, as multi-document YAML."""
    docs = [obj.to_dict() for kind in KINDS for obj in store.list(kind)]
    return str(yaml.dump_all(docs, Dumper=_Dumper, sort_keys=False, default_flow_style=False))


def as_table(store: Store) -> Any:
    """A rich renderable: pods with their node or reason, then groups with their condition."""
    from rich.console import Group
    from rich.table import Table

    pods = Table(title="Pods", show_lines=False)
    for col in ("NAMESPACE", "POD", "NODE", "REASON", "MESSAGE"):
        pods.add_column(col, overflow="fold")
    for row in _pod_rows(store.list("Pod")):
        pods.add_row(row.namespace, row.name, row.nodeName or "-", row.reason or "", row.message or "")
    parts: list[Any] = [pods]
    for kind, title in (("PodGroup", "PodGroups"), ("CompositePodGroup", "CompositePodGroups")):
        rows = _group_rows(store.list(kind))
        if not rows:
            continue
        table = Table(title=title)
        for col in ("NAMESPACE", "NAME", "CONDITION", "STATUS", "REASON", "MESSAGE"):
            table.add_column(col, overflow="fold")
        for r in rows:
            for c in r.conditions or [_ConditionRow("-", "", "", "")]:
                table.add_row(r.namespace, r.name, c.type, c.status, c.reason, c.message)
        parts.append(table)
    if store.evictions:
        ev = Table(title="Evictions")
        for col in ("NAMESPACE", "POD", "PREEMPTOR"):
            ev.add_column(col)
        for e in store.evictions:
            ev.add_row(e.pod[0], e.pod[1], e.preemptor)
        parts.append(ev)
    return Group(*parts)
