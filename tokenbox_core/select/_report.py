"""The selection report: every candidate, included or excluded, with the reason and the numbers.

``included`` is in placed order with the reason ``Scored``, ``Pinned`` or
``ZeroToken``.  ``excluded`` is sorted by score (descending, ties in the order
the pipeline excluded them) with a reason and its data:

==================  =========================================  ==========================
reason              data                                       stage
==================  =========================================  ==========================
NegativeTokens      ``tokens``                                 classify
Deduplicated        ``deduplicated_against`` (an item id)      deduplicate
BudgetExceeded      ``item_tokens``, ``available_tokens``      slice, place (truncate)
PinnedOverride      ``displaced_by`` (an item id)              slice, place (truncate)
QuotaCapExceeded    ``kind``, ``cap``, ``actual``              slice (count quotas)
==================  =========================================  ==========================

The spec also reserves ``ScoredTooLow``, ``QuotaRequireDisplaced`` and
``Filtered``; the built-in stages never emit them.  The report is plain data:
``to_dict()`` is JSON-ready and deterministic (no timings), ``to_text()``
reads like a table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from tokenbox_core._budget import ContextBudget, EffectiveBudget
from tokenbox_core._frozen import FrozenDict
from tokenbox_core._sections import Item
from tokenbox_core.select._quota import Shortfall

__all__ = [
    "EXCLUSION_REASONS",
    "INCLUSION_REASONS",
    "ExcludedItem",
    "IncludedItem",
    "InclusionReason",
    "OverflowEvent",
    "SelectionReport",
]

InclusionReason = Literal["Scored", "Pinned", "ZeroToken"]
INCLUSION_REASONS: tuple[str, ...] = ("Scored", "Pinned", "ZeroToken")
EXCLUSION_REASONS: tuple[str, ...] = (
    "BudgetExceeded",
    "ScoredTooLow",
    "Deduplicated",
    "QuotaCapExceeded",
    "QuotaRequireDisplaced",
    "NegativeTokens",
    "PinnedOverride",
    "Filtered",
)


@dataclass(frozen=True)
class IncludedItem:
    """An item that made it, with its score and why.

    Pinned items carry 1.0, the score they are placed with.  The spec's report
    chapter says 0.0 for pinned (and zero-token) items, but its vector
    ``diag-pinned-override`` expects 1.0, and the vectors win.  Zero-token
    items keep their computed score.
    """

    item: Item
    score: float
    tokens: int
    reason: InclusionReason

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.item.id,
            "kind": self.item.kind,
            "tokens": self.tokens,
            "score": self.score,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class ExcludedItem:
    """An item that did not make it: the reason, its data, and the item it lost to (if any)."""

    item: Item
    score: float
    tokens: int
    reason: str
    details: Mapping[str, Any] = field(default_factory=dict)
    related: Item | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "details", FrozenDict(self.details))

    def explain(self) -> str:
        """The reason in words, with its numbers."""
        d = self.details
        if self.reason == "BudgetExceeded":
            return f"needs {d['item_tokens']} tokens, {d['available_tokens']} available"
        if self.reason == "PinnedOverride":
            return f"room taken by pinned item {d['displaced_by']!r}"
        if self.reason == "Deduplicated":
            return f"same content as {d['deduplicated_against']!r}"
        if self.reason == "NegativeTokens":
            return f"negative size ({d['tokens']})"
        if self.reason == "QuotaCapExceeded":
            return f"kind {d['kind']!r} already has its cap of {d['cap']}"
        return ", ".join(f"{k}={v}" for k, v in d.items())

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.item.id,
            "kind": self.item.kind,
            "tokens": self.tokens,
            "score": self.score,
            "reason": self.reason,
            **self.details,
        }


@dataclass(frozen=True)
class OverflowEvent:
    """The chosen items exceed ``target_tokens`` and the policy's overflow strategy is ``"proceed"``."""

    tokens_over_budget: int
    items: tuple[Item, ...]
    budget: ContextBudget

    def to_dict(self) -> dict[str, Any]:
        return {
            "tokens_over_budget": self.tokens_over_budget,
            "items": [it.id for it in self.items],
            "budget": {"max_tokens": self.budget.max_tokens, "target_tokens": self.budget.target_tokens},
        }


@dataclass(frozen=True)
class SelectionReport:
    """What a selection run decided, for every candidate."""

    included: tuple[IncludedItem, ...]
    excluded: tuple[ExcludedItem, ...]
    budget: ContextBudget
    effective: EffectiveBudget
    stages: tuple[tuple[str, int], ...] = ()
    shortfalls: tuple[Shortfall, ...] = ()
    overflow: OverflowEvent | None = None

    @property
    def total_candidates(self) -> int:
        return len(self.included) + len(self.excluded)

    @property
    def total_tokens_considered(self) -> int:
        return sum(i.tokens for i in self.included) + sum(e.tokens for e in self.excluded)

    @property
    def included_tokens(self) -> int:
        return sum(i.tokens for i in self.included)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready and deterministic."""
        return {
            "total_candidates": self.total_candidates,
            "total_tokens_considered": self.total_tokens_considered,
            "included_tokens": self.included_tokens,
            "budget": {
                "max_tokens": self.budget.max_tokens,
                "target_tokens": self.budget.target_tokens,
                "output_reserve": self.budget.output_reserve,
            },
            "effective": {"max_tokens": self.effective.max_tokens, "target_tokens": self.effective.target_tokens},
            "stages": [{"stage": name, "item_count": count} for name, count in self.stages],
            "included": [i.to_dict() for i in self.included],
            "excluded": [e.to_dict() for e in self.excluded],
            "shortfalls": [s.to_dict() for s in self.shortfalls],
            "overflow": None if self.overflow is None else self.overflow.to_dict(),
        }

    def to_text(self) -> str:
        """A readable table of the decisions."""
        lines = [
            f"selection: {len(self.included)} of {self.total_candidates} items, {self.included_tokens} of "
            f"{self.total_tokens_considered} tokens (target {self.budget.target_tokens}, "
            f"max {self.budget.max_tokens}; slicer budget {self.effective.target_tokens})"
        ]
        width = max([len(i.item.id) for i in self.included] + [len(e.item.id) for e in self.excluded] + [2])
        lines.append("included, in placed order:" if self.included else "included: none")
        for inc in self.included:
            lines.append(f"  {inc.item.id:<{width}}  {inc.tokens:>7} tok  score {inc.score:.4f}  {inc.reason}")
        lines.append("excluded, best score first:" if self.excluded else "excluded: none")
        for exc in self.excluded:
            lines.append(
                f"  {exc.item.id:<{width}}  {exc.tokens:>7} tok  score {exc.score:.4f}  {exc.reason}: {exc.explain()}"
            )
        for short in self.shortfalls:
            lines.append(f"shortfall: kind {short.kind!r} required {short.required_count}, had {short.satisfied_count}")
        if self.overflow is not None:
            lines.append(f"overflow: {self.overflow.tokens_over_budget} tokens over the target (proceeded)")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_text()
