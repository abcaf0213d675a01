"""Scorers: spec semantics, fast relative scorers identical to the spec's loops, construction errors."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core import Item
from tokenbox_core.errors import SelectionError
from tokenbox_core.select import (
    CompositeScorer,
    FrequencyScorer,
    KindScorer,
    PriorityScorer,
    RecencyScorer,
    ReflexiveScorer,
    ScaledScorer,
    TagScorer,
)
from tokenbox_core.select._scorers import DEFAULT_KIND_WEIGHTS, FunctionScorer, score_items

from .scorer_reference import reference_frequency, reference_priority, reference_recency

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


stamps = st.one_of(st.none(), st.integers(0, 6).map(lambda d: T0 + timedelta(days=d)))
item_lists = st.lists(
    st.tuples(stamps, st.one_of(st.none(), st.integers(-3, 3)), st.lists(st.sampled_from("aAbBcdE"), max_size=4)),
    max_size=25,
).map(lambda rows: [Item(f"i{n}", timestamp=t, priority=p, tags=tuple(g)) for n, (t, p, g) in enumerate(rows)])


@given(item_lists)
def test_recency_equals_the_spec_loop(items: list[Item]) -> None:
    """RecencyScorer (sort + binary search) returns exactly the spec's O(N²) scores."""
    assert RecencyScorer().scores(items) == reference_recency(items)


@given(item_lists)
def test_priority_equals_the_spec_loop(items: list[Item]) -> None:
    """PriorityScorer returns exactly the spec's O(N²) scores."""
    assert PriorityScorer().scores(items) == reference_priority(items)


@given(item_lists)
def test_frequency_equals_the_spec_loop(items: list[Item]) -> None:
    """FrequencyScorer (inclusion-exclusion over tag subsets) returns exactly the spec's O(N²) scores."""
    assert FrequencyScorer().scores(items) == reference_frequency(items)


def test_frequency_with_many_tags_uses_bitsets_and_stays_exact() -> None:
    """Items with more than 12 tags take the bitset path, still equal to the spec loop."""
    many = tuple(f"t{i}" for i in range(14))
    items = [Item("a", tags=many), Item("b", tags=("t3",)), Item("c", tags=("x",)), Item("d", tags=("T13", "x"))]
    assert FrequencyScorer().scores(items) == reference_frequency(items)


def test_frequency_skips_the_same_object_by_identity() -> None:
    """The same Item object listed twice skips both places, as the spec's identity check does."""
    shared = Item("s", tags=("a",))
    items = [shared, shared, Item("o", tags=("A",))]
    assert FrequencyScorer().scores(items) == reference_frequency(items) == [0.5, 0.5, 1.0]


def test_recency_single_tied_and_naive_timestamps() -> None:
    """A lone timestamp scores 1.0; equal timestamps score 0.0; naive datetimes read as UTC."""
    assert RecencyScorer().scores([Item("a", timestamp=T0), Item("b")]) == [1.0, 0.0]
    assert RecencyScorer().scores([Item("a", timestamp=T0), Item("b", timestamp=T0)]) == [0.0, 0.0]
    naive = datetime(2024, 1, 2)
    assert RecencyScorer().scores([Item("a", timestamp=T0), Item("b", timestamp=naive)]) == [0.0, 1.0]


def test_kind_scorer_defaults_are_case_insensitive_and_custom_weights_unclamped() -> None:
    """Default weights match any case; unknown or missing kinds score 0; custom weights may exceed 1."""
    items = [Item("a", kind="systemprompt"), Item("b", kind="MEMORY"), Item("c", kind="Other"), Item("d")]
    assert KindScorer().scores(items) == [1.0, 0.8, 0.0, 0.0]
    assert dict(DEFAULT_KIND_WEIGHTS)["Message"] == 0.2
    assert KindScorer({"Other": 2.5}).scores(items) == [0.0, 0.0, 2.5, 0.0]


def test_tag_scorer_sums_matches_per_occurrence_and_caps() -> None:
    """Matched weight over total, each occurrence counts, capped at 1.0; case-sensitive by default."""
    scorer = TagScorer({"a": 1.0, "b": 3.0})
    items = [Item("x", tags=("a",)), Item("y", tags=("b", "b")), Item("z", tags=("A",)), Item("w")]
    assert scorer.scores(items) == [0.25, 1.0, 0.0, 0.0]
    assert TagScorer({"a": 1.0, "b": 3.0}, case_sensitive=False).scores(items)[2] == 0.25
    assert TagScorer({"a": 0.0}).scores(items) == [0.0, 0.0, 0.0, 0.0]


def test_reflexive_clamps_and_zeroes_non_finite_hints() -> None:
    """The hint passes through clamped to 0..1; missing and infinite hints score 0."""
    hints = [0.4, 7.0, -1.0, float("inf"), None]
    items = [Item(f"i{n}", score=h) for n, h in enumerate(hints)]
    assert ReflexiveScorer().scores(items) == [0.4, 1.0, 0.0, 0.0, 0.0]


