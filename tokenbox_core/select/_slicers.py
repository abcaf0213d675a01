"""Slicers: which scored candidates fit the budget.

A slicer has one method, ``slice(scored, budget) -> list[ScoredItem]``: it
receives the candidates sorted by score (descending, ties by input order) and
the effective budget (``EffectiveBudget``: pins and reserves already taken
off), and returns the chosen candidates.  The pipeline re-associates them by
identity, so the order a slicer returns does not matter.

:class:`GreedySlicer` fills by value density; :class:`KnapsackSlicer` solves
the 0/1 knapsack on bucketed sizes.  Per-kind quotas are in
:mod:`tokenbox_core.select._quota`.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from tokenbox_core._budget import EffectiveBudget
from tokenbox_core.errors import SelectionError
from tokenbox_core.select._model import ScoredItem

__all__ = ["DEFAULT_MAX_TABLE_CELLS", "GreedySlicer", "KnapsackSlicer", "Slicer"]

DEFAULT_MAX_TABLE_CELLS = 50_000_000
"""KnapsackSlicer refuses DP tables larger than this many cells (one byte each)."""

_MAX_DENSITY = sys.float_info.max


@runtime_checkable
class Slicer(Protocol):
    """Chooses the candidates that fit ``budget.target_tokens``."""

    def slice(self, scored: Sequence[ScoredItem], budget: EffectiveBudget) -> list[ScoredItem]: ...


@dataclass(frozen=True)
class GreedySlicer:
    """Highest score per token first; a candidate that does not fit is skipped, never deferred.

    Zero-token candidates have the largest density and are always taken.  Equal
    densities keep input order, so the result is deterministic (the budget
    analysis helpers rely on it).
    """

    def slice(self, scored: Sequence[ScoredItem], budget: EffectiveBudget) -> list[ScoredItem]:
        if not scored or budget.target_tokens <= 0:
            return []
        order = sorted(
            range(len(scored)),
            key=lambda i: (-(_MAX_DENSITY if scored[i].tokens == 0 else scored[i].score / scored[i].tokens), i),
        )
        remaining = budget.target_tokens
        selected = []
        for i in order:
            candidate = scored[i]
            if candidate.tokens == 0:
                selected.append(candidate)
            elif 0 < candidate.tokens <= remaining:
                selected.append(candidate)
                remaining -= candidate.tokens
        return selected


def _value(score: float) -> int:
    """The DP value of a score: ``max(0, floor(score * 10000))``."""
    if math.isinf(score):
        return 0 if score < 0 else sys.maxsize
    return max(0, math.floor(score * 10000))


@dataclass(frozen=True)
class KnapsackSlicer:
    """Optimal 0/1 selection on sizes bucketed by ``bucket_size`` (default 100 tokens).

    Sizes round up to buckets and the budget rounds down, so every solution
    fits the real budget; values are ``floor(score * 10000)``.  Zero-token
    candidates are always taken.  The DP table has one cell per candidate and
    bucket of budget; past ``max_table_cells`` the slicer raises instead of
    exhausting memory.
    """

    bucket_size: int = 100
    max_table_cells: int = DEFAULT_MAX_TABLE_CELLS

    def __post_init__(self) -> None:
        for name in ("bucket_size", "max_table_cells"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise SelectionError(f"KnapsackSlicer: {name} must be a positive integer, got {value!r}")

    def slice(self, scored: Sequence[ScoredItem], budget: EffectiveBudget) -> list[ScoredItem]:
        if not scored or budget.target_tokens <= 0:
            return []
        zero = [s for s in scored if s.tokens == 0]
        candidates = [s for s in scored if s.tokens > 0]
        capacity = budget.target_tokens // self.bucket_size
        if not candidates or capacity == 0:
            return zero
        cells = len(candidates) * (capacity + 1)
        if cells > self.max_table_cells:
            most_buckets = max(0, self.max_table_cells // len(candidates) - 1)
            needed = budget.target_tokens // (most_buckets + 1) + 1
            raise SelectionError(
                f"KnapsackSlicer: the DP table would need {cells:,} cells ({len(candidates):,} candidates x "
                f"{capacity + 1:,} buckets), over the limit of {self.max_table_cells:,}; raise bucket_size "
                f"to at least {needed:,}, use GreedySlicer, or raise max_table_cells"
            )
        weights = [-(-c.tokens // self.bucket_size) for c in candidates]
        dp = [0] * (capacity + 1)
        keep: list[bytearray | None] = []
        for weight, candidate in zip(weights, candidates, strict=True):
            if weight > capacity:
                keep.append(None)
                continue
            value = _value(candidate.score)
            # dp[w] for w >= weight, from the previous row: take the item when strictly better.
            with_item = [v + value for v in dp[: capacity + 1 - weight]]
            without = dp[weight:]
            keep.append(bytearray(map(int.__gt__, with_item, without)))
            dp[weight:] = list(map(max, with_item, without))
        selected = []
        remaining = capacity
        for i in range(len(candidates) - 1, -1, -1):
            row = keep[i]
            weight = weights[i]
            if row is not None and remaining >= weight and row[remaining - weight]:
                selected.append(candidates[i])
                remaining -= weight
        return zero + selected
