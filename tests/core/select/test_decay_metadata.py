"""DecayScorer with an injected clock, its curves, and the metadata scorers."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from tokenbox_core import Item
from tokenbox_core.errors import SelectionError
from tokenbox_core.select import (
    DecayScorer,
    ExponentialDecay,
    MetadataKeyScorer,
    MetadataTrustScorer,
    StepDecay,
    WindowDecay,
)

NOW = datetime(2025, 1, 1, 12, tzinfo=timezone.utc)


def aged(hours: float) -> Item:
    return Item(f"age-{hours}", timestamp=NOW - timedelta(hours=hours))


def test_exponential_halves_every_half_life_and_clamps_future_items() -> None:
    """2^(-age/half_life); a future-dated item has age zero and scores 1.0."""
    scorer = DecayScorer(NOW, ExponentialDecay(timedelta(hours=24)))
    assert scorer.scores([aged(0), aged(24), aged(48), aged(-5)]) == [1.0, 0.5, 0.25, 1.0]


def test_step_uses_strict_greater_than_and_falls_through_to_the_last_window() -> None:
    """The first window with max_age > age wins; an age on a boundary moves to the next; past all, the last."""
    curve = StepDecay([(timedelta(hours=1), 0.9), (timedelta(hours=24), 0.5), (259200.0, 0.1)])
    scorer = DecayScorer(NOW, curve)
    assert scorer.scores([aged(0), aged(1), aged(6), aged(24), aged(72), aged(500)]) == [0.9, 0.5, 0.5, 0.1, 0.1, 0.1]


def test_window_is_half_open() -> None:
    """1.0 while age < max_age, 0.0 at exactly max_age."""
    scorer = DecayScorer(NOW, WindowDecay(timedelta(hours=6)))
    assert scorer.scores([aged(5.99), aged(6)]) == [1.0, 0.0]


def test_clock_is_injected_and_called_once_per_run() -> None:
    """A callable clock is called once per scoring run; nothing reads the system clock."""
    calls: list[int] = []

    def clock() -> datetime:
        calls.append(1)
        return NOW

    scorer = DecayScorer(clock, ExponentialDecay(3600.0), null_timestamp_score=0.25)
    assert scorer.scores([aged(1), Item("none")]) == [0.5, 0.25]
    assert len(calls) == 1
    assert scorer.now() == NOW


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: ExponentialDecay(timedelta(0)), "half_life must be a positive duration"),
        (lambda: ExponentialDecay("1h"), "half_life must be a timedelta or a number of seconds"),  # type: ignore[arg-type]
        (lambda: WindowDecay(-1.0), "max_age must be a positive duration"),
        (lambda: StepDecay([]), "at least one"),
        (lambda: StepDecay([(0.0, 0.5)]), "max_age of window 0 must be a positive duration"),
        (lambda: StepDecay([(10.0, 0.5), (5.0, 0.1)]), "ordered youngest to oldest"),
        (lambda: StepDecay([(10.0, float("nan"))]), "score of window 0 must be a finite number"),
        (lambda: StepDecay([10.0]), "window 0 must be a \\(max_age, score\\) pair"),  # type: ignore[list-item]
        (lambda: DecayScorer("now", WindowDecay(1.0)), "clock must be a datetime or a callable"),  # type: ignore[arg-type]
        (lambda: DecayScorer(NOW, 3), "curve must be callable"),  # type: ignore[arg-type]
        (lambda: DecayScorer(NOW, WindowDecay(1.0), 1.5), "null_timestamp_score must be in \\[0, 1\\]"),
    ],
)
def test_decay_construction_errors(build: object, message: str) -> None:
    """Invalid curves and decay settings are rejected at construction, naming the parameter."""
    with pytest.raises(SelectionError, match=message):
        build()  # type: ignore[operator]


def test_a_clock_returning_something_else_is_an_error() -> None:
    """A clock callable that returns a non-datetime is reported when scoring."""
    scorer = DecayScorer(lambda: "noon", WindowDecay(1.0))  # type: ignore[arg-type,return-value]
    with pytest.raises(SelectionError, match="the clock returned 'noon', not a datetime"):
        scorer.scores([aged(1)])


def test_metadata_trust_parses_clamps_and_defaults() -> None:
    """Decimal strings and numbers pass (clamped); absent, unparseable, non-finite, bool → default."""
    values: list[object] = ["0.85", 0.3, "1.5", "-0.1", "high", "NaN", "inf", " 0.5", "1_0", True]
    items = [Item(f"i{n}", metadata={"cupel:trust": v}) for n, v in enumerate(values)] + [Item("none")]
    assert MetadataTrustScorer(0.5).scores(items) == [0.85, 0.3, 1.0, 0.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]


def test_metadata_key_boosts_matches_only() -> None:
    """A match returns the boost (unclamped); absent or different values return 1.0; non-strings compare as str."""
    scorer = MetadataKeyScorer("cupel:priority", "high", 1.5)
    items = [
        Item("a", metadata={"cupel:priority": "high"}),
        Item("b", metadata={"cupel:priority": "normal"}),
        Item("c"),
    ]
    assert scorer.scores(items) == [1.5, 1.0, 1.0]
    assert MetadataKeyScorer("n", "3", 2.0).scores([Item("d", metadata={"n": 3})]) == [2.0]


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: MetadataTrustScorer(1.5), "default_score must be in \\[0, 1\\]"),
        (lambda: MetadataKeyScorer("k", "v", 0.0), "boost must be a finite number > 0"),
        (lambda: MetadataKeyScorer("k", "v", -1.0), "boost must be a finite number > 0"),
        (lambda: MetadataKeyScorer("k", "v", float("inf")), "boost must be a finite number > 0"),
        (lambda: MetadataKeyScorer("k", 1, 1.0), "key and value must be strings"),  # type: ignore[arg-type]
    ],
)
def test_metadata_construction_errors(build: object, message: str) -> None:
    """Invalid metadata scorer settings are rejected at construction."""
    with pytest.raises(SelectionError, match=message):
        build()  # type: ignore[operator]
