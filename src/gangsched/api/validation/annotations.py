"""gangsched's own annotations, checked where they are written rather than where they are read: a run time
that cannot be parsed is a bad input, not a job of unknown length.

- `gangsched.io/duration` (the work a job needs, read by `simulate`) and `gangsched.io/expected-duration` (the
  run-time estimate backfill plans with): seconds (`5400`, `90.5`) or a Go duration (`1h30m`), as
  api/duration.py reads them.
"""

from __future__ import annotations

from typing import Any

from ..duration import DURATION_ANNOTATION, EXPECTED_DURATION_ANNOTATION, DurationError, parse_duration
from ..errors import FieldError, invalid

__all__ = ["gangsched_annotations"]

_DURATIONS = (DURATION_ANNOTATION, EXPECTED_DURATION_ANNOTATION)


def gangsched_annotations(meta: Any) -> list[FieldError]:
    """Errors in the object's gangsched.io annotations (none when it has none)."""
    annotations = (meta.annotations or {}) if meta is not None else {}
    errors: list[FieldError] = []
    for name in _DURATIONS:
        raw = annotations.get(name)
        if raw is None:
            continue
        try:
            parse_duration(str(raw))
        except DurationError:
            detail = "must be a non-negative number of seconds or a Go duration such as 1h30m"
            errors.append(invalid(f"metadata.annotations[{name}]", raw, detail))
    return errors
