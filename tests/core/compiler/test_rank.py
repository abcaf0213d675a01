"""Rank: composite scores from the select scorers; stable order on ties."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core.compiler import CompilerConfig, RankingWeights, Tool
from tokenbox_core.compiler.collect import Candidates
from tokenbox_core.compiler.rank import _none, _row, _scored, composite_scores, rank_candidates
from tokenbox_core.tokens import get_counter

from .conftest import NOW, evidence

COUNTER = get_counter("whitespace")


def test_relevance_and_authority_order_evidence() -> None:
    """Higher relevance and authority rank first; the composite is in [0, 1]."""
    c = Candidates(
        evidence=(
            evidence("low", "x", relevance=0.1, authority=0.1),
            evidence("high", "x", relevance=0.9, authority=0.9),
            evidence("mid", "x", relevance=0.5, authority=0.5),
        )
    )
    ranked = rank_candidates(c, CompilerConfig(), COUNTER, NOW)
    assert [e.id for e in ranked.candidates.evidence] == ["high", "mid", "low"]
    assert all(0.0 <= v <= 1.0 for v in ranked.scores["evidence"].values())


def test_ties_keep_collection_order() -> None:
    """Equal scores keep the order the sources returned them in (stable sort)."""
    c = Candidates(evidence=tuple(evidence(f"e{i}", "same text") for i in range(5)))
    ranked = rank_candidates(c, CompilerConfig(), COUNTER, NOW)
    assert [e.id for e in ranked.candidates.evidence] == ["e0", "e1", "e2", "e3", "e4"]


def test_freshness_and_cost_factors() -> None:
    """Weighted only on freshness, the newer passage wins; only on cost, the shorter one."""
    old_short, new_long = evidence("old", "short", age_days=90), evidence("new", "much longer text " * 20, age_days=0)
    c = Candidates(evidence=(old_short, new_long))
    fresh = CompilerConfig(ranking_weights={"evidence": RankingWeights(relevance=0, authority=0, freshness=1, cost=0)})
    cheap = CompilerConfig(ranking_weights={"evidence": RankingWeights(relevance=0, authority=0, freshness=0, cost=1)})
    assert rank_candidates(c, fresh, COUNTER, NOW).candidates.evidence[0].id == "new"
    assert rank_candidates(c, cheap, COUNTER, NOW).candidates.evidence[0].id == "old"


def test_tools_rank_by_relevance_to_the_step() -> None:
    """Tools sort by their relevance (given, or word overlap with the step)."""
    c = Candidates(tools=(Tool("weather", "forecast"), Tool("refund", "refund an order", relevance=0.95)))
    ranked = rank_candidates(c, CompilerConfig(), COUNTER, NOW)
    assert [t.name for t in ranked.candidates.tools] == ["refund", "weather"]


@given(
    st.lists(
        st.tuples(st.floats(0, 1), st.floats(0, 1), st.integers(0, 400), st.integers(1, 60)), min_size=1, max_size=12
    ),
    st.sampled_from(["evidence", "memory", "tools"]),
)
def test_kept_partial_scores_are_the_composite_scores_bit_for_bit(
    rows: list[tuple[float, float, int, int]], section: str
) -> None:
    """Rank keeps each input's row and the partial sum of its item-local factors; with the cost inverse added
    per compile, the scores equal ``composite_scores`` exactly, on the first call and from the kept values."""
    counter = get_counter("o200k_base")
    weights = CompilerConfig().ranking_weights[section]
    inputs = [
        evidence(f"e{i}", "word " * n, authority=a, relevance=r, age_days=age / 10)
        for i, (a, r, age, n) in enumerate(rows)
    ]

    def make(e: Any, _: Any) -> Any:
        return _row(e.id, e.text, counter, relevance=e.relevance, authority=e.authority, timestamp=e.retrieved_at)

    expected = composite_scores([make(e, None) for e in inputs], weights, NOW, 86_400.0)
    first = _scored(inputs, make, _none, counter, weights, NOW, 86_400.0)[1]
    again = _scored(inputs, make, _none, counter, weights, NOW, 86_400.0)[1]
    assert first == again == expected
    assert all("_tokenbox_rank" in vars(e) for e in inputs)
    later = _scored(inputs, make, _none, counter, weights, NOW + timedelta(days=1), 86_400.0)[1]
    assert later == composite_scores([make(e, None) for e in inputs], weights, NOW + timedelta(days=1), 86_400.0)
