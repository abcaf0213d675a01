"""Greedy, knapsack, percentage quotas and count quotas."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core import Item
from tokenbox_core._budget import EffectiveBudget
from tokenbox_core.errors import SelectionError
from tokenbox_core.select import (
    CountConstrainedKnapsackSlicer,
    CountQuotaEntry,
    CountQuotaSlicer,
    GreedySlicer,
    KnapsackSlicer,
    QuotaEntry,
    QuotaSlicer,
)
from tokenbox_core.select._model import ScoredItem


def cands(*specs: tuple[str, int, float, str | None]) -> list[ScoredItem]:
    """(id, tokens, score, kind) → ScoredItems, content = id."""
    return [ScoredItem(Item(i, i, kind=k, tokens=t), s, t, n) for n, (i, t, s, k) in enumerate(specs)]


def ids(chosen: list[ScoredItem]) -> list[str]:
    return sorted(s.item.id for s in chosen)


def budget(target: int) -> EffectiveBudget:
    return EffectiveBudget(max_tokens=target, target_tokens=target)


def test_greedy_fills_by_density_skipping_what_does_not_fit() -> None:
    """Density order; an item too big is skipped, a later smaller one still taken; zero-token always in."""
    chosen = GreedySlicer().slice(
        cands(("big", 400, 0.9, None), ("a", 100, 0.7, None), ("zero", 0, 0.0, None), ("b", 150, 0.3, None)),
        budget(260),
    )
    assert ids(chosen) == ["a", "b", "zero"]
    assert GreedySlicer().slice(cands(("a", 1, 1.0, None)), budget(0)) == []


def test_greedy_ties_keep_input_order() -> None:
    """Equal densities are taken in input order, so the result is deterministic."""
    chosen = GreedySlicer().slice(cands(("x", 100, 0.5, None), ("y", 100, 0.5, None)), budget(100))
    assert ids(chosen) == ["x"]


def test_knapsack_beats_greedy_and_keeps_zero_token_items() -> None:
    """The DP finds the better packing; zero-token items are always in; oversized items never."""
    items = cands(
        ("big", 250, 0.7, None), ("small-a", 150, 0.5, None), ("small-b", 150, 0.45, None), ("z", 0, 0.1, None)
    )
    assert ids(KnapsackSlicer(bucket_size=100).slice(items, budget(300))) == ["big", "z"]
    assert ids(GreedySlicer().slice(items, budget(260))) == ["small-a", "z"]
    assert ids(KnapsackSlicer(bucket_size=10).slice(items, budget(260))) == ["big", "z"]
    assert ids(KnapsackSlicer(bucket_size=100).slice(items, budget(99))) == ["z"]


@given(
    st.lists(st.tuples(st.integers(1, 60), st.floats(0, 1)), max_size=12),
    st.integers(0, 200),
    st.sampled_from([1, 7, 25]),
)
def test_knapsack_never_exceeds_the_budget_and_is_optimal_on_buckets(
    specs: list[tuple[int, float]], target: int, bucket: int
) -> None:
    """The selection fits the real budget, and no subset has a higher bucketed value (brute force)."""
    items = cands(*[(f"i{n}", t, s, None) for n, (t, s) in enumerate(specs)])
    chosen = KnapsackSlicer(bucket_size=bucket).slice(items, budget(target))
    assert sum(c.tokens for c in chosen) <= target
    if target <= 0:
        return
    capacity = target // bucket
    weights = [-(-c.tokens // bucket) for c in items]
    values = [int(c.score * 10000) for c in items]
    best = 0
    for mask in range(1 << len(items)):
        w = sum(weights[i] for i in range(len(items)) if mask >> i & 1)
        if w <= capacity:
            best = max(best, sum(values[i] for i in range(len(items)) if mask >> i & 1))
    got = sum(int(c.score * 10000) for c in chosen)
    assert got == best


def test_knapsack_memory_guard_names_the_fix() -> None:
    """A DP table past max_table_cells raises with the numbers and a bucket size that would fit."""
    items = cands(*[(f"i{n}", 10, 0.5, None) for n in range(10)])
    with pytest.raises(SelectionError, match=r"110 cells .* over the limit of 50; raise bucket_size to at least 21,"):
        KnapsackSlicer(bucket_size=10, max_table_cells=50).slice(items, budget(100))
    assert len(KnapsackSlicer(bucket_size=21, max_table_cells=50).slice(items, budget(100))) == 4


@pytest.mark.parametrize("value", [0, -5, 1.5, True])
def test_knapsack_rejects_bad_bucket_sizes(value: object) -> None:
    """bucket_size must be a positive integer."""
    with pytest.raises(SelectionError, match="bucket_size must be a positive integer"):
        KnapsackSlicer(bucket_size=value)  # type: ignore[arg-type]


def test_quota_distributes_by_percentage_and_mass() -> None:
    """The spec's worked example: require/cap percentages, spare shared by candidate token mass."""
    items = cands(
        ("sys-a", 200, 0.9, "SystemPrompt"),
        ("sys-b", 200, 0.5, "systemprompt"),
        ("msg-a", 300, 0.8, "Message"),
        ("msg-b", 300, 0.3, "Message"),
        ("doc-a", 200, 0.7, "Document"),
    )
    slicer = QuotaSlicer([QuotaEntry("SystemPrompt", 30, 50), QuotaEntry("Message", 0, 40)])
    assert ids(slicer.slice(items, budget(1000))) == ["msg-a", "sys-a", "sys-b"]
    assert slicer.slice([], budget(1000)) == []


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: QuotaEntry("x", 101, 101), "require must be a percentage in \\[0, 100\\]"),
        (lambda: QuotaEntry("x", 10, -1), "cap must be a percentage"),
        (lambda: QuotaEntry("x", 60, 50), "require \\(60\\) must be <= cap \\(50\\)"),
        (lambda: QuotaEntry(3), "kind must be a string"),  # type: ignore[arg-type]
        (lambda: QuotaSlicer([QuotaEntry("a", 60), QuotaEntry("b", 50)]), "add up to 110, over 100"),
        (lambda: QuotaSlicer([QuotaEntry("a"), QuotaEntry("A")]), "kind 'A' has more than one entry"),
        (lambda: QuotaSlicer(["a"]), "must be QuotaEntry objects"),  # type: ignore[list-item]
        (lambda: QuotaSlicer([], inner="greedy"), "inner must be a slicer"),  # type: ignore[arg-type]
    ],
)
def test_quota_construction_errors(build: object, message: str) -> None:
    """Invalid percentage quotas are rejected at construction."""
    with pytest.raises(SelectionError, match=message):
        build()  # type: ignore[operator]


