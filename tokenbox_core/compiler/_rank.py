"""Stage 3, Rank: composite scores within each section, stable order (chapter §6.4.1, §6.4.2).

``composite = Σ w_f · factor_f / Σ w_f`` over the factors of
:class:`~tokenbox_core.compiler._config.RankingWeights` — relevance,
authority, freshness, execution utility and token-cost inverse — each in
[0, 1].  The factors are ``tokenbox_core.select`` scorers over core Items:
:class:`ReflexiveScorer` (relevance), :class:`MetadataTrustScorer`
(authority, execution utility), :class:`DecayScorer` with an
:class:`ExponentialDecay` of the config's half-life (freshness), and a
token-cost inverse ``min_tokens / tokens`` (1.0 for the shortest item).

Evidence, memory and tools are sorted by descending composite score with a
stable sort (ties keep collection order).  History is not reordered: a
conversation keeps its order and loses its oldest turns first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from tokenbox_core._sections import Item
from tokenbox_core.compiler._collect import Candidates
from tokenbox_core.compiler._config import CompilerConfig, RankingWeights
from tokenbox_core.compiler._filter import tool_relevance
from tokenbox_core.compiler._render import evidence_content, memory_content
from tokenbox_core.select import (
    CompositeScorer,
    DecayScorer,
    ExponentialDecay,
    MetadataTrustScorer,
    ReflexiveScorer,
)
from tokenbox_core.select._scorers import Scorer
from tokenbox_core.tokens import TokenCounter

__all__ = ["Ranked", "composite_scores", "rank_candidates"]

T = TypeVar("T")
_AUTHORITY = "tokenbox:authority"
_UTILITY = "tokenbox:utility"
_TOKENS = "tokenbox:tokens"


@dataclass(frozen=True)
class Ranked:
    """Candidates in ranked order; ``scores[section][item_id]`` is each item's composite score."""

    candidates: Candidates
    scores: dict[str, dict[str, float]]


class _CostInverse:
    """Token-cost inverse ``min_tokens / tokens`` over the candidates (1.0 for the shortest item)."""

    def scores(self, items: Sequence[Item]) -> list[float]:
        sizes = [max(1, int(i.metadata[_TOKENS])) for i in items]
        smallest = min(sizes, default=1)
        return [smallest / size for size in sizes]


def _entries(weights: RankingWeights, now: datetime | None, half_life: float) -> list[tuple[Scorer, float]]:
    entries: list[tuple[Scorer, float]] = []
    if weights.relevance > 0:
        entries.append((ReflexiveScorer(), weights.relevance))
    if weights.authority > 0:
        entries.append((MetadataTrustScorer(default_score=0.5, key=_AUTHORITY), weights.authority))
    if weights.freshness > 0 and now is not None:
        entries.append((DecayScorer(now, ExponentialDecay(half_life), null_timestamp_score=1.0), weights.freshness))
    if weights.utility > 0:
        entries.append((MetadataTrustScorer(default_score=0.5, key=_UTILITY), weights.utility))
    if weights.cost > 0:
        entries.append((_CostInverse(), weights.cost))
    return entries


def composite_scores(
    rows: Sequence[Item], weights: RankingWeights, now: datetime | None, half_life: float
) -> list[float]:
    """The composite score of each row (an Item with ``score`` = relevance and the metadata keys above)."""
    if not rows:
        return []
    entries = _entries(weights, now, half_life)
    if not entries:
        return [0.0] * len(rows)
    return CompositeScorer(entries).scores(list(rows))


def _row(
    id: str,
    text: str,
    counter: TokenCounter,
    *,
    relevance: float | None,
    authority: float | None,
    timestamp: datetime | None,
    utility: float | None = None,
) -> Item:
    metadata: dict[str, Any] = {_TOKENS: counter.count(text)}
    if authority is not None:
        metadata[_AUTHORITY] = authority
    if utility is not None:
        metadata[_UTILITY] = utility
    return Item(id, score=1.0 if relevance is None else relevance, metadata=metadata, timestamp=timestamp)


def _sorted(values: Sequence[T], scores: Sequence[float]) -> tuple[T, ...]:
    order = sorted(range(len(values)), key=lambda i: -scores[i])  # sorted() is stable: ties keep input order
    return tuple(values[i] for i in order)


def rank_candidates(
    candidates: Candidates, config: CompilerConfig, counter: TokenCounter, now: datetime | None
) -> Ranked:
    """Score evidence, memory and tools with their section's weights and sort each by score (stable)."""
    half_life = config.freshness_half_life.total_seconds()
    weights = config.ranking_weights

    ev_rows = [
        _row(e.id, evidence_content(e), counter, relevance=e.relevance, authority=e.authority, timestamp=e.retrieved_at)
        for e in candidates.evidence
    ]
    mem_rows = [
        _row(m.id, memory_content(m), counter, relevance=m.relevance, authority=m.authority, timestamp=m.created_at)
        for m in candidates.memory
    ]
    step = candidates.task.current_step if candidates.task is not None else None
    tool_rows = [
        _row(
            t.id,
            t.text,
            counter,
            relevance=tool_relevance(t, step),
            authority=None,
            timestamp=None,
            utility=t.relevance,
        )
        for t in candidates.tools
    ]
    ev_scores = composite_scores(ev_rows, weights["evidence"], now, half_life)
    mem_scores = composite_scores(mem_rows, weights["memory"], now, half_life)
    tool_scores = composite_scores(tool_rows, weights["tools"], now, half_life)
    scores = {
        name: {row.id: value for row, value in zip(rows, values, strict=True)}
        for name, rows, values in (
            ("evidence", ev_rows, ev_scores),
            ("memory", mem_rows, mem_scores),
            ("tools", tool_rows, tool_scores),
        )
    }
    ranked = Candidates(
        policy=candidates.policy,
        developer=candidates.developer,
        task=candidates.task,
        tools=_sorted(candidates.tools, tool_scores),
        evidence=_sorted(candidates.evidence, ev_scores),
        memory=_sorted(candidates.memory, mem_scores),
        history=candidates.history,
        user=candidates.user,
    )
    return Ranked(ranked, scores)
