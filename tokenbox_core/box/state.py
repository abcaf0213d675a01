"""The working state of one layout: a slot per section, a unit per list item, memoised templates.

These are the box's internal records (not public API): the steps of the
algorithm (:mod:`.measure`, :mod:`.claim`, :mod:`.compress`, :mod:`.refill`,
:mod:`.results`) read and update them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tokenbox_core.layout import Action, LaidOutSection, RemovedItem
from tokenbox_core.sections import Item, Section

__all__ = [
    "DEFAULT_OMISSION",
    "DEFAULT_OMISSION_ONE",
    "MARKER_IDS_SHOWN",
    "MAX_PASSES",
    "MEMO_ATTR",
    "MEMO_LIMIT",
    "OUTRANKED_DETAIL",
    "Emitted",
    "Mode",
    "Slot",
    "Template",
    "Unit",
    "removed_record",
]

Mode = Literal["text", "messages"]
DEFAULT_OMISSION = "[{count} items omitted: {ids}]"
"""The default omission marker; templates may use ``{count}``, ``{ids}``, ``{first}`` and ``{last}``."""
DEFAULT_OMISSION_ONE = "[1 item omitted: {ids}]"
"""The default marker when one item was removed."""
MARKER_IDS_SHOWN = 8
"""Markers list at most this many ids in full; longer lists are abbreviated (the report has them all)."""
MAX_PASSES = 16
MEMO_ATTR = "_tokenbox_memo"
MEMO_LIMIT = 8
"""At most this many measurements (one per counter, separator and mode) are memoised on one Section."""
OUTRANKED_DETAIL = "dropped without measuring: the sections that outrank it already fill the budget"


@dataclass(slots=True)
class Unit:
    """One item of a list section while it is being laid out."""

    item: Item
    index: int
    text: str
    size: int = 0  # text + item separator (text mode), or the message size
    vouched: bool = False  # size is the caller's Item.tokens, not a count


Emitted = tuple[str, str, int, bool]
"""An emitted unit: (text, trailing separator, size of text + separator, vouched)."""


@dataclass
class Template:
    """A section's memoised measurement: its full size and, for lists, its units and eviction order."""

    size: int
    units: tuple[Unit, ...] | None
    evict_order: list[list[int]]
    kept_total: int = 0
    start_ok: bool = False  # a join before this text section's content is neutral (fast exact totals)
    untouched: LaidOutSection | None = None  # the result of a layout that left the section whole
    dropped: LaidOutSection | None = None  # the result of a layout that dropped it whole, untouched before
    emitted: list[Emitted] | None = None  # a list section's emitted units when whole (``totals.emitted``)
    slot_state: dict[str, Any] | None = None  # a text section's fresh slot state (``Ruler.new_slots`` copies it)


class Slot:
    """The mutable state of one section during a layout.

    Thousands are made per call, so ``__init__`` sets only what differs per
    slot; everything else reads class-level defaults until first assigned
    (lists are only ever replaced, never mutated in place, while shared).
    """

    is_list = False
    text = ""
    size = full_size = base_size = alloc = 0
    units: list[Unit] = []  # noqa: RUF012 - replaced, never mutated, while shared
    units_shared = False
    kept: list[bool] = []  # noqa: RUF012
    kept_total = 0
    last_kept = -1
    evict_order: list[list[int]] = []  # noqa: RUF012 - groups of unit indices, in eviction order
    evicted_groups = 0
    marker = ""
    marker_size = 0
    pristine_drop = outranked = lensed = truncated = dropped = False
    want = 0  # the size after claims and expansion: what compression may take and refill may give back
    cut_on_claim = False  # content was lost to max_tokens before compression
    visited = False  # compression has seen this slot (``remember`` ran)
    boundary_cut = False  # a list's boundary item was cut (``partial``): the items after it stay out
    cut = False  # compression cut, evicted from or dropped this section (what refill may give back)
    claim_evicted = 0  # groups evicted by the claim (a list's ``want``): refill restores no further
    source: str | None = None  # a text section's full content after its lenses (what refill regrows from)
    outcast: tuple[int, ...] = ()  # units removed because their atomic group lost a member elsewhere
    actions: tuple[Action, ...] = ()
    removed: tuple[RemovedItem, ...] = ()
    selection: dict[str, Any] | None = None  # the selection report of a list section with a policy

    def __init__(
        self,
        section: Section,
        template: Template | None,
        index: int,
        critical: bool,
        *,
        is_list: bool = False,
        units: list[Unit] | None = None,
        kept: list[bool] | None = None,
        kept_total: int = 0,
        last_kept: int = -1,
    ) -> None:
        self.section = section
        self.template = template
        self.index = index
        self.critical = critical
        if is_list:
            self.is_list = True
            self.units = units if units is not None else []
            self.kept = kept if kept is not None else []
            self.kept_total = kept_total
            self.last_kept = last_kept

    def remember(self) -> None:
        """Note, before compression first touches this slot, what refill may give back (``want``)."""
        if not self.visited:
            self.visited = True
            self.want = self.size
            self.cut_on_claim = self.truncated
            self.claim_evicted = self.evicted_groups

    def act(self, action: Action) -> None:
        self.actions = (*self.actions, action)

    def remove(self, items: Sequence[RemovedItem]) -> None:
        self.removed = (*self.removed, *items)

    def set_kept(self, group: Sequence[int], kept: bool) -> None:
        """Keep or evict the units at ``group`` (indices), keeping the running totals right."""
        for i in group:
            if self.kept[i] != kept:
                self.kept[i] = kept
                self.kept_total += self.units[i].size if kept else -self.units[i].size
                if kept and i > self.last_kept:
                    self.last_kept = i

    def own_units(self) -> None:
        """Copy shared (memoised) units before mutating them."""
        if self.units_shared:
            self.units = [
                Unit(item=u.item, index=u.index, text=u.text, size=u.size, vouched=u.vouched) for u in self.units
            ]
            self.units_shared = False


def removed_record(slot: Slot, unit: Unit, reason: str) -> RemovedItem:
    """The record of ``unit`` leaving ``slot`` for ``reason``."""
    return RemovedItem(
        id=unit.item.id,
        section=slot.section.id,
        reason=reason,
        tokens=unit.size,
        score=unit.item.score,
        group=unit.item.group,
    )
