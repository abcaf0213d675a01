"""Step 1, measuring: templates, units, batch counting and the sizes every other step relies on.

A section's size includes the separator that follows it (text mode) or its
message overhead (messages mode), so sizes add up exactly wherever a join
cannot change a count (:mod:`.totals` re-counts the joins that can).
Measurements are memoised per (immutable) Section object, keyed by what
they depend on (counter, separator, mode), and bounded to
:data:`~.state.MEMO_LIMIT` entries per section (issue 10 item 15), so
re-laying out a conversation after one new turn costs little more than
counting that turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tokenbox_core.errors import SectionError
from tokenbox_core.lenses import LIST_LENSES
from tokenbox_core.sections import Item, Section
from tokenbox_core.tokens import TOKENS_PER_MESSAGE, TokenCounter, count_many, fast_cut
from tokenbox_core.tokens.fast_measure import measure_head, worth_it
from tokenbox_core.tokens.fast_tail import count_plus

from .state import (
    DEFAULT_OMISSION,
    DEFAULT_OMISSION_ONE,
    MARKER_IDS_SHOWN,
    MEMO_ATTR,
    MEMO_LIMIT,
    Mode,
    Slot,
    Template,
    Unit,
)

__all__ = ["NO_GROUPS", "TEXT_TEMPLATE", "Ruler", "eviction_groups"]

NO_GROUPS: list[list[int]] = []
"""The eviction order of a text section's template: shared, since it is only ever read."""
TEXT_TEMPLATE: dict[str, Any] = vars(Template(size=0, units=None, evict_order=NO_GROUPS))
"""A text section's template fields before its size is known (``measure_batch`` copies them)."""


