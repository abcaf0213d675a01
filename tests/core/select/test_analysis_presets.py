"""Budget analysis helpers and the policy presets."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from tokenbox_core import ContextBudget, Item
from tokenbox_core.errors import SelectionError
from tokenbox_core.select import (
    CountQuotaEntry,
    CountQuotaSlicer,
    KnapsackSlicer,
    QuotaEntry,
    QuotaSlicer,
    RecencyScorer,
    SelectionPolicy,
    agent_policy,
    chat_policy,
    code_review_policy,
    marginal_items,
    min_budget_for,
    rag_policy,
    tool_use_policy,
)

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
ITEMS = [Item(f"t{i}", f"turn {i}", tokens=10 * (i + 1), timestamp=T0 + timedelta(hours=i)) for i in range(5)]


def test_marginal_items_are_those_the_slack_would_cost() -> None:
    """Items in the full-budget result and not in the reduced one, in placed order."""
    policy = SelectionPolicy(RecencyScorer())
    full = policy.select(ITEMS, 100).ids
    reduced = policy.select(ITEMS, 80).ids
    marginal = [it.id for it in marginal_items(policy, ITEMS, 100, 20)]
    assert marginal == [i for i in full if i not in reduced]
    assert marginal
    assert marginal_items(policy, ITEMS, 100, 0) == []


def test_min_budget_for_finds_the_smallest_budget_by_binary_search() -> None:
    """The returned budget includes the item and one token less does not; the item's own size is tested."""
    policy = SelectionPolicy(RecencyScorer())
    target = ITEMS[1]
    found = min_budget_for(policy, ITEMS, target, 1000)
    assert found is not None
    assert "t1" in policy.select(ITEMS, found).ids
    assert "t1" not in policy.select(ITEMS, found - 1).ids
    newest = ITEMS[4]
    assert min_budget_for(policy, ITEMS, newest, 1000) == 50  # fits at exactly its own size
    assert min_budget_for(policy, ITEMS, target, 1000) == 20  # greedy takes it as soon as it fits alone
    duplicate = Item("dup", "turn 4", tokens=5, timestamp=T0)  # always loses deduplication to t4
    assert min_budget_for(policy, [*ITEMS, duplicate], duplicate, 1000) is None


def test_min_budget_for_treats_budgets_that_raise_as_too_small() -> None:
    """A budget at which the policy raises (pins that do not fit) does not include the item."""
    items = [Item("pin", "pin", tokens=60, pinned=True), *ITEMS[:2]]
    found = min_budget_for(SelectionPolicy(RecencyScorer()), items, items[1], 500)
    assert found == 70


def test_analysis_input_errors() -> None:
    """Non-monotonic slicers are refused; bad targets, ceilings and slack are rejected with the numbers."""
    quota = SelectionPolicy(RecencyScorer(), QuotaSlicer([QuotaEntry("x", 10)]))
    counts = SelectionPolicy(RecencyScorer(), CountQuotaSlicer([CountQuotaEntry("x", 1)]))
    policy = SelectionPolicy(RecencyScorer())
    with pytest.raises(SelectionError, match="marginal_items requires monotonic item inclusion; QuotaSlicer"):
        marginal_items(quota, ITEMS, 100, 10)
    with pytest.raises(SelectionError, match="min_budget_for requires monotonic item inclusion"):
        min_budget_for(counts, ITEMS, ITEMS[0], 100)
    with pytest.raises(SelectionError, match="slack_tokens must be an integer >= 0"):
        marginal_items(policy, ITEMS, 100, -1)
    with pytest.raises(SelectionError, match=r"slack_tokens \(95\) exceeds the room of the budget \(90"):
        marginal_items(policy, ITEMS, ContextBudget(100, output_reserve=10), 95)
    with pytest.raises(SelectionError, match="target item 'x' must be one of items"):
        min_budget_for(policy, ITEMS, Item("x", tokens=1), 100)
    with pytest.raises(SelectionError, match=r"search_ceiling \(5\) must be an integer >= the target's size \(10\)"):
        min_budget_for(policy, ITEMS, ITEMS[0], 5)


NOW = datetime(2025, 1, 1, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("factory", "name"),
    [
        (chat_policy, "chat"),
        (rag_policy, "rag"),
        (tool_use_policy, "tool_use"),
        (lambda: agent_policy(NOW), "long_running_agent"),
        (code_review_policy, "code_review"),
    ],
)
def test_presets_are_plain_policies_that_fit_the_budget(factory: object, name: str) -> None:
    """Each preset is a named SelectionPolicy that selects within budget, deterministically."""
    policy = factory()  # type: ignore[operator]
    assert isinstance(policy, SelectionPolicy)
    assert policy.name == name
    items = [
        Item(f"i{n}", f"content {n}", tokens=30 + n, score=(n % 4) / 4, priority=n % 3, kind="Document",
             tags=("a" if n % 2 else "b",), timestamp=NOW - timedelta(hours=n))
        for n in range(12)
    ]  # fmt: skip
    first = policy.select(items, 200)
    assert first.report.included_tokens <= 200
    assert first.ids == policy.select(items, 200).ids


def test_agent_preset_uses_the_injected_clock() -> None:
    """The long-running agent preset scores freshness against the clock it is given."""
    old = Item("old", "old", tokens=50, timestamp=NOW - timedelta(days=3))
    fresh = Item("fresh", "fresh", tokens=50, timestamp=NOW)
    assert agent_policy(NOW).select([old, fresh], 50).ids == ["fresh"]
    assert agent_policy(NOW - timedelta(days=3)).select([old, fresh], 50).ids == ["old"]


def test_rag_preset_places_best_documents_at_both_edges() -> None:
    """RAG: highest retrieval scores first and last (U-shaped), duplicates removed."""
    docs = [Item(f"d{n}", f"doc {n}", tokens=10, score=s) for n, s in enumerate([0.9, 0.1, 0.8, 0.5])]
    docs.append(Item("copy", "doc 0", tokens=10, score=0.2))
    selection = rag_policy().select(docs, 100)
    assert selection.ids == ["d0", "d3", "d1", "d2"]
    assert selection.report.excluded[0].reason == "Deduplicated"


def test_code_review_preset_keeps_input_order_and_packs_with_a_knapsack() -> None:
    """Code review: a knapsack slicer, and untimed hunks stay in score-then-input order."""
    policy = code_review_policy(bucket_size=10)
    assert isinstance(policy.slicer, KnapsackSlicer) and policy.slicer.bucket_size == 10
