"""Incremental re-layout: a call that edits a few sections re-decides only where the edit can reach (issue 16 §1).

After each layout a :class:`~tokenbox_core.box.TokenBox` keeps its settled
state (:class:`Settled`): the records, the protection order, each section's
claim, and three positions in that order —

- ``stop``: every section from here up was claimed (its claim is known);
- ``low``: every section below is *outranked* (dropped unmeasured);
- ``high``: every section from here up is *whole*: a plain text section
  (no basis, ``max_tokens``, policy or lens; measured, not empty) claimed
  whole and left untouched.

When the next call has the same configuration, the same protection order
and differs in a few flexible sections, the layout is computed over a
*window* of the protection order only, ``[o, w)``:

1. the claims above the window are the known claims (sums over the frozen
   part, with the edited sections' new claims), so the section where the
   claims cross the target is found by a binary search over suffix sums;
2. the window spans that section, a few sections below it (what refill
   may give back) and a margin above it (what compression may still
   reach), and at least every non-plain section above it;
3. the real steps run over the window — :func:`~.flow.claims` from the
   running total the frozen part leaves, compression, :func:`~.flow.settle`,
   refill — with the exact total counted over the window, the critical
   sections and three stand-ins for the frozen part (its first and last
   section and one slot carrying the rest), which is the same sum
   :func:`~.totals.exact_total` takes over all slots when every join is neutral;
4. records are rebuilt for the window and wherever a section changed or
   changed class (outranked, whole); every other record is the previous
   layout's (records are immutable, so sharing them is copy-on-write).

Everything the algorithm does outside the window is provably nothing:
above it every section is claimed whole and compression never arrives
(a step that would reach beyond the window raises
:class:`~.flow.OutOfReach`), expansion has no free space (the claims
overflow), refill skips whole sections; below it every section is
outranked, compression skips them, and where refill still has room at the
window's bottom it goes on below, the sections there made as it reaches
them (they join the window).

Sections appended, removed (one, plus appends: a sliding chat window) or
moved in the protection order (priority or shrink edits, a reorder) are no
obstacle: the window argument is about positions of the *new* order, and
every section carried over unchanged keeps its claim, plainness and
previous record at its new position (:mod:`.realign`); new sections count
as edited.

A changed budget (the rest of the configuration the same) is no obstacle
either: claims do not depend on it, so the same window argument runs with
the new limits (the fixed load is the critical sections', also
independent of it); where the claims now cross far below the sections
the last layout measured, the window's claims do not overflow and the full
path decides.

Whatever the fast path cannot prove it hands to the full path: a changed
configuration (counter, separator, mode, ...); a critical section added,
removed, edited or moved relative to the others; more than
:data:`MAX_EDITS` edited or appended sections (or inputs that pair with the
previous ones neither position by position nor with one removed); an edited list with atomic groups; a layout with
groups spanning sections; claims that do not overflow the target
(expansion shares free space among all sections); a join that is not
neutral; a compression that would reach above the window.  Hypothesis
properties compare the result with a fresh box's, field by field, over
chains of edits (``tests/core/test_box_incremental.py``).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from itertools import accumulate, chain, compress
from operator import attrgetter, is_not
from typing import Any

from tokenbox_core.errors import SectionError
from tokenbox_core.layout import LaidOutSection
from tokenbox_core.sections import Section
from tokenbox_core.tokens import PRIMING_TOKENS

from .claim import claim
from .compress import compress as compress_order
from .flow import OutOfReach, claims, settle
from .measure import Ruler
from .realign import Carried, align, carry
from .refill import refill
from .results import Results
from .state import Slot, Template
from .totals import exact_total_fast

__all__ = ["ABOVE", "BELOW", "MAX_EDITS", "Settled", "relayout"]

MAX_EDITS = 32
"""A call editing more sections than this takes the full path."""
ABOVE = 8
"""The window reaches this many sections above the one whose claim crosses the target."""
BELOW = 8
"""The window reaches this many sections below it (outranked ones refill may give back)."""

_INDEX = attrgetter("index")


class Settled:
    """The state a layout leaves for the next call (see the module docstring); owned by one call at a time."""

    __slots__ = (
        "config",
        "critical",
        "critical_ids",
        "csize",
        "fixed",
        "high",
        "keep",
        "limit_max",
        "limit_target",
        "low",
        "order",
        "plain",
        "pos_of",
        "records",
        "sections",
        "slots",
        "stop",
    )

    def __init__(
        self,
        config: tuple[Any, ...],
        sections: tuple[Section, ...],
        order: list[int],
        records: tuple[LaidOutSection, ...],
        critical: list[Slot],
        limits: tuple[int, int, int],
        stop: int,
        slots: list[Slot] | None,
    ) -> None:
        self.config = config
        self.sections = sections
        self.order = order
        self.records = records
        self.critical = critical
        self.critical_ids = [s.section.id for s in critical]
        self.fixed, self.limit_max, self.limit_target = limits
        self.stop = stop
        self.slots = slots  # a full layout's slots, turned into the fields below when first needed
        self.csize: list[int] = []
        self.plain: list[bool] = []
        self.pos_of: list[int] = []
        self.low = self.high = 0
        self.keep = True
        """Whether the box keeps this state for its next call (not after a layout with groups across sections)."""

    def derive(self, ruler: Ruler) -> None:
        """Claims, plainness and the low/high positions from a full layout's slots (once, when first needed)."""
        slots = self.slots
        if slots is None:
            return
        self.slots = None
        order = [slots[i] for i in self.order]
        self.csize = [-1 if s.outranked else s.base_size for s in order]
        self.plain = [is_plain(ruler, s.section, s.template) for s in order]
        pos_of = [-1] * len(slots)
        for k, i in enumerate(self.order):
            pos_of[i] = k
        self.pos_of = pos_of
        self.low, self.high = _bounds(order, self.records)


