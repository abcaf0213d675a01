"""Stage 3, Rank: composite scores within each section, stable order (chapter §6.4.1, §6.4.2).

``composite = Σ w_f · factor_f / Σ w_f`` over the factors of
:class:`~tokenbox_core.compiler.config.RankingWeights` — relevance,
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

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from tokenbox_core.compiler.collect import Candidates
from tokenbox_core.compiler.config import CompilerConfig, RankingWeights
from tokenbox_core.compiler.filter import tool_relevance
from tokenbox_core.compiler.inputs import keep, kept
from tokenbox_core.compiler.render import evidence_content, memory_content
from tokenbox_core.sections import Item
from tokenbox_core.select import (
    CompositeScorer,
    DecayScorer,
    ExponentialDecay,
    MetadataTrustScorer,
    ReflexiveScorer,
)
from tokenbox_core.select.scorers import Scorer, score_items
from tokenbox_core.tokens import TokenCounter

__all__ = ["Ranked", "composite_scores", "rank_candidates"]

T = TypeVar("T")
_AUTHORITY = "tokenbox:authority"
_UTILITY = "tokenbox:utility"
_TOKENS = "tokenbox:tokens"
_RANK = "_tokenbox_rank"  # (counter, (weights, now, half-life), extra, row, partial sum) on an input


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


def _scored(
    values: Sequence[Any],
    make_row: Callable[[Any, Any], Item],
    extra_of: Callable[[Any], Any],
    counter: TokenCounter,
    weights: RankingWeights,
    now: datetime | None,
    half_life: float,
) -> tuple[list[Item], list[float]]:
    """Each input's row and composite score: :func:`composite_scores`, bit for bit, with what does not depend
    on the other inputs kept on each (frozen) input.

    Every factor but the token-cost inverse (``min / tokens`` over the section) reads its own item only,
    and the composite sums its terms left to right with the cost inverse last: so each input keeps its row
    (its counted passage) and the partial sum of its other terms, keyed by everything they depend on (the
    counter object, the weights, the reference time, the half-life and ``extra_of(input)`` — a tool's
    relevance to the step); only the cost inverse and one addition are computed per compile.
    """
    if not values:
        return [], []
    entries = _entries(weights, now, half_life)
    if not entries:
        return [make_row(v, extra_of(v)) for v in values], [0.0] * len(values)
    composite = CompositeScorer(entries)
    local = len(entries) - 1 if isinstance(entries[-1][0], _CostInverse) else len(entries)
    context = (weights, now, half_life)
    rows: list[Item] = []
    partial: list[float] = []
    missing: list[int] = []
    for n, value in enumerate(values):
        extra = extra_of(value)
        found = kept(value, _RANK)
        if type(found) is tuple and found[0] is counter and found[1] == context and found[2] == extra:
            rows.append(found[3])
            partial.append(found[4])
        else:
            rows.append(make_row(value, extra))
            partial.append(0.0)
            missing.append(n)
    if missing:
        batch = [rows[n] for n in missing]
        columns = [score_items(scorer, batch) for scorer, _ in composite.entries[:local]]
        for j, n in enumerate(missing):
            result = 0.0
            for column, weight in zip(columns, composite.weights, strict=False):
                result = result + column[j] * weight
            partial[n] = result
            keep(values[n], _RANK, (counter, context, extra, rows[n], result))
    if local == len(entries):
        return rows, partial
    cost = score_items(composite.entries[-1][0], rows)
    weight = composite.weights[-1]
    return rows, [p + c * weight for p, c in zip(partial, cost, strict=True)]


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


def _none(_: Any) -> None:
    return None


def _sorted(values: Sequence[T], scores: Sequence[float]) -> tuple[T, ...]:
    order = sorted(range(len(values)), key=lambda i: -scores[i])  # sorted() is stable: ties keep input order
    return tuple(values[i] for i in order)


def rank_candidates(
    candidates: Candidates, config: CompilerConfig, counter: TokenCounter, now: datetime | None
) -> Ranked:
    """Score evidence, memory and tools with their section's weights and sort each by score (stable)."""
    half_life = config.freshness_half_life.total_seconds()
    weights = config.ranking_weights

    ev_rows, ev_scores = _scored(
        candidates.evidence,
        lambda e, _: _row(
            e.id, evidence_content(e), counter, relevance=e.relevance, authority=e.authority, timestamp=e.retrieved_at
        ),
        _none,
        counter,
        weights["evidence"],
        now,
        half_life,
    )
    mem_rows, mem_scores = _scored(
        candidates.memory,
        lambda m, _: _row(
            m.id, memory_content(m), counter, relevance=m.relevance, authority=m.authority, timestamp=m.created_at
        ),
        _none,
        counter,
        weights["memory"],
        now,
        half_life,
    )
    step = candidates.task.current_step if candidates.task is not None else None
    tool_rows, tool_scores = _scored(
        candidates.tools,
        lambda t, relevance: _row(
            t.id, t.text, counter, relevance=relevance, authority=None, timestamp=None, utility=t.relevance
        ),
        lambda t: tool_relevance(t, step),
        counter,
        weights["tools"],
        now,
        half_life,
    )
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
