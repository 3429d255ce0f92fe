"""Read Kubernetes manifests into typed lightkube-models objects.

Inputs are files, directories (recursively: *.yaml, *.yml, *.json, in sorted order) and `-` for stdin; a file
holds one or more YAML documents, a JSON object, or a `List` (any kind ending in `List` with `items`).
Every problem is reported with its file and object instead of raised, so that one bad document does not
hide the others; callers apply nothing when `problems` is not empty.

Decoding is msgspec's (lightkube-models are msgspec Structs); YAML is parsed by yamlfast, which gives what
PyYAML's C loader gives, faster.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
from collections.abc import Iterable, Iterator
from typing import Any

import msgspec
import yaml
from msgspec import Struct, field

from . import yamlfast
from .errors import FieldError, Problem, invalid, not_supported, required
from .kinds import KINDS, KindInfo

__all__ = ["LoadResult", "Loaded", "decode", "load_documents", "load_paths"]

_SUFFIXES = (".yaml", ".yml", ".json")


class Loaded(Struct):
    """One decoded object and where it came from. `order` is its position across all inputs."""

    obj: Any
    info: KindInfo
    file: str
    order: int


class LoadResult(Struct):
    objects: list[Loaded] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    def extend(self, other: LoadResult) -> None:
        self.objects.extend(other.objects)
        self.problems.extend(other.problems)


def _files(paths: Iterable[str]) -> Iterator[tuple[str, str | None]]:
    """(display name, error) per input file; directories expand recursively in sorted order."""
    for p in paths:
        if p == "-":
            yield "-", None
            continue
        mode = _mode(p)
        if mode is not None and stat.S_ISDIR(mode):
            from pathlib import Path  # only for a directory: with urllib.parse, 4 ms of every start

            files = (f for f in Path(p).rglob("*") if f.is_file() and f.suffix.lower() in _SUFFIXES)
            found = sorted(str(f) for f in files)
            if not found:
                yield p, "no *.yaml, *.yml or *.json files in directory"
            for f in found:
                yield f, None
        elif mode is not None and stat.S_ISREG(mode):
            yield p, None
        elif mode is None:
            yield p, "no such file or directory"
        else:
            yield p, "not a regular file or directory"


# The errors for which pathlib's is_dir, is_file and exists answer False rather than raise (_IGNORED_ERRNOS).
_ABSENT = (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP)


def _mode(p: str) -> int | None:
    """The st_mode of `p` as `pathlib.Path(p)` stats it (its normal form: `pathlib_form`), or None where
    Path(p).exists() is False; any other error is raised, as Path(p).is_dir() raises it."""
    try:
        return os.stat(pathlib_form(p)).st_mode
    except OSError as e:
        if e.errno in _ABSENT:
            return None
        raise
    except ValueError:  # an embedded null character: pathlib answers False
        return None


def pathlib_form(p: str) -> str:
    """`str(pathlib.PurePosixPath(p))`: empty and `.` parts dropped, so no trailing slash; two leading slashes
    kept, three or more made one; `.` for nothing. A file given as `f.yaml/` is the file `f.yaml` to pathlib
    (and so to gangsched since its first version), where the system refuses to stat it."""
    root = "//" if p[:2] == "//" and p[2:3] != "/" else "/" if p[:1] == "/" else ""
    return root + "/".join(part for part in p.split("/") if part not in ("", ".")) or "."


def _read(name: str) -> str:
    if name == "-":
        data = sys.stdin.buffer.read()
    else:
        with open(name, "rb") as f:
            data = f.read()
    return data.decode("utf-8")


def _yaml_error(name: str, e: yaml.YAMLError) -> Problem:
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    problem = getattr(e, "problem", None) or str(e).splitlines()[0]
    return Problem(name, "", "", "", f"YAML syntax error at {where}{problem}")


def _parse(name: str, text: str) -> tuple[Iterable[Any], Problem | None]:
    if name.lower().endswith(".json") or text.lstrip().startswith(("{", "[")):
        import json  # only for JSON input: YAML is read without it

        try:
            doc = json.loads(text)
            return ([doc], None)
        except (json.JSONDecodeError, RecursionError) as e:
            if name.lower().endswith(".json"):
                msg = getattr(e, "msg", str(e))
                line = getattr(e, "lineno", 0)
                return ([], Problem(name, "", "", "", f"JSON syntax error at line {line}: {msg}"))
            # not JSON after all: YAML flow style; fall through
    # Documents are parsed as they are decoded (see load_paths), so that their dicts never all live at once.
    return ((d for d in yamlfast.iter_all(text) if d is not None), None)


def _flatten(docs: Iterable[Any]) -> Iterator[Any]:
    for d in docs:
        kind = d.get("kind") if isinstance(d, dict) else None
        if isinstance(kind, str) and kind.endswith("List") and isinstance(d.get("items"), list):
            yield from _flatten(d["items"])
        else:
            yield d


# Read only when an object fails to decode: compiled then, through re's own cache, not at every start.
_MSGSPEC_PATH = r"(?s)^(?P<msg>.*?)(?: - at `\$(?P<path>[^`]*)`)?$"
_MISSING = r"Object missing required field `(?P<field>[^`]+)`"


def _value_at(doc: Any, path: str) -> Any:
    cur = doc
    for part in re.findall(r"\.([^.\[]+)|\[(\d+)\]", path):
        key, index = part
        try:
            cur = cur[int(index)] if index else cur[key]
        except (KeyError, IndexError, TypeError):
            return None
    return cur


def _decode_error(e: msgspec.ValidationError, doc: Any) -> FieldError:
    """msgspec's `Expected int, got str - at $.spec.x` as a Kubernetes field error."""
    m = re.match(_MSGSPEC_PATH, str(e))
    msg, path = (m.group("msg"), m.group("path") or "") if m else (str(e), "")
    dotted = path.lstrip(".")
    missing = re.match(_MISSING, msg)
    if missing:
        return required(f"{dotted}.{missing.group('field')}" if dotted else missing.group("field"))
    detail = msg.replace("`", "")
    detail = detail[0].lower() + detail[1:] if detail else detail
    return invalid(dotted or "<root>", _value_at(doc, path), detail)