def _bounds(order: Sequence[Slot], records: Sequence[Any]) -> tuple[int, int]:
    """Where the outranked slots at the bottom of ``order`` end, and where the slots whose records are their
    templates' untouched ones begin at its top (the window a later call re-decides lies between)."""
    low = 0
    while low < len(order) and order[low].outranked:
        low += 1
    high = len(order)
    while high > low:
        slot = order[high - 1]
        if slot.template is None or records[slot.index] is not slot.template.untouched:
            break
        high -= 1
    return low, high


def is_plain(ruler: Ruler, section: Section, template: Template | None) -> bool:
    """A measured, non-empty section whose claim is its whole content and that no step but a cut touches.

    In text mode its every emitted join must also be neutral (a text that
    starts where a token cannot span the separator before it; a list's
    items likewise, joined by an item separator ending in a newline), so
    its part of the exact total is its size (:func:`~.totals.exact_total_fast`).
    """
    if (
        template is None
        or template.size <= 0
        or section.basis is not None
        or section.max_tokens is not None
        or section.policy is not None
        or section.strategy
        or section.shrink == 0
    ):
        return False
    if not ruler.text_mode:
        return True
    units = template.units
    if units is None:
        return template.start_ok
    neutral = getattr(ruler.counter, "neutral_join", None)
    return (
        neutral is not None
        and section.item_separator.endswith("\n")
        and all(u.vouched or not u.text or neutral("\n", u.text[0]) for u in units)
    )


