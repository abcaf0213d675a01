"""The six-stage pipeline, its report, overflow strategies and placers."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core import ContextBudget, Item
from tokenbox_core.errors import SelectionError
from tokenbox_core.select import (
    ChronologicalPlacer,
    CompositeScorer,
    CountQuotaEntry,
    CountQuotaSlicer,
    GreedySlicer,
    KnapsackSlicer,
    PriorityScorer,
    RecencyScorer,
    ReflexiveScorer,
    SelectionPolicy,
    UShapedPlacer,
)
from tokenbox_core.select._model import ScoredItem
from tokenbox_core.select._report import OverflowEvent

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def msg(name: str, tokens: int, day: int | None = None, **kw: object) -> Item:
    stamp = None if day is None else T0 + timedelta(days=day)
    return Item(name, name, tokens=tokens, timestamp=stamp, **kw)  # type: ignore[arg-type]


def by_score(*pairs: tuple[str, float]) -> list[ScoredItem]:
    return [ScoredItem(Item(i, i), s, 10, n) for n, (i, s) in enumerate(pairs)]


def test_u_shaped_puts_the_best_at_both_edges() -> None:
    """Even ranks from the start, odd ranks from the end; ties keep input order."""
    placed = UShapedPlacer().place(by_score(("A", 0.9), ("B", 0.7), ("C", 0.5), ("D", 0.3), ("E", 0.1)))
    assert [s.item.id for s in placed] == ["A", "C", "E", "D", "B"]
    tied = UShapedPlacer().place(by_score(("X", 0.5), ("Y", 0.5), ("Z", 0.5), ("W", 0.5)))
    assert [s.item.id for s in tied] == ["X", "Z", "W", "Y"]
    assert UShapedPlacer().place([]) == []


def test_chronological_orders_by_time_with_untimed_last() -> None:
    """Oldest first; untimed items after, in their given order."""
    items = [
        ScoredItem(msg(n, 1, d), 0.5, 1, i) for i, (n, d) in enumerate([("a", None), ("b", 5), ("c", None), ("d", 1)])
    ]
    assert [s.item.id for s in ChronologicalPlacer().place(items)] == ["d", "b", "a", "c"]


def test_pipeline_report_reasons_and_numbers() -> None:
    """Each exclusion carries its reason and numbers; included are in placed order with reasons."""
    items = [
        msg("neg", -5, 0),
        msg("pin", 30, pinned=True),
        msg("old", 40, 1),
        Item("dup", "new", tokens=40, timestamp=T0),
        msg("new", 40, 3),
        msg("zero", 0, 2),
        msg("huge", 500, 4),
    ]
    selection = SelectionPolicy(RecencyScorer()).select(items, ContextBudget(max_tokens=200, target_tokens=120))
    report = selection.report
    assert selection.ids == ["old", "zero", "new", "pin"]
    assert [(i.item.id, i.reason) for i in report.included] == [
        ("old", "Scored"), ("zero", "ZeroToken"), ("new", "Scored"), ("pin", "Pinned"),
    ]  # fmt: skip
    excluded = {e.item.id: (e.reason, dict(e.details)) for e in report.excluded}
    assert excluded == {
        "neg": ("NegativeTokens", {"tokens": -5}),
        "dup": ("Deduplicated", {"deduplicated_against": "new"}),
        "huge": ("BudgetExceeded", {"item_tokens": 500, "available_tokens": 10}),
    }
    assert [e.score for e in report.excluded] == sorted((e.score for e in report.excluded), reverse=True)
    assert report.total_candidates == 7
    assert report.total_tokens_considered == sum(it.tokens or 0 for it in items)
    assert [s for s, _ in report.stages] == ["Classify", "Score", "Deduplicate", "Slice", "Place"]


def test_budget_exceeded_reports_item_and_available_tokens() -> None:
    """BudgetExceeded carries the item's size and the tokens left after slicing."""
    items = [msg("fits", 150, 5), msg("too-big", 400, 0)]
    report = SelectionPolicy(RecencyScorer()).select(items, ContextBudget(1000, target_tokens=200)).report
    (excluded,) = report.excluded
    assert (excluded.reason, dict(excluded.details)) == ("BudgetExceeded", {"item_tokens": 400, "available_tokens": 50})
    assert "needs 400 tokens, 50 available" in report.to_text()


