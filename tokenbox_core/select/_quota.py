"""Per-kind quotas: shares of the budget (:class:`QuotaSlicer`) and item counts
(:class:`CountQuotaSlicer`, :class:`CountConstrainedKnapsackSlicer`).

Kinds compare case-insensitively (ASCII).  Count slicers report what they
could not satisfy (:class:`Shortfall`) and what their caps removed through
``slice_with_details``; with ``scarcity="throw"`` a shortfall is an error.
None of these slicers include items monotonically as the budget grows, so the
budget analysis helpers refuse them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from tokenbox_core._budget import EffectiveBudget
from tokenbox_core.errors import SelectionError
from tokenbox_core.select._model import ScoredItem, kind_key
from tokenbox_core.select._slicers import GreedySlicer, KnapsackSlicer, Slicer

__all__ = [
    "CapExclusion",
    "CountConstrainedKnapsackSlicer",
    "CountQuotaEntry",
    "CountQuotaSlicer",
    "QuotaEntry",
    "QuotaSlicer",
    "Scarcity",
    "Shortfall",
    "SliceDetails",
]

Scarcity = Literal["degrade", "throw"]


def _partition(scored: Sequence[ScoredItem]) -> dict[str, list[ScoredItem]]:
    """Candidates by kind, in first-appearance order, each partition stable-sorted by score descending."""
    parts: dict[str, list[ScoredItem]] = {}
    for candidate in scored:
        parts.setdefault(candidate.kind, []).append(candidate)
    for members in parts.values():
        members.sort(key=lambda s: -s.score)
    return parts


@dataclass(frozen=True)
class QuotaEntry:
    """``require`` and ``cap``: percentages (0..100) of the budget for one kind, ``require <= cap``."""

    kind: str
    require: float = 0.0
    cap: float = 100.0

    def __post_init__(self) -> None:
        if not isinstance(self.kind, str):
            raise SelectionError(f"QuotaEntry: kind must be a string, got {self.kind!r}")
        for name in ("require", "cap"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0.0 <= value <= 100.0:
                raise SelectionError(
                    f"QuotaEntry {self.kind!r}: {name} must be a percentage in [0, 100], got {value!r}"
                )
        if self.require > self.cap:
            raise SelectionError(f"QuotaEntry {self.kind!r}: require ({self.require}) must be <= cap ({self.cap})")


def _check_unique(owner: str, kinds: Sequence[str]) -> None:
    seen: set[str] = set()
    for kind in kinds:
        if kind_key(kind) in seen:
            raise SelectionError(f"{owner}: kind {kind!r} has more than one entry (kinds compare case-insensitively)")
        seen.add(kind_key(kind))


@dataclass(frozen=True)
class QuotaSlicer:
    """Shares the budget among kinds by percentage, then slices each kind with ``inner``.

    Each kind gets ``floor(require% x budget)`` plus a share of what no kind
    requires, in proportion to its candidates' total size, capped at
    ``floor(cap% x budget)``.  Kinds without an entry have require 0%, cap 100%.
    The sum of ``require`` must not exceed 100.
    """

    quotas: Sequence[QuotaEntry]
    inner: Slicer = field(default_factory=GreedySlicer)

    def __post_init__(self) -> None:
        quotas = tuple(self.quotas)
        for quota in quotas:
            if not isinstance(quota, QuotaEntry):
                raise SelectionError(f"QuotaSlicer: quotas must be QuotaEntry objects, got {quota!r}")
        _check_unique("QuotaSlicer", [q.kind for q in quotas])
        required = sum(q.require for q in quotas)
        if required > 100.0:
            raise SelectionError(f"QuotaSlicer: the require percentages add up to {required:g}, over 100")
        if not isinstance(self.inner, Slicer):
            raise SelectionError(f"QuotaSlicer: inner must be a slicer, got {self.inner!r}")
        object.__setattr__(self, "quotas", quotas)

    def slice(self, scored: Sequence[ScoredItem], budget: EffectiveBudget) -> list[ScoredItem]:
        target = budget.target_tokens
        if not scored or target <= 0:
            return []
        parts = _partition_in_order(scored)
        mass = {kind: sum(s.tokens for s in members) for kind, members in parts.items()}
        require = {kind_key(q.kind): math.floor(q.require / 100.0 * target) for q in self.quotas}
        cap = {kind_key(q.kind): math.floor(q.cap / 100.0 * target) for q in self.quotas}
        unassigned = max(0, target - sum(require.values()))
        kinds = sorted(parts)
        distributable = sum(mass[k] for k in kinds if cap.get(k, target) > require.get(k, 0))
        selected: list[ScoredItem] = []
        for kind, members in parts.items():
            kind_require = require.get(kind, 0)
            kind_cap = cap.get(kind, target)
            share = 0
            if distributable > 0 and kind_cap > kind_require:
                share = math.floor(unassigned * mass[kind] / distributable)
            kind_budget = min(kind_require + share, kind_cap)
            if kind_budget <= 0:
                continue
            selected.extend(self.inner.slice(members, EffectiveBudget(max_tokens=kind_cap, target_tokens=kind_budget)))
        return selected


def _partition_in_order(scored: Sequence[ScoredItem]) -> dict[str, list[ScoredItem]]:
    parts: dict[str, list[ScoredItem]] = {}
    for candidate in scored:
        parts.setdefault(candidate.kind, []).append(candidate)
    return parts


@dataclass(frozen=True)
class CountQuotaEntry:
    """At least ``require_count`` and at most ``cap_count`` items of one kind."""

    kind: str
    require_count: int = 0
    cap_count: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.kind, str):
            raise SelectionError(f"CountQuotaEntry: kind must be a string, got {self.kind!r}")
        cap = self.require_count if self.cap_count is None else self.cap_count
        for name, value in (("require_count", self.require_count), ("cap_count", cap)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise SelectionError(f"CountQuotaEntry {self.kind!r}: {name} must be an integer >= 0, got {value!r}")
        if cap == 0 and self.require_count > 0:
            raise SelectionError(
                f"CountQuotaEntry {self.kind!r}: cap_count 0 with require_count {self.require_count} can never be met"
            )
        if self.require_count > cap:
            raise SelectionError(
                f"CountQuotaEntry {self.kind!r}: require_count ({self.require_count}) must be <= cap_count ({cap})"
            )
        object.__setattr__(self, "cap_count", cap)


@dataclass(frozen=True)
class Shortfall:
    """A kind had fewer candidates than its ``require_count``."""

    kind: str
    required_count: int
    satisfied_count: int

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "required_count": self.required_count, "satisfied_count": self.satisfied_count}


@dataclass(frozen=True)
class CapExclusion:
    """A candidate the inner slicer chose but its kind's ``cap_count`` removed."""

    candidate: ScoredItem
    kind: str
    cap: int


