"""The output of `gangsched schedule` (DESIGN.md's contract): JSON, YAML to feed back in, or tables."""

from __future__ import annotations

from typing import Any

import msgspec
import yaml

from ..api.kinds import KINDS
from ..store.store import Store

__all__ = ["FLOAT_FREE_ROWS", "as_json", "as_table", "as_yaml", "json_bytes"]

_Dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _pod_row(pod: Any) -> dict[str, Any]:
    """A pod's row: its node, or why it is pending (the reason and message of its PodScheduled condition
    when that says False). A bound pod's conditions are not read: looking through them took three quarters
    of the rows' time."""
    status = pod.status
    reason = message = None
    if status is not None and not pod.spec.nodeName:
        for condition in status.conditions or ():
            if condition.type == "PodScheduled":
                if condition.status == "False":
                    reason, message = condition.reason, condition.message
                break
    return {
        "namespace": pod.metadata.namespace,
        "name": pod.metadata.name,
        "nodeName": pod.spec.nodeName or None,
        "nominatedNodeName": (status.nominatedNodeName if status else None) or None,
        "reason": reason,
        "message": message,
    }


def _group_row(group: Any) -> dict[str, Any]:
    conditions = (group.status.conditions if group.status else None) or []
    return {
        "namespace": group.metadata.namespace,
        "name": group.metadata.name,
        "conditions": [
            {"type": c.type, "status": c.status, "reason": c.reason, "message": c.message} for c in conditions
        ],
    }


def as_json(store: Store) -> dict[str, Any]:
    return {
        "pods": [_pod_row(p) for p in store.list("Pod")],
        "podGroups": [_group_row(g) for g in store.list("PodGroup")],
        "compositePodGroups": [_group_row(g) for g in store.list("CompositePodGroup")],
        "evictions": [
            {"namespace": e.pod[0], "name": e.pod[1], "preemptor": e.preemptor} for e in store.evictions
        ],
        "events": [
            {"type": e.type, "reason": e.reason, "object": e.object, "message": e.message}
            for e in store.events
        ],
        "volumeBindings": [
            {"pvc": f"{vb.pvc[0]}/{vb.pvc[1]}", "pv": vb.pv, "node": vb.node} for vb in store.volume_bindings
        ],
        "claims": [_claim_row(c) for c in store.list("ResourceClaim")],
    }


# The keys of `as_json` whose rows hold only strings, None, and lists and dicts of them: each value comes from
# a string-typed field of a decoded object (names, node names, condition and event texts), where a float
# cannot be. The claims' rows copy allocations as they are, so those may hold anything JSON holds.
FLOAT_FREE_ROWS = frozenset(
    {"pods", "podGroups", "compositePodGroups", "evictions", "events", "volumeBindings"}
)


def _stdlib_json(doc: Any) -> bytes:
    """`json.dumps(doc, indent=2)`, encoded: `json_bytes`'s fallback, whose module is imported only then (with
    the report it cost every `schedule` 1.5 ms of CPU)."""
    import json

    return json.dumps(doc, indent=2).encode()


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
    for row in map(_pod_row, store.list("Pod")):
        pods.add_row(
            row["namespace"], row["name"], row["nodeName"] or "-", row["reason"] or "", row["message"] or ""
        )
    parts: list[Any] = [pods]
    for kind, title in (("PodGroup", "PodGroups"), ("CompositePodGroup", "CompositePodGroups")):
        rows = [_group_row(g) for g in store.list(kind)]
        if not rows:
            continue
        table = Table(title=title)
        for col in ("NAMESPACE", "NAME", "CONDITION", "STATUS", "REASON", "MESSAGE"):
            table.add_column(col, overflow="fold")
        for r in rows:
            for c in r["conditions"] or [{"type": "-", "status": "", "reason": "", "message": ""}]:
                table.add_row(r["namespace"], r["name"], c["type"], c["status"], c["reason"], c["message"])
        parts.append(table)
    if store.evictions:
        ev = Table(title="Evictions")
        for col in ("NAMESPACE", "POD", "PREEMPTOR"):
            ev.add_column(col)
        for e in store.evictions:
            ev.add_row(e.pod[0], e.pod[1], e.preemptor)
        parts.append(ev)
    return Group(*parts)
