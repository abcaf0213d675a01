"""Step 2, measuring: every section's size, its units and the sizes every other step relies on.

A section's size includes the separator that follows it (text mode) or its
message overhead (messages mode), so sizes add up wherever a join cannot
change a count; :mod:`._totals` re-counts what is emitted.  A layout measures
all its sections in one pass (:meth:`Ruler.measure`); the count cache
(:mod:`tokenbox_core.tokens._cache`) makes a text counted before cost a digest.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from tokenbox_core._sections import Item, Section
from tokenbox_core.errors import SectionError
from tokenbox_core.lenses import LIST_LENSES
from tokenbox_core.tokens import TokenCounter
from tokenbox_core.tokens._cut import RULE_ENCODINGS, Ends, count_joined
from tokenbox_core.tokens._messages import TOKENS_PER_MESSAGE
from tokenbox_core.tokens._tiktoken_counter import TiktokenCounter

from ._state import (
    DEFAULT_OMISSION,
    DEFAULT_OMISSION_ONE,
    MARKER_IDS_SHOWN,
    Mode,
    Slot,
    Unit,
)

__all__ = ["Ruler", "eviction_groups"]


class Ruler:
    """What sizes depend on — the counter, the separator, the mode — and every size the box computes."""

    __slots__ = ("counter", "encoded", "ends", "mode", "rule", "separator", "text_mode")

    def __init__(self, counter: TokenCounter, separator: str, mode: Mode) -> None:
        self.counter = counter
        self.separator = separator
        self.mode: Mode = mode
        self.text_mode = mode == "text"
        self.encoded = counter if isinstance(counter, TiktokenCounter) else None
        """The counter when it cuts from token ids (:func:`tokenbox_core.tokens._cut.fit`), else None."""
        self.rule = self.encoded is not None and counter.name in RULE_ENCODINGS
        self.ends = Ends()
        """The ids the layout's last cut encoded: refill re-cuts a section a token larger without encoding again."""
        """Whether the counter's encoding follows :mod:`tokenbox_core.tokens._cut`'s rule of joins no token spans."""

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
        if self.mode == "messages":
            return self.counter.count(text) + self.message_overhead(self.role(slot))
        return count_joined(self.counter, text, self.separator, self.rule)

    def unit_size(self, slot: Slot, unit: Unit) -> int:
        """A unit's size after its text changed (a vouched size only holds for the original text)."""
        if unit.item.tokens is not None and unit.text == unit.item.content:
            return unit.item.tokens
        unit.vouched = False
        if self.mode == "text" and not unit.text:
            return 0
        if self.mode == "messages":
            return self.counter.count(unit.text) + self.message_overhead(self.role(slot, unit.item))
        return count_joined(self.counter, unit.text, slot.section.item_separator, self.rule)

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
            total += count_joined(self.counter, text, self.separator, self.rule) - count_joined(
                self.counter, text, slot.section.item_separator, self.rule
            )
        return max(0, total)

    # ------------------------------------------------------------------ omission markers

    def set_marker(self, slot: Slot) -> None:
        slot.marker = self.marker_text(slot)
        if not slot.marker:
            slot.marker_size = 0
        elif self.mode == "messages":
            slot.marker_size = self.counter.count(slot.marker) + self.message_overhead(slot.section.role or "user")
        else:
            slot.marker_size = count_joined(self.counter, slot.marker, slot.section.item_separator, self.rule)

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

    # ------------------------------------------------------------------ measuring

    def measure(self, slots: Sequence[Slot]) -> None:
        """Measure ``slots`` (each set to its section's whole content), every string counted in one pass."""
        strings: list[tuple[str, str]] = []
        for slot in slots:
            strings.extend(self._strings(slot.section))
        counter, rule = self.counter, self.rule
        counts = iter([count_joined(counter, text, suffix, rule) for text, suffix in strings])
        for slot in slots:
            content = slot.section.content
            if isinstance(content, str):
                size = next(counts) if content else 0
                if content and not self.text_mode:
                    size += self.message_overhead(slot.section.role or "user")
                slot.text = content
                slot.size = slot.full_size = size
            else:
                self._fill_list(slot, counts)

    def _strings(self, section: Section) -> list[tuple[str, str]]:
        """The strings ``section``'s size is made of, each with what follows it: its text with its separator, or
        its unvouched items (with the item separator in text mode)."""
        content = section.content
        if isinstance(content, str):
            return [(content, self.separator if self.text_mode else "")] if content else []
        if self.text_mode:
            sep = section.item_separator
            return [(it.content, sep) for it in section.items if it.tokens is None and it.content]
        return [(it.content, "") for it in section.items if it.tokens is None]

    def _fill_list(self, slot: Slot, counts: Iterator[int]) -> None:
        """Set a list slot's units from their counts (``_strings``' order); every unit kept."""
        section = slot.section
        units: list[Unit] = []
        for i, item in enumerate(section.items):
            if item.tokens is not None:
                if item.tokens < 0:
                    raise SectionError(
                        f"item {item.id!r} in section {section.id!r} has a negative size ({item.tokens}); "
                        f"Item.tokens must be >= 0"
                    )
                units.append(Unit(item, i, item.content, item.tokens, True))
            elif self.text_mode and not item.content:  # an empty item emits nothing, not even a separator
                units.append(Unit(item, i, ""))
            elif self.text_mode:
                units.append(Unit(item, i, item.content, next(counts)))
            else:
                overhead = self.message_overhead(item.role or section.role or "user")
                units.append(Unit(item, i, item.content, next(counts) + overhead))
        slot.is_list = True
        slot.units = units
        slot.kept = [True] * len(units)
        slot.kept_total = sum(u.size for u in units)
        slot.last_kept = len(units) - 1
        slot.evict_order = eviction_groups(section, units)
        slot.size = slot.full_size = self.list_size(slot)


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

    def evict_key(members: list[int]) -> tuple[Any, ...]:
        """Pinned last, then lower priority first, then oldest / newest / lowest score first (ties: the later
        group loses)."""
        items = [units[i].item for i in members]
        pinned = any(it.pinned for it in items)
        priority = max(it.priority or 0 for it in items)
        if eviction == "oldest":
            return (pinned, priority, members[0])
        if eviction == "newest":
            return (pinned, priority, -members[-1])
        scores = [it.score for it in items if it.score is not None]
        return (pinned, priority, max(scores) if scores else float("-inf"), -members[0])

    return sorted(order, key=evict_key)