def test_count_quota_commits_requirements_then_caps() -> None:
    """Required items are committed first, the inner slicer fills the rest, caps drop the surplus."""
    items = cands(("t1", 100, 0.9, "tool"), ("t2", 100, 0.7, "tool"), ("t3", 100, 0.6, "tool"), ("m1", 100, 0.5, "msg"))
    details = CountQuotaSlicer([CountQuotaEntry("tool", 2, 2)]).slice_with_details(items, budget(1000))
    assert ids(details.selected) == ["m1", "t1", "t2"]
    assert [c.candidate.item.id for c in details.cap_excluded] == ["t3"]
    assert details.cap_excluded[0].cap == 2
    assert details.shortfalls == ()


def test_count_quota_scarcity_degrade_records_and_throw_raises() -> None:
    """Too few candidates: degrade records a shortfall, throw raises naming the kind and counts."""
    items = cands(("t1", 100, 0.9, "Tool"))
    details = CountQuotaSlicer([CountQuotaEntry("tool", 3, 5)]).slice_with_details(items, budget(500))
    assert [s.to_dict() for s in details.shortfalls] == [{"kind": "tool", "required_count": 3, "satisfied_count": 1}]
    with pytest.raises(SelectionError, match="candidate pool for kind 'tool' has 1 items but require_count is 3"):
        CountQuotaSlicer([CountQuotaEntry("tool", 3, 5)], scarcity="throw").slice(items, budget(500))


def test_count_constrained_knapsack_resorts_before_capping() -> None:
    """The knapsack's picks are re-sorted by score, so the cap keeps the best of them."""
    items = cands(("t1", 100, 0.9, "tool"), ("t2", 100, 0.8, "tool"), ("t3", 100, 0.7, "tool"))
    slicer = CountConstrainedKnapsackSlicer([CountQuotaEntry("tool", 1, 2)], KnapsackSlicer(bucket_size=100))
    details = slicer.slice_with_details(items, budget(600))
    assert ids(details.selected) == ["t1", "t2"]
    assert [c.candidate.item.id for c in details.cap_excluded] == ["t3"]
    assert ids(slicer.slice(items, budget(600))) == ["t1", "t2"]
    assert slicer.slice(items, budget(0)) == []


def test_count_entry_cap_defaults_to_require() -> None:
    """Without cap_count the cap is require_count."""
    assert CountQuotaEntry("tool", 2).cap_count == 2


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: CountQuotaEntry("t", -1, 2), "require_count must be an integer >= 0"),
        (lambda: CountQuotaEntry("t", 1, 1.5), "cap_count must be an integer >= 0"),  # type: ignore[arg-type]
        (lambda: CountQuotaEntry("t", 2, 0), "cap_count 0 with require_count 2 can never be met"),
        (lambda: CountQuotaEntry("t", 3, 2), "require_count \\(3\\) must be <= cap_count \\(2\\)"),
        (lambda: CountQuotaEntry(None), "kind must be a string"),  # type: ignore[arg-type]
        (lambda: CountQuotaSlicer([], KnapsackSlicer()), "does not accept a KnapsackSlicer"),
        (lambda: CountQuotaSlicer([], "greedy"), "inner must be a slicer"),  # type: ignore[arg-type]
        (lambda: CountQuotaSlicer([], scarcity="panic"), "scarcity must be 'degrade' or 'throw'"),  # type: ignore[arg-type]
        (lambda: CountQuotaSlicer([("t", 1)]), "entries must be CountQuotaEntry objects"),  # type: ignore[list-item]
        (lambda: CountQuotaSlicer([CountQuotaEntry("t"), CountQuotaEntry("T")]), "more than one entry"),
        (lambda: CountConstrainedKnapsackSlicer([], GreedySlicer()), "knapsack must be a KnapsackSlicer"),  # type: ignore[arg-type]
    ],
)
def test_count_quota_construction_errors(build: object, message: str) -> None:
    """Invalid count quotas are rejected at construction."""
    with pytest.raises(SelectionError, match=message):
        build()  # type: ignore[operator]


def test_knapsack_rejects_a_bad_table_limit() -> None:
    """max_table_cells must be a positive integer too."""
    with pytest.raises(SelectionError, match="max_table_cells must be a positive integer"):
        KnapsackSlicer(max_table_cells=0)


def test_count_constrained_knapsack_scarcity_throw_names_the_slicer() -> None:
    """With scarcity='throw' the knapsack variant raises, naming itself, the kind and the counts."""
    slicer = CountConstrainedKnapsackSlicer([CountQuotaEntry("tool", 2, 2)], scarcity="THROW")  # type: ignore[arg-type]
    with pytest.raises(SelectionError, match="CountConstrainedKnapsackSlicer: candidate pool for kind 'tool' has 0"):
        slicer.slice(cands(("m", 10, 0.5, "msg")), budget(100))
