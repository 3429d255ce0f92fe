"""Kubernetes resource quantities (k8s.io/apimachinery/pkg/api/resource), exact.

Quantities are parsed into `Fraction`s so that `0.1`, `100m` and `1e-1` are the same number. The scheduler
works in integer milli-units, rounded up as upstream's `Quantity.MilliValue()` does.

>>> milli("100m"), milli("1.5"), milli("2Gi") // 1000, milli(1)
(100, 1500, 2147483648, 1000)
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

__all__ = ["QuantityError", "milli", "parse_quantity"]

_SUFFIX = {
    "": Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}
# Upstream's grammar: <signedNumber><suffix>; suffix a binary or decimal SI unit, or e/E<signed int>.
_QUANTITY = re.compile(
    r"^(?P<num>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:(?P<exp>[eE][+-]?[0-9]+)|(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$"
)
# Upstream refuses exponents this large too (the value would not fit in an int64 milli-value anyway).
_MAX_EXPONENT = 40


class QuantityError(ValueError):
    """Raised with upstream's message for a string that is not a quantity."""


@lru_cache(maxsize=4096)
def _parse_str(text: str) -> Fraction:
    m = _QUANTITY.match(text.strip()) if text.strip() == text else None
    if m is None:
        raise QuantityError(
            "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        )
    value = Fraction(m.group("num"))
    if m.group("exp"):
        exponent = int(m.group("exp")[1:])
        if abs(exponent) > _MAX_EXPONENT:
            raise QuantityError("quantity exponent is out of range")
        value *= Fraction(10) ** exponent
    else:
        value *= _SUFFIX[m.group("suffix") or ""]
    return value


def parse_quantity(value: object) -> Fraction:
    """Parse a quantity given as a string or a YAML number. Raises QuantityError (a ValueError)."""
    if isinstance(value, bool):
        raise QuantityError("quantities must be strings or numbers")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError("quantities must be finite")
        return _parse_str(repr(value))
    if isinstance(value, str):
        return _parse_str(value)
    raise QuantityError("quantities must be strings or numbers")


def milli(value: object) -> int:
    """The quantity in integer milli-units, rounded up (upstream's MilliValue)."""
    if isinstance(value, str):
        return _milli_str(value)
    return math.ceil(parse_quantity(value) * 1000)


@lru_cache(maxsize=4096)
def _milli_str(text: str) -> int:
    # Manifests repeat the same few strings ("100m", "1Gi") thousands of times.
    return math.ceil(_parse_str(text) * 1000)
