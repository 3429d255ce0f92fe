"""Kubernetes-style field errors (k8s.io/apimachinery/pkg/util/validation/field) and load problems.

A `FieldError` renders exactly as upstream's `field.Error.Error()` does, so that messages can be compared
with what the API server says: `spec.schedulingPolicy.gang.minCount: Invalid value: 0: must be greater
than or equal to 1`.
"""

from __future__ import annotations

import enum
from typing import Any

from msgspec import Struct

__all__ = [
    "NIL",
    "OMIT",
    "ErrorType",
    "FieldError",
    "Marshalled",
    "Problem",
    "duplicate",
    "forbidden",
    "invalid",
    "not_found",
    "not_supported",
    "required",
    "too_long",
    "too_many",
]


class ErrorType(enum.Enum):
    NOT_FOUND = "Not found"
    REQUIRED = "Required value"
    DUPLICATE = "Duplicate value"
    INVALID = "Invalid value"
    NOT_SUPPORTED = "Unsupported value"
    FORBIDDEN = "Forbidden"
    TOO_LONG = "Too long"
    TOO_MANY = "Too many"
    INTERNAL = "Internal error"


class _Omit:
    def __repr__(self) -> str:
        return "OMIT"


#: A bad value that is not shown (upstream's `omitValue`).
OMIT: Any = _Omit()


class _Nil:
    def __repr__(self) -> str:
        return "NIL"


#: A nil map or slice as the bad value: json.Marshal prints it `null`, unquoted (an untyped nil, None here,
#: is the string "null", quoted).
NIL: Any = _Nil()


class Marshalled(Struct, frozen=True):
    """A bad value given as json.Marshal renders it: a struct's fields come in declaration order, which
    the sorted rendering of a dict would not keep."""

    text: str


# Types whose value upstream prints without quoting or struct syntax.
_PLAIN = (bool, int, float)
_NO_VALUE = {ErrorType.REQUIRED, ErrorType.FORBIDDEN, ErrorType.TOO_LONG, ErrorType.INTERNAL}


def _render_value(value: Any) -> str:
    if value is None:
        return '"null"'  # upstream substitutes the string "null" for nil, then quotes it as any string
    if value is NIL:
        return "null"
    if isinstance(value, Marshalled):
        return value.text
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, _PLAIN):
        return str(value)
    import json  # here: valid input never renders a bad value, and `schedule` need not import it

    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    try:
        # json.Marshal: compact, map keys sorted.
        return json.dumps(value, sort_keys=True, default=str, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return repr(value)


class FieldError(Struct, frozen=True):
    """One problem with one field, as upstream's field.Error."""

    type: ErrorType
    field: str
    bad_value: Any = OMIT
    detail: str = ""

    def body(self) -> str:
        if self.type in _NO_VALUE or self.bad_value is OMIT:
            s = self.type.value
        else:
            s = f"{self.type.value}: {_render_value(self.bad_value)}"
        if self.detail:
            s += f": {self.detail}"
        return s

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"


def required(field: str, detail: str = "") -> FieldError:
    return FieldError(ErrorType.REQUIRED, field, OMIT, detail)


def invalid(field: str, value: Any, detail: str) -> FieldError:
    return FieldError(ErrorType.INVALID, field, value, detail)


def forbidden(field: str, detail: str) -> FieldError:
    return FieldError(ErrorType.FORBIDDEN, field, OMIT, detail)


def duplicate(field: str, value: Any) -> FieldError:
    return FieldError(ErrorType.DUPLICATE, field, value)


def not_found(field: str, value: Any) -> FieldError:
    return FieldError(ErrorType.NOT_FOUND, field, value)


def not_supported(field: str, value: Any, supported: list[str]) -> FieldError:
    import json

    detail = "supported values: " + ", ".join(json.dumps(s) for s in supported) if supported else ""
    return FieldError(ErrorType.NOT_SUPPORTED, field, value, detail)


def too_long(field: str, maximum: int) -> FieldError:
    """Upstream's field.TooLong: `Too long: may not be more than 63 bytes` (`1 byte`), the value not shown."""
    unit = "byte" if maximum == 1 else "bytes"
    return FieldError(ErrorType.TOO_LONG, field, OMIT, f"may not be more than {maximum} {unit}")


def too_many(field: str, actual: int, maximum: int) -> FieldError:
    """Upstream's field.TooMany: `Too many: 5: must have at most 4 items` (`1 item` when the limit is 1)."""
    noun = "item" if maximum == 1 else "items"
    return FieldError(ErrorType.TOO_MANY, field, actual, f"must have at most {maximum} {noun}")


#: Every character str.splitlines() breaks on, mapped to its escape (`\n` -> the two characters `\\n`).
_LINE_BREAKS = {ord(c): repr(c)[1:-1] for c in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"}


class Problem(Struct, frozen=True):
    """A problem found in an input, located by file and object: one line of `gangsched validate`."""

    file: str
    kind: str
    namespace: str
    name: str
    error: FieldError | str

    def __str__(self) -> str:
        name = self.name or "<unnamed>"
        where = f"{self.namespace}/{name}" if self.namespace else name
        line = f"{self.file}: {self.kind or '<unknown kind>'} {where}: {self.error}"
        # One problem, one line: names and kinds come from the input and may hold line breaks.
        return line.translate(_LINE_BREAKS)
