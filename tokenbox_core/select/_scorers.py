"""Scorers: how relevant each candidate is, as a float (conventionally 0..1).

A scorer is anything with ``scores(items) -> list[float]``: it scores the
whole candidate list at once, because half of the spec's scorers are
*relative* (an item's score depends on its peers).  Scoring the list in one
call is what makes them fast: the spec writes Recency, Priority and Frequency
as O(N²) loops; here they are O(N log N) (sort + binary search) and O(N·2^T)
for T tags per item, with bit-identical results (the same integer ranks and
counts, divided the same way).

Use :class:`FunctionScorer` to turn a per-item function ``f(item, items)`` into
a scorer.

>>> from tokenbox_core import Item
>>> items = [Item("a", priority=1), Item("b", priority=5), Item("c")]
>>> PriorityScorer().scores(items)
[0.0, 1.0, 0.0]
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from tokenbox_core._sections import Item
from tokenbox_core.errors import SelectionError
from tokenbox_core.select._model import check_score, fold, kind_key, time_key

__all__ = [
    "DEFAULT_KIND_WEIGHTS",
    "CompositeScorer",
    "FrequencyScorer",
    "FunctionScorer",
    "KindScorer",
    "PriorityScorer",
    "RecencyScorer",
    "ReflexiveScorer",
    "ScaledScorer",
    "Scorer",
    "TagScorer",
    "score_items",
]

DEFAULT_KIND_WEIGHTS: Mapping[str, float] = {
    "SystemPrompt": 1.0,
    "Memory": 0.8,
    "ToolOutput": 0.6,
    "Document": 0.4,
    "Message": 0.2,
}
"""KindScorer's default weights (the spec's five well-known kinds)."""

# Frequency: inclusion-exclusion over tag subsets while items carry at most this many distinct tags.
_MAX_SUBSET_TAGS = 12


@runtime_checkable
class Scorer(Protocol):
    """Scores every candidate of a selection run; ``scores(items)[i]`` belongs to ``items[i]``."""

    def scores(self, items: Sequence[Item]) -> list[float]: ...


def score_items(scorer: Scorer, items: Sequence[Item]) -> list[float]:
    """Run a scorer and check what it returned (one float per item, no NaN)."""
    values = scorer.scores(items)
    if len(values) != len(items):
        raise SelectionError(
            f"{type(scorer).__name__} returned {len(values)} scores for {len(items)} items; "
            f"a scorer must return exactly one score per item"
        )
    if all(type(v) is float and v == v for v in values):  # the common case: floats, none NaN
        return list(values)
    who = type(scorer).__name__
    return [check_score(v, who, it) for v, it in zip(values, items, strict=True)]


def _check_weight(owner: str, name: str, value: object, *, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SelectionError(f"{owner}: {name} must be a number, got {value!r}")
    if not math.isfinite(value):
        raise SelectionError(f"{owner}: {name} must be finite, got {value!r}")
    if positive and value <= 0:
        raise SelectionError(f"{owner}: {name} must be > 0, got {value!r}")
    if value < 0:
        raise SelectionError(f"{owner}: {name} must be >= 0, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class FunctionScorer:
    """A scorer from a per-item function ``fn(item, items) -> float`` (the spec's interface)."""

    fn: Callable[[Item, Sequence[Item]], float]

    def scores(self, items: Sequence[Item]) -> list[float]:
        return [self.fn(item, items) for item in items]


def _rank_scores(keys: Sequence[int | None]) -> list[float]:
    """rank / (count - 1), rank = number of keyed peers with a strictly smaller key.

    Identical to the spec's per-item loop: ``bisect_left`` in the sorted keys
    *is* the count of strictly smaller keys.  Unkeyed items score 0.0; a lone
    keyed item scores 1.0.
    """
    present = sorted(k for k in keys if k is not None)
    count = len(present)
    out = []
    for key in keys:
        if key is None:
            out.append(0.0)
        elif count <= 1:
            out.append(1.0)
        else:
            out.append(bisect_left(present, key) / (count - 1))
    return out


@dataclass(frozen=True)
class RecencyScorer:
    """Rank by ``timestamp`` among timestamped peers: newest 1.0, oldest 0.0, none 0.0."""

    def scores(self, items: Sequence[Item]) -> list[float]:
        return _rank_scores([None if it.timestamp is None else time_key(it.timestamp) for it in items])


@dataclass(frozen=True)
class PriorityScorer:
    """Rank by ``priority`` among prioritised peers: highest 1.0, lowest 0.0, none 0.0."""

    def scores(self, items: Sequence[Item]) -> list[float]:
        return _rank_scores([it.priority for it in items])


@dataclass(frozen=True)
class KindScorer:
    """A weight per ``kind`` (case-insensitive); unknown kinds score 0.0.

    ``weights=None`` uses :data:`DEFAULT_KIND_WEIGHTS`.  Custom weights must be
    finite and >= 0; they may exceed 1.0 (not clamped).
    """

    weights: Mapping[str, float] | None = None
    _table: Mapping[str, float] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        source = DEFAULT_KIND_WEIGHTS if self.weights is None else self.weights
        if not isinstance(source, Mapping):
            raise SelectionError(f"KindScorer: weights must be a mapping of kind to weight, got {source!r}")
        table: dict[str, float] = {}
        for kind, weight in source.items():
            if not isinstance(kind, str):
                raise SelectionError(f"KindScorer: kinds must be strings, got {kind!r}")
            key = fold(kind)
            if key in table:
                raise SelectionError(f"KindScorer: kind {kind!r} is given twice (kinds compare case-insensitively)")
            table[key] = _check_weight("KindScorer", f"weight for kind {kind!r}", weight)
        object.__setattr__(self, "_table", table)

    def scores(self, items: Sequence[Item]) -> list[float]:
        table = self._table
        return [0.0 if it.kind is None else table.get(kind_key(it.kind), 0.0) for it in items]


@dataclass(frozen=True)
class TagScorer:
    """Sum of the weights of the item's matching tags over the total weight, capped at 1.0.

    Tag lookup is case-sensitive (ordinal) unless ``case_sensitive=False``.
    Every occurrence of a tag on the item counts.
    """

    weights: Mapping[str, float]
    case_sensitive: bool = True
    _table: Mapping[str, float] = field(init=False, repr=False, compare=False)
    _total: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.weights, Mapping):
            raise SelectionError(f"TagScorer: weights must be a mapping of tag to weight, got {self.weights!r}")
        table: dict[str, float] = {}
        total = 0.0
        for tag, weight in self.weights.items():
            if not isinstance(tag, str):
                raise SelectionError(f"TagScorer: tags must be strings, got {tag!r}")
            key = tag if self.case_sensitive else fold(tag)
            if key in table:
                raise SelectionError(f"TagScorer: tag {tag!r} is given twice")
            table[key] = _check_weight("TagScorer", f"weight for tag {tag!r}", weight)
            total += table[key]
        object.__setattr__(self, "_table", table)
        object.__setattr__(self, "_total", total)

    def scores(self, items: Sequence[Item]) -> list[float]:
        table, total = self._table, self._total
        out = []
        for item in items:
            if total == 0.0 or not item.tags:
                out.append(0.0)
                continue
            matched = 0.0
            for tag in item.tags:
                weight = table.get(tag if self.case_sensitive else fold(tag))
                if weight is not None:
                    matched += weight
            out.append(min(matched / total, 1.0))
        return out


