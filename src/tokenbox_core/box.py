"""The Token Box: a deterministic layout of sections into a fixed budget.

The algorithm (seed ``token-box-model.txt`` with DESIGN.md's rules):

1. **Measure** every section with the declared counter.  A section's size
   includes the separator that follows it, so sizes add up exactly wherever a
   join cannot change a count; the emitted total is re-counted at the end.
2. **Fixed load**: critical sections (``shrink == 0``) are kept whole.  If they
   alone exceed the capacity (``max_tokens - output_reserve - reserved``),
   :class:`~tokenbox_core.errors.ContextCriticalOverflow` is raised.  The
   flexible budget is the seed's effective budget with the critical load as
   the pinned tokens.
3. **Claims**: each flexible section claims ``min(basis, content, max_tokens)``.
4. **Expansion**: free space up to the effective target is shared among
   sections with ``grow > 0`` in proportion to ``grow``; integer shares by
   largest remainder, ties by declaration order; a section capped by its
   content or ``max_tokens`` passes the rest on (no budget is stranded).
5. **Compression**: while over the target, flexible sections are visited in
   (priority ASC, shrink DESC, declaration order).  Each gets its lens
   pipeline, then is truncated by exactly ``min(deficit, size - min)``, then,
   if the total is still over, dropped whole.  Lists shrink by whole items in
   their eviction order without splitting atomic groups.
6. **Emit** in declaration order and re-count the output exactly; if BPE
   merges at the joins left it over the target, compression continues.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

from tokenbox_core.budget import ContextBudget
from tokenbox_core.errors import ContextCriticalOverflow, SectionError
from tokenbox_core.layout import Action, LaidOutSection, Layout, RemovedItem
from tokenbox_core.lenses import LIST_LENSES, apply_lens, lens_name
from tokenbox_core.sections import Item, Section, validate_sections
from tokenbox_core.tokens import (
    PRIMING_TOKENS,
    TOKENS_PER_MESSAGE,
    TokenCounter,
    count_concat,
    count_many,
    get_counter,
)

__all__ = ["TokenBox"]

Mode = Literal["text", "messages"]
DEFAULT_OMISSION = "[{count} items omitted: {ids}]"
_MAX_PASSES = 16


@dataclass
class _Unit:
    """One item of a list section (or its marker) while it is being laid out."""

    item: Item
    index: int
    text: str
    size: int = 0  # chunk size (text + item separator), or message size


@dataclass
class _Slot:
    section: Section
    index: int
    critical: bool
    text: str = ""
    size: int = 0
    full_size: int = 0
    base_size: int = 0
    alloc: int = 0
    units: list[_Unit] = field(default_factory=list)
    kept: list[bool] = field(default_factory=list)
    partial_text: dict[int, str] = field(default_factory=dict)
    evict_order: list[list[int]] = field(default_factory=list)  # groups of unit indices
    evicted_groups: int = 0
    marker: str = ""
    lensed: bool = False
    truncated: bool = False
    dropped: bool = False
    actions: list[Action] = field(default_factory=list)
    removed: list[RemovedItem] = field(default_factory=list)


class TokenBox:
    """Lays out sections into a budget, deterministically.

    Args:
        budget: an int (tokens) or a :class:`ContextBudget`.
        counter: anything :func:`get_counter` accepts (default o200k_base).
        separator: joins sections in ``Layout.text`` (text mode).
        mode: ``"text"`` sizes sections as text joined by ``separator``;
            ``"messages"`` sizes each section (or list item) as a chat message
            with the chat format's overhead, plus 3 priming tokens.
        config_version: recorded in the trace (your prompt config's version).

    >>> from tokenbox_core import Section, TokenBox
    >>> box = TokenBox(12, counter="whitespace")
    >>> layout = box.layout([
    ...     Section("policy", "be brief and exact"),
    ...     Section("notes", "one two three four five six seven eight nine ten", shrink=1),
    ... ])
    >>> layout.total_tokens, [s.status for s in layout.sections]
    (12, ['kept', 'truncated'])
    """

    def __init__(
        self,
        budget: int | ContextBudget,
        *,
        counter: Any = "o200k_base",
        separator: str = "\n\n",
        mode: Mode = "text",
        config_version: str = "1",
    ) -> None:
        self.budget = ContextBudget.coerce(budget)
        self.counter: TokenCounter = get_counter(counter)
        if not isinstance(separator, str):
            raise SectionError(f"separator must be a string, got {type(separator).__name__}")
        if mode not in ("text", "messages"):
            raise SectionError(f"mode must be 'text' or 'messages', got {mode!r}")
        self.separator = separator
        self.mode: Mode = mode
        self.config_version = config_version

    def __repr__(self) -> str:
        return f"TokenBox(budget={self.budget.max_tokens}, counter={self.counter.name!r}, mode={self.mode!r})"

    # ------------------------------------------------------------------ sizes

    def _message_overhead(self, role: str | None) -> int:
        return TOKENS_PER_MESSAGE + (self.counter.count(role) if role else 0)

    def _measure_texts(self, texts: Sequence[str], roles: Sequence[str | None]) -> list[int]:
        """Sizes of emitted units: text + separator, or a chat message."""
        if self.mode == "messages":
            counts = count_many(self.counter, list(texts))
            return [c + self._message_overhead(r) for c, r in zip(counts, roles, strict=True)]
        return [n if t else 0 for n, t in zip(count_many(self.counter, list(texts)), texts, strict=True)]

    def _role(self, slot: _Slot, item: Item | None = None) -> str:
        return (item.role if item is not None and item.role else None) or slot.section.role or "user"

    def _text_chunk(self, text: str) -> str:
        return text + self.separator if self.mode == "text" and text else text

    def _size_of_text(self, slot: _Slot, text: str) -> int:
        if not text:
            return 0
        if self.mode == "messages":
            return self.counter.count(text) + self._message_overhead(self._role(slot))
        return self.counter.count(text + self.separator)

    def _list_size(self, slot: _Slot) -> int:
        total = 0
        last = None
        for unit, kept in zip(slot.units, slot.kept, strict=True):
            if kept:
                total += unit.size
                last = unit
        if slot.marker:
            total += self._marker_size(slot)
        if last is None and not slot.marker:
            return 0
        if self.mode == "text" and last is not None:
            # the last item is followed by the section separator, not the item separator
            isep = slot.section.item_separator
            text = slot.partial_text.get(last.index, last.text)
            total += self.counter.count(text + self.separator) - self.counter.count(text + isep)
        return max(0, total)

    def _marker_size(self, slot: _Slot) -> int:
        if not slot.marker:
            return 0
        if self.mode == "messages":
            return self.counter.count(slot.marker) + self._message_overhead(self._role(slot))
        return self.counter.count(slot.marker + slot.section.item_separator)

    # ------------------------------------------------------------------ layout

    def layout(self, sections: Sequence[Section]) -> Layout:
        """Lay out ``sections`` into the budget and return the :class:`Layout`."""
        started = time.perf_counter()
        checked = validate_sections(sections)
        slots = [self._measure(section, i) for i, section in enumerate(checked)]
        for slot in slots:
            if slot.critical and slot.section.max_tokens is not None and slot.full_size > slot.section.max_tokens:
                raise SectionError(
                    f"critical section {slot.section.id!r} has {slot.full_size} tokens, over its max_tokens "
                    f"({slot.section.max_tokens}); critical sections are never cut: raise max_tokens or give it "
                    f"shrink > 0"
                )

        priming = PRIMING_TOKENS if self.mode == "messages" else 0
        fixed = priming + sum(s.size for s in slots if s.critical)
        capacity = max(0, self.budget.max_tokens - self.budget.output_reserve - self.budget.reserved_tokens)
        critical_ids = [s.section.id for s in slots if s.critical]
        if fixed > capacity:
            raise ContextCriticalOverflow(capacity, fixed, critical_ids)
        effective = self.budget.effective(pinned_tokens=fixed)
        limit_max = fixed + effective.max_tokens
        limit_target = fixed + effective.target_tokens

        flexible = [s for s in slots if not s.critical]
        for slot in flexible:
            self._claim(slot)
        self._expand(flexible, limit_target - fixed - sum(s.size for s in flexible))

        order = sorted(flexible, key=lambda s: (s.section.priority, -s.section.shrink, s.index))
        total = self._exact_total(slots)
        passes = 0
        while total > limit_target and passes < _MAX_PASSES:
            self._compress(order, total - limit_target)
            total = self._exact_total(slots)
            passes += 1
        if total > limit_target:
            for slot in order:  # pathological joins: drop what is left, lowest first
                if total <= limit_target:
                    break
                if not slot.dropped:
                    self._drop(slot, "budget")
                    total = self._exact_total(slots)
        if total > limit_max or total > capacity:
            raise ContextCriticalOverflow(capacity, total, critical_ids)

        laid_out = [self._result(slot) for slot in slots]
        latency_ms = (time.perf_counter() - started) * 1000.0
        return Layout(
            sections=tuple(laid_out),
            total_tokens=total,
            budget=self.budget,
            max_tokens=limit_max,
            target_tokens=limit_target,
            fixed_tokens=fixed,
            counter_name=self.counter.name,
            separator=self.separator,
            mode=self.mode,
            config_version=self.config_version,
            input_hash=_input_hash(checked, self),
            latency_ms=latency_ms,
            trace_id=str(uuid.uuid4()),
            timestamp=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        )

    # ------------------------------------------------------------------ measuring

    def _measure(self, section: Section, index: int) -> _Slot:
        slot = _Slot(section=section, index=index, critical=section.critical)
        if not section.is_list:
            slot.text = section.content  # type: ignore[assignment]
            slot.size = slot.full_size = self._size_of_text(slot, slot.text)
            return slot
        items = section.items
        isep = section.item_separator
        texts = [it.content for it in items]
        if self.mode == "messages":
            sizes = [
                it.tokens if it.tokens is not None else n
                for it, n in zip(items, self._measure_texts(texts, [self._role(slot, it) for it in items]), strict=True)
            ]
        else:
            sizes = count_many(self.counter, [t + isep for t in texts])
        for i, (item, text, size) in enumerate(zip(items, texts, sizes, strict=True)):
            if size < 0:
                raise SectionError(f"item {item.id!r} in section {section.id!r} has a negative size ({size})")
            slot.units.append(_Unit(item=item, index=i, text=text, size=size))
        slot.kept = [True] * len(slot.units)
        slot.evict_order = self._eviction_groups(slot)
        slot.size = slot.full_size = self._list_size(slot)
        return slot

    def _eviction_groups(self, slot: _Slot) -> list[list[int]]:
        """Atomic groups of unit indices in the order they are evicted."""
        section = slot.section
        eviction = section.eviction
        for lens in section.strategy:
            if isinstance(lens, str) and lens in LIST_LENSES:
                eviction = LIST_LENSES[lens]  # type: ignore[assignment]
        groups: dict[str, list[int]] = {}
        order: list[list[int]] = []
        for unit in slot.units:
            key = unit.item.group
            if key is None:
                order.append([unit.index])
            elif key in groups:
                groups[key].append(unit.index)
            else:
                groups[key] = [unit.index]
                order.append(groups[key])

        def group_key(members: list[int]) -> tuple[Any, ...]:
            items = [slot.units[i].item for i in members]
            pinned = any(it.pinned for it in items)
            prio = max(it.priority or 0 for it in items)
            first = members[0]
            if eviction == "oldest":
                rank: tuple[Any, ...] = (first,)
            elif eviction == "newest":
                rank = (-members[-1],)
            else:
                scores = [it.score for it in items if it.score is not None]
                best = max(scores) if scores else float("-inf")
                rank = (best, -first)
            return (pinned, prio, *rank)

        return sorted(order, key=group_key)

    # ------------------------------------------------------------------ claims / expansion

    def _cap(self, slot: _Slot) -> int:
        cap = slot.full_size
        if slot.section.max_tokens is not None:
            cap = min(cap, slot.section.max_tokens)
        return cap

    def _claim(self, slot: _Slot) -> None:
        claim = self._cap(slot)
        if slot.section.basis is not None:
            claim = min(claim, slot.section.basis)
        if claim < slot.size:
            reason = "max_tokens" if slot.section.basis is None or claim == slot.section.max_tokens else "basis"
            self._shrink_to(slot, claim, reason=reason, record_as="claim")
        slot.base_size = slot.size
        slot.alloc = slot.size

    def _expand(self, flexible: list[_Slot], free: int) -> None:
        active = [s for s in flexible if s.section.grow > 0 and self._cap(s) > s.size]
        if free <= 0 or not active:
            return
        target = {s.index: s.size for s in active}
        while free > 0 and active:
            total_grow = sum(Fraction(s.section.grow) for s in active)
            quotas = [(s, Fraction(free) * Fraction(s.section.grow) / total_grow) for s in active]
            shares = {s.index: int(q) for s, q in quotas}
            leftover = free - sum(shares.values())
            by_remainder = sorted(quotas, key=lambda sq: (-(sq[1] - int(sq[1])), sq[0].index))
            for s, _ in by_remainder[:leftover]:
                shares[s.index] += 1
            spent = 0
            still = []
            for s in active:
                room = self._cap(s) - target[s.index]
                give = min(room, shares[s.index])
                target[s.index] += give
                spent += give
                if target[s.index] < self._cap(s):
                    still.append(s)
            free -= spent
            if spent == 0 or len(still) == len(active):
                break
            active = still
        for slot in flexible:
            if slot.index in target and target[slot.index] > slot.size:
                self._grow_to(slot, target[slot.index])

    def _grow_to(self, slot: _Slot, alloc: int) -> None:
        """Re-materialise content up to ``alloc`` (from the full content)."""
        before = slot.size
        if not slot.section.is_list:
            text = slot.section.content
            assert isinstance(text, str)
            if self._size_of_text(slot, text) > alloc:
                text = self._cut_text(slot, text, alloc)
            slot.text = text
            slot.size = self._size_of_text(slot, text)
        else:
            # restore evicted groups in reverse eviction order while they fit
            for group in reversed(slot.evict_order[: slot.evicted_groups]):
                for i in group:
                    slot.kept[i] = True
                slot.partial_text.clear()
                if self._list_size(slot) > alloc:
                    for i in group:
                        slot.kept[i] = False
                    break
                slot.evicted_groups -= 1
                slot.removed = [r for r in slot.removed if r.id not in {slot.units[i].item.id for i in group}]
            slot.marker = self._marker_text(slot)
            slot.size = self._list_size(slot)
        slot.alloc = alloc
        if slot.size > before:
            slot.actions.append(Action("expand", "grow", before, slot.size, f"expanded into free space (grow={slot.section.grow:g})"))

    # ------------------------------------------------------------------ compression

    def _compress(self, order: list[_Slot], deficit: int) -> None:
        for slot in order:
            if deficit <= 0:
                return
            if slot.dropped or slot.size == 0:
                continue
            before = slot.size
            if slot.section.strategy and not slot.lensed:
                self._apply_lenses(slot, max(slot.section.min_tokens, slot.size - deficit))
                deficit -= before - slot.size
                if deficit <= 0:
                    return
            cut = min(deficit, slot.size - slot.section.min_tokens)
            if cut > 0:
                size = slot.size
                self._shrink_to(slot, size - cut, reason="deficit")
                deficit -= size - slot.size
            if deficit > 0 and slot.size > 0:
                deficit -= slot.size
                self._drop(slot, "deficit")

    def _apply_lenses(self, slot: _Slot, target: int) -> None:
        slot.lensed = True
        for lens in slot.section.strategy:
            if isinstance(lens, str) and lens in LIST_LENSES:
                if not slot.section.is_list:
                    raise SectionError(
                        f"section {slot.section.id!r}: lens {lens!r} applies to list sections only"
                    )
                continue
            name = lens_name(lens)
            before = slot.size
            if not slot.section.is_list:
                content_before = self.counter.count(slot.text)
                text, _ = apply_lens(lens, slot.text, max(0, target - (before - content_before)), self.counter, before=content_before)
                slot.text = text
                slot.size = self._size_of_text(slot, text)
            else:
                for unit in slot.units:
                    if not slot.kept[unit.index]:
                        continue
                    n = self.counter.count(unit.text)
                    text, after = apply_lens(lens, unit.text, n, self.counter, before=n)
                    if text != unit.text:
                        unit.text = text
                        unit.size = self._unit_size(slot, unit)
                slot.size = self._list_size(slot)
            if slot.size != before:
                slot.actions.append(Action("lens", name, before, slot.size, f"lens {name!r}"))

    def _unit_size(self, slot: _Slot, unit: _Unit) -> int:
        if self.mode == "messages":
            if unit.item.tokens is not None and unit.text == unit.item.content:
                return unit.item.tokens
            return self.counter.count(unit.text) + self._message_overhead(self._role(slot, unit.item))
        return self.counter.count(unit.text + slot.section.item_separator)

    def _cut_text(self, slot: _Slot, text: str, alloc: int) -> str:
        """Cut text so its emitted size is at most ``alloc``."""
        overhead = self._size_of_text(slot, text) - self.counter.count(text)
        limit = max(0, alloc - overhead)
        while True:
            out = self.counter.truncate(text, limit, keep=slot.section.keep)
            if self._size_of_text(slot, out) <= alloc or limit == 0:
                return out if self._size_of_text(slot, out) <= alloc else ""
            limit -= 1

    def _shrink_to(self, slot: _Slot, alloc: int, *, reason: str, record_as: str = "truncate") -> None:
        before = slot.size
        alloc = max(0, alloc)
        if not slot.section.is_list:
            slot.text = self._cut_text(slot, slot.text, alloc)
            slot.size = self._size_of_text(slot, slot.text)
            if slot.size < before:
                slot.actions.append(
                    Action(record_as, f"keep_{slot.section.keep}", before, slot.size, f"cut {before - slot.size} units ({reason})")
                )
        else:
            self._evict_to(slot, alloc, reason)
        if record_as == "truncate" and slot.size < before:
            slot.truncated = True
        slot.alloc = min(slot.alloc, slot.size) if record_as == "truncate" else slot.size

    def _evict_to(self, slot: _Slot, alloc: int, reason: str) -> None:
        before = slot.size
        removed_now: list[_Unit] = []
        while slot.size > alloc and slot.evicted_groups < len(slot.evict_order):
            group = slot.evict_order[slot.evicted_groups]
            if slot.section.partial and len(group) == 1:
                unit = slot.units[group[0]]
                without = slot.size - unit.size
                room = alloc - without - (0 if slot.marker else self._marker_size_for(slot, extra=[unit]))
                if room > 0 and self.mode == "text":
                    cut = self._cut_unit(slot, unit, alloc)
                    if cut is not None:
                        slot.partial_text[unit.index] = cut
                        unit.text = cut
                        unit.size = self.counter.count(cut + slot.section.item_separator)
                        slot.size = self._list_size(slot)
                        slot.actions.append(Action("truncate", unit.item.id, before, slot.size, "partial cut of the boundary item"))
                        break
            for i in group:
                slot.kept[i] = False
                removed_now.append(slot.units[i])
            slot.evicted_groups += 1
            slot.marker = self._marker_text(slot)
            slot.size = self._list_size(slot)
        for unit in removed_now:
            slot.removed.append(
                RemovedItem(
                    id=unit.item.id,
                    section=slot.section.id,
                    reason=reason,
                    tokens=unit.size,
                    score=unit.item.score,
                    group=unit.item.group,
                )
            )
        if removed_now:
            ids = [u.item.id for u in removed_now]
            slot.actions.append(Action("evict", slot.section.eviction, before, slot.size, f"removed {len(ids)} items: {', '.join(ids)}"))

    def _marker_size_for(self, slot: _Slot, extra: list[_Unit]) -> int:
        if not slot.section.omission_marker:
            return 0
        return self.counter.count(self._marker_text(slot, extra=[u.item.id for u in extra]))

    def _cut_unit(self, slot: _Slot, unit: _Unit, alloc: int) -> str | None:
        saved = unit.text
        lo_text = ""
        limit = self.counter.count(unit.text)
        # binary search on the content limit so the whole list fits alloc
        lo, hi = 0, limit
        while lo < hi:
            mid = (lo + hi + 1) // 2
            unit.text = self.counter.truncate(saved, mid, keep=slot.section.keep)
            unit.size = self.counter.count(unit.text + slot.section.item_separator)
            slot.partial_text[unit.index] = unit.text
            if self._list_size(slot) <= alloc:
                lo = mid
                lo_text = unit.text
            else:
                hi = mid - 1
        unit.text = saved
        unit.size = self.counter.count(saved + slot.section.item_separator)
        slot.partial_text.pop(unit.index, None)
        return lo_text or None

    def _marker_text(self, slot: _Slot, extra: Sequence[str] = ()) -> str:
        template = slot.section.omission_marker
        if not template:
            return ""
        evicted = sorted(i for g in slot.evict_order[: slot.evicted_groups] for i in g)
        ids = [slot.units[i].item.id for i in evicted] + [x for x in extra]
        if not ids:
            return ""
        text = DEFAULT_OMISSION if template is True else str(template)
        return text.format(count=len(ids), ids=", ".join(ids))

    def _drop(self, slot: _Slot, reason: str) -> None:
        before = slot.size
        if slot.section.is_list:
            for unit in slot.units:
                if slot.kept[unit.index]:
                    slot.kept[unit.index] = False
                    slot.removed.append(
                        RemovedItem(id=unit.item.id, section=slot.section.id, reason="section dropped",
                                    tokens=unit.size, score=unit.item.score, group=unit.item.group)
                    )
            slot.evicted_groups = len(slot.evict_order)
            slot.marker = ""
        slot.text = ""
        slot.size = 0
        slot.dropped = True
        slot.alloc = 0
        slot.actions.append(Action("drop", reason, before, 0, f"dropped whole ({reason}; at min_tokens={slot.section.min_tokens})"))

    # ------------------------------------------------------------------ output

    def _chunks(self, slot: _Slot) -> list[str]:
        """Emitted text chunks of a slot, each with its trailing separator (text mode)."""
        if slot.dropped:
            return []
        if not slot.section.is_list:
            return [slot.text + self.separator] if slot.text else []
        isep = slot.section.item_separator
        texts = ([slot.marker] if slot.marker else []) + [
            slot.partial_text.get(u.index, u.text) for u in slot.units if slot.kept[u.index]
        ]
        if not texts:
            return []
        return [t + isep for t in texts[:-1]] + [texts[-1] + self.separator]

    def _exact_total(self, slots: list[_Slot]) -> int:
        if self.mode == "messages":
            return PRIMING_TOKENS + sum(s.size for s in slots if not s.dropped)
        chunks: list[str] = []
        for slot in slots:
            chunks.extend(self._chunks(slot))
        if not chunks:
            return 0
        chunks[-1] = chunks[-1][: len(chunks[-1]) - len(self.separator)] if self.separator else chunks[-1]
        return count_concat(self.counter, chunks)

    def _result(self, slot: _Slot) -> LaidOutSection:
        section = slot.section
        if slot.dropped or (slot.size == 0 and slot.full_size > 0):
            status = "dropped"
        elif slot.truncated:
            status = "truncated"
        elif any(a.kind == "lens" for a in slot.actions):
            status = "compressed"
        elif slot.size > slot.base_size and not slot.critical:
            status = "expanded"
        else:
            status = "kept"
        content: str | tuple[Item, ...]
        if section.is_list:
            kept = []
            for unit in slot.units:
                if slot.kept[unit.index]:
                    text = slot.partial_text.get(unit.index, unit.text)
                    kept.append(unit.item if text == unit.item.content else _replace_content(unit.item, text))
            content = tuple(kept)
            parts = ([slot.marker] if slot.marker else []) + [it.content for it in kept]
            rendered = section.item_separator.join(parts)
        else:
            content = slot.text
            rendered = slot.text
        if slot.dropped:
            rendered = ""
        return LaidOutSection(
            id=section.id,
            status=status,
            critical=slot.critical,
            priority=section.priority,
            shrink=section.shrink,
            grow=section.grow,
            min_tokens=section.min_tokens,
            full_tokens=slot.full_size,
            base_tokens=slot.full_size if slot.critical else slot.base_size,
            allocated_tokens=slot.size if slot.critical else max(slot.alloc, slot.size),
            final_tokens=slot.size,
            content=content,
            text=rendered,
            role=section.role,
            marker=slot.marker,
            actions=tuple(slot.actions),
            removed=tuple(slot.removed),
        )


def _replace_content(item: Item, text: str) -> Item:
    from dataclasses import replace

    return replace(item, content=text, tokens=None)


def _input_hash(sections: Sequence[Section], box: TokenBox) -> str:
    import hashlib

    h = hashlib.sha256()
    h.update(repr((box.budget.to_dict(), box.counter.name, box.separator, box.mode)).encode())
    for s in sections:
        h.update(
            repr(
                (s.id, s.priority, s.min_tokens, s.max_tokens, s.basis, s.grow, s.shrink,
                 tuple(lens_name(x) for x in s.strategy), s.keep, s.role, s.eviction, s.partial,
                 s.omission_marker, s.item_separator)
            ).encode()
        )
        if isinstance(s.content, str):
            h.update(s.content.encode("utf-8", "surrogatepass"))
        else:
            for it in s.content:
                h.update(repr((it.id, it.role, it.kind, it.score, it.priority, it.group, it.pinned, it.tokens)).encode())
                h.update(it.content.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()
