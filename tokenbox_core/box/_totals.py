"""Step 2, measuring (continued): the exact count of what a layout emits.

Sizes carry their separators, so their sum is nearly the total; but BPE can
merge across a join, so what a layout emits is counted as it is joined: the
emitted units joined as the layout joins them, the last without its separator.
Where no token can span any join of a run (the rule of
:mod:`tokenbox_core.tokens._cut`: after a ``"\n"`` comes neither whitespace
nor ``"/"``, as after the default separator and prose), the run's count is the
sum of its units' exact sizes, the last one counted without its separator;
elsewhere the run is re-counted.  Items whose size the caller vouched for
(``Item.tokens``) count as vouched and split the text around them into runs
counted apart.  Messages mode adds the priming tokens to the message sizes (a
message's size is exact).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

from tokenbox_core.tokens import PRIMING_TOKENS
from tokenbox_core.tokens._cut import count_joined, splits

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
        out[-1] = (text, ruler.separator, count_joined(ruler.counter, text, ruler.separator, ruler.rule), False)
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
    run: list[Emitted] = []  # the units since the last vouched one
    for unit in units:
        if unit[3]:
            total += unit[2] + _run_count(ruler, run)
            run = []
        else:
            run.append(unit)
    return total + _run_count(ruler, run)


def _run_count(ruler: Ruler, run: Sequence[Emitted]) -> int:
    """The count of ``run``'s units joined: their sizes' sum where no token spans a join, else a count."""
    if not run:
        return 0
    if ruler.rule and all(splits(a[1] or a[0], b[0]) for a, b in pairwise(run)):
        text, trailing, size, _ = run[-1]
        last = size if trailing else ruler.counter.count(text)  # the very last unit goes without its separator
        return sum(unit[2] for unit in run[:-1]) + last
    return ruler.counter.count("".join(text + trailing for text, trailing, _, _ in run))