@dataclass(frozen=True)
class FrequencyScorer:
    """Share of the other candidates that share at least one tag (case-insensitive).

    ``matching / (N - 1)``; an item without tags, or alone, scores 0.0.  The
    item itself is skipped by identity (the same ``Item`` object listed twice
    skips both places), exactly as the spec's loop does.
    """

    def scores(self, items: Sequence[Item]) -> list[float]:
        n = len(items)
        if n <= 1:
            return [0.0] * n
        tag_sets = [frozenset(fold(t) for t in it.tags) for it in items]
        union = _intersecting_counts(tag_sets)
        same_object = Counter(id(it) for it in items)
        out = []
        for item, tags in zip(items, tag_sets, strict=True):
            if not tags:
                out.append(0.0)
            else:
                out.append((union[tags] - same_object[id(item)]) / (n - 1))
        return out


def _intersecting_counts(tag_sets: Sequence[frozenset[str]]) -> dict[frozenset[str], int]:
    """For each distinct non-empty tag set S: how many of ``tag_sets`` intersect S.

    Exact integer counts.  With at most ``_MAX_SUBSET_TAGS`` tags per item this
    is inclusion-exclusion over tag subsets (``|∪ P_t| = Σ (-1)^{|V|+1} |∩_{t∈V} P_t|``),
    O(N·2^T) — linear in N.  Larger tag sets fall back to word-parallel bitsets
    (one OR of N-bit masks per tag).  Deciding set intersection for unbounded
    tag sets in truly sub-quadratic time is believed impossible (the
    orthogonal-vectors conjecture), so the bound on T is the honest one.
    """
    multiplicity = Counter(s for s in tag_sets if s)
    if not multiplicity:
        return {}
    if max(len(s) for s in multiplicity) <= _MAX_SUBSET_TAGS:
        subsets = {s: _signed_subsets(s) for s in multiplicity}
        containing: Counter[frozenset[str]] = Counter()
        for s, count in multiplicity.items():
            for subset, _ in subsets[s]:
                containing[subset] += count
        return {s: sum(sign * containing[subset] for subset, sign in subsets[s]) for s in multiplicity}
    masks: dict[str, int] = {}
    for position, tags in enumerate(tag_sets):
        bit = 1 << position
        for tag in tags:
            masks[tag] = masks.get(tag, 0) | bit
    out = {}
    for s in multiplicity:
        mask = 0
        for tag in s:
            mask |= masks[tag]
        out[s] = mask.bit_count()
    return out


