"""The scheduler's tie-breaking generator: the stream of `np.random.default_rng(seed).integers(n)`, at a
fraction of its cost, and able to give back one cycle's draws.

Every draw of the decision core is `integers(n)`: a node among `n` tied ones, preemption's starting offset.
A cycle that binds a pod makes one, so at thousands of pods per second numpy's `integers` (about 7 µs a
call, nearly all of it argument handling: dtype, 0-d arrays, the lock, the numpy scalar it returns) was a
tenth of the engine's time on lone pods. The draw itself is short, so it is done here in Python on the
generator's raw 64-bit outputs, as numpy does it for a range below 2**32 (numpy/random/src/distributions/
distributions.c: random_bounded_uint64_fill -> buffered_bounded_lemire_uint32, Lemire's method on 32-bit
words; PCG64's next_uint32 hands out a raw output's low half, then keeps its high half for the next word).

The raw outputs are PCG64's, computed here too (numpy/random/src/pcg64/pcg64.h: a 128-bit LCG, each output
the XOR of the new state's halves rotated right by its top 6 bits), from the state numpy's SeedSequence
derives from the seed (numpy/random/bit_generator.pyx: mix_entropy, generate_state): importing
numpy.random cost `gangsched schedule` 0.013 s of its start, for a stream this short to write.
tests/scheduler/test_cycle_rng.py compares both streams draw by draw, rejections included: a numpy that
changed its method would fail it, not change decisions silently.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

__all__ = ["CycleRng", "TieBreaker"]

_WORD = 0xFFFFFFFF
_MASK64 = (1 << 64) - 1
_MASK128 = (1 << 128) - 1
_PCG_MULTIPLIER = (2549297995355413924 << 64) + 4865540595714422341  # PCG_DEFAULT_MULTIPLIER_128

# SeedSequence's hashing constants (bit_generator.pyx), on 32-bit words.
_INIT_A, _MULT_A = 0x43B0D7E5, 0x931E8875
_INIT_B, _MULT_B = 0x8B51F9DD, 0x58F38DED
_MIX_MULT_L, _MIX_MULT_R = 0xCA01F9DD, 0x4973F715
_XSHIFT = 16
_POOL_SIZE = 4


class TieBreaker(Protocol):
    """What the decision core draws ties from: `integers(n)`, uniform in [0, n) (a CycleRng, or a numpy
    Generator for a plan's trial placements)."""

    def integers(self, low: int, /) -> Any: ...


def _seed_state(seed: int) -> tuple[int, int]:
    """PCG64(seed)'s (state, increment): SeedSequence(seed).generate_state(4, uint64) as two 128-bit
    numbers, then PCG's srandom (pcg_setseq_128_srandom_r)."""
    if seed < 0:
        raise ValueError("expected non-negative integer")  # SeedSequence's refusal
    entropy = []  # the seed's 32-bit words, least significant first (at least one)
    while True:
        entropy.append(seed & _WORD)
        seed >>= 32
        if not seed:
            break
    hash_const = _INIT_A

    def hashmix(value: int) -> int:
        nonlocal hash_const
        value ^= hash_const
        hash_const = (hash_const * _MULT_A) & _WORD
        value = (value * hash_const) & _WORD
        return value ^ (value >> _XSHIFT)

    def mix(x: int, y: int) -> int:
        result = (_MIX_MULT_L * x - _MIX_MULT_R * y) & _WORD
        return result ^ (result >> _XSHIFT)

    pool = [hashmix(entropy[i] if i < len(entropy) else 0) for i in range(_POOL_SIZE)]
    for src in range(_POOL_SIZE):
        for dst in range(_POOL_SIZE):
            if src != dst:
                pool[dst] = mix(pool[dst], hashmix(pool[src]))
    for word in entropy[_POOL_SIZE:]:
        for dst in range(_POOL_SIZE):
            pool[dst] = mix(pool[dst], hashmix(word))
    out = []  # generate_state: 8 words of 32 bits, read as 4 of 64 (low word first)
    hash_const = _INIT_B
    for i in range(8):
        value = pool[i % _POOL_SIZE] ^ hash_const
        hash_const = (hash_const * _MULT_B) & _WORD
        value = (value * hash_const) & _WORD
        out.append(value ^ (value >> _XSHIFT))
    words = [out[2 * i] | out[2 * i + 1] << 32 for i in range(4)]
    initstate, initseq = words[0] << 64 | words[1], words[2] << 64 | words[3]
    inc = (initseq << 1 | 1) & _MASK128
    state = (inc + initstate) & _MASK128  # one step from 0, the initial state added, one more step
    return (state * _PCG_MULTIPLIER + inc) & _MASK128, inc


class CycleRng:
    """PCG64, seeded as `default_rng(seed)`, whose only draw is `integers(n)`; `start_cycle` and
    `undo_cycle` bracket a cycle whose draws must be given back (one that binds and evicts nothing).
    The state is a Python int: a cycle's start keeps it (and the half word kept), and the undo puts them
    back; nothing is copied. Not thread-safe."""

    def __init__(self, seed: int) -> None:
        self._state, self._inc = _seed_state(seed)
        self._half: int | None = None  # the high half of the last raw output, the next word to hand out
        self._at_start: tuple[int, int | None] = (self._state, None)

    def start_cycle(self) -> None:
        self._at_start = (self._state, self._half)

    def undo_cycle(self) -> None:
        """Back to the position at `start_cycle`."""
        self._state, self._half = self._at_start

    def _word(self) -> int:
        """The next 32-bit word, as PCG64's next_uint32 gives it."""
        half = self._half
        if half is not None:
            self._half = None
            return half
        state = self._state = (self._state * _PCG_MULTIPLIER + self._inc) & _MASK128
        rot = state >> 122
        folded = ((state >> 64) ^ state) & _MASK64
        raw = ((folded >> rot) | (folded << (64 - rot))) & _MASK64
        self._half = raw >> 32
        return raw & _WORD

    def integers(
        self,
        low: int,
        high: None = None,
        size: int | None = None,
        dtype: Any = np.int64,
        endpoint: bool = False,
    ) -> Any:
        """`integers(n)` (or `integers(n, size=k)`: k draws in turn, as numpy makes them): other forms would
        use words this class does not track, so they are refused. Uniform in [0, n): Lemire's
        multiply-and-reject on 32-bit words, numpy's rejections included (written here, not in a helper:
        a draw's call is a third of its cost, and a pod placed makes one)."""
        n = int(low)  # a numpy integer would overflow in the product of two 32-bit words
        if high is not None or endpoint or dtype is not np.int64 or not 1 <= n <= _WORD + 1:
            raise NotImplementedError("the tie-breaking generator draws only integers(n), 1 <= n <= 2**32")
        if size is not None:
            return np.array([self.integers(n) for _ in range(size)], dtype=np.int64)
        if n == 1:
            return 0  # numpy draws nothing for a range of one value
        if n == _WORD + 1:
            return self._word()
        m = self._word() * n
        fraction = m & _WORD
        if fraction < n:
            threshold = (_WORD + 1 - n) % n
            while fraction < threshold:
                m = self._word() * n
                fraction = m & _WORD
        return m >> 32

    def position(self) -> tuple[int, int, int | None]:
        """Where the stream stands (PCG64's state and increment, the half word kept): equal positions give
        equal draws. A copy or a pickle keeps it (the attributes are plain ints)."""
        return self._state, self._inc, self._half
