"""The gangsched.io/duration annotation: seconds or a Go duration."""

from __future__ import annotations

import pytest

from gangsched.api.duration import DurationError, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("3600", 3600.0), ("90.5", 90.5), ("1h30m", 5400.0), ("2m3.5s", 123.5), ("500ms", 0.5), ("0", 0.0),
     ("1h0m0s", 3600.0), (".5h", 1800.0)],
)  # fmt: skip
def test_parse(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "-5", "1x", "h", "1h 30m", "nan", "1h-3m", "inf"])
def test_refused(text: str) -> None:
    with pytest.raises(DurationError, match="non-negative number of seconds or a duration such as 1h30m"):
        parse_duration(text)
