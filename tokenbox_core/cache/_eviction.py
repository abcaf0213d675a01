"""Prefix-stable eviction: block cuts with hysteresis, aligned to a fixed step.

A sliding window that evicts "just enough" moves its cut on every turn once the
window is full, so the prompt after the fixed prefix changes every turn and a
provider's prefix cache serves almost nothing.  :func:`plan_block_cut` moves the
cut in *steps*: the candidate cut positions are fixed by the conversation itself
(the first unit boundary at or past each multiple of ``step`` dropped tokens,
counted from the start of the conversation), and the cut is the earliest
candidate that makes the rest fit.  Consequences, all pinned by tests:

- The cut depends only on the unit sizes and the two numbers: no state to keep
  between turns, and the same transcript always gives the same cut.
- Appending units never moves the cut backwards, and it moves only when the kept
  part no longer fits; each move frees at least ``step`` tokens of growth (one
  unit more than the plain cut would free at most), so the prefix stays
  byte-identical for ``step / growth-per-turn`` turns — even when single units are
  large relative to a turn's growth (a low-water mark alone stops at the first
  unit below the mark and then moves again on the next turn).
- What the cut removed is a deterministic function of the cut, so a summary of
  it changes only when the cut moves.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from itertools import accumulate

from tokenbox_core.errors import ConfigError

__all__ = ["plan_block_cut", "plain_cut"]


def _check(sizes: Sequence[int], capacity: int) -> list[int]:
    if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 0:
        raise ConfigError(f"capacity must be an integer >= 0, got {capacity!r}")
    out = []
    for i, size in enumerate(sizes):
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise ConfigError(f"unit {i}: size must be an integer >= 0, got {size!r}")
        out.append(size)
    return out


def plain_cut(sizes: Sequence[int], capacity: int) -> int:
    """The sliding window's cut: the fewest leading units to drop so the rest fits ``capacity``."""
    units = _check(sizes, capacity)
    starts = [0, *accumulate(units)]  # starts[i] = tokens before unit i
    excess = starts[-1] - capacity
    return 0 if excess <= 0 else bisect_left(starts, excess)


def plan_block_cut(sizes: Sequence[int], capacity: int, *, step: int) -> int:
    """Index of the first kept unit when units are evicted in blocks of ``step`` tokens.

    Args:
        sizes: token cost of each unit, oldest first (a unit is what may not be
            split: a user turn with its replies and tool calls).
        capacity: tokens the kept units may use.
        step: tokens each cut frees at least; e.g. 30 % of ``capacity`` keeps
            the prefix stable for about that many tokens of growth.

    Returns ``k`` such that ``sizes[k:]`` fits ``capacity`` and ``k`` is a
    candidate position: the first unit boundary at or past ``m * step`` dropped
    tokens for some ``m >= 0``.  When the conversation has no such boundary yet
    (everything after the plain cut is shorter than a step, i.e. ``step`` is
    not well below ``capacity``) the plain cut is used.

    >>> plan_block_cut([10] * 10, 50, step=30)   # plain cut is 5; candidates 0, 3, 6, 9
    6
    >>> plan_block_cut([10] * 11, 50, step=30)   # one more unit: the cut stays
    6
    >>> plan_block_cut([10] * 12, 50, step=30)   # ...until the rest no longer fits
    9
    """
    if isinstance(step, bool) or not isinstance(step, int) or step <= 0:
        raise ConfigError(f"step must be a positive integer number of tokens, got {step!r}")
    units = _check(sizes, capacity)
    starts = [0, *accumulate(units)]
    excess = starts[-1] - capacity
    if excess <= 0:
        return 0
    first_fit = bisect_left(starts, excess)  # the plain cut
    # candidate m is the first boundary with starts[i] >= m*step; it is >= first_fit
    # exactly when starts[first_fit - 1] < m*step, so the least such m is:
    m = starts[first_fit - 1] // step + 1
    cut = bisect_left(starts, m * step)
    # no such boundary yet (the kept part is shorter than a step): cut as little as the plain window does
    return cut if cut < len(starts) else first_fit