def _signed_subsets(tags: frozenset[str]) -> list[tuple[frozenset[str], int]]:
    ordered = sorted(tags)
    out = []
    for mask in range(1, 1 << len(ordered)):
        subset = frozenset(t for i, t in enumerate(ordered) if mask >> i & 1)
        out.append((subset, 1 if len(subset) % 2 else -1))
    return out


@dataclass(frozen=True)
class ReflexiveScorer:
    """The item's own relevance hint (``Item.score``), clamped to 0..1; missing or non-finite → 0.0."""

    def scores(self, items: Sequence[Item]) -> list[float]:
        out = []
        for item in items:
            hint = item.score
            if hint is None or not math.isfinite(hint):
                out.append(0.0)
            else:
                out.append(min(max(float(hint), 0.0), 1.0))
        return out


@dataclass(frozen=True)
class ScaledScorer:
    """Min-max normalisation of an inner scorer over the candidates; all equal → 0.5."""

    inner: Scorer

    def __post_init__(self) -> None:
        if not isinstance(self.inner, Scorer):
            raise SelectionError(f"ScaledScorer: inner must be a scorer (with .scores(items)), got {self.inner!r}")
        _reject_cycles([self.inner], owner=self)

    @property
    def children(self) -> tuple[Scorer, ...]:
        return (self.inner,)

    def scores(self, items: Sequence[Item]) -> list[float]:
        raw = score_items(self.inner, items)
        if not raw:
            return []
        low, high = min(raw), max(raw)
        if high == low:
            return [0.5] * len(raw)
        return [(s - low) / (high - low) for s in raw]


@dataclass(frozen=True)
class CompositeScorer:
    """Weighted average of child scorers; weights are relative (normalised to sum 1).

    ``entries`` is a sequence of ``(scorer, weight)``; weights must be finite
    and > 0.  A scorer that appears in its own dependency graph is rejected
    (by identity; two equal but distinct scorers are not a cycle).

    >>> CompositeScorer([(RecencyScorer(), 3.0), (PriorityScorer(), 1.0)]).weights
    (0.75, 0.25)
    """

    entries: Sequence[tuple[Scorer, float]]
    weights: tuple[float, ...] = field(init=False)

    def __post_init__(self) -> None:
        if isinstance(self.entries, Mapping) or not isinstance(self.entries, Iterable):
            raise SelectionError("CompositeScorer: entries must be a sequence of (scorer, weight) pairs")
        entries = tuple(self.entries)
        if not entries:
            raise SelectionError("CompositeScorer: at least one (scorer, weight) entry is required")
        total = 0.0
        for i, entry in enumerate(entries):
            if not isinstance(entry, tuple) or len(entry) != 2:
                raise SelectionError(f"CompositeScorer: entry {i} must be a (scorer, weight) pair, got {entry!r}")
            scorer, weight = entry
            if scorer is None or not isinstance(scorer, Scorer):
                raise SelectionError(f"CompositeScorer: entry {i} is not a scorer (with .scores(items)): {scorer!r}")
            total += _check_weight("CompositeScorer", f"weight of entry {i}", weight, positive=True)
        object.__setattr__(self, "entries", entries)
        object.__setattr__(self, "weights", tuple(float(w) / total for _, w in entries))
        _reject_cycles([s for s, _ in entries], owner=self)

    @property
    def children(self) -> tuple[Scorer, ...]:
        return tuple(s for s, _ in self.entries)

    def scores(self, items: Sequence[Item]) -> list[float]:
        columns = [score_items(scorer, items) for scorer, _ in self.entries]
        out = []
        for i in range(len(items)):
            result = 0.0
            for column, weight in zip(columns, self.weights, strict=True):
                result = result + column[i] * weight
            out.append(result)
        return out


def _reject_cycles(roots: Sequence[object], *, owner: object) -> None:
    """Depth-first search by identity through ``.children``; a node on its own path is a cycle."""
    visited: set[int] = set()
    in_path: set[int] = {id(owner)}

    def visit(node: object) -> None:
        key = id(node)
        if key in in_path:
            raise SelectionError(
                f"scorer cycle: {type(node).__name__} appears in its own dependency graph; "
                f"a composite or scaled scorer must not contain itself"
            )
        if key in visited:
            return
        visited.add(key)
        in_path.add(key)
        for child in getattr(node, "children", ()) or ():
            visit(child)
        in_path.discard(key)

    for root in roots:
        visit(root)