class Ruler:
    """What sizes depend on — the counter, the separator, the mode — and every size the box computes."""

    __slots__ = ("counter", "memo_key", "mode", "reach", "separator", "text_mode")

    def __init__(self, counter: TokenCounter, separator: str, mode: Mode) -> None:
        self.counter = counter
        self.separator = separator
        self.mode: Mode = mode
        self.text_mode = mode == "text"
        # Measurements live on the (immutable) Section objects, keyed by what they depend on, so they
        # die with the section and are shared by boxes with the same counter, separator and mode.
        self.memo_key: tuple[Any, str, str] = (getattr(counter, "_cache_key", counter), separator, mode)
        self.reach: int | None = None
        """The most any section can receive in the current layout (the box sets it); None: unknown."""

    # ------------------------------------------------------------------ sizes

    def message_overhead(self, role: str | None) -> int:
        return TOKENS_PER_MESSAGE + (self.counter.count(role) if role else 0)

    @staticmethod
    def role(slot: Slot, item: Item | None = None) -> str:
        return (item.role if item is not None and item.role else None) or slot.section.role or "user"

    def size_of_text(self, slot: Slot, text: str) -> int:
        """Emitted size of a text section's content (with its separator or message overhead)."""
        if not text:
            return 0
        template = slot.template
        if template is not None and text is slot.section.content and template.units is None:
            return template.size  # the whole content, as measured: no copy, hash or count of megabytes again
        if self.mode == "messages":
            return self.counter.count(text) + self.message_overhead(self.role(slot))
        return count_plus(self.counter, text, self.separator)  # a long text's tail is re-counted, not all of it

    def unit_size(self, slot: Slot, unit: Unit) -> int:
        """A unit's size after its text changed (a vouched size only holds for the original text)."""
        if unit.item.tokens is not None and unit.text == unit.item.content:
            return unit.item.tokens
        unit.vouched = False
        if self.mode == "text" and not unit.text:
            return 0
        if self.mode == "messages":
            return self.counter.count(unit.text) + self.message_overhead(self.role(slot, unit.item))
        return self.counter.count(unit.text + slot.section.item_separator)

    def last_kept(self, slot: Slot) -> int:
        i = slot.last_kept
        kept = slot.kept
        units = slot.units
        text_mode = self.text_mode
        while i >= 0 and not (kept[i] and (units[i].text or units[i].vouched or not text_mode)):
            i -= 1
        slot.last_kept = i
        return i

    def list_size(self, slot: Slot) -> int:
        """kept items + marker; in text mode the last item carries the section separator."""
        last = self.last_kept(slot)
        if last < 0:
            return slot.marker_size
        total = slot.kept_total + slot.marker_size
        if self.text_mode and not slot.units[last].vouched:
            text = slot.units[last].text
            total += self.counter.count(text + self.separator) - self.counter.count(text + slot.section.item_separator)
        return max(0, total)

    # ------------------------------------------------------------------ omission markers

    def set_marker(self, slot: Slot) -> None:
        slot.marker = self.marker_text(slot)
        if not slot.marker:
            slot.marker_size = 0
        elif self.mode == "messages":
            slot.marker_size = self.counter.count(slot.marker) + self.message_overhead(slot.section.role or "user")
        else:
            slot.marker_size = self.counter.count(slot.marker + slot.section.item_separator)

    def fit_marker(self, slot: Slot, alloc: int) -> None:
        """Set the omission marker, unless it alone would push the list over ``alloc`` (a marker is an aid)."""
        self.set_marker(slot)
        if slot.marker and self.list_size(slot) > alloc:
            slot.marker, slot.marker_size = "", 0

    @staticmethod
    def marker_text(slot: Slot) -> str:
        template = slot.section.omission_marker
        if not template or (slot.evicted_groups == 0 and not slot.outcast):
            return ""
        evicted = sorted(
            {i for g in slot.evict_order[: slot.evicted_groups] for i in g if not slot.kept[i]}.union(slot.outcast)
        )
        if not evicted:
            return ""
        ids = [slot.units[i].item.id for i in evicted]
        if len(ids) <= MARKER_IDS_SHOWN:
            shown = ", ".join(ids)
        else:
            shown = f"{', '.join(ids[:3])}, …, {', '.join(ids[-2:])} (+{len(ids) - 5} more)"
        default = DEFAULT_OMISSION_ONE if len(ids) == 1 else DEFAULT_OMISSION
        text = default if template is True else str(template)
        return text.format(count=len(ids), ids=shown, first=ids[0], last=ids[-1])

    # ------------------------------------------------------------------ templates

    def new_slots(self, sections: Sequence[Section], indices: Sequence[int] | None = None) -> list[Slot]:
        """A slot per section, filled from memoised measurements where the section was seen before.

        ``indices``: the sections' positions in the layout's input (default:
        their positions in ``sections``).  Thousands of slots are made per
        call, so a slot's ``__dict__`` is set in one assignment (the same
        state :class:`Slot`'s constructor and :func:`fill` give it; unset
        attributes read the class defaults).
        """
        key = self.memo_key
        slots: list[Slot] = []
        append = slots.append
        new = object.__new__
        for i, section in zip(range(len(sections)) if indices is None else indices, sections, strict=True):
            slot = new(Slot)
            memo = section.__dict__.get(MEMO_ATTR)
            template = memo.get(key) if memo is not None else None
            if template is not None and template.units is None:  # the common case: a measured text section
                state = template.slot_state
                if state is None:
                    state = template.slot_state = {  # not the section: the template is kept on it
                        "template": template,
                        "critical": section.shrink == 0,
                        "size": template.size,
                        "full_size": template.size,
                        "text": section.content,
                    }
                state = state.copy()
                state["section"] = section
                state["index"] = i
                slot.__dict__ = state
            else:
                slot.__dict__ = {"section": section, "template": None, "index": i, "critical": section.shrink == 0}
                if template is not None:
                    fill(slot, template)
            append(slot)
        return slots

    def ensure_measured(self, slots: Sequence[Slot]) -> None:
        """Measure (in one batch) the slots whose sections were not seen before.

        A slot made bare (``incremental``) of a section measured before is filled from its memo.
        """
        key = self.memo_key
        todo: list[Slot] = []
        memos: list[dict[Any, Any] | None] = []
        for slot in slots:
            if slot.template is not None:
                continue
            memo = slot.section.__dict__.get(MEMO_ATTR)
            template = memo.get(key) if memo is not None else None
            if template is not None:
                fill(slot, template)
            else:
                todo.append(slot)
                memos.append(memo)
        if not todo:
            return
        templates = self.measure_batch([s.section for s in todo])
        for slot, memo, template in zip(todo, memos, templates, strict=True):
            section = slot.section
            if memo is None:
                memo = section.__dict__.get(MEMO_ATTR)
                if memo is None:
                    memo = {}
                    object.__setattr__(section, MEMO_ATTR, memo)
            if len(memo) >= MEMO_LIMIT and key not in memo:
                del memo[next(iter(memo))]  # bounded: the oldest measurement goes first
            memo[key] = template
            fill(slot, template)

    def measure_batch(self, sections: Sequence[Section]) -> list[Template]:
        """Templates for ``sections``, every string they need counted in one batch.

        One pass collects the strings (a section's are ``strings[starts[k]:starts[k + 1]]``), one
        ``count_many`` counts them, one pass makes the templates; whether a join before a text is
        neutral depends on its first character only, so it is asked once per distinct first character.
        """
        text_mode = self.text_mode
        sep = self.separator
        partial_min = fast_cut.PARTIAL_MIN_CHARS
        strings: list[str] = []
        append = strings.append
        extend = strings.extend
        starts: list[int] = []
        mark = starts.append
        known: dict[int, int] = {}  # long texts measured by their prefix (fast_measure), by section position
        for pos, section in enumerate(sections):
            mark(len(strings))
            text = section.content
            if isinstance(text, str):
                if len(text) >= partial_min:
                    head = self._measure_head(section, text)
                    if head is not None:
                        known[pos] = head
                        continue
                if text:
                    append(text + sep if text_mode else text)
            else:
                isep = section.item_separator
                items = section.items
                if text_mode:
                    extend([it.content + isep for it in items if it.tokens is None and it.content])
                    if items and items[-1].tokens is None and items[-1].content:
                        append(items[-1].content + sep)
                else:
                    extend([it.content for it in items if it.tokens is None])
        mark(len(strings))
        counts = count_many(self.counter, strings)
        neutral = getattr(self.counter, "neutral_join", None)
        start_ok: dict[str, bool] = {"": False}  # by the text's first character
        out: list[Template] = []
        new = object.__new__
        fresh = TEXT_TEMPLATE
        for pos, section in enumerate(sections):
            text = section.content
            start = starts[pos]
            if not isinstance(text, str):
                out.append(self._list_template(section, counts[start : starts[pos + 1]]))
                continue
            measured = pos in known or starts[pos + 1] > start
            size = (known[pos] if pos in known else counts[start]) if measured else 0
            if measured and not text_mode:
                size += self.message_overhead(section.role or "user")
            first = text[:1]
            ok = start_ok.get(first)
            if ok is None:
                ok = start_ok[first] = bool(neutral and neutral("\n", first))
            template = new(Template)  # Template(size=size, start_ok=...) without the keyword handling
            state = fresh.copy()
            state["size"] = size
            state["start_ok"] = ok
            template.__dict__ = state
            out.append(template)
        return out

    def _measure_head(self, section: Section, text: str) -> int | None:
        """A long text a cut will shorten: measured by encoding the most it can keep and counting the rest."""
        reach = self.reach
        if reach is None or section.shrink == 0:
            return None  # a critical section is never cut
        if section.max_tokens is not None:
            reach = min(reach, section.max_tokens)
        if not worth_it(self.counter, text, reach):
            return None
        suffix = self.separator if self.text_mode else ""
        return measure_head(self.counter, text, suffix, reach, section.keep)  # type: ignore[arg-type]

    def _list_template(self, section: Section, values: Sequence[int]) -> Template:
        """A list section's template from its counted strings (``measure_batch``'s order)."""
        text_mode = self.text_mode
        units: list[Unit] = []
        append = units.append
        pos = 0
        kept_total = 0
        for i, item in enumerate(section.items):
            tokens = item.tokens
            if tokens is not None:
                if tokens < 0:
                    raise SectionError(
                        f"item {item.id!r} in section {section.id!r} has a negative size ({tokens}); "
                        f"Item.tokens must be >= 0"
                    )
                append(Unit(item, i, item.content, tokens, True))
                kept_total += tokens
                continue
            content = item.content
            if text_mode and not content:  # an empty item emits nothing, not even a separator
                append(Unit(item, i, "", 0))
                continue
            size = values[pos]
            if not text_mode:
                size += self.message_overhead(item.role or section.role or "user")
            pos += 1
            append(Unit(item, i, content, size))
            kept_total += size
        last = units[-1] if units else None
        if last is None or not text_mode:
            size = kept_total  # every unit kept, no marker: list_size is the kept total
        elif not last.vouched and last.text:
            size = max(0, kept_total + values[pos] - last.size)  # values[pos]: the last item + the separator
        else:
            probe = Slot(
                section,
                None,
                0,
                section.critical,
                is_list=True,
                units=units,
                kept=[True] * len(units),
                kept_total=kept_total,
                last_kept=len(units) - 1,
            )
            size = self.list_size(probe)
        return Template(
            size=size, units=tuple(units), evict_order=eviction_groups(section, units), kept_total=kept_total
        )


