"""The box's measuring step as it was before issue 16's fourth pass (fb91a8a): the reference the faster one is held to.

Kept in the tests only: ``tests/core/test_box_measure.py`` compares every template ``Ruler.measure_batch`` makes
with the ones these functions make, on generated sections.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tokenbox_core.box.measure import TEXT_TEMPLATE, Ruler
from tokenbox_core.box.state import Slot, Template, Unit
from tokenbox_core.errors import SectionError
from tokenbox_core.lenses import LIST_LENSES
from tokenbox_core.sections import Section
from tokenbox_core.tokens import count_many, fast_cut


def measure_batch(self: Ruler, sections: Sequence[Section]) -> list[Template]:
    """Templates for ``sections``, every string they need counted in one batch."""
    text_mode = self.text_mode
    sep = self.separator
    strings: list[str] = []
    known: dict[int, int] = {}  # long texts measured by their prefix (fast_measure), by section position
    append = strings.append
    spans: list[tuple[int, int]] = []
    for section in sections:
        start = len(strings)
        text = section.content
        if isinstance(text, str):
            head = self._measure_head(section, text) if len(text) >= fast_cut.PARTIAL_MIN_CHARS else None
            if head is not None:
                known[len(spans)] = head
            elif text:
                append(text + sep if text_mode else text)
        else:
            isep = section.item_separator
            items = section.items
            if text_mode:
                strings.extend([it.content + isep for it in items if it.tokens is None and it.content])
                if items and items[-1].tokens is None and items[-1].content:
                    append(items[-1].content + sep)
            else:
                strings.extend([it.content for it in items if it.tokens is None])
        spans.append((start, len(strings)))
    counts = count_many(self.counter, strings)
    neutral = getattr(self.counter, "neutral_join", None)
    out = []
    new = object.__new__
    fresh = TEXT_TEMPLATE
    for pos, (section, (start, end)) in enumerate(zip(sections, spans, strict=True)):
        text = section.content
        if isinstance(text, str):
            size = 0
            if end > start or pos in known:
                size = known[pos] if pos in known else counts[start]
                if not text_mode:
                    size += self.message_overhead(section.role or "user")
            template = new(Template)  # Template(size=size, start_ok=...) without the keyword handling
            state = fresh.copy()
            state["size"] = size
            state["start_ok"] = bool(neutral and text and neutral("\n", text[0]))
            template.__dict__ = state
            out.append(template)
            continue
        out.append(_list_template(self, section, counts[start:end]))
    return out


def _list_template(self: Ruler, section: Section, values: Sequence[int]) -> Template:
    units = []
    pos = 0
    for i, item in enumerate(section.items):
        if item.tokens is not None:
            if item.tokens < 0:
                raise SectionError(
                    f"item {item.id!r} in section {section.id!r} has a negative size ({item.tokens}); "
                    f"Item.tokens must be >= 0"
                )
            units.append(Unit(item=item, index=i, text=item.content, size=item.tokens, vouched=True))
            continue
        if self.text_mode and not item.content:  # an empty item emits nothing, not even a separator
            units.append(Unit(item=item, index=i, text="", size=0))
            continue
        size = values[pos]
        if not self.text_mode:
            size += self.message_overhead(item.role or section.role or "user")
        pos += 1
        units.append(Unit(item=item, index=i, text=item.content, size=size))
    kept_total = sum(u.size for u in units)
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
    return Template(
        size=self.list_size(probe),
        units=tuple(units),
        evict_order=eviction_groups(section, units),
        kept_total=kept_total,
    )


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
        pinned = any(it.pinned for it in items)
        prio = max(it.priority or 0 for it in items)
        if eviction == "oldest":
            rank: tuple[Any, ...] = (members[0],)
        elif eviction == "newest":
            rank = (-members[-1],)
        else:
            scores = [it.score for it in items if it.score is not None]
            rank = (max(scores) if scores else float("-inf"), -members[0])
        return (pinned, prio, *rank)

    return sorted(order, key=group_key)
