"""Step 8, results: each slot becomes a :class:`~tokenbox_core.layout.LaidOutSection`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from tokenbox_core._sections import Item
from tokenbox_core.layout import Action, LaidOutSection, Status

from ._claim import claim
from ._measure import Ruler
from ._state import OUTRANKED_DETAIL, Slot, removed_record

__all__ = ["build", "results"]

OUTRANKED_ACTIONS = (Action("drop", "outranked", 0, 0, OUTRANKED_DETAIL),)
"""The actions of every outranked section (dropped before its claim)."""


def results(ruler: Ruler, slots: Sequence[Slot]) -> tuple[LaidOutSection, ...]:
    """The records of ``slots``, in declaration order."""
    return tuple(outranked(ruler, slot) if slot.outranked else build(slot) for slot in slots)


def outranked(ruler: Ruler, slot: Slot) -> LaidOutSection:
    """The record of a section dropped before its claim: its whole size and the claim it would have made."""
    section = slot.section
    removed = tuple(removed_record(slot, u, "section dropped") for u in slot.units)  # all kept: never touched
    claim(ruler, slot)  # the last use of the slot: its claim is only reported
    return LaidOutSection(
        id=section.id,
        status="dropped",
        critical=False,
        priority=section.priority,
        shrink=section.shrink,
        grow=section.grow,
        min_tokens=section.min_tokens,
        full_tokens=slot.full_size,
        base_tokens=slot.size,
        allocated_tokens=0,
        final_tokens=0,
        content="" if isinstance(section.content, str) else (),
        text="",
        role=section.role,
        actions=OUTRANKED_ACTIONS,
        removed=removed,
    )


def status_of(slot: Slot) -> Status:
    if slot.dropped or (slot.size == 0 and slot.full_size > 0):
        return "dropped"
    if slot.truncated:
        return "truncated"
    if slot.lensed and any(a.kind == "lens" for a in slot.actions):
        return "compressed"
    if slot.size > slot.base_size and not slot.critical:
        return "expanded"
    return "kept"


def build(slot: Slot) -> LaidOutSection:
    """The record of ``slot`` as it stands."""
    section = slot.section
    content: str | tuple[Item, ...]
    if slot.is_list:
        kept = tuple(
            u.item if u.text == u.item.content else replace(u.item, content=u.text, tokens=None)
            for u in slot.units
            if slot.kept[u.index]
        )
        content = kept
        parts = ([slot.marker] if slot.marker else []) + [it.content for it in kept if it.content]
        rendered = section.item_separator.join(parts)
    else:
        content = rendered = slot.text
    if slot.dropped:
        rendered = ""
    return LaidOutSection(
        id=section.id,
        status=status_of(slot),
        critical=slot.critical,
        priority=section.priority,
        shrink=section.shrink,
        grow=section.grow,
        min_tokens=section.min_tokens,
        full_tokens=slot.full_size,
        base_tokens=slot.full_size if slot.critical else slot.base_size,
        allocated_tokens=slot.size if slot.critical else max(slot.alloc, slot.size),
        final_tokens=slot.size,
        content=content,
        text=rendered,
        role=section.role,
        marker=slot.marker,
        actions=tuple(slot.actions),
        removed=tuple(slot.removed),
        selection=slot.selection,
    )