def fill(slot: Slot, template: Template) -> None:
    """Set ``slot`` to its section's whole, measured content."""
    slot.template = template
    slot.size = slot.full_size = template.size
    if template.units is None:
        slot.text = slot.section.content  # type: ignore[assignment]
    else:
        slot.is_list = True
        slot.units = list(template.units)
        slot.units_shared = True
        slot.kept = [True] * len(slot.units)
        slot.kept_total = template.kept_total
        slot.last_kept = len(slot.units) - 1
        slot.evict_order = template.evict_order


def eviction_groups(section: Section, units: Sequence[Unit]) -> list[list[int]]:
    """Atomic groups of unit indices in the order they are evicted.

    Pinned groups go last; then lower item priority first; then the
    section's eviction order (oldest first, newest first, or lowest score
    first with ties losing the later item).
    """
    eviction = section.eviction
    for lens in section.strategy:
        if isinstance(lens, str) and lens in LIST_LENSES:
            eviction = LIST_LENSES[lens]  # type: ignore[assignment]
    if all(unit.item.group is None for unit in units):  # the common case: every group is one item
        items = [unit.item for unit in units]
        keys = [
            _evict_key(bool(it.pinned), it.priority or 0, unit.index, unit.index, it.score, eviction)
            for it, unit in zip(items, units, strict=True)
        ]
        return [[units[k].index] for k in sorted(range(len(units)), key=keys.__getitem__)]
    groups: dict[str, list[int]] = {}
    order: list[list[int]] = []
    for unit in units:
        key = unit.item.group
        if key is None:
            order.append([unit.index])
        elif key in groups:
            groups[key].append(unit.index)
        else:
            groups[key] = [unit.index]
            order.append(groups[key])

    def group_key(members: list[int]) -> tuple[Any, ...]:
        items = [units[i].item for i in members]
        scores = [it.score for it in items if it.score is not None]
        return _evict_key(
            any(it.pinned for it in items),
            max(it.priority or 0 for it in items),
            members[0],
            members[-1],
            max(scores) if scores else None,
            eviction,
        )

    return sorted(order, key=group_key)


def _evict_key(pinned: bool, prio: int, first: int, last: int, best: float | None, eviction: str) -> tuple[Any, ...]:
    """The eviction sort key of a group (its first and last unit index, its best score): pinned last, then lower
    priority first, then oldest / newest / lowest score first (ties: the later group loses)."""
    if eviction == "oldest":
        return (pinned, prio, first)
    if eviction == "newest":
        return (pinned, prio, -last)
    return (pinned, prio, best if best is not None else float("-inf"), -first)