def relayout(
    ruler: Ruler,
    results: Results,
    prev: Settled,
    sections: tuple[Section, ...],
    order: list[int],
    strict: bool,
    config: tuple[Any, ...],
    limits: tuple[int, int, int],
) -> tuple[tuple[LaidOutSection, ...], int, Settled] | None:
    """The records and exact total of ``sections`` computed from ``prev`` over a window, or None (full path).

    The caller has checked that the configuration ``config`` is ``prev``'s
    but for the budget, whose limits (fixed load, max, target) are
    ``limits``: claims do not depend on the budget, only where they cross
    the target does; ``order`` is the protection order of ``sections``.
    Returns the new state too.
    """
    old = prev.sections
    n = len(sections)
    if n == len(old) and order == prev.order:  # positions unchanged: the state is used in place
        edited = list(compress(range(n), map(is_not, old, sections)))
        if len(edited) > MAX_EDITS or not (edited or limits != (prev.fixed, prev.limit_max, prev.limit_target)):
            return None
        if any(old[i].shrink == 0 for i in edited):
            return None  # a critical section edited: the fixed load changes
        prev.derive(ruler)
        csize, plain, pos_of = prev.csize, prev.plain, prev.pos_of
        records: list[Any] = list(prev.records)
        stop, low, high, critical = prev.stop, prev.low, prev.high, prev.critical
    else:  # appended, removed or moved sections: the state is carried to the new positions (.realign)
        moved = _carried(ruler, prev, sections, order)
        if moved is None:
            return None
        edited, critical, kept = moved
        csize, plain, pos_of, records = kept.csize, kept.plain, kept.pos_of, kept.records
        stop, low, high = kept.stop, kept.low, kept.high
    for i in edited:
        new = sections[i]
        if new.shrink == 0:
            return None
        if type(new.content) is not str and any(it.group is not None for it in new.items):
            return None
    fresh = ruler.new_slots([sections[i] for i in edited], edited)
    try:
        ruler.ensure_measured(fresh)
    except SectionError:
        return None  # the full path decides whether this section is ever measured (and so fails)
    for slot in fresh:
        k = pos_of[slot.index]
        plain[k] = is_plain(ruler, slot.section, slot.template)
        if not plain[k]:
            claim(ruler, slot)  # pure: the same claim the window will make, if it reaches this section
        csize[k] = slot.size
    fixed, limit_max, target = limits
    m = len(order)
    suffix = list(accumulate(reversed(csize[stop:])))  # suffix[j]: the claims of the top j + 1 sections
    j = bisect_right(suffix, target - fixed)  # the first j whose claims cross the target
    cross = m - 1 - j if j < len(suffix) else stop  # below ``stop``: somewhere not yet known
    reach = 0 if j < len(suffix) else _reach(suffix, target - fixed)
    top_mixed = m - 1 - plain[::-1].index(False) if False in plain else -1
    w = min(m, max(cross + 1 + ABOVE, top_mixed + 1))
    o = max(0, cross - BELOW - reach)
    frozen = suffix[m - w - 1] if w < m else 0
    window = ruler.new_slots([sections[i] for i in order[o:w]], order[o:w])
    running, crossed = claims(ruler, window, fixed + frozen, target)
    if not (running > target or (o == 0 and running >= target)):
        return None  # the claims do not overflow here: the full path (expansion, or claims further down)
    below: list[Slot] = []  # outranked slots under the window that refill reached, highest first
    exact = _exact(ruler, critical, window, below, sections, order, w, frozen)
    if exact is None:
        return None
    estimate = fixed + frozen + sum(s.size for s in window if not s.dropped)
    try:
        if estimate > target and compress_order(ruler, window, estimate - target) > 0:
            return None
        total = settle(ruler, exact, window, target, bounded=True)
        if not strict and total < target:
            walk = chain(reversed(window), _outranked(sections, order, o, below))
            total = refill(ruler, exact, walk, target, frozenset(), total)
    except OutOfReach:
        return None
    touched = [j for j, slot in enumerate(below) if not slot.outranked]  # refill measured (and maybe re-admitted)
    if touched:  # refill went on below the window: the sections down to the lowest it touched join the window
        joined = below[: touched[-1] + 1]  # those it passed over stay outranked, as their records say
        o -= len(joined)
        window[:0] = joined[::-1]
        crossed += len(joined)
    for slot, record in zip(window, results.results(window), strict=True):
        records[slot.index] = record
    patch = {*edited, *order[min(low, o) : o], *order[w : max(high, w)]}
    for i in sorted(patch):
        k = pos_of[i]
        if k < o:
            records[i] = results.outranked(sections[i])
        elif k >= w:
            records[i] = _whole(ruler, results, sections[i], i)
    nxt = Settled(config, sections, order, tuple(records), critical, (fixed, limit_max, target), o + crossed, None)
    for slot in window[crossed:]:
        csize[pos_of[slot.index]] = slot.base_size
    low, high = _bounds(window, records)
    nxt.csize, nxt.plain, nxt.pos_of, nxt.low, nxt.high = csize, plain, pos_of, o + low, o + high
    return nxt.records, total, nxt


def _reach(suffix: Sequence[int], room: int) -> int:
    """How many sections below the known claims the window reaches when they all fit (a larger budget, or
    smaller claims): twice as many as the room they leave holds at their average claim, so the claims cross
    inside the window unless the sections below are much smaller (then they do not overflow: full path)."""
    known = suffix[-1] if suffix else 0
    if room <= known:
        return 0
    average = known / len(suffix) if known > 0 else 1.0
    return int(2 * (room - known) / max(1.0, average)) + 1