@dataclass(frozen=True)
class SliceDetails:
    """What a count slicer chose, could not satisfy, and removed by cap."""

    selected: list[ScoredItem]
    shortfalls: tuple[Shortfall, ...] = ()
    cap_excluded: tuple[CapExclusion, ...] = ()


def _scarcity(owner: str, value: str) -> Scarcity:
    folded = value.lower() if isinstance(value, str) else value
    if folded not in ("degrade", "throw"):
        raise SelectionError(f"{owner}: scarcity must be 'degrade' or 'throw', got {value!r}")
    return "throw" if folded == "throw" else "degrade"


def _count_slice(
    owner: str,
    entries: Sequence[CountQuotaEntry],
    scarcity: Scarcity,
    scored: Sequence[ScoredItem],
    budget: EffectiveBudget,
    inner: Slicer,
    *,
    resort: bool,
) -> SliceDetails:
    """Commit each kind's required items, slice the rest with ``inner``, then enforce caps."""
    if not scored or budget.target_tokens <= 0:
        return SliceDetails(selected=[])
    parts = _partition(scored)
    committed: list[ScoredItem] = []
    committed_ids: set[int] = set()
    counts: dict[str, int] = {}
    shortfalls: list[Shortfall] = []
    pre_allocated = 0
    for entry in entries:
        if entry.require_count <= 0:
            continue
        key = kind_key(entry.kind)
        taken = parts.get(key, [])[: entry.require_count]
        for candidate in taken:
            committed.append(candidate)
            committed_ids.add(id(candidate))
            pre_allocated += candidate.tokens
        counts[key] = len(taken)
        if len(taken) < entry.require_count:
            if scarcity == "throw":
                raise SelectionError(
                    f"{owner}: candidate pool for kind {entry.kind!r} has {len(taken)} items but require_count is "
                    f"{entry.require_count}; supply more {entry.kind!r} items, lower require_count, or use "
                    f"scarcity='degrade'"
                )
            shortfalls.append(Shortfall(entry.kind, entry.require_count, len(taken)))
    residual = [s for s in scored if id(s) not in committed_ids]
    residual_target = max(0, budget.target_tokens - pre_allocated)
    chosen = inner.slice(
        residual, EffectiveBudget(max_tokens=budget.max_tokens, target_tokens=min(residual_target, budget.max_tokens))
    )
    if resort:
        position = {id(s): i for i, s in enumerate(scored)}
        chosen = sorted(chosen, key=lambda s: (-s.score, position[id(s)]))
    caps = {kind_key(e.kind): e.cap_count for e in entries}
    result = list(committed)
    excluded = []
    for candidate in chosen:
        key = candidate.kind
        count = counts.get(key, 0)
        cap = caps.get(key)
        if cap is not None and count >= cap:
            excluded.append(CapExclusion(candidate, candidate.item.kind or "", cap))
        else:
            result.append(candidate)
            counts[key] = count + 1
    return SliceDetails(selected=result, shortfalls=tuple(shortfalls), cap_excluded=tuple(excluded))


