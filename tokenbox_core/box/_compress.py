"""Step 5, compression: lenses, cuts, eviction and drops (``docs/concepts.md#the-token-box``).

Over budget, flexible sections are visited in (priority ASC, shrink DESC,
declaration order).  Each gets its lens pipeline, then is truncated by
exactly ``min(deficit, size - min_tokens)``, then, if the total is still
over, dropped whole.  Lists shrink by whole items in their eviction order
without splitting atomic groups; a list with a selection policy is refilled
by its policy (:mod:`._selector`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tokenbox_core.errors import SectionError
from tokenbox_core.layout import Action
from tokenbox_core.lenses import LIST_LENSES, apply_lens, lens_name
from tokenbox_core.tokens._cut import count_joined, fit

from ._measure import Ruler
from ._selector import fill_with_selector
from ._state import MARKER_IDS_SHOWN, MAX_PASSES, Slot, Unit, removed_record

__all__ = ["apply_lenses", "compress", "cut_text", "drop", "settle", "shrink_to"]


def compress(ruler: Ruler, order: Sequence[Slot], deficit: int) -> int:
    """Visit ``order`` (compression order) until ``deficit`` tokens are freed; returns what is left of it."""
    for slot in order:
        if deficit <= 0:
            return deficit
        if slot.dropped or slot.size == 0:
            continue
        slot.remember()
        before = slot.size
        if slot.section.strategy and not slot.lensed:
            apply_lenses(ruler, slot, max(slot.section.min_tokens, slot.size - deficit))
            deficit -= before - slot.size
            if deficit <= 0:
                return deficit
        cut = min(deficit, slot.size - slot.section.min_tokens)
        if cut >= slot.size:  # cut to nothing is a drop: no need to tokenise a truncation
            deficit -= slot.size
            drop(slot, "budget")
            continue
        if cut > 0:
            size = slot.size
            shrink_to(ruler, slot, size - cut, reason="budget")
            deficit -= size - slot.size
        if deficit > 0 and slot.size > 0:
            deficit -= slot.size
            drop(slot, "budget")
    return deficit


def settle(ruler: Ruler, total: Callable[[], int], order: Sequence[Slot], limit_target: int) -> int:
    """Re-count the output exactly; compress again while BPE merges at the joins leave it over the target."""
    exact = total()
    passes = 0
    while exact > limit_target and passes < MAX_PASSES:
        compress(ruler, order, exact - limit_target)
        exact = total()
        passes += 1
    for slot in order:  # pathological joins only: drop what is left, lowest first
        if exact <= limit_target:
            break
        if not slot.dropped:
            drop(slot, "budget")
            exact = total()
    return exact


def apply_lenses(ruler: Ruler, slot: Slot, target: int) -> None:
    """Run the section's lens pipeline once, aiming at ``target`` units."""
    counter = ruler.counter
    slot.lensed = True
    for lens in slot.section.strategy:
        if isinstance(lens, str) and lens in LIST_LENSES:
            if not slot.is_list:
                raise SectionError(f"section {slot.section.id!r}: lens {lens!r} applies to list sections only")
            continue
        name = lens_name(lens)
        before = slot.size
        if not slot.is_list:
            whole = slot.text is slot.section.content or slot.text == slot.section.content
            content = counter.count(slot.text)
            room = max(0, target - (before - content))
            slot.text, _ = apply_lens(lens, slot.text, room, counter, before=content)
            slot.size = ruler.size_of_text(slot, slot.text)
            if whole or slot.source is not None:
                slot.source = slot.text  # the whole content through the lenses so far
        else:
            for unit in slot.units:
                if not slot.kept[unit.index]:
                    continue
                n = counter.count(unit.text)
                text, _ = apply_lens(lens, unit.text, n, counter, before=n)
                if text != unit.text:
                    old = unit.size
                    unit.text = text
                    unit.size = ruler.unit_size(slot, unit)
                    slot.kept_total += unit.size - old
            slot.size = ruler.list_size(slot)
        if slot.size != before:
            slot.act(Action("lens", name, before, slot.size, f"lens {name!r}"))


def cut_text(ruler: Ruler, slot: Slot, text: str, alloc: int) -> tuple[str, int]:
    """Cut text so its emitted size is at most ``alloc``: (the cut, its emitted size); ``("", 0)`` when nothing fits.

    The largest cut whose text with its separator (or message overhead) fits: with a tiktoken counter from one
    encode (:func:`tokenbox_core.tokens._cut.fit`), else by lowering the cut's limit until it fits.
    """
    extra = 0 if ruler.text_mode else ruler.message_overhead(ruler.role(slot))
    if ruler.encoded is not None:
        suffix = ruler.separator if ruler.text_mode else ""
        out, size = fit(ruler.encoded, text, suffix, alloc - extra, slot.section.keep, ruler.ends)
        return out, size + extra if out else 0
    overhead = ruler.size_of_text(slot, text) - ruler.counter.count(text)  # the separator or message overhead
    limit = max(0, alloc - overhead)
    while limit > 0:
        out = ruler.counter.truncate(text, limit, keep=slot.section.keep)
        size = ruler.size_of_text(slot, out)
        if size <= alloc:
            return out, size
        limit -= 1
    return "", 0


