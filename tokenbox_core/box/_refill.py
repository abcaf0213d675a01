"""Step 7, refill: give back what compression took once room is left (``docs/concepts.md#the-token-box``).

The seed's compression loop visits sections lowest first and stops when the
deficit is gone, so a section dropped early stays dropped even when a later
section's cut or drop freed room (a section that cannot be cut below its
``min_tokens`` is dropped whole and frees more than the deficit).  Refill
visits the sections compression cut or dropped in protection order — the
reverse of the compression order: highest priority first, then lower
``shrink``, then the later declaration — and re-admits into the room that
is left:

- a dropped section comes back whole if it fits, else cut to the room (lists
  by whole groups in reverse eviction order, or by their selection policy),
  never below its ``min_tokens``;
- a section that was cut regrows towards the size it had after claims and
  expansion (never beyond: a ``basis`` is still only regained by ``grow``);
- a section dropped before its claim (outranked) is claimed when room is
  left when its turn comes;
- a lens's compression is not undone (refill gives back cuts and drops);
- a list whose boundary item was cut (``partial``) is left as it is: the
  items evicted before the cut must not return while that item is short.

Within one priority refill follows the seed's tie order and stops at the
first section it cannot give back in full, so a section never returns while
one of its priority that it yields to is still short (an older history run
never comes back while a newer run of the same priority is lost).  Across
priorities a section that cannot fit is passed over and refill goes on:
a lower-priority section comes back wherever it now fits.

Each re-admission is an ``Action("refill", ...)`` in the section's record and
the section's id is listed in ``Layout.trace["refilled"]``.  Refill is
deterministic and never exceeds the target; ``TokenBox(..., strict=True)``
skips it and reproduces the reference algorithm literally.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

from tokenbox_core.layout import Action

from ._claim import claim, restore_groups
from ._compress import cut_text, drop
from ._measure import Ruler
from ._selector import fill_with_selector
from ._state import Slot, removed_record

__all__ = ["refill"]


def refill(
    ruler: Ruler,
    exact: Callable[[], int],
    top_first: Iterable[Slot],
    target: int,
    blocked: frozenset[str],
    total: int,
) -> int:
    """Re-admit lost content in protection order while room is left; returns the exact total.

    ``top_first``: the flexible slots in reverse protection order (highest
    first; only as many are drawn as refill visits).  ``exact()`` counts the
    layout's output as it stands (``exact_total`` of its slots); ``total`` is
    its value now (the caller has just counted it).
    """
    short: set[int] = set()  # priorities with a section refill could not give back in full
    for slot in top_first:
        room = target - total
        if room <= 0:
            break
        priority = slot.section.priority
        if priority in short:
            continue
        if slot.outranked:
            if slot.section.min_tokens > room:
                short.add(priority)
                continue
            if not _claim_outranked(ruler, slot):
                continue
        if not slot.cut:
            continue
        if slot.boundary_cut and not slot.dropped:
            short.add(priority)  # the items evicted after a cut boundary item never return before it
            continue
        goal = min(slot.want, slot.size + room)
        if slot.dropped and goal < max(1, slot.section.min_tokens):
            short.add(priority)
            continue
        saved = _save(slot)
        before = slot.size
        was_dropped = slot.dropped
        if was_dropped:
            _undrop(slot)
        grew = _regrow(ruler, slot, goal, blocked) and slot.size > before
        grew = grew and not (was_dropped and slot.size < slot.section.min_tokens)
        new_total = exact() if grew else total
        if not grew or new_total > target:
            _restore(slot, saved)
            short.add(priority)
            continue
        total = new_total
        slot.alloc = slot.size
        slot.truncated = slot.cut_on_claim or slot.size < slot.want
        if slot.is_list and slot.section.policy is None:
            _rewrite_removed(slot)
        slot.act(
            Action(
                "refill",
                "room",
                before,
                slot.size,
                f"re-admitted {slot.size - before:,} tokens into room freed by later compression",
            )
        )
        if not _restored(ruler, slot):
            short.add(priority)
    return total


def _restored(ruler: Ruler, slot: Slot) -> bool:
    """Whether ``slot`` got back everything compression took."""
    if slot.is_list and slot.section.policy is None:
        return slot.evicted_groups <= slot.claim_evicted
    if not slot.is_list and slot.source is not None:
        return slot.size >= min(slot.want, ruler.size_of_text(slot, slot.source))
    return slot.size >= slot.want


def _claim_outranked(ruler: Ruler, slot: Slot) -> bool:
    """Claim a section dropped before its claim, then drop it as compression would; False if it is empty."""
    if slot.size == 0:
        return False  # nothing to give back: it keeps its record of an outranked section
    slot.outranked = False
    claim(ruler, slot)
    drop(slot, "budget")  # remembers the claim as what refill may give back
    return slot.want > 0


def _undrop(slot: Slot) -> None:
    """A dropped slot as an empty, live one."""
    slot.dropped = False
    slot.text, slot.size = "", 0
    if slot.is_list:
        slot.kept = [False] * len(slot.units)
        slot.kept_total = 0
        slot.last_kept = -1
        slot.evicted_groups = len(slot.evict_order)
        slot.marker, slot.marker_size = "", 0


def _regrow(ruler: Ruler, slot: Slot, goal: int, blocked: frozenset[str]) -> bool:
    """Grow ``slot`` towards ``goal``; False if the result may not stand (part of an incomplete group)."""
    if not slot.is_list:
        original = slot.section.content
        assert isinstance(original, str)
        source = slot.source
        if ruler.size_of_text(slot, original) <= goal:
            slot.text, slot.size = original, ruler.size_of_text(slot, original)
        elif source is not None and ruler.size_of_text(slot, source) <= goal:
            slot.text, slot.size = source, ruler.size_of_text(slot, source)
        else:
            slot.text, slot.size = cut_text(ruler, slot, source if source is not None else original, goal)
    elif slot.section.policy is not None:
        fill_with_selector(ruler, slot, goal)
        return not (blocked and any(slot.kept[u.index] and u.item.group in blocked for u in slot.units))
    else:
        restore_groups(ruler, slot, goal, blocked, keep_marker=bool(slot.marker))
    return True


def _rewrite_removed(slot: Slot) -> None:
    """Removal records for the units still out: a section no longer dropped loses them to the budget."""
    existing = {r.id: r for r in slot.removed}
    out = []
    for unit in slot.units:
        if slot.kept[unit.index]:
            continue
        record = existing.get(unit.item.id)
        if record is None or record.reason == "section dropped":
            record = removed_record(slot, unit, "budget") if record is None else replace(record, reason="budget")
        out.append(record)
    slot.removed = tuple(out)


_FIELDS = (
    "text",
    "size",
    "alloc",
    "kept_total",
    "last_kept",
    "evicted_groups",
    "marker",
    "marker_size",
    "dropped",
    "truncated",
    "actions",
    "removed",
    "selection",
    "units",
    "evict_order",
)


def _save(slot: Slot) -> dict[str, object]:
    saved = {name: getattr(slot, name) for name in _FIELDS}
    saved["kept"] = list(slot.kept)
    return saved


def _restore(slot: Slot, saved: dict[str, object]) -> None:
    for name, value in saved.items():
        setattr(slot, name, value)