def _meta(doc: dict[str, Any]) -> tuple[str, str]:
    meta = doc.get("metadata")
    if not isinstance(meta, dict):
        return "", ""
    ns, name = meta.get("namespace"), meta.get("name")
    return (ns if isinstance(ns, str) else "", name if isinstance(name, str) else "")


# Fields that are structs, not pointers, in upstream's Go types, where lightkube-models make them optional or
# required: the API server decodes an absent or null one as an empty struct and validates what that lacks (a
# Job without a spec or template is refused for the template's containers and restart policy, not for the
# template itself; a DeviceClass or ResourceClaim without a spec is valid). Each path's every step is one.
_GO_STRUCT_FIELDS: dict[str, tuple[str, ...]] = {
    "Job": ("spec", "template"),
    "DeviceClass": ("spec",),
    "ResourceClaim": ("spec",),
    "ResourceClaimTemplate": ("spec", "spec"),
    "PersistentVolume": ("spec",),
    "PersistentVolumeClaim": ("spec",),
    "CSINode": ("spec",),
}
# Lists the lightkube models require that are Go slices upstream, nil when absent, which validation only
# walks (validateCSINodeDrivers): the struct that holds one (in _GO_STRUCT_FIELDS) and the field, given []
# when absent or null. The API server stores a CSINode without drivers.
_GO_NIL_SLICES: dict[str, str] = {"CSINode": "drivers"}


def _with_empty_structs(doc: dict[str, Any], path: tuple[str, ...], nil_slice: str | None) -> dict[str, Any]:
    """`doc` with each absent (or null) field along `path` an empty mapping, and `nil_slice` in the last
    one an empty list when absent or null; copies what it changes. A field of another type is left as it
    is, for decoding to report."""
    top = dict(doc)
    cur = top
    for key in path:
        child = cur.get(key)
        if child is None:
            child = {}
        elif not isinstance(child, dict):
            return top
        cur[key] = child = dict(child)
        cur = child
    if nil_slice is not None and cur.get(nil_slice) is None:
        cur[nil_slice] = []
    return top


