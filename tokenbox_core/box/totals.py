"""Step 1, measuring (continued): the exact count of what a layout emits.

Sizes add up wherever the counter says a join is neutral (for o200k/cl100k:
after a newline, before a non-space); other joins are re-counted as one
string.  The last unit is counted without the trailing separator it was
measured with.  Items whose size the caller vouched for (``Item.tokens``)
count as vouched and are never re-counted.  Messages mode adds the priming
tokens to the message sizes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tokenbox_core.tokens import PRIMING_TOKENS, count_concat
from tokenbox_core.tokens.fast_tail import count_minus

from .measure import Ruler
from .state import Emitted, Slot

__all__ = ["emitted", "exact_total", "exact_total_fast"]


def emitted(ruler: Ruler, slot: Slot) -> list[Emitted]:
    """Emitted units of a slot as (text, trailing separator, size of text + separator, vouched)."""
    if slot.dropped or slot.size == 0:
        return []
    if not slot.is_list:
        return [(slot.text, ruler.separator, slot.size, False)] if slot.text else []
    template = slot.template
    whole = slot.units_shared and not slot.marker and template is not None and all(slot.kept)
    if whole and template is not None and template.emitted is not None:
        return template.emitted  # the whole list as measured (callers never mutate it)
    isep = slot.section.item_separator
    out: list[Emitted] = []
    if slot.marker:
        out.append((slot.marker, isep, slot.marker_size, False))
    for unit in slot.units:
        if slot.kept[unit.index] and (unit.text or unit.vouched):
            out.append((unit.text, isep, unit.size, unit.vouched))
    if out and not out[-1][3]:
        text = out[-1][0]
        out[-1] = (text, ruler.separator, ruler.counter.count(text + ruler.separator), False)
    if whole and template is not None:
        template.emitted = out
    return out


def exact_total(ruler: Ruler, slots: Sequence[Slot]) -> int:
    """The exact count of what ``slots`` emit, joined as the layout joins them."""
    if ruler.mode == "messages":
        return PRIMING_TOKENS + sum(s.size for s in slots if not s.dropped)
    counter = ruler.counter
    neutral = getattr(counter, "neutral_join", None)
    sep = ruler.separator
    if neutral is not None and sep.endswith("\n"):
        fast = exact_total_fast(ruler, slots, neutral)
        if fast is not None:
            return fast
    units: list[Emitted] = []
    for slot in slots:
        if slot.dropped or slot.size == 0:
            continue
        if slot.is_list:
            units.extend(emitted(ruler, slot))
        elif slot.text:
            units.append((slot.text, sep, slot.size, False))
    if not units:
        return 0
    text, _, size, vouched = units[-1]
    units[-1] = (text, "", size if vouched else count_minus(counter, text, sep, joined=size), vouched)  # tail only
    total = sum(u[2] for u in units if u[3])
    plain = [u for u in units if not u[3]]
    if neutral is None:
        return total + count_concat(counter, [t + tr for t, tr, _, _ in plain])
    group: list[Emitted] = []
    prev_end = ""
    for unit in units:
        text, trailing, _, vouched = unit
        start = text[:1] or trailing[:1]
        if vouched:
            total += _group_size(ruler, group)
            group = []
            prev_end = ""
            continue
        if group and start and not neutral(prev_end, start):
            group.append(unit)
        else:
            total += _group_size(ruler, group)
            group = [unit]
        end = (trailing or text)[-1:]
        if end:
            prev_end = end
    return total + _group_size(ruler, group)


def exact_total_fast(ruler: Ruler, slots: Sequence[Slot], neutral: Callable[[str, str], bool]) -> int | None:
    """The common case: every join follows a newline and precedes a neutral character.

    Then the exact total is the sum of the measured sizes, with the last
    unit re-counted without its separator.  Returns None when some join
    needs re-counting (the general path handles it).
    """
    total = 0
    last_text = ""
    last_size = 0
    last_vouched = False
    first = True
    for slot in slots:
        if slot.dropped:
            continue
        size = slot.size
        if size == 0:
            continue
        if not slot.is_list:
            text = slot.text
            if not text:
                continue
            if not first:
                template = slot.template
                if template is not None and text is slot.section.content:
                    if not template.start_ok:
                        return None
                elif not neutral("\n", text[0]):
                    return None
            total += size
            last_text = text
            last_size = size
            last_vouched = first = False
            continue
        if not slot.section.item_separator.endswith("\n"):
            return None
        for text, _, size, vouched in emitted(ruler, slot):
            if not vouched and (not text or (not first and not neutral("\n", text[0]))):
                return None
            total += size
            last_text, last_size, last_vouched, first = text, size, vouched, False
    if first:
        return 0
    if last_vouched:
        return total
    return total - last_size + count_minus(ruler.counter, last_text, ruler.separator, joined=last_size)  # tail only


def _group_size(ruler: Ruler, group: list[Emitted]) -> int:
    if not group:
        return 0
    if len(group) == 1:
        return group[0][2]
    return ruler.counter.count("".join(t + tr for t, tr, _, _ in group))
