from fractions import Fraction

import pytest

from gangsched.api.quantity import QuantityError, milli, parse_quantity


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("100m", Fraction(1, 10)),
        ("1.5", Fraction(3, 2)),
        ("2Gi", Fraction(2 * 2**30)),
        ("1e3", Fraction(1000)),
        ("500Mi", Fraction(500 * 2**20)),
        ("1E-3", Fraction(1, 1000)),
        (".5", Fraction(1, 2)),
        ("+4k", Fraction(4000)),
        ("-1", Fraction(-1)),
        ("10n", Fraction(10, 10**9)),
        ("3u", Fraction(3, 10**6)),
        (7, Fraction(7)),
        (0.25, Fraction(1, 4)),
    ],
    ids=str,
)
def test_parse(text: object, expected: Fraction) -> None:
    assert parse_quantity(text) == expected


@pytest.mark.parametrize("text", ["", "1.2.3", "abc", "1Kb", "Gi", " 1", "1e", "1e999", "1ki"], ids=repr)
def test_refused(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


def test_milli_rounds_up_as_upstream() -> None:
    assert milli("1n") == 1
    assert milli("100m") == 100
    assert milli("1Ki") == 1024000
