"""The selection pipeline: classify, score, deduplicate, sort, slice, place.

A :class:`SelectionPolicy` is a scorer, a slicer and a placer plus two
switches; ``policy.select(items, budget)`` runs the six stages and returns a
:class:`Selection` (the placed items and the :class:`SelectionReport`).

>>> from tokenbox_core import Item
>>> from tokenbox_core.select import RecencyScorer, SelectionPolicy
>>> from datetime import datetime
>>> items = [Item(f"turn-{i}", f"turn {i}", tokens=40, timestamp=datetime(2025, 1, 1, i)) for i in range(5)]
>>> selection = SelectionPolicy(RecencyScorer()).select(items, 100)
>>> [it.id for it in selection.items]
['turn-3', 'turn-4']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from tokenbox_core._budget import ContextBudget, EffectiveBudget
from tokenbox_core._sections import Item
from tokenbox_core.errors import SelectionError
from tokenbox_core.select._model import ScoredItem, kind_key
from tokenbox_core.select._placers import ChronologicalPlacer, Placer
from tokenbox_core.select._quota import CapExclusion, Shortfall
from tokenbox_core.select._report import ExcludedItem, IncludedItem, OverflowEvent, SelectionReport
from tokenbox_core.select._scorers import Scorer, score_items
from tokenbox_core.select._slicers import GreedySlicer, Slicer
from tokenbox_core.tokens import get_counter

__all__ = ["Overflow", "Selection", "SelectionPolicy"]

Overflow = Literal["throw", "truncate", "proceed"]
_OVERFLOWS = ("throw", "truncate", "proceed")


@dataclass(frozen=True)
class Selection:
    """The placed items of a selection run and the report explaining them."""

    items: tuple[Item, ...]
    report: SelectionReport

    @property
    def ids(self) -> list[str]:
        return [it.id for it in self.items]

    @property
    def overflow(self) -> OverflowEvent | None:
        return self.report.overflow


@dataclass(frozen=True)
class SelectionPolicy:
    """Which items of a list fill a budget, and in which order.

    Args:
        scorer: how relevant each item is (see :mod:`tokenbox_core.select._scorers`).
        slicer: which scored items fit (default :class:`GreedySlicer`).
        placer: their order (default :class:`ChronologicalPlacer`).
        deduplication: drop byte-identical content, keeping the best-scored copy.
        overflow: when pinned plus sliced items exceed ``target_tokens``:
            ``"throw"`` (default) raises, ``"truncate"`` drops the lowest-scored
            unpinned items, ``"proceed"`` keeps them and reports an
            :class:`OverflowEvent` (also passed to ``on_overflow``).
        on_overflow: called with the event under ``"proceed"``.
        name: a label for reports and presets.
    """

    scorer: Scorer
    slicer: Slicer = field(default_factory=GreedySlicer)
    placer: Placer = field(default_factory=ChronologicalPlacer)
    deduplication: bool = True
    overflow: Overflow = "throw"
    on_overflow: Callable[[OverflowEvent], None] | None = field(default=None, compare=False, repr=False)
    name: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.scorer, Scorer):
            raise SelectionError(f"SelectionPolicy: scorer must have .scores(items), got {self.scorer!r}")
        if not isinstance(self.slicer, Slicer):
            raise SelectionError(f"SelectionPolicy: slicer must have .slice(scored, budget), got {self.slicer!r}")
        if not isinstance(self.placer, Placer):
            raise SelectionError(f"SelectionPolicy: placer must have .place(merged), got {self.placer!r}")
        if self.overflow not in _OVERFLOWS:
            raise SelectionError(f"SelectionPolicy: overflow must be one of {_OVERFLOWS}, got {self.overflow!r}")
        if not isinstance(self.deduplication, bool):
            raise SelectionError(f"SelectionPolicy: deduplication must be True or False, got {self.deduplication!r}")
        if self.on_overflow is not None and not callable(self.on_overflow):
            raise SelectionError(f"SelectionPolicy: on_overflow must be callable, got {self.on_overflow!r}")

    def select(
        self,
        items: Sequence[Item],
        budget: int | ContextBudget,
        *,
        sizes: Sequence[int] | None = None,
        counter: Any = None,
    ) -> Selection:
        """Run the pipeline over ``items``.

        Sizes come from ``sizes`` (one per item) if given, else ``Item.tokens``,
        else ``counter`` counting the content; an item with no size raises.
        """
        budget = ContextBudget.coerce(budget)
        items = tuple(items)
        for item in items:
            if not isinstance(item, Item):
                raise SelectionError(f"select() takes Item objects, got {type(item).__name__}")
        tokens = _sizes(items, sizes, counter)
        return _Run(self, items, tokens, budget).execute()

    def choose(self, items: Sequence[Any], allocation: int, size_of: Callable[[Sequence[int]], int]) -> Any:
        """The :class:`tokenbox_core.box.ItemSelector` protocol: this policy filling a Token Box section."""
        from tokenbox_core.select._boxing import choose

        return choose(self, items, allocation, size_of)


def _sizes(items: tuple[Item, ...], sizes: Sequence[int] | None, counter: Any) -> list[int]:
    if sizes is not None:
        out = list(sizes)
        if len(out) != len(items):
            raise SelectionError(f"sizes has {len(out)} entries for {len(items)} items; give one size per item")
        for item, size in zip(items, out, strict=True):
            if isinstance(size, bool) or not isinstance(size, int):
                raise SelectionError(f"size of item {item.id!r} must be an integer, got {size!r}")
        return out
    missing = [i for i, it in enumerate(items) if it.tokens is None]
    if missing and counter is None:
        raise SelectionError(
            f"item {items[missing[0]].id!r} has no size: set Item.tokens, pass sizes=[...], "
            f"or pass counter= (e.g. 'o200k_base') to count content"
        )
    count = get_counter(counter).count if missing else len
    counted = [count(items[i].content) for i in missing]
    out = [0 if it.tokens is None else it.tokens for it in items]
    for i, n in zip(missing, counted, strict=True):
        out[i] = n
    return out


class _Run:
    """One pass of the six stages; collects the report as it goes."""

    def __init__(self, policy: SelectionPolicy, items: tuple[Item, ...], tokens: list[int], budget: ContextBudget):
        self.policy = policy
        self.items = items
        self.tokens = tokens
        self.budget = budget
        self.excluded: list[ExcludedItem] = []
        self.stages: list[tuple[str, int]] = []

    def execute(self) -> Selection:
        pinned, scoreable = self.classify()
        scored = self.score(scoreable)
        deduped = self.deduplicate(scored)
        ordered = sorted(deduped, key=lambda s: -s.score)  # stable: ties keep input order
        pinned_tokens = sum(s.tokens for s in pinned)
        effective = self.budget.effective(pinned_tokens=pinned_tokens)
        sliced, shortfalls = self.slice(ordered, pinned, effective)
        merged, overflow = self.overflow(pinned + sliced, pinned)
        placed = self.policy.placer.place(merged)
        if sorted(id(s) for s in placed) != sorted(id(s) for s in merged):
            raise SelectionError(
                f"{type(self.policy.placer).__name__}.place() must return exactly the items it was given, reordered"
            )
        self.stages.append(("Place", len(placed)))
        included = tuple(
            IncludedItem(
                s.item, s.score, s.tokens, "Pinned" if s.item.pinned else "ZeroToken" if s.tokens == 0 else "Scored"
            )
            for s in placed
        )
        excluded = tuple(sorted(self.excluded, key=lambda e: -e.score))
        report = SelectionReport(
            included=included,
            excluded=excluded,
            budget=self.budget,
            effective=effective,
            stages=tuple(self.stages),
            shortfalls=shortfalls,
            overflow=overflow,
        )
        if overflow is not None and self.policy.on_overflow is not None:
            self.policy.on_overflow(overflow)
        return Selection(items=tuple(s.item for s in placed), report=report)

    def classify(self) -> tuple[list[ScoredItem], list[int]]:
        """Negative sizes out first (even pinned ones), then pinned apart; pins must fit max - reserve."""
        pinned: list[ScoredItem] = []
        scoreable: list[int] = []
        for i, item in enumerate(self.items):
            size = self.tokens[i]
            if size < 0:
                self.excluded.append(ExcludedItem(item, 0.0, size, "NegativeTokens", {"tokens": size}))
            elif item.pinned:
                pinned.append(ScoredItem(item, 1.0, size, i))  # pinned items place with score 1.0
            else:
                scoreable.append(i)
        pinned_tokens = sum(s.tokens for s in pinned)
        available = self.budget.max_tokens - self.budget.output_reserve
        if pinned_tokens > available:
            raise SelectionError(
                f"pinned items need {pinned_tokens:,} tokens but only {available:,} are available "
                f"(max_tokens {self.budget.max_tokens:,} - output_reserve {self.budget.output_reserve:,}); "
                f"unpin some items or raise the budget"
            )
        self.stages.append(("Classify", len(self.items)))
        return pinned, scoreable

    def score(self, scoreable: list[int]) -> list[ScoredItem]:
        items = [self.items[i] for i in scoreable]
        values = score_items(self.policy.scorer, items) if items else []
        self.stages.append(("Score", len(items)))
        return [ScoredItem(self.items[i], v, self.tokens[i], i) for i, v in zip(scoreable, values, strict=True)]

    def deduplicate(self, scored: list[ScoredItem]) -> list[ScoredItem]:
        """Byte-exact content; the best score survives, the earlier item on ties."""
        if not self.policy.deduplication or not scored:
            self.stages.append(("Deduplicate", len(scored)))
            return scored
        best: dict[str, int] = {}
        for i, s in enumerate(scored):
            j = best.get(s.item.content)
            if j is None or s.score > scored[j].score:
                best[s.item.content] = i
        out = []
        for s in scored:
            winner = scored[best[s.item.content]]
            if winner is s:
                out.append(s)
            else:
                self.excluded.append(
                    ExcludedItem(
                        s.item,
                        s.score,
                        s.tokens,
                        "Deduplicated",
                        {"deduplicated_against": winner.item.id},
                        related=winner.item,
                    )
                )
        self.stages.append(("Deduplicate", len(scored)))
        return out

    def slice(
        self, ordered: list[ScoredItem], pinned: list[ScoredItem], budget: EffectiveBudget
    ) -> tuple[list[ScoredItem], tuple[Shortfall, ...]]:
        slicer = self.policy.slicer
        detailed = getattr(slicer, "slice_with_details", None)
        shortfalls: tuple[Shortfall, ...] = ()
        cap_excluded: tuple[CapExclusion, ...] = ()
        if callable(detailed):
            details = detailed(ordered, budget)
            chosen, shortfalls, cap_excluded = details.selected, details.shortfalls, details.cap_excluded
        else:
            chosen = slicer.slice(ordered, budget)
        candidates = {id(s) for s in ordered}
        chosen_ids = set()
        for s in chosen:
            if id(s) not in candidates:
                raise SelectionError(
                    f"{type(slicer).__name__}.slice() returned an item it was not given; "
                    f"a slicer must return a subset of its input"
                )
            chosen_ids.add(id(s))
        shortfalls += self.reserve(ordered, pinned, chosen_ids)
        sliced = [s for s in ordered if id(s) in chosen_ids]  # re-associated in score order
        available = budget.target_tokens - sum(s.tokens for s in sliced)
        room_without_pins = self.budget.effective(pinned_tokens=0).target_tokens - sum(s.tokens for s in sliced)
        capped = {id(c.candidate): c for c in cap_excluded}
        for s in ordered:
            if id(s) in chosen_ids:
                continue
            cap = capped.get(id(s))
            if cap is not None:
                self.excluded.append(
                    ExcludedItem(
                        s.item,
                        s.score,
                        s.tokens,
                        "QuotaCapExceeded",
                        {"kind": cap.kind, "cap": cap.cap, "actual": cap.cap},
                    )
                )
            else:
                self.excluded.append(self.budget_exclusion(s, available, pinned, room_without_pins))
        self.stages.append(("Slice", len(ordered)))
        return sliced, shortfalls

    def reserve(
        self, ordered: list[ScoredItem], pinned: list[ScoredItem], chosen_ids: set[int]
    ) -> tuple[Shortfall, ...]:
        """Guarantee ``ContextBudget.reserved_slots``: at least N items of each reserved kind, whatever the slicer.

        Cupel's budget subtracts the reserved values from the slicer's budget
        "to reserve capacity for per-kind guarantees" and defines them as the
        "minimum guaranteed items per kind", used by the quota slicer.  So after
        any slicer has run on the reduced budget, each reserved kind (in sorted
        order) whose selection is short gets its best-scored remaining items
        while they fit the budget without the reservation.  A kind no item of
        the list has is a plain token reservation (a tool schema, chat format)
        and is skipped; a kind whose items do not fit is reported as a
        :class:`Shortfall`.
        """
        slots = {kind_key(k): v for k, v in self.budget.reserved_slots.items() if v > 0}
        if not slots:
            return ()
        unreserved = replace(self.budget, reserved_slots={})
        limit = unreserved.effective(pinned_tokens=sum(p.tokens for p in pinned)).target_tokens
        used = sum(s.tokens for s in ordered if id(s) in chosen_ids)
        shortfalls = []
        for kind in sorted(slots):
            present = [p for p in pinned if p.kind == kind] + [s for s in ordered if s.kind == kind]
            if not present:
                continue
            have = sum(1 for p in pinned if p.kind == kind) + sum(
                1 for s in ordered if s.kind == kind and id(s) in chosen_ids
            )
            for candidate in ordered:  # score order: the best-scored first
                if have >= slots[kind]:
                    break
                if candidate.kind == kind and id(candidate) not in chosen_ids and used + candidate.tokens <= limit:
                    chosen_ids.add(id(candidate))
                    used += candidate.tokens
                    have += 1
            if have < slots[kind]:
                shortfalls.append(Shortfall(kind, slots[kind], have))
        return tuple(shortfalls)

    def budget_exclusion(
        self, s: ScoredItem, available: int, pinned: list[ScoredItem], room_without_pins: int
    ) -> ExcludedItem:
        """BudgetExceeded, or PinnedOverride when the item would have fit but for the pinned items.

        The spec names PinnedOverride for truncation only; its conformance vector
        ``diag-pinned-override`` expects it for a slice-stage exclusion whose room
        the pins took, and the vectors win.
        """
        if pinned and s.tokens <= room_without_pins:
            biggest = max(pinned, key=lambda p: (p.tokens, -p.index))
            return ExcludedItem(
                s.item, s.score, s.tokens, "PinnedOverride", {"displaced_by": biggest.item.id}, related=biggest.item
            )
        return ExcludedItem(
            s.item, s.score, s.tokens, "BudgetExceeded", {"item_tokens": s.tokens, "available_tokens": available}
        )

    def overflow(
        self, merged: list[ScoredItem], pinned: list[ScoredItem]
    ) -> tuple[list[ScoredItem], OverflowEvent | None]:
        target = self.budget.max_tokens if self.budget.target_tokens is None else self.budget.target_tokens
        total = sum(s.tokens for s in merged)
        if total <= target:
            return merged, None
        strategy = self.policy.overflow
        if strategy == "throw":
            raise SelectionError(
                f"the selected items need {total:,} tokens, over the target of {target:,}; "
                f"raise target_tokens, unpin items, or use overflow='truncate' or 'proceed'"
            )
        if strategy == "proceed":
            return merged, OverflowEvent(total - target, tuple(s.item for s in merged), self.budget)
        kept = []
        current = 0
        pinned_tokens = sum(s.tokens for s in pinned)
        for s in merged:
            if s.item.pinned or current + s.tokens <= target:
                kept.append(s)
                current += s.tokens
            else:
                room_without_pins = target - (current - pinned_tokens)
                self.excluded.append(self.budget_exclusion(s, target - current, pinned, room_without_pins))
        return kept, None
