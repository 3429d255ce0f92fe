"""The `gangsched.io/duration` annotation: how long a job runs once it makes progress.

On a PodGroup, a Job (copied to the PodGroup and pods it expands into) or a lone Pod. The value is a number of
seconds (`3600`, `90.5`) or a Go duration (`1h30m`, `2m3.5s`, `500ms`), as `time.ParseDuration` reads it.

    parse_duration("1h30m") == 5400.0
"""

from __future__ import annotations

import re
from typing import Any

__all__ = [
    "DURATION_ANNOTATION",
    "EXPECTED_DURATION_ANNOTATION",
    "DurationError",
    "duration_of",
    "parse_duration",
]

DURATION_ANNOTATION = "gangsched.io/duration"
EXPECTED_DURATION_ANNOTATION = "gangsched.io/expected-duration"  # backfill's estimate (estimates.py)
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
# Read only for Go durations (numbers take float's path): compiled then, through re's cache.
_PART = r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)"


class DurationError(ValueError):
    """Not a number of seconds nor a Go duration."""


def parse_duration(text: str) -> float:
    """Seconds in `text`; DurationError if it is neither a non-negative number nor a Go duration."""
    value = text.strip()
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        if seconds < 0 or seconds != seconds or seconds == float("inf"):
            raise DurationError(
                f"must be a non-negative number of seconds or a duration such as 1h30m: {text!r}"
            )
        return seconds
    pos, total = 0, 0.0
    for match in re.finditer(_PART, value):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if pos == 0 or pos != len(value):
        raise DurationError(f"must be a non-negative number of seconds or a duration such as 1h30m: {text!r}")
    return total


def duration_of(obj: Any) -> float | None:
    """The object's annotated run time in seconds, or None; DurationError when the annotation is malformed."""
    annotations = (obj.metadata.annotations or {}) if obj is not None and obj.metadata else {}
    raw = annotations.get(DURATION_ANNOTATION)
    return None if raw is None else parse_duration(str(raw))
