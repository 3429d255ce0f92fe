"""Start-up delay distributions, written `0` (default), `const:S`, `exp:MEAN` or `uniform:LO,HI` (seconds).

Delay.parse("exp:30").draw(rng)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Delay"]


@dataclass(frozen=True, slots=True)
class Delay:
    kind: str = "const"
    a: float = 0.0
    b: float = 0.0

    @classmethod
    def parse(cls, text: str) -> Delay:
        """ValueError naming the accepted forms on anything else."""
        kind, _, args = text.partition(":")
        try:
            if not args and kind.replace(".", "", 1).isdigit():
                return cls("const", float(kind))
            values = [float(v) for v in args.split(",")] if args else []
            if kind == "const" and len(values) == 1 and values[0] >= 0:
                return cls("const", values[0])
            if kind == "exp" and len(values) == 1 and values[0] >= 0:
                return cls("exp", values[0])
            if kind == "uniform" and len(values) == 2 and 0 <= values[0] <= values[1]:
                return cls("uniform", values[0], values[1])
        except ValueError:
            pass
        raise ValueError(f"invalid delay {text!r}: expected SECONDS, const:S, exp:MEAN or uniform:LO,HI")

    def draw(self, rng: np.random.Generator) -> float:
        if self.kind == "const":
            return self.a
        if self.kind == "exp":
            return float(rng.exponential(self.a)) if self.a > 0 else 0.0
        return float(rng.uniform(self.a, self.b))
