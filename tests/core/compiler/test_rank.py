"""Rank: composite scores from the select scorers; stable order on ties."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core.compiler import CompilerConfig, RankingWeights, Tool
from tokenbox_core.compiler._collect import Candidates
from tokenbox_core.compiler._rank import rank_candidates
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
def test_evidence_is_sorted_by_score_stably_and_scores_are_in_the_unit_interval(
    rows: list[tuple[float, float, int, int]], section: str
) -> None:
    """Each input gets a composite score in [0, 1]; the ranked order is descending score, ties in input order."""
    weights = CompilerConfig().ranking_weights[section]
    inputs = tuple(
        evidence(f"e{i}", "word " * n, authority=a, relevance=r, age_days=age / 10)
        for i, (a, r, age, n) in enumerate(rows)
    )
    config = CompilerConfig(ranking_weights={"evidence": weights})
    ranked = rank_candidates(Candidates(evidence=inputs), config, get_counter("o200k_base"), NOW)
    scores = ranked.scores["evidence"]
    assert set(scores) == {e.id for e in inputs} and all(0.0 <= v <= 1.0 + 1e-12 for v in scores.values())
    order = [e.id for e in ranked.candidates.evidence]
    position = {e.id: n for n, e in enumerate(inputs)}
    assert order == sorted(order, key=lambda i: (-scores[i], position[i]))
