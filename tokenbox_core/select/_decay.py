"""DecayScorer: score by the age of an item against an injected clock.

The clock is a parameter, never read: pass a fixed ``datetime`` (tests,
replays, reproducible layouts) or a zero-argument callable returning one
(``lambda: datetime.now(timezone.utc)`` in a live service).  Future-dated
items have age zero.  Curves are validated at construction.

>>> from datetime import datetime, timedelta, timezone
>>> from tokenbox_core import Item
>>> now = datetime(2025, 1, 1, 12, tzinfo=timezone.utc)
>>> scorer = DecayScorer(now, ExponentialDecay(timedelta(hours=24)))
>>> scorer.scores([Item("a", timestamp=now - timedelta(hours=24)), Item("b")])
[0.5, 0.5]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol, runtime_checkable

from tokenbox_core._sections import Item
from tokenbox_core.errors import SelectionError
from tokenbox_core.select._model import time_key

__all__ = ["DecayCurve", "DecayScorer", "ExponentialDecay", "StepDecay", "WindowDecay"]

Clock = datetime | Callable[[], datetime]


@runtime_checkable
class DecayCurve(Protocol):
    """Maps a non-negative age in seconds to a score."""

    def __call__(self, age_seconds: float) -> float: ...


def _seconds(owner: str, name: str, value: object) -> float:
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    else:
        raise SelectionError(f"{owner}: {name} must be a timedelta or a number of seconds, got {value!r}")
    if not math.isfinite(seconds) or seconds <= 0:
        raise SelectionError(f"{owner}: {name} must be a positive duration, got {value!r}")
    return seconds


@dataclass(frozen=True)
class ExponentialDecay:
    """``2 ** (-age / half_life)``: 1.0 at age zero, 0.5 at one half-life."""

    half_life: timedelta | float

    def __post_init__(self) -> None:
        _seconds("ExponentialDecay", "half_life", self.half_life)

    def __call__(self, age_seconds: float) -> float:
        return float(2.0 ** (-age_seconds / _seconds("ExponentialDecay", "half_life", self.half_life)))


@dataclass(frozen=True)
class StepDecay:
    """Score of the first window whose ``max_age`` is strictly greater than the age; past all, the last.

    ``windows`` is a sequence of ``(max_age, score)`` from youngest to oldest
    (strictly increasing ``max_age``, none zero).
    """

    windows: Sequence[tuple[timedelta | float, float]]
    _steps: tuple[tuple[float, float], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        windows = tuple(self.windows)
        if not windows:
            raise SelectionError("StepDecay: windows must contain at least one (max_age, score) entry")
        previous = 0.0
        checked = []
        for i, window in enumerate(windows):
            if not isinstance(window, tuple) or len(window) != 2:
                raise SelectionError(f"StepDecay: window {i} must be a (max_age, score) pair, got {window!r}")
            max_age, score = window
            seconds = _seconds("StepDecay", f"max_age of window {i}", max_age)
            if seconds <= previous:
                raise SelectionError(
                    f"StepDecay: windows must be ordered youngest to oldest; window {i} ({max_age!r}) "
                    f"is not older than the one before it"
                )
            if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
                raise SelectionError(f"StepDecay: score of window {i} must be a finite number, got {score!r}")
            previous = seconds
            checked.append((seconds, float(score)))
        object.__setattr__(self, "windows", windows)
        object.__setattr__(self, "_steps", tuple(checked))

    def __call__(self, age_seconds: float) -> float:
        for max_age, score in self._steps:
            if max_age > age_seconds:
                return score
        return self._steps[-1][1]


@dataclass(frozen=True)
class WindowDecay:
    """1.0 while ``age < max_age`` (half-open), else 0.0."""

    max_age: timedelta | float

    def __post_init__(self) -> None:
        _seconds("WindowDecay", "max_age", self.max_age)

    def __call__(self, age_seconds: float) -> float:
        return 1.0 if age_seconds < _seconds("WindowDecay", "max_age", self.max_age) else 0.0


@dataclass(frozen=True)
class DecayScorer:
    """Absolute freshness: ``curve(max(0, now - timestamp))``; no timestamp → ``null_timestamp_score``.

    Args:
        clock: the reference time, or a callable returning it (called once per scoring run).
        curve: :class:`ExponentialDecay`, :class:`StepDecay`, :class:`WindowDecay` or any
            callable of the age in seconds.
        null_timestamp_score: in 0..1 (default 0.5, neutral).
    """

    clock: Clock
    curve: DecayCurve
    null_timestamp_score: float = 0.5

    def __post_init__(self) -> None:
        if not (isinstance(self.clock, datetime) or callable(self.clock)):
            raise SelectionError(
                f"DecayScorer: clock must be a datetime or a callable returning one, got {self.clock!r}; "
                f"the scorer never reads the system clock itself"
            )
        if not callable(self.curve):
            raise SelectionError(f"DecayScorer: curve must be callable with the age in seconds, got {self.curve!r}")
        value = self.null_timestamp_score
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
            raise SelectionError(f"DecayScorer: null_timestamp_score must be in [0, 1], got {value!r}")

    def now(self) -> datetime:
        """The reference time of this scoring run."""
        moment = self.clock() if callable(self.clock) else self.clock
        if not isinstance(moment, datetime):
            raise SelectionError(f"DecayScorer: the clock returned {moment!r}, not a datetime")
        return moment

    def scores(self, items: Sequence[Item]) -> list[float]:
        now = time_key(self.now())
        out = []
        for item in items:
            if item.timestamp is None:
                out.append(float(self.null_timestamp_score))
            else:
                age_us = max(0, now - time_key(item.timestamp))
                out.append(float(self.curve(age_us / 1_000_000)))
        return out