def _check_entries(owner: str, entries: Sequence[CountQuotaEntry]) -> tuple[CountQuotaEntry, ...]:
    out = tuple(entries)
    for entry in out:
        if not isinstance(entry, CountQuotaEntry):
            raise SelectionError(f"{owner}: entries must be CountQuotaEntry objects, got {entry!r}")
    _check_unique(owner, [e.kind for e in out])
    return out


@dataclass(frozen=True)
class CountQuotaSlicer:
    """Per-kind item counts around an inner slicer (greedy by default; a knapsack is refused).

    1. For each kind with ``require_count``, commit its best candidates.
    2. Slice the rest with ``inner`` in what the commitments left of the budget.
    3. Drop inner choices past their kind's ``cap_count`` (committed items count toward the cap).
    """

    entries: Sequence[CountQuotaEntry]
    inner: Slicer = field(default_factory=GreedySlicer)
    scarcity: Scarcity = "degrade"

    def __post_init__(self) -> None:
        object.__setattr__(self, "entries", _check_entries("CountQuotaSlicer", self.entries))
        object.__setattr__(self, "scarcity", _scarcity("CountQuotaSlicer", self.scarcity))
        if isinstance(self.inner, KnapsackSlicer):
            raise SelectionError(
                "CountQuotaSlicer does not accept a KnapsackSlicer as its inner slicer; "
                "use CountConstrainedKnapsackSlicer for count quotas around a knapsack"
            )
        if not isinstance(self.inner, Slicer):
            raise SelectionError(f"CountQuotaSlicer: inner must be a slicer, got {self.inner!r}")

    def slice_with_details(self, scored: Sequence[ScoredItem], budget: EffectiveBudget) -> SliceDetails:
        return _count_slice("CountQuotaSlicer", self.entries, self.scarcity, scored, budget, self.inner, resort=False)

    def slice(self, scored: Sequence[ScoredItem], budget: EffectiveBudget) -> list[ScoredItem]:
        return self.slice_with_details(scored, budget).selected


@dataclass(frozen=True)
class CountConstrainedKnapsackSlicer:
    """Per-kind item counts around a knapsack: like :class:`CountQuotaSlicer`, with the
    knapsack's choices re-sorted by score before caps apply (so caps keep the best)."""

    entries: Sequence[CountQuotaEntry]
    knapsack: KnapsackSlicer = field(default_factory=KnapsackSlicer)
    scarcity: Scarcity = "degrade"

    def __post_init__(self) -> None:
        object.__setattr__(self, "entries", _check_entries("CountConstrainedKnapsackSlicer", self.entries))
        object.__setattr__(self, "scarcity", _scarcity("CountConstrainedKnapsackSlicer", self.scarcity))
        if not isinstance(self.knapsack, KnapsackSlicer):
            raise SelectionError(
                f"CountConstrainedKnapsackSlicer: knapsack must be a KnapsackSlicer, got {self.knapsack!r}"
            )

    def slice_with_details(self, scored: Sequence[ScoredItem], budget: EffectiveBudget) -> SliceDetails:
        return _count_slice(
            "CountConstrainedKnapsackSlicer", self.entries, self.scarcity, scored, budget, self.knapsack, resort=True
        )

    def slice(self, scored: Sequence[ScoredItem], budget: EffectiveBudget) -> list[ScoredItem]:
        return self.slice_with_details(scored, budget).selected
