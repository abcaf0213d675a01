"""Placers: the order in which the chosen items reach the prompt.

A placer has one method, ``place(merged) -> list[ScoredItem]``, receiving the
pinned items (score 1.0) followed by the sliced items in score order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from tokenbox_core.select._model import ScoredItem, time_key

__all__ = ["ChronologicalPlacer", "Placer", "UShapedPlacer"]


@runtime_checkable
class Placer(Protocol):
    """Orders the selected items."""

    def place(self, merged: Sequence[ScoredItem]) -> list[ScoredItem]: ...


@dataclass(frozen=True)
class ChronologicalPlacer:
    """Oldest first; items without a timestamp last; ties (and no timestamps at all) keep their order."""

    def place(self, merged: Sequence[ScoredItem]) -> list[ScoredItem]:
        def key(i: int) -> tuple[int, int, int]:
            stamp = merged[i].item.timestamp
            return (0, time_key(stamp), i) if stamp is not None else (1, 0, i)

        return [merged[i] for i in sorted(range(len(merged)), key=key)]


@dataclass(frozen=True)
class UShapedPlacer:
    """Best items at both edges, weakest in the middle (for lost-in-the-middle models).

    Rank by score (ties by position); even ranks fill from the start, odd
    ranks from the end: ``[1st, 3rd, 5th, ..., 6th, 4th, 2nd]``.
    """

    def place(self, merged: Sequence[ScoredItem]) -> list[ScoredItem]:
        n = len(merged)
        ranked = sorted(range(n), key=lambda i: (-merged[i].score, i))
        result: list[ScoredItem | None] = [None] * n
        left, right = 0, n - 1
        for rank, i in enumerate(ranked):
            if rank % 2 == 0:
                result[left] = merged[i]
                left += 1
            else:
                result[right] = merged[i]
                right -= 1
        return [s for s in result if s is not None]