def with_go_structs(kind: str, doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` as the API server reads an object of `kind`: its Go-struct fields (_GO_STRUCT_FIELDS) an empty
    mapping when absent or null, and its nil slice (_GO_NIL_SLICES) an empty list; `doc` itself for other
    kinds. Files (`decode`) and objects served by the API server (live mode) both pass through it: the API
    server serves a CSINode the kubelet made with no drivers as `"drivers": null`."""
    struct_path = _GO_STRUCT_FIELDS.get(kind)
    if struct_path is None:
        return doc
    return _with_empty_structs(doc, struct_path, _GO_NIL_SLICES.get(kind))


def decode(doc: Any, file: str, order: int) -> Loaded | Problem:
    """Decode one document into its lightkube model, or say why it cannot be."""
    if not isinstance(doc, dict):
        return Problem(file, "", "", "", f"document is a {type(doc).__name__}, not a Kubernetes object")
    kind, api_version = doc.get("kind"), doc.get("apiVersion")
    ns, name = _meta(doc)
    if not isinstance(kind, str) or not kind:
        return Problem(file, "", ns, name, required("kind"))
    info = KINDS.get(kind)
    if info is None:
        return Problem(file, kind, ns, name, not_supported("kind", kind, list(KINDS)))
    if info.namespaced and not ns:
        ns = "default"  # named as it will be once defaulted, so that every line about it reads the same
    if api_version != info.api_version:
        if api_version is None:
            return Problem(file, kind, ns, name, required("apiVersion"))
        return Problem(file, kind, ns, name, not_supported("apiVersion", api_version, [info.api_version]))
    doc = with_go_structs(kind, doc)
    try:
        obj = info.model.from_dict(doc)
    except msgspec.ValidationError as e:
        return Problem(file, kind, ns, name, _decode_error(e, doc))
    except (ValueError, TypeError, OverflowError, RecursionError) as e:
        return Problem(file, kind, ns, name, f"cannot decode: {e}")
    return Loaded(obj, info, file, order)


def load_documents(docs: Iterable[Any], file: str, start: int = 0) -> LoadResult:
    """Decode already-parsed documents (dicts), e.g. built in memory by tests or the builder."""
    result = LoadResult()
    for i, doc in enumerate(_flatten(docs)):
        item = decode(doc, file, start + i)
        if isinstance(item, Problem):
            result.problems.append(item)
        else:
            result.objects.append(item)
    return result


def load_paths(paths: Iterable[str]) -> LoadResult:
    """Load every object from the given files, directories or `-`. Never raises on bad input."""
    result = LoadResult()
    for name, error in _files(paths):
        if error:
            result.problems.append(Problem(name, "", "", "", error))
            continue
        try:
            text = _read(name)
        except (OSError, UnicodeDecodeError) as e:
            reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            result.problems.append(Problem(name, "", "", "", f"cannot read: {reason}"))
            continue
        if "\x00" in text:
            result.problems.append(Problem(name, "", "", "", "cannot read: binary data (NUL byte)"))
            continue
        docs, problem = _parse(name, text)
        if problem:
            result.problems.append(problem)
            continue
        try:
            loaded = load_documents(docs, name, start=len(result.objects) + len(result.problems))
        except yaml.YAMLError as e:  # raised while reading on: nothing of this file is kept
            result.problems.append(_yaml_error(name, e))
            continue
        except (RecursionError, ValueError, OverflowError) as e:
            result.problems.append(
                Problem(name, "", "", "", f"YAML could not be read: {type(e).__name__}: {e}")
            )
            continue
        result.extend(loaded)
    return result


def display_path(name: str) -> str:
    """A path as given, relative to the working directory when it is below it."""
    try:
        rel = os.path.relpath(name)
    except ValueError:
        return name
    return name if rel.startswith("..") else rel
