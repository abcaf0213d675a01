"""The working state of one layout: a slot per section, a unit per list item.

These are the box's internal records (not public API): the steps of the
algorithm (:mod:`._measure`, :mod:`._claim`, :mod:`._compress`, :mod:`._refill`,
:mod:`._results`) read and update them.  A layout makes its own slots; nothing
outlives the call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from tokenbox_core._sections import Item, Section
from tokenbox_core.layout import Action, RemovedItem

__all__ = [
    "DEFAULT_OMISSION",
    "DEFAULT_OMISSION_ONE",
    "MARKER_IDS_SHOWN",
    "MAX_PASSES",
    "OUTRANKED_DETAIL",
    "Mode",
    "Slot",
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
"""How many times compression runs again when BPE merges at the joins leave the exact total over the target."""
OUTRANKED_DETAIL = "dropped without measuring: the sections that outrank it already fill the budget"


@dataclass(slots=True)
class Unit:
    """One item of a list section while it is being laid out."""

    item: Item
    index: int
    text: str
    size: int = 0  # text + item separator (text mode), or the message size
    vouched: bool = False  # size is the caller's Item.tokens, not a count


@dataclass(slots=True, eq=False)
class Slot:
    """The mutable state of one section during a layout."""

    section: Section
    index: int
    critical: bool
    is_list: bool = False
    text: str = ""
    size: int = 0
    full_size: int = 0
    base_size: int = 0
    alloc: int = 0
    units: list[Unit] = field(default_factory=list)
    kept: list[bool] = field(default_factory=list)
    kept_total: int = 0
    last_kept: int = -1
    evict_order: list[list[int]] = field(default_factory=list)  # groups of unit indices, in eviction order
    evicted_groups: int = 0
    marker: str = ""
    marker_size: int = 0
    outranked: bool = False  # the sections that outrank it alone fill the target: dropped before its claim
    lensed: bool = False
    truncated: bool = False
    dropped: bool = False
    want: int = 0  # the size after claims and expansion: what compression may take and refill may give back
    cut_on_claim: bool = False  # content was lost to max_tokens before compression
    visited: bool = False  # compression has seen this slot (``remember`` ran)
    boundary_cut: bool = False  # a list's boundary item was cut (``partial``): the items after it stay out
    cut: bool = False  # compression cut, evicted from or dropped this section (what refill may give back)
    claim_evicted: int = 0  # groups evicted by the claim (a list's ``want``): refill restores no further
    source: str | None = None  # a text section's full content after its lenses (what refill regrows from)
    outcast: tuple[int, ...] = ()  # units removed because their atomic group lost a member elsewhere
    actions: tuple[Action, ...] = ()
    removed: tuple[RemovedItem, ...] = ()
    selection: dict[str, Any] | None = None  # the selection report of a list section with a policy

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
