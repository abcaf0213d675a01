"""The data every selection stage passes along: a scored candidate, plus the
small conventions the Cupel spec fixes (ASCII case folding of kinds and tags,
timestamps compared as instants).

A candidate is an :class:`~tokenbox_core._sections.Item` with a size and a
score.  Sizes are whatever the caller counts (``Item.tokens``, a counter, or
the Token Box's own unit sizes), so the selection pipeline never re-counts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from tokenbox_core._sections import Item
from tokenbox_core.errors import SelectionError

__all__ = ["ScoredItem", "fold", "kind_key", "time_key"]

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICROSECOND = timedelta(microseconds=1)


@dataclass(frozen=True, eq=False)
class ScoredItem:
    """An item with its score and size, as it travels from Score to Place.

    ``index`` is the item's position in the input of the selection run; it is
    the stable tie-break of every sort and the item's identity within a run
    (two items may share content, even an id, and still be distinct).
    """

    item: Item
    score: float
    tokens: int
    index: int

    @property
    def kind(self) -> str:
        """The item's kind, ASCII case-folded (``""`` when it has none)."""
        return kind_key(self.item.kind)


def fold(text: str) -> str:
    """ASCII case folding, as the spec requires for kinds and tags (not Unicode ``lower()``)."""
    return text.translate(_ASCII_LOWER)


def kind_key(kind: str | None) -> str:
    """The comparison key of a kind: case-insensitive (ASCII); an item without a kind has ``""``."""
    return "" if kind is None else fold(kind)


def time_key(moment: datetime) -> int:
    """An exact, totally ordered key for a timestamp: microseconds since the epoch.

    Naive datetimes are read as UTC, so naive and aware timestamps compare
    (Python itself refuses to).  Integers keep full precision where a float
    ``timestamp()`` would merge instants a microsecond apart in year 9999.
    """
    if not isinstance(moment, datetime):
        raise SelectionError(f"timestamps must be datetime objects, got {type(moment).__name__}")
    if moment.tzinfo is None or moment.utcoffset() is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return (moment - _EPOCH) // _MICROSECOND


def check_score(value: float, who: str, item: Item) -> float:
    """A scorer's output must be a number and not NaN (NaN has no place in a sort)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SelectionError(f"{who} returned {value!r} for item {item.id!r}; a scorer must return a float")
    if math.isnan(value):
        raise SelectionError(
            f"{who} returned NaN for item {item.id!r}; NaN scores cannot be ordered: "
            f"fix the scorer or wrap it to map NaN to a number"
        )
    return float(value)