def test_scaled_scorer_min_max_and_degenerate() -> None:
    """Min-max scaling of the inner scores; all-equal or single → 0.5; empty → []."""
    items = [Item("a", score=0.2), Item("b", score=0.5), Item("c", score=0.8)]
    assert ScaledScorer(ReflexiveScorer()).scores(items) == pytest.approx([0.0, 0.5, 1.0])
    assert ScaledScorer(ReflexiveScorer()).scores(items[:1]) == [0.5]
    assert ScaledScorer(ReflexiveScorer()).scores([]) == []


def test_composite_normalises_weights_and_nests() -> None:
    """Weights are relative; a composite may contain a composite and a scaled scorer."""
    items = [Item("a", priority=1, score=0.8), Item("b", priority=5, score=0.2)]
    inner = CompositeScorer([(PriorityScorer(), 1.0), (ScaledScorer(ReflexiveScorer()), 1.0)])
    outer = CompositeScorer([(inner, 2.0), (ReflexiveScorer(), 2.0)])
    assert outer.weights == (0.5, 0.5)
    assert outer.scores(items) == pytest.approx([0.5 * 0.5 + 0.5 * 0.8, 0.5 * 0.5 + 0.5 * 0.2])


def test_function_scorer_wraps_the_spec_interface() -> None:
    """FunctionScorer calls fn(item, all_items) once per item."""
    scorer = FunctionScorer(lambda item, peers: len(item.content) / max(len(p.content) for p in peers))
    assert scorer.scores([Item("a", "xx"), Item("b", "xxxx")]) == [0.5, 1.0]


class _Node:
    """A custom scorer exposing children, so a cycle can exist before a composite is built."""

    def __init__(self) -> None:
        self.children: list[object] = []

    def scores(self, items: Sequence[Item]) -> list[float]:
        return [0.0] * len(items)


def test_composite_rejects_a_cycle_but_not_shared_children() -> None:
    """A scorer on its own dependency path is a cycle; the same scorer used twice is not."""
    node = _Node()
    node.children.append(node)
    with pytest.raises(SelectionError, match="scorer cycle: _Node appears in its own dependency graph"):
        CompositeScorer([(node, 1.0)])
    shared = RecencyScorer()
    CompositeScorer([(shared, 1.0), (CompositeScorer([(shared, 1.0)]), 1.0)])


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: CompositeScorer([]), "at least one"),
        (lambda: CompositeScorer({"a": 1}), "must be a sequence"),  # type: ignore[arg-type]
        (lambda: CompositeScorer([RecencyScorer()]), "must be a \\(scorer, weight\\) pair"),  # type: ignore[list-item]
        (lambda: CompositeScorer([(None, 1.0)]), "is not a scorer"),  # type: ignore[list-item]
        (lambda: CompositeScorer([(RecencyScorer(), 0.0)]), "must be > 0"),
        (lambda: CompositeScorer([(RecencyScorer(), -1.0)]), "must be > 0"),
        (lambda: CompositeScorer([(RecencyScorer(), float("inf"))]), "must be finite"),
        (lambda: CompositeScorer([(RecencyScorer(), "1")]), "must be a number"),  # type: ignore[list-item]
        (lambda: KindScorer({"Message": -0.1}), "must be >= 0"),
        (lambda: KindScorer({"Message": float("nan")}), "must be finite"),
        (lambda: KindScorer({"Message": 1.0, "message": 2.0}), "given twice"),
        (lambda: KindScorer({1: 1.0}), "kinds must be strings"),  # type: ignore[dict-item]
        (lambda: KindScorer([("Message", 1.0)]), "must be a mapping"),  # type: ignore[arg-type]
        (lambda: TagScorer({"a": -1.0}), "must be >= 0"),
        (lambda: TagScorer({"a": 1.0, "A": 1.0}, case_sensitive=False), "given twice"),
        (lambda: TagScorer({2: 1.0}), "tags must be strings"),  # type: ignore[dict-item]
        (lambda: TagScorer(["a"]), "must be a mapping"),  # type: ignore[arg-type]
        (lambda: ScaledScorer("recency"), "inner must be a scorer"),  # type: ignore[arg-type]
    ],
)
def test_scorer_construction_errors(build: object, message: str) -> None:
    """Invalid scorer configurations are rejected at construction with a message naming the problem."""
    with pytest.raises(SelectionError, match=message):
        build()  # type: ignore[operator]


def test_scores_are_checked() -> None:
    """A scorer returning the wrong count, a non-number or NaN is reported with the item id."""
    items = [Item("a"), Item("b")]
    with pytest.raises(SelectionError, match="returned 1 scores for 2 items"):
        score_items(_Fixed([0.0]), items)
    with pytest.raises(SelectionError, match="returned NaN for item 'b'"):
        score_items(_Fixed([0.0, float("nan")]), items)
    with pytest.raises(SelectionError, match="returned 'x' for item 'a'; a scorer must return a float"):
        score_items(_Fixed(["x", 0.0]), items)
    assert score_items(_Fixed([1, 0.5]), items) == [1.0, 0.5]


class _Fixed:
    def __init__(self, values: list[object]) -> None:
        self.values = values

    def scores(self, items: Sequence[Item]) -> list[object]:
        return self.values


def test_timestamps_must_be_datetimes() -> None:
    """A timestamp that is not a datetime is an error naming its type."""
    with pytest.raises(SelectionError, match="timestamps must be datetime objects, got str"):
        RecencyScorer().scores([Item("a", timestamp="2024-01-01")])  # type: ignore[arg-type]