def test_pinned_override_names_the_pinned_item() -> None:
    """An item that fit without the pins is excluded as PinnedOverride, naming the largest pinned item."""
    items = [msg("small-pin", 10, pinned=True), msg("big-pin", 110, pinned=True), msg("regular", 80, 1)]
    report = SelectionPolicy(RecencyScorer(), overflow="truncate").select(items, ContextBudget(1000, 150)).report
    (excluded,) = report.excluded
    assert excluded.reason == "PinnedOverride"
    assert excluded.details["displaced_by"] == "big-pin"
    assert excluded.related is not None and excluded.related.id == "big-pin"


def test_report_dict_is_json_and_text_is_readable() -> None:
    """to_dict() round-trips through JSON; to_text() lists included and excluded items."""
    items = [msg("a", 50, 1), msg("b", 50, 2), msg("c", 500, 3)]
    report = SelectionPolicy(RecencyScorer()).select(items, 200).report
    data = json.loads(json.dumps(report.to_dict()))
    assert data["total_candidates"] == 3
    assert [e["id"] for e in data["excluded"]] == ["c"]
    assert data["excluded"][0]["reason"] == "BudgetExceeded"
    text = str(report)
    assert text.startswith("selection: 2 of 3 items, 100 of 600 tokens")
    assert "included, in placed order:" in text and "excluded, best score first:" in text


def test_pinned_items_over_max_minus_reserve_is_an_error() -> None:
    """Pinned tokens are checked against max_tokens - output_reserve (not the target)."""
    items = [msg("pin", 90, pinned=True)]
    SelectionPolicy(RecencyScorer(), overflow="proceed").select(items, ContextBudget(100, 50))
    with pytest.raises(SelectionError, match="pinned items need 90 tokens but only 80 are available"):
        SelectionPolicy(RecencyScorer()).select(items, ContextBudget(100, 50, output_reserve=20))


def test_negative_tokens_are_excluded_before_the_pinned_check() -> None:
    """A pinned item with a negative size is excluded, not pinned."""
    selection = SelectionPolicy(RecencyScorer()).select([msg("p", -3, pinned=True)], 10)
    assert selection.items == ()
    assert selection.report.excluded[0].reason == "NegativeTokens"


def test_overflow_strategies() -> None:
    """Over the target: throw raises, truncate drops low scores keeping pins, proceed reports an event."""
    items = [msg("pin", 80, pinned=True), msg("t1", 50, 1, kind="tool")]
    slicer = CountQuotaSlicer([CountQuotaEntry("tool", 1, 1)])  # commits t1 whatever the budget
    budget = ContextBudget(1000, target_tokens=100)
    with pytest.raises(SelectionError, match="the selected items need 130 tokens, over the target of 100"):
        SelectionPolicy(RecencyScorer(), slicer).select(items, budget)
    truncated = SelectionPolicy(RecencyScorer(), slicer, overflow="truncate").select(items, budget)
    assert truncated.ids == ["pin"]
    assert truncated.report.excluded[0].reason == "PinnedOverride"
    events: list[OverflowEvent] = []
    proceeded = SelectionPolicy(RecencyScorer(), slicer, overflow="proceed", on_overflow=events.append)
    result = proceeded.select(items, budget)
    assert result.ids == ["t1", "pin"]
    assert result.overflow is not None and result.overflow.tokens_over_budget == 30
    assert events == [result.overflow]
    assert result.report.to_dict()["overflow"]["tokens_over_budget"] == 30
    assert "overflow: 30 tokens over the target" in result.report.to_text()


def test_deduplication_keeps_the_best_copy_and_can_be_switched_off() -> None:
    """Byte-exact duplicates: the higher score survives (earlier on ties); off keeps all."""
    items = [Item("a", "same", tokens=1, timestamp=T0), Item("b", "same", tokens=1, timestamp=T0 + timedelta(1))]
    assert SelectionPolicy(RecencyScorer()).select(items, 10).ids == ["b"]
    assert SelectionPolicy(PriorityScorer()).select(items, 10).ids == ["a"]
    assert SelectionPolicy(RecencyScorer(), deduplication=False).select(items, 10).ids == ["a", "b"]
    assert SelectionPolicy(RecencyScorer()).select([Item("c", "Same", tokens=1), *items], 10).ids == ["b", "c"]


