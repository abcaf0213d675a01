"""Step 6, atomic groups across sections (``docs/concepts.md#sections-and-items``).

Within a list section an ``Item.group`` is evicted whole.  A group whose
members sit in several sections — an assistant tool call in one history run
and its result in the next — is kept or removed as a whole too: after
compression, a group that lost a member anywhere loses its other members
everywhere (reason ``"atomic group"``), and refill never restores part of
such a group.

A group with a member in a critical section cannot be removed, so its
members elsewhere could only be protected by making them critical too; the
box does not guess that: a group that spans a critical and a flexible
section is a :class:`~tokenbox_core.errors.SectionError` naming the group,
the sections and the fix (make every member's section critical, or none).
"""

from __future__ import annotations

from collections.abc import Sequence

from tokenbox_core.errors import SectionError
from tokenbox_core.layout import Action

from ._measure import Ruler
from ._state import MARKER_IDS_SHOWN, Slot, removed_record

__all__ = ["GroupMembers", "enforce_groups", "group_members", "incomplete_groups"]

GroupMembers = dict[str, list[Slot]]
"""Each group that spans sections -> the slots holding its members (declaration order)."""


def group_members(slots: Sequence[Slot]) -> GroupMembers:
    """The groups that span sections (cheap: reads ``Section.items``, counts nothing)."""
    seen: dict[str, list[Slot]] = {}
    for slot in slots:
        section = slot.section
        for group in sorted({it.group for it in section.items if it.group is not None}):
            seen.setdefault(group, []).append(slot)
    spanning = {g: members for g, members in seen.items() if len(members) > 1}
    for group in sorted(spanning):
        members = spanning[group]
        critical = [s.section.id for s in members if s.critical]
        if critical and len(critical) < len(members):
            flexible = [s.section.id for s in members if not s.critical]
            raise SectionError(
                f"atomic group {group!r} spans critical section(s) {critical} and flexible section(s) {flexible}: "
                f"a group is kept or removed whole, and critical sections are never cut; make every section "
                f"holding a member of the group critical (shrink=0), or none of them"
            )
    return {g: m for g, m in spanning.items() if not m[0].critical}


def _kept(slot: Slot, group: str) -> tuple[list[int], int]:
    """(indices of the kept units of ``group`` in ``slot``, number of its units there)."""
    if slot.dropped or slot.outranked:
        return [], sum(1 for it in slot.section.items if it.group == group)
    members = [u.index for u in slot.units if u.item.group == group]
    return [i for i in members if slot.kept[i]], len(members)


def incomplete_groups(members: GroupMembers) -> frozenset[str]:
    """The spanning groups not kept whole (refill must not restore any part of them)."""
    out = set()
    for group, slots in members.items():
        for slot in slots:
            kept, total = _kept(slot, group)
            if len(kept) < total:
                out.add(group)
                break
    return frozenset(out)


def enforce_groups(ruler: Ruler, members: GroupMembers) -> bool:
    """Remove the kept members of every spanning group that lost a member; True if anything changed."""
    evict: dict[int, tuple[Slot, list[int]]] = {}
    for group in sorted(incomplete_groups(members)):
        for slot in members[group]:
            kept, _ = _kept(slot, group)
            if kept:
                evict.setdefault(id(slot), (slot, []))[1].extend(kept)
    for slot, indices in sorted(evict.values(), key=lambda e: e[0].index):
        before = slot.size
        slot.set_kept(indices, False)
        slot.outcast = (*slot.outcast, *indices)
        ruler.fit_marker(slot, before)  # the marker never makes a section grow
        slot.size = ruler.list_size(slot)
        slot.alloc = min(slot.alloc, slot.size)
        units = [slot.units[i] for i in indices]
        slot.remove([removed_record(slot, u, "atomic group") for u in units])
        ids = [u.item.id for u in units]
        shown = ", ".join(ids) if len(ids) <= MARKER_IDS_SHOWN else f"{', '.join(ids[:MARKER_IDS_SHOWN])}, …"
        slot.act(
            Action(
                "evict",
                "atomic group",
                before,
                slot.size,
                f"removed {len(ids)} {'item' if len(ids) == 1 else 'items'} whose atomic group lost a member "
                f"in another section: {shown}",
            )
        )
        slot.truncated = True
        if slot.size == 0:
            slot.dropped = True
    return bool(evict)
