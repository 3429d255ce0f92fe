"""The scheduler's tie-breaking generator: the stream of `np.random.default_rng(seed).integers(n)`, at a
fraction of its cost, and able to give back one cycle's draws.

Every draw of the decision core is `integers(n)`: a node among `n` tied ones, preemption's starting offset.
A cycle that binds a pod makes one, so at thousands of pods per second numpy's `integers` (about 7 µs a
call, nearly all of it argument handling: dtype, 0-d arrays, the lock, the numpy scalar it returns) was a
tenth of the engine's time on lone pods. The draw itself is short, so it is done here in Python on the
generator's raw 64-bit outputs, as numpy does it for a range below 2**32 (numpy/random/src/distributions/
distributions.c: random_bounded_uint64_fill -> buffered_bounded_lemire_uint32, Lemire's method on 32-bit
words; PCG64's next_uint32 hands out a raw output's low half, then keeps its high half for the next word).
tests/scheduler/test_cycle_rng.py compares both streams draw by draw, rejections included: a numpy that
changed its method would fail it, not change decisions silently.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["CycleRng"]

_WORD = 0xFFFFFFFF
_PERIOD = 1 << 128  # PCG64's: stepping forward _PERIOD - k outputs steps back k


class CycleRng(np.random.Generator):
    """A Generator (PCG64, seeded as `default_rng(seed)`) whose only draw is `integers(n)`; `start_cycle` and
    `undo_cycle` bracket a cycle whose draws must be given back (one that binds and evicts nothing).

    The undo steps the generator back over the raw outputs the cycle took and restores the half word it
    kept: nothing is copied when a cycle starts, and a cycle that draws nothing costs nothing to undo.
    Not thread-safe."""

    def __init__(self, seed: int) -> None:
        self._pcg = np.random.PCG64(seed)
        super().__init__(self._pcg)
        self._raw = self._pcg.random_raw
        self._half: int | None = None  # the high half of the last raw output, the next word to hand out
        self._drawn = 0  # raw outputs taken since `start_cycle`
        self._half_at_start: int | None = None

    def start_cycle(self) -> None:
        self._drawn = 0
        self._half_at_start = self._half

    def undo_cycle(self) -> None:
        """Back to the position at `start_cycle` (nothing drawn since: nothing to undo)."""
        if self._drawn:
            self._pcg.advance(_PERIOD - self._drawn)
        self._drawn = 0
        self._half = self._half_at_start

    def _word(self) -> int:
        """The next 32-bit word, as PCG64's next_uint32 gives it."""
        half = self._half
        if half is not None:
            self._half = None
            return half
        raw = self._raw()
        self._drawn += 1
        self._half = raw >> 32
        return raw & _WORD

    def _below(self, n: int) -> int:
        """Uniform in [0, n): Lemire's multiply-and-reject on 32-bit words, numpy's rejections included."""
        if n == 1:
            return 0  # numpy draws nothing for a range of one value
        if n == _WORD + 1:
            return self._word()
        m = self._word() * n
        low = m & _WORD
        if low < n:
            threshold = (_WORD + 1 - n) % n
            while low < threshold:
                m = self._word() * n
                low = m & _WORD
        return m >> 32

    def integers(  # type: ignore[override]
        self,
        low: int,
        high: None = None,
        size: int | None = None,
        dtype: Any = np.int64,
        endpoint: bool = False,
    ) -> Any:
        """`integers(n)` (or `integers(n, size=k)`: k draws in turn, as numpy makes them): other forms would
        use words this class does not track, so they are refused."""
        n = int(low)  # a numpy integer would overflow in the product of two 32-bit words
        if high is not None or endpoint or dtype is not np.int64 or not 1 <= n <= _WORD + 1:
            raise NotImplementedError("the tie-breaking generator draws only integers(n), 1 <= n <= 2**32")
        if size is None:
            return self._below(n)
        return np.array([self._below(n) for _ in range(size)], dtype=np.int64)

    def position(self) -> tuple[Mapping[str, Any], int | None]:
        """Where the stream stands (the bit generator's state and the half word kept): equal positions give
        equal draws."""
        return self.bit_generator.state, self._half

    def __reduce__(self) -> tuple[Any, ...]:  # a copy or a pickle stays a CycleRng, at the same position
        return (_cycle_rng_at, self.position())


def _cycle_rng_at(state: Mapping[str, Any], half: int | None) -> CycleRng:
    rng = CycleRng(0)
    rng.bit_generator.state = state
    rng._half = half
    return rng
