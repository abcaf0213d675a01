"""Step 2, measuring (continued): the exact count of what a layout emits.

Sizes carry their separators, so their sum is nearly the total; but BPE can
merge across a join, so what a layout emits is re-counted: the emitted
units joined as the layout joins them, the last without its separator.
Items whose size the caller vouched for (``Item.tokens``) count as vouched
and split the text around them into runs counted apart.  Messages mode adds
the priming tokens to the message sizes (a message's size is exact).
"""

from __future__ import annotations

from collections.abc import Sequence

from tokenbox_core.tokens import PRIMING_TOKENS

from ._measure import Ruler
from ._state import Slot

__all__ = ["emitted", "exact_total"]

Emitted = tuple[str, str, int, bool]
"""An emitted unit: (text, trailing separator, size of text + separator, vouched)."""


def emitted(ruler: Ruler, slot: Slot) -> list[Emitted]:
    """Emitted units of a slot as (text, trailing separator, size of text + separator, vouched)."""
    if slot.dropped or slot.size == 0:
        return []
    if not slot.is_list:
        return [(slot.text, ruler.separator, slot.size, False)] if slot.text else []
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
    return out


def exact_total(ruler: Ruler, slots: Sequence[Slot]) -> int:
    """The exact count of what ``slots`` emit, joined as the layout joins them."""
    if ruler.mode == "messages":
        return PRIMING_TOKENS + sum(s.size for s in slots if not s.dropped)
    units = [unit for slot in slots for unit in emitted(ruler, slot)]
    if not units:
        return 0
    text, _, size, vouched = units[-1]
    units[-1] = (text, "", size, vouched)  # nothing follows the last unit
    total = 0
    run: list[str] = []  # the text since the last vouched unit
    for text, trailing, size, vouched in units:
        if vouched:
            total += size + (ruler.counter.count("".join(run)) if run else 0)
            run = []
        else:
            run.append(text + trailing)
    return total + (ruler.counter.count("".join(run)) if run else 0)
