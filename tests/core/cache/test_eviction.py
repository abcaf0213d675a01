from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core.cache._eviction import plain_cut, plan_block_cut

sizes_st = st.lists(st.integers(0, 400), max_size=60)


def test_block_cut_moves_in_steps_and_then_stays():
    cuts = [plan_block_cut([10] * n, 50, step=30) for n in range(1, 20)]
    assert cuts == [0, 0, 0, 0, 0, 3, 3, 3, 6, 6, 6, 9, 9, 9, 12, 12, 12, 15, 15]


def test_plain_cut_moves_every_turn():
    assert [plain_cut([10] * n, 50) for n in range(4, 10)] == [0, 0, 1, 2, 3, 4]


def test_each_cut_buys_a_full_step_even_with_large_units():
    # every fifth unit is a large tool result (300) next to 20-token turns
    sizes = [300 if i % 5 == 0 else 20 for i in range(300)]
    capacity, step = 2000, 600
    cuts = [plan_block_cut(sizes[:n], capacity, step=step) for n in range(1, len(sizes) + 1)]
    plain = [plain_cut(sizes[:n], capacity) for n in range(1, len(sizes) + 1)]
    moves = sum(1 for a, b in itertools.pairwise(cuts) if a != b)
    excess = sum(sizes) - capacity
    assert moves <= -(-excess // step)  # each move freed at least one step
    assert moves < sum(1 for a, b in itertools.pairwise(plain) if a != b)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"sizes": [1], "capacity": -1, "step": 5}, "capacity must be an integer >= 0"),
        ({"sizes": [1], "capacity": 5, "step": 0}, "step must be a positive integer"),
        ({"sizes": [1, -2], "capacity": 5, "step": 3}, "unit 1: size must be an integer >= 0"),
        ({"sizes": [1.5], "capacity": 5, "step": 3}, "unit 0: size must be an integer"),
    ],
)
def test_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        plan_block_cut(kwargs["sizes"], kwargs["capacity"], step=kwargs["step"])


@given(sizes_st, st.integers(0, 3000), st.integers(1, 2000))
def test_kept_part_fits_and_cut_is_a_candidate(sizes, capacity, step):
    k = plan_block_cut(sizes, capacity, step=step)
    assert k >= plain_cut(sizes, capacity)
    assert sum(sizes[k:]) <= capacity or k == len(sizes)
    dropped = sum(sizes[:k])
    # k is the first boundary at or past some multiple of step (or the plain cut when none exists yet)
    if k and k != plain_cut(sizes, capacity):
        m = dropped // step
        assert m >= 1 and sum(sizes[: k - 1]) < m * step


@given(sizes_st, st.integers(0, 3000), st.integers(1, 2000), st.integers(0, 400))
def test_appending_never_moves_the_cut_back(sizes, capacity, step, extra):
    before = plan_block_cut(sizes, capacity, step=step)
    after = plan_block_cut([*sizes, extra], capacity, step=step)
    assert after >= before
    if after != before and before != plain_cut(sizes, capacity):
        # a block cut moves only when the part it kept no longer fits
        assert sum(sizes[before:]) + extra > capacity