def _carried(
    ruler: Ruler, prev: Settled, sections: tuple[Section, ...], order: list[int]
) -> tuple[list[int], list[Slot], Carried] | None:
    """The edited indices, the critical slots and the state carried to new positions, or None (full path).

    Every critical section must be carried over unchanged (same object, same
    relative order), so the fixed load and the target stay the previous ones.
    """
    old = prev.sections
    paired = align(old, sections, MAX_EDITS)
    if paired is None:
        return None
    of_old, edited, r, shift = paired
    if not edited and len(sections) == len(old):
        return None
    if any(sections[i].shrink == 0 for i in edited):
        return None  # a critical section added or edited
    new_index: list[int] = []
    for slot in prev.critical:
        c = slot.index
        if shift and c == r:
            return None  # a critical section removed
        i = c if c < r else c - shift
        if i >= len(of_old) or of_old[i] != c or sections[i] is not old[c]:
            return None  # a critical section edited or removed
        new_index.append(i)
    critical = prev.critical
    if any(slot.index != i for slot, i in zip(critical, new_index, strict=True)):
        critical = ruler.new_slots([sections[i] for i in new_index], new_index)
        ruler.ensure_measured(critical)  # memoised: the previous layout measured them
    prev.derive(ruler)
    state = (prev.csize, prev.plain, prev.pos_of, prev.stop, prev.low, prev.high)
    return edited, critical, carry(state, prev.records, of_old, edited, order)


def _outranked(sections: tuple[Section, ...], order: list[int], o: int, below: list[Slot]) -> Iterator[Slot]:
    """The slots under the window, highest first, as the claims left them (outranked), made as refill asks.

    They are made bare (no measurement attached: refill reads only the
    section until it measures one, and ``Ruler.ensure_measured`` then finds
    a memoised measurement); a slot made but not visited stays outranked,
    as it would in the full path.
    """
    new = object.__new__
    for k in range(o - 1, -1, -1):
        i = order[k]
        slot = new(Slot)
        slot.__dict__ = {
            "section": sections[i],
            "template": None,
            "index": i,
            "critical": False,
            "dropped": True,
            "outranked": True,
        }
        below.append(slot)
        yield slot


def _whole(ruler: Ruler, results: Results, section: Section, index: int) -> LaidOutSection:
    """The record of a plain section claimed whole and left untouched."""
    slot = ruler.new_slots([section], [index])[0]
    slot.base_size = slot.alloc = slot.size
    return results.results([slot])[0]


def _exact(
    ruler: Ruler,
    critical: list[Slot],
    window: list[Slot],
    below: list[Slot],
    sections: tuple[Section, ...],
    order: list[int],
    w: int,
    frozen: int,
) -> Callable[[], int] | None:
    """The exact total of the layout as a function of the window's slots (the frozen part is whole)."""
    if not ruler.text_mode:
        base = PRIMING_TOKENS + sum(s.size for s in critical) + frozen
        return lambda: base + sum(s.size for s in chain(window, below) if not s.dropped)
    neutral = getattr(ruler.counter, "neutral_join", None)
    if neutral is None or not ruler.separator.endswith("\n"):
        return None
    above = order[w:]
    stand_ins: list[Slot] = []
    if above:
        first, last = min(above), max(above)
        stand_ins = ruler.new_slots([sections[first]], [first])
        if last != first:
            stand_ins += ruler.new_slots([sections[last]], [last])
            rest = frozen - stand_ins[0].size - stand_ins[1].size
            if rest > 0:  # every other frozen section: neutral at its start, so only its size matters
                carrier = Slot(sections[first], None, first, False)
                carrier.text, carrier.size = str(sections[first].content), rest
                stand_ins.insert(1, carrier)
    fixed_part = [*critical, *stand_ins]

    def exact() -> int:  # dropped slots emit nothing: only the live ones are ordered and summed
        live = [s for s in chain(window, below) if not s.dropped]
        slots = sorted([*fixed_part, *live], key=_INDEX)
        total = exact_total_fast(ruler, slots, neutral)
        if total is None:
            raise OutOfReach  # a join that needs re-counting: the full path
        return total

    return exact