def test_sizes_come_from_sizes_tokens_or_a_counter() -> None:
    """Explicit sizes win; then Item.tokens; then the counter; none of them is an error."""
    items = [Item("a", "one two three"), Item("b", "four", tokens=9)]
    policy = SelectionPolicy(ReflexiveScorer())
    assert policy.select(items, 20, counter="whitespace").report.included_tokens == 12
    assert policy.select(items, 20, sizes=[1, 2]).report.included_tokens == 3
    with pytest.raises(SelectionError, match=r"item 'a' has no size: set Item\.tokens, pass sizes="):
        policy.select(items, 10)
    with pytest.raises(SelectionError, match="sizes has 1 entries for 2 items"):
        policy.select(items, 10, sizes=[1])
    with pytest.raises(SelectionError, match="size of item 'a' must be an integer"):
        policy.select(items, 10, sizes=[1.5, 2])  # type: ignore[list-item]
    with pytest.raises(SelectionError, match="select\\(\\) takes Item objects, got str"):
        policy.select(["a"], 10)  # type: ignore[list-item]


class _Rogue:
    def slice(self, scored: Sequence[ScoredItem], budget: object) -> list[ScoredItem]:
        return [ScoredItem(Item("x"), 1.0, 1, 99)]

    def place(self, merged: Sequence[ScoredItem]) -> list[ScoredItem]:
        return list(merged)[:-1]


def test_custom_slicers_and_placers_are_checked() -> None:
    """A slicer must return a subset of its input; a placer a permutation of its input."""
    items = [msg("a", 1, 1)]
    with pytest.raises(SelectionError, match=r"_Rogue\.slice\(\) returned an item it was not given"):
        SelectionPolicy(RecencyScorer(), _Rogue()).select(items, 10)
    with pytest.raises(SelectionError, match=r"_Rogue\.place\(\) must return exactly the items it was given"):
        SelectionPolicy(RecencyScorer(), placer=_Rogue()).select(items, 10)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"scorer": "recency"}, "scorer must have .scores\\(items\\)"),
        ({"slicer": "greedy"}, "slicer must have .slice\\(scored, budget\\)"),
        ({"placer": "u"}, "placer must have .place\\(merged\\)"),
        ({"overflow": "explode"}, "overflow must be one of"),
        ({"deduplication": "yes"}, "deduplication must be True or False"),
        ({"on_overflow": 3}, "on_overflow must be callable"),
    ],
)
def test_policy_construction_errors(kwargs: dict[str, object], message: str) -> None:
    """An invalid policy is rejected at construction."""
    settings: dict[str, object] = {"scorer": RecencyScorer(), **kwargs}
    with pytest.raises(SelectionError, match=message):
        SelectionPolicy(**settings)  # type: ignore[arg-type]


rows = st.lists(
    st.tuples(st.integers(-2, 60), st.integers(0, 5), st.booleans(), st.floats(0, 1), st.sampled_from("abcd")),
    max_size=20,
)


@given(rows, st.integers(0, 300), st.sampled_from(["greedy", "knapsack"]))
def test_selection_never_exceeds_the_budget_and_is_deterministic(
    data: list[tuple[int, int, bool, float, str]], target: int, slicer_name: str
) -> None:
    """Whatever the items: included tokens fit the target (when the pins do), and a rerun is identical."""
    items = [
        Item(f"i{n}", content, tokens=t, priority=p, pinned=pin and t < 20, score=s)
        for n, (t, p, pin, s, content) in enumerate(data)
    ]
    slicer = GreedySlicer() if slicer_name == "greedy" else KnapsackSlicer(bucket_size=7)
    policy = SelectionPolicy(CompositeScorer([(PriorityScorer(), 1.0), (ReflexiveScorer(), 2.0)]), slicer,
                             UShapedPlacer(), overflow="truncate")  # fmt: skip
    budget = ContextBudget(max_tokens=target + 40, target_tokens=target)
    pinned = sum(it.tokens or 0 for it in items if it.pinned and (it.tokens or 0) >= 0)
    if pinned > budget.max_tokens:
        with pytest.raises(SelectionError):
            policy.select(items, budget)
        return
    first = policy.select(items, budget)
    second = policy.select(list(items), budget)
    assert first.ids == second.ids
    assert first.report.to_dict() == second.report.to_dict()
    if pinned <= target:
        assert first.report.included_tokens <= target
    assert first.report.total_candidates == len(items)
