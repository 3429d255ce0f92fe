"""CycleRng gives numpy's `default_rng(seed).integers(n)` stream, and gives a cycle's draws back."""

from __future__ import annotations

import copy
import pickle
import random

import numpy as np
import pytest

from gangsched.scheduler.cycle_rng import CycleRng

# Ranges that exercise every branch of numpy's bounded draw: one value (no draw), small ones, ranges just
# under 2**32 whose rejection threshold is large (most words below it are drawn again), and 2**32 itself
# (a bare word).
EDGES = [1, 2, 3, 4999, 5000, (1 << 31) + 1, (1 << 32) - 1, (1 << 32) - 7, 1 << 32]


@pytest.mark.parametrize("seed", [0, 1, 7, 12345])
def test_the_stream_is_numpys_draw_by_draw(seed: int) -> None:
    ours, numpys = CycleRng(seed), np.random.default_rng(seed)
    ranges = random.Random(seed)
    for _ in range(20_000):
        n = ranges.choice([*EDGES, ranges.randrange(1, 1 << 20), ranges.randrange(1 << 31, 1 << 32)])
        assert ours.integers(n) == numpys.integers(n), n


@pytest.mark.parametrize("seed", [1 << 32, (1 << 128) + 3, 3**200])
def test_a_seed_of_several_words_seeds_as_numpy_does(seed: int) -> None:
    """Seeds of two, five and ten 32-bit words: SeedSequence mixes the words past its pool of four apart."""
    ours, numpys = CycleRng(seed), np.random.default_rng(seed)
    assert [ours.integers(1 << 32) for _ in range(50)] == numpys.integers(1 << 32, size=50).tolist()


def test_a_negative_seed_is_refused_as_numpy_refuses_it() -> None:
    with pytest.raises(ValueError):
        np.random.default_rng(-1)
    with pytest.raises(ValueError):
        CycleRng(-1)


def test_size_draws_in_turn_as_numpy_does() -> None:
    ours, numpys = CycleRng(3), np.random.default_rng(3)
    assert ours.integers(5, size=7).tolist() == numpys.integers(5, size=7).tolist()
    assert ours.integers((1 << 32) - 3) == numpys.integers((1 << 32) - 3)


def test_a_numpy_integer_range_is_drawn_as_a_python_one() -> None:
    ours, numpys = CycleRng(4), np.random.default_rng(4)
    for _ in range(100):
        assert ours.integers(np.int64((1 << 32) - 5)) == numpys.integers((1 << 32) - 5)


@pytest.mark.parametrize("draws_before", [0, 1, 2, 3])
@pytest.mark.parametrize("draws_in_cycle", [0, 1, 2, 5])
def test_undo_gives_the_cycles_draws_back(draws_before: int, draws_in_cycle: int) -> None:
    """Whatever half word is kept when the cycle starts or ends, the draws after the undo are those the
    cycle made (an odd count of draws leaves a half word kept)."""
    rng = CycleRng(9)
    for _ in range(draws_before):
        rng.integers(1000)
    rng.start_cycle()
    made = [rng.integers(1000) for _ in range(draws_in_cycle)]
    rng.undo_cycle()
    assert [rng.integers(1000) for _ in range(draws_in_cycle)] == made
    expected = np.random.default_rng(9)
    for _ in range(draws_before + draws_in_cycle):
        expected.integers(1000)
    assert [rng.integers(1000) for _ in range(10)] == expected.integers(1000, size=10).tolist()


def test_a_copy_and_a_pickle_draw_what_the_original_draws() -> None:
    rng = CycleRng(5)
    rng.integers(77)  # keeps a half word: the copy must keep it too
    expected = np.random.default_rng(5).integers(77, size=6).tolist()[1:]
    for twin in (copy.deepcopy(rng), pickle.loads(pickle.dumps(rng))):
        assert isinstance(twin, CycleRng)
        assert twin.position() == rng.position()
        assert [twin.integers(77) for _ in range(5)] == expected


@pytest.mark.parametrize(
    "call",
    [
        lambda rng: rng.integers(0),
        lambda rng: rng.integers((1 << 32) + 1),
        lambda rng: rng.integers(1, 5),
        lambda rng: rng.integers(5, endpoint=True),
        lambda rng: rng.integers(5, dtype=np.int32),
    ],
    ids=["empty range", "range above 2**32", "low and high", "endpoint", "dtype"],
)
def test_other_forms_are_refused(call: object) -> None:
    with pytest.raises(NotImplementedError):
        call(CycleRng(0))  # type: ignore[operator]