def shrink_to(ruler: Ruler, slot: Slot, alloc: int, *, reason: str, record_as: str = "truncate") -> None:
    """Bring ``slot`` down to at most ``alloc``: cut its text, or evict whole groups of its items."""
    before = slot.size
    alloc = max(0, alloc)
    if not slot.is_list:
        slot.text, slot.size = cut_text(ruler, slot, slot.text, alloc)
        if slot.size < before:
            slot.act(
                Action(
                    record_as,
                    f"keep_{slot.section.keep}",
                    before,
                    slot.size,
                    f"cut {before - slot.size} units to fit {alloc} ({reason})",
                )
            )
    else:
        evict_to(ruler, slot, alloc, reason)
    if record_as == "truncate" and slot.size < before:
        slot.truncated = slot.cut = True
    slot.alloc = slot.size


def evict_to(ruler: Ruler, slot: Slot, alloc: int, reason: str) -> None:
    """Remove whole groups in eviction order until the list fits ``alloc``.

    The marker is recomputed once per round rather than per item, so
    evicting thousands of items costs a few counts, not thousands.
    """
    if slot.section.policy is not None:  # a selection policy decides the items
        fill_with_selector(ruler, slot, alloc)
        return
    before = slot.size
    start = slot.evicted_groups
    order = slot.evict_order
    done = False
    while not done and slot.size > alloc and slot.evicted_groups < len(order):
        # one round: evict by running sizes against the current marker size
        while slot.evicted_groups < len(order):
            group = order[slot.evicted_groups]
            if slot.section.partial and len(group) == 1 and ruler.text_mode:
                ruler.set_marker(slot)
                if _cut_boundary(ruler, slot, slot.units[group[0]], alloc):
                    done = True
                    break
            slot.set_kept(group, False)
            slot.evicted_groups += 1
            if ruler.list_size(slot) <= alloc:
                break
        ruler.set_marker(slot)
        slot.size = ruler.list_size(slot)
    if slot.size > alloc and slot.marker and slot.evicted_groups == len(order):
        ruler.fit_marker(slot, alloc)
        slot.size = ruler.list_size(slot)
    removed = [slot.units[i] for g in order[start : slot.evicted_groups] for i in g]
    slot.remove([removed_record(slot, u, reason) for u in removed])
    if removed:
        ids = [u.item.id for u in removed]
        shown = ", ".join(ids) if len(ids) <= MARKER_IDS_SHOWN else f"{', '.join(ids[:MARKER_IDS_SHOWN])}, …"
        slot.act(
            Action(
                "evict",
                slot.section.eviction,
                before,
                slot.size,
                f"removed {len(ids)} {'item' if len(ids) == 1 else 'items'} to fit {alloc} ({reason}): {shown}",
            )
        )


def _cut_boundary(ruler: Ruler, slot: Slot, unit: Unit, alloc: int) -> bool:
    """Partial truncation of the boundary item: keep as much of it as fits (text mode)."""
    i = unit.index
    if not slot.kept[i] or unit.vouched:  # a vouched size cannot be re-derived for a cut
        return False
    counter = ruler.counter
    saved_text, saved_size = unit.text, unit.size
    isep = slot.section.item_separator
    full = counter.count(saved_text)

    def size_with(text: str) -> int:
        unit.text = text
        new = count_joined(counter, text, isep, ruler.rule) if text else 0
        slot.kept_total += new - unit.size
        unit.size = new
        if text and i > slot.last_kept:  # the last-kept cursor only walks back: re-arm it
            slot.last_kept = i
        return ruler.list_size(slot)

    # When the list is over ``alloc`` even with this item emptied, no cut of it can fit, so skip the
    # search (each step tokenises the item): evicting 140 of 200 chunks no longer costs ~1,200 counts.
    if size_with("") > alloc:
        size_with(saved_text)
        unit.text, unit.size = saved_text, saved_size
        return False

    lo, hi, best = 1, full - 1, ""
    while lo <= hi:  # the longest cut of this item that lets the list fit
        mid = (lo + hi) // 2
        candidate = counter.truncate(saved_text, mid, keep=slot.section.keep)
        if candidate and size_with(candidate) <= alloc:
            best, lo = candidate, mid + 1
        else:
            hi = mid - 1
    if not best:
        size_with(saved_text)
        unit.text, unit.size = saved_text, saved_size
        return False
    size_with(best)
    slot.act(Action("truncate", unit.item.id, saved_size, unit.size, f"partial cut of boundary item {unit.item.id!r}"))
    slot.truncated = slot.boundary_cut = True
    return True


def drop(slot: Slot, reason: str) -> None:
    """Drop ``slot`` whole: its text, every kept item, its marker."""
    slot.remember()
    before = slot.size
    slot.cut = True
    if slot.is_list:
        slot.remove([removed_record(slot, u, "section dropped") for u in slot.units if slot.kept[u.index]])
        slot.kept = [False] * len(slot.units)
        slot.kept_total = 0
        slot.evicted_groups = len(slot.evict_order)
        slot.marker, slot.marker_size = "", 0
    slot.text = ""
    slot.size = 0
    slot.dropped = True
    slot.alloc = 0
    min_tokens = slot.section.min_tokens
    slot.act(Action("drop", reason, before, 0, f"dropped whole ({reason}; min_tokens={min_tokens})"))
