"""The Token Box: a deterministic layout of sections into a fixed budget.

The algorithm (the Token Box Model, ``docs/concepts.md#the-token-box``):

1. **Measure** every section with the declared counter.  A section's size
   includes the separator that follows it, so sizes add up exactly wherever a
   join cannot change a count; the emitted total is re-counted at the end.
2. **Fixed load**: critical sections (``shrink == 0``) are kept whole.  If they
   alone exceed the capacity (``max_tokens - output_reserve - reserved``),
   :class:`~tokenbox_core.errors.ContextCriticalOverflow` is raised.  The
   flexible budget is Cupel's effective budget with the critical load as
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

Measurements are memoised per (immutable) Section object and counts per text,
so re-laying out a conversation after one new turn costs little more than
counting that turn.
"""

from __future__ import annotations

import time
import uuid
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, Literal

from tokenbox_core.budget import ContextBudget
from tokenbox_core.errors import ContextCriticalOverflow, SectionError
from tokenbox_core.layout import Action, LaidOutSection, Layout, RemovedItem, Status
from tokenbox_core.lenses import LIST_LENSES, apply_lens, lens_name
from tokenbox_core.logs import log_layout
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
"""The default omission marker; templates may use ``{count}``, ``{ids}``, ``{first}`` and ``{last}``."""
MARKER_IDS_SHOWN = 8
"""Markers list at most this many ids in full; longer lists are abbreviated (the report has them all)."""
_MAX_PASSES = 16
_MEMO_ATTR = "_tokenbox_memo"
OUTRANKED_DETAIL = "dropped without measuring: the sections that outrank it already fill the budget"


@dataclass(slots=True)
class _Unit:
    """One item of a list section while it is being laid out."""

    item: Item
    index: int
    text: str
    size: int = 0  # text + item separator (text mode), or the message size
    vouched: bool = False  # size is the caller's Item.tokens, not a count


_Emitted = tuple[str, str, int, bool]


@dataclass
class _Template:
    """A section's memoised measurement: its full size and, for lists, its units and eviction order."""

    size: int
    units: tuple[_Unit, ...] | None
    evict_order: list[list[int]]
    kept_total: int = 0
    start_ok: bool = False  # a join before this text section's content is neutral (fast exact totals)
    untouched: LaidOutSection | None = None  # the result of a layout that left the section whole
    dropped: LaidOutSection | None = None  # the result of a layout that dropped it whole, untouched before


class _Slot:
    """The mutable state of one section during a layout.

    Thousands are made per call, so ``__init__`` sets only what differs per
    slot; everything else reads class-level defaults until first assigned
    (lists are only ever replaced, never mutated in place, while shared).
    """

    is_list = False
    text = ""
    size = full_size = base_size = alloc = 0
    units: list[_Unit] = []  # noqa: RUF012 - replaced, never mutated, while shared
    units_shared = False
    kept: list[bool] = []  # noqa: RUF012
    kept_total = 0
    last_kept = -1
    evict_order: list[list[int]] = []  # noqa: RUF012 - groups of unit indices, in eviction order
    evicted_groups = 0
    marker = ""
    marker_size = 0
    pristine_drop = outranked = lensed = truncated = dropped = False
    actions: tuple[Action, ...] = ()
    removed: tuple[RemovedItem, ...] = ()
    selection: dict[str, Any] | None = None  # the selection report of a list section with a policy

    def __init__(
        self,
        section: Section,
        template: _Template | None,
        index: int,
        critical: bool,
        *,
        is_list: bool = False,
        units: list[_Unit] | None = None,
        kept: list[bool] | None = None,
        kept_total: int = 0,
        last_kept: int = -1,
    ) -> None:
        self.section = section
        self.template = template
        self.index = index
        self.critical = critical
        if is_list:
            self.is_list = True
            self.units = units if units is not None else []
            self.kept = kept if kept is not None else []
            self.kept_total = kept_total
            self.last_kept = last_kept

    def act(self, action: Action) -> None:
        self.actions = (*self.actions, action)

    def remove(self, items: Sequence[RemovedItem]) -> None:
        self.removed = (*self.removed, *items)


class TokenBox:
    """Lays out sections into a budget, deterministically.

    Args:
        budget: an int (tokens) or a :class:`ContextBudget`.
        counter: anything :func:`get_counter` accepts (default o200k_base).
        separator: joins sections in ``Layout.text`` (text mode).
        mode: ``"text"`` sizes sections as text joined by ``separator``;
            ``"messages"`` sizes each text section and each list item as one
            chat message (``Item.tokens`` when given, else 4 + role + content)
            plus 3 priming tokens.
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
        # Measurements live on the (immutable) Section objects, keyed by what they depend on, so they
        # die with the section and are shared by boxes with the same counter, separator and mode.
        self._memo_key: tuple[Any, str, str] = (getattr(self.counter, "_cache_key", self.counter), separator, mode)
        self._outranked: weakref.WeakKeyDictionary[Section, LaidOutSection] = weakref.WeakKeyDictionary()

    def __repr__(self) -> str:
        return f"TokenBox(budget={self.budget.max_tokens}, counter={self.counter.name!r}, mode={self.mode!r})"

    # ------------------------------------------------------------------ layout

    def layout(self, sections: Sequence[Section]) -> Layout:
        """Lay out ``sections`` into the budget and return the :class:`Layout`."""
        started = time.perf_counter()
        checked = validate_sections(sections)
        slots = self._new_slots(checked)
        self._ensure_measured([s for s in slots if s.critical])
        for slot in slots:
            if slot.critical and slot.section.max_tokens is not None and slot.full_size > slot.section.max_tokens:
                raise SectionError(
                    f"critical section {slot.section.id!r} has {slot.full_size} tokens, over its max_tokens "
                    f"({slot.section.max_tokens}); critical sections are never cut: raise max_tokens or give it "
                    f"shrink > 0"
                )

        priming = PRIMING_TOKENS if self.mode == "messages" else 0
        if self.mode == "messages":
            fixed = priming + sum(s.size for s in slots if s.critical)
        else:  # exact: the last critical section's separator is only paid if something follows it
            fixed = self._exact_total([s for s in slots if s.critical])
        capacity = max(0, self.budget.max_tokens - self.budget.output_reserve - self.budget.reserved_tokens)
        critical_ids = [s.section.id for s in slots if s.critical]
        if fixed > capacity:
            raise ContextCriticalOverflow(capacity, fixed, critical_ids)
        effective = self.budget.effective(pinned_tokens=fixed)
        limit_max = fixed + effective.max_tokens
        limit_target = fixed + effective.target_tokens

        flexible = [s for s in slots if not s.critical]
        order = sorted(flexible, key=lambda s: (s.section.priority, -s.section.shrink, s.index))
        # Claims in protection order (the reverse of the compression order).  Once the sections that
        # outrank a section alone exceed the target, compression would drop it whatever its size
        # (and lenses cannot save it), so it is dropped without being measured.
        running = fixed
        outranked = 0
        for pos in range(len(order) - 1, -1, -1):
            slot = order[pos]
            if slot.template is None:
                self._ensure_measured([slot])
            section = slot.section
            if section.basis is not None or section.max_tokens is not None or section.policy is not None:
                self._claim(slot)
            else:  # the common case: the claim is the whole content
                slot.base_size = slot.alloc = slot.size
            running += slot.size
            if running > limit_target:
                outranked = pos
                break
        for slot in order[:outranked]:
            slot.dropped = slot.outranked = True
        self._expand(flexible, limit_target - running)

        estimate = fixed + sum(s.size for s in flexible if not s.dropped)
        if estimate > limit_target:  # sizes carry their separators, so the sum is (nearly) exact
            self._compress(order, estimate - limit_target)
        total = self._exact_total(slots)
        passes = 0
        while total > limit_target and passes < _MAX_PASSES:
            self._compress(order, total - limit_target)
            total = self._exact_total(slots)
            passes += 1
        for slot in order:  # pathological joins only: drop what is left, lowest first
            if total <= limit_target:
                break
            if not slot.dropped:
                self._drop(slot, "budget")
                total = self._exact_total(slots)
        if total > limit_max or total > capacity:
            raise ContextCriticalOverflow(capacity, total, critical_ids)

        laid_out = tuple(self._result(slot) for slot in slots)
        result = Layout(
            sections=laid_out,
            total_tokens=total,
            budget=self.budget,
            max_tokens=limit_max,
            target_tokens=limit_target,
            fixed_tokens=fixed,
            counter_name=self.counter.name,
            separator=self.separator,
            mode=self.mode,
            config_version=self.config_version,
            input_hasher=lambda: _input_hash(checked, self),
            latency_ms=(time.perf_counter() - started) * 1000.0,
            trace_id=str(uuid.uuid4()),
            timestamp=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        )
        log_layout(result)  # one DEBUG line under the "tokenbox" logger (tokenbox_core.logs)
        return result

    # ------------------------------------------------------------------ sizes

    def _message_overhead(self, role: str | None) -> int:
        return TOKENS_PER_MESSAGE + (self.counter.count(role) if role else 0)

    def _role(self, slot: _Slot, item: Item | None = None) -> str:
        return (item.role if item is not None and item.role else None) or slot.section.role or "user"

    def _size_of_text(self, slot: _Slot, text: str) -> int:
        """Emitted size of a text section's content (with its separator or message overhead)."""
        if not text:
            return 0
        if self.mode == "messages":
            return self.counter.count(text) + self._message_overhead(self._role(slot))
        return self.counter.count(text + self.separator)

    def _unit_size(self, slot: _Slot, unit: _Unit) -> int:
        """A unit's size after its text changed (a vouched size only holds for the original text)."""
        if unit.item.tokens is not None and unit.text == unit.item.content:
            return unit.item.tokens
        unit.vouched = False
        if self.mode == "text" and not unit.text:
            return 0
        if self.mode == "messages":
            return self.counter.count(unit.text) + self._message_overhead(self._role(slot, unit.item))
        return self.counter.count(unit.text + slot.section.item_separator)

    def _last_kept(self, slot: _Slot) -> int:
        i = slot.last_kept
        kept = slot.kept
        units = slot.units
        text_mode = self.mode == "text"
        while i >= 0 and not (kept[i] and (units[i].text or units[i].vouched or not text_mode)):
            i -= 1
        slot.last_kept = i
        return i

    def _list_size(self, slot: _Slot) -> int:
        """kept items + marker; in text mode the last item carries the section separator."""
        last = self._last_kept(slot)
        if last < 0:
            return slot.marker_size
        total = slot.kept_total + slot.marker_size
        if self.mode == "text" and not slot.units[last].vouched:
            text = slot.units[last].text
            total += self.counter.count(text + self.separator) - self.counter.count(text + slot.section.item_separator)
        return max(0, total)

    def _set_marker(self, slot: _Slot) -> None:
        slot.marker = self._marker_text(slot)
        if not slot.marker:
            slot.marker_size = 0
        elif self.mode == "messages":
            slot.marker_size = self.counter.count(slot.marker) + self._message_overhead(slot.section.role or "system")
        else:
            slot.marker_size = self.counter.count(slot.marker + slot.section.item_separator)

    def _fit_marker(self, slot: _Slot, alloc: int) -> None:
        """Set the omission marker, unless it alone would push the list over ``alloc`` (a marker is an aid)."""
        self._set_marker(slot)
        if slot.marker and self._list_size(slot) > alloc:
            slot.marker, slot.marker_size = "", 0

    def _marker_text(self, slot: _Slot) -> str:
        template = slot.section.omission_marker
        if not template or slot.evicted_groups == 0:
            return ""
        evicted = sorted(i for g in slot.evict_order[: slot.evicted_groups] for i in g if not slot.kept[i])
        if not evicted:
            return ""
        ids = [slot.units[i].item.id for i in evicted]
        if len(ids) <= MARKER_IDS_SHOWN:
            shown = ", ".join(ids)
        else:
            shown = f"{', '.join(ids[:3])}, …, {', '.join(ids[-2:])} (+{len(ids) - 5} more)"
        text = DEFAULT_OMISSION if template is True else str(template)
        return text.format(count=len(ids), ids=shown, first=ids[0], last=ids[-1])

    # ------------------------------------------------------------------ measuring

    def _new_slots(self, sections: Sequence[Section]) -> list[_Slot]:
        """A slot per section, filled from memoised measurements where the section was seen before."""
        key = self._memo_key
        fill = self._fill
        slots = []
        for i, section in enumerate(sections):
            slot = _Slot(section, None, i, section.shrink == 0)
            memo = section.__dict__.get(_MEMO_ATTR)
            template = memo.get(key) if memo is not None else None
            if template is not None:
                if template.units is None:  # inline _fill for the common case: a text section
                    slot.template = template
                    slot.size = slot.full_size = template.size
                    slot.text = section.content  # type: ignore[assignment]
                else:
                    fill(slot, template)
            slots.append(slot)
        return slots

    def _ensure_measured(self, slots: Sequence[_Slot]) -> None:
        """Measure (in one batch) the slots whose sections were not seen before."""
        missing = [s for s in slots if s.template is None]
        if not missing:
            return
        for slot, template in zip(missing, self._measure_batch([s.section for s in missing]), strict=True):
            memo = slot.section.__dict__.get(_MEMO_ATTR)
            if memo is None:
                memo = {}
                object.__setattr__(slot.section, _MEMO_ATTR, memo)
            memo[self._memo_key] = template
            self._fill(slot, template)

    @staticmethod
    def _fill(slot: _Slot, template: _Template) -> None:
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

    def _measure_batch(self, sections: Sequence[Section]) -> list[_Template]:
        text_mode = self.mode == "text"
        sep = self.separator
        strings: list[str] = []
        spans: list[tuple[int, int]] = []
        for section in sections:
            start = len(strings)
            if not section.is_list:
                text = section.content
                assert isinstance(text, str)
                if text:
                    strings.append(text + sep if text_mode else text)
            else:
                isep = section.item_separator
                items = section.items
                if text_mode:
                    strings.extend([it.content + isep for it in items if it.tokens is None and it.content])
                    if items and items[-1].tokens is None and items[-1].content:
                        strings.append(items[-1].content + sep)
                else:
                    strings.extend([it.content for it in items if it.tokens is None])
            spans.append((start, len(strings)))
        counts = count_many(self.counter, strings)
        neutral = getattr(self.counter, "neutral_join", None)
        out = []
        for section, (start, end) in zip(sections, spans, strict=True):
            values = counts[start:end]
            if not section.is_list:
                size = 0
                if values:
                    size = values[0] if text_mode else values[0] + self._message_overhead(section.role or "user")
                text = section.content
                start_ok = bool(neutral and text and neutral("\n", text[0]))
                out.append(_Template(size=size, units=None, evict_order=[], start_ok=start_ok))
                continue
            items = section.items
            units = []
            pos = 0
            for i, item in enumerate(items):
                if item.tokens is not None:
                    if item.tokens < 0:
                        raise SectionError(
                            f"item {item.id!r} in section {section.id!r} has a negative size ({item.tokens}); "
                            f"Item.tokens must be >= 0"
                        )
                    units.append(_Unit(item=item, index=i, text=item.content, size=item.tokens, vouched=True))
                    continue
                if text_mode and not item.content:  # an empty item emits nothing, not even a separator
                    units.append(_Unit(item=item, index=i, text="", size=0))
                    continue
                size = values[pos]
                if not text_mode:
                    size += self._message_overhead(item.role or section.role or "user")
                pos += 1
                units.append(_Unit(item=item, index=i, text=item.content, size=size))
            kept_total = sum(u.size for u in units)
            probe = _Slot(
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
            out.append(
                _Template(
                    size=self._list_size(probe),
                    units=tuple(units),
                    evict_order=self._eviction_groups(section, units),
                    kept_total=kept_total,
                )
            )
        return out

    def _own_units(self, slot: _Slot) -> None:
        """Copy shared (memoised) units before mutating them."""
        if slot.units_shared:
            slot.units = [
                _Unit(item=u.item, index=u.index, text=u.text, size=u.size, vouched=u.vouched) for u in slot.units
            ]
            slot.units_shared = False

    @staticmethod
    def _eviction_groups(section: Section, units: Sequence[_Unit]) -> list[list[int]]:
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

    # ------------------------------------------------------------------ claims / expansion

    def _cap(self, slot: _Slot) -> int:
        cap = slot.full_size
        if slot.section.max_tokens is not None:
            cap = min(cap, slot.section.max_tokens)
        return cap

    def _claim(self, slot: _Slot) -> None:
        claim = self._cap(slot)
        basis = slot.section.basis
        if basis is not None:
            claim = min(claim, basis)
        if claim < slot.size or (slot.is_list and slot.section.policy is not None):
            reason = "basis" if basis is not None and claim == basis else "max_tokens"
            if reason == "max_tokens" and claim < slot.size and slot.section.strategy and not slot.lensed:
                self._apply_lenses(slot, claim)  # a capped section is compressed before it is cut
            if slot.size > claim or (slot.is_list and slot.section.policy is not None):
                before = slot.size
                self._shrink_to(slot, claim, reason=reason, record_as="claim")
                if reason == "max_tokens" and slot.size < before:
                    slot.truncated = True  # content was lost to the cap, not merely left unclaimed
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
                give = min(self._cap(s) - target[s.index], shares[s.index])
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
        """Re-materialise content up to ``alloc`` from the full content."""
        before = slot.size
        if not slot.is_list:
            text = slot.section.content
            assert isinstance(text, str)
            if self._size_of_text(slot, text) > alloc:
                text = self._cut_text(slot, text, alloc)
            slot.text = text
            slot.size = self._size_of_text(slot, text)
        elif slot.section.policy is not None:  # a selection policy decides the items (tokenbox_core.select)
            from tokenbox_core.select.boxing import fill_slot

            fill_slot(self, slot, alloc)
        else:
            restored: set[str] = set()
            while slot.evicted_groups > 0:  # restore groups in reverse eviction order while they fit
                group = slot.evict_order[slot.evicted_groups - 1]
                self._set_kept(slot, group, True)
                slot.evicted_groups -= 1
                self._fit_marker(slot, alloc)
                if self._list_size(slot) > alloc:
                    self._set_kept(slot, group, False)
                    slot.evicted_groups += 1
                    self._fit_marker(slot, alloc)
                    break
                restored.update(slot.units[i].item.id for i in group)
            slot.removed = tuple(r for r in slot.removed if r.id not in restored)
            slot.size = self._list_size(slot)
        slot.alloc = alloc
        if slot.size > before:
            slot.act(
                Action("expand", "grow", before, slot.size, f"expanded into free space (grow={slot.section.grow:g})")
            )

    def _set_kept(self, slot: _Slot, group: Sequence[int], kept: bool) -> None:
        for i in group:
            if slot.kept[i] != kept:
                slot.kept[i] = kept
                slot.kept_total += slot.units[i].size if kept else -slot.units[i].size
                if kept and i > slot.last_kept:
                    slot.last_kept = i

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
            if cut >= slot.size:  # cut to nothing is a drop: no need to tokenise a truncation
                deficit -= slot.size
                self._drop(slot, "budget")
                continue
            if cut > 0:
                size = slot.size
                self._shrink_to(slot, size - cut, reason="budget")
                deficit -= size - slot.size
            if deficit > 0 and slot.size > 0:
                deficit -= slot.size
                self._drop(slot, "budget")

    def _apply_lenses(self, slot: _Slot, target: int) -> None:
        slot.lensed = True
        for lens in slot.section.strategy:
            if isinstance(lens, str) and lens in LIST_LENSES:
                if not slot.is_list:
                    raise SectionError(f"section {slot.section.id!r}: lens {lens!r} applies to list sections only")
                continue
            name = lens_name(lens)
            before = slot.size
            if not slot.is_list:
                content = self.counter.count(slot.text)
                room = max(0, target - (before - content))
                slot.text, _ = apply_lens(lens, slot.text, room, self.counter, before=content)
                slot.size = self._size_of_text(slot, slot.text)
            else:
                self._own_units(slot)
                for unit in slot.units:
                    if not slot.kept[unit.index]:
                        continue
                    n = self.counter.count(unit.text)
                    text, _ = apply_lens(lens, unit.text, n, self.counter, before=n)
                    if text != unit.text:
                        old = unit.size
                        unit.text = text
                        unit.size = self._unit_size(slot, unit)
                        slot.kept_total += unit.size - old
                slot.size = self._list_size(slot)
            if slot.size != before:
                slot.act(Action("lens", name, before, slot.size, f"lens {name!r}"))

    def _cut_text(self, slot: _Slot, text: str, alloc: int) -> str:
        """Cut text so its emitted size is at most ``alloc`` (empty when nothing fits)."""
        overhead = self._size_of_text(slot, text) - self.counter.count(text)
        limit = max(0, alloc - overhead)
        while limit > 0:
            out = self.counter.truncate(text, limit, keep=slot.section.keep)
            if self._size_of_text(slot, out) <= alloc:
                return out
            limit -= 1
        return ""

    def _shrink_to(self, slot: _Slot, alloc: int, *, reason: str, record_as: str = "truncate") -> None:
        before = slot.size
        alloc = max(0, alloc)
        if not slot.is_list:
            slot.text = self._cut_text(slot, slot.text, alloc)
            slot.size = self._size_of_text(slot, slot.text)
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
            self._evict_to(slot, alloc, reason)
        if record_as == "truncate" and slot.size < before:
            slot.truncated = True
        slot.alloc = slot.size

    def _evict_to(self, slot: _Slot, alloc: int, reason: str) -> None:
        """Remove whole groups in eviction order until the list fits ``alloc``.

        The marker is recomputed once per round rather than per item, so
        evicting thousands of items costs a few counts, not thousands.
        """
        if slot.section.policy is not None:  # a selection policy decides the items (tokenbox_core.select)
            from tokenbox_core.select.boxing import fill_slot

            fill_slot(self, slot, alloc)
            return
        before = slot.size
        start = slot.evicted_groups
        order = slot.evict_order
        done = False
        while not done and slot.size > alloc and slot.evicted_groups < len(order):
            # one round: evict by running sizes against the current marker size
            while slot.evicted_groups < len(order):
                group = order[slot.evicted_groups]
                if slot.section.partial and len(group) == 1 and self.mode == "text":
                    self._set_marker(slot)
                    if self._cut_boundary(slot, slot.units[group[0]], alloc):
                        done = True
                        break
                self._set_kept(slot, group, False)
                slot.evicted_groups += 1
                if self._list_size(slot) <= alloc:
                    break
            self._set_marker(slot)
            slot.size = self._list_size(slot)
        if slot.size > alloc and slot.marker and slot.evicted_groups == len(order):
            self._fit_marker(slot, alloc)
            slot.size = self._list_size(slot)
        removed = [slot.units[i] for g in order[start : slot.evicted_groups] for i in g]
        slot.remove(
            [
                RemovedItem(
                    id=u.item.id,
                    section=slot.section.id,
                    reason=reason,
                    tokens=u.size,
                    score=u.item.score,
                    group=u.item.group,
                )
                for u in removed
            ]
        )
        if removed:
            ids = [u.item.id for u in removed]
            shown = ", ".join(ids) if len(ids) <= MARKER_IDS_SHOWN else f"{', '.join(ids[:MARKER_IDS_SHOWN])}, …"
            slot.act(
                Action(
                    "evict",
                    slot.section.eviction,
                    before,
                    slot.size,
                    f"removed {len(ids)} items to fit {alloc} ({reason}): {shown}",
                )
            )

    def _cut_boundary(self, slot: _Slot, unit: _Unit, alloc: int) -> bool:
        """Partial truncation of the boundary item: keep as much of it as fits (text mode)."""
        i = unit.index
        if not slot.kept[i] or unit.vouched:  # a vouched size cannot be re-derived for a cut
            return False
        self._own_units(slot)
        unit = slot.units[i]
        saved_text, saved_size = unit.text, unit.size
        isep = slot.section.item_separator
        full = self.counter.count(saved_text)

        def size_with(text: str) -> int:
            unit.text = text
            new = self.counter.count(text + isep) if text else 0
            slot.kept_total += new - unit.size
            unit.size = new
            if text and i > slot.last_kept:  # the last-kept cursor only walks back: re-arm it
                slot.last_kept = i
            return self._list_size(slot)

        # Added by the LlamaIndex-adapter helper (issue 5): when the list is over ``alloc`` even with this item
        # emptied, no cut of it can fit, so skip the search (each step tokenises the item).  Results are
        # unchanged; evicting 140 of 200 chunks no longer costs ~1,200 tokenisations.
        if size_with("") > alloc:
            size_with(saved_text)
            unit.text, unit.size = saved_text, saved_size
            return False

        lo, hi, best = 1, full - 1, ""
        while lo <= hi:  # the longest cut of this item that lets the list fit
            mid = (lo + hi) // 2
            candidate = self.counter.truncate(saved_text, mid, keep=slot.section.keep)
            if candidate and size_with(candidate) <= alloc:
                best, lo = candidate, mid + 1
            else:
                hi = mid - 1
        if not best:
            size_with(saved_text)
            unit.text, unit.size = saved_text, saved_size
            return False
        size_with(best)
        slot.act(
            Action("truncate", unit.item.id, saved_size, unit.size, f"partial cut of boundary item {unit.item.id!r}")
        )
        slot.truncated = True
        return True

    def _drop(self, slot: _Slot, reason: str) -> None:
        before = slot.size
        slot.pristine_drop = not slot.actions and slot.size == slot.full_size and reason == "budget"
        if slot.pristine_drop and slot.template is not None and slot.template.dropped is not None:
            slot.text, slot.size, slot.alloc, slot.dropped = "", 0, 0, True  # the memoised result says the rest
            return
        if slot.is_list:
            slot.remove(
                [
                    RemovedItem(
                        id=u.item.id,
                        section=slot.section.id,
                        reason="section dropped",
                        tokens=u.size,
                        score=u.item.score,
                        group=u.item.group,
                    )
                    for u in slot.units
                    if slot.kept[u.index]
                ]
            )
            slot.kept = [False] * len(slot.units)
            slot.kept_total = 0
            slot.evicted_groups = len(slot.evict_order)
            slot.marker, slot.marker_size = "", 0
        slot.text = ""
        slot.size = 0
        slot.dropped = True
        slot.alloc = 0
        slot.act(Action("drop", reason, before, 0, f"dropped whole ({reason}; min_tokens={slot.section.min_tokens})"))

    # ------------------------------------------------------------------ output

    def _emitted(self, slot: _Slot) -> list[_Emitted]:
        """Emitted units of a slot as (text, trailing separator, size of text + separator, vouched)."""
        if slot.dropped or slot.size == 0:
            return []
        if not slot.is_list:
            return [(slot.text, self.separator, slot.size, False)] if slot.text else []
        isep = slot.section.item_separator
        out: list[_Emitted] = []
        if slot.marker:
            out.append((slot.marker, isep, slot.marker_size, False))
        for unit in slot.units:
            if slot.kept[unit.index] and (unit.text or unit.vouched):
                out.append((unit.text, isep, unit.size, unit.vouched))
        if out and not out[-1][3]:
            text = out[-1][0]
            out[-1] = (text, self.separator, self.counter.count(text + self.separator), False)
        return out

    def _exact_total(self, slots: list[_Slot]) -> int:
        """The exact count of what is emitted.

        Sizes add up wherever the counter says a join is neutral (for
        o200k/cl100k: after a newline, before a non-space); other joins are
        re-counted as one string.  The last unit is counted without the
        trailing separator it was measured with.  Items whose size the caller
        vouched for (``Item.tokens``) count as vouched and are never re-counted.
        """
        if self.mode == "messages":
            return PRIMING_TOKENS + sum(s.size for s in slots if not s.dropped)
        neutral = getattr(self.counter, "neutral_join", None)
        sep = self.separator
        if neutral is not None and sep.endswith("\n"):
            fast = self._exact_total_fast(slots, neutral)
            if fast is not None:
                return fast
        units: list[_Emitted] = []
        for slot in slots:
            if slot.dropped or slot.size == 0:
                continue
            if slot.is_list:
                units.extend(self._emitted(slot))
            elif slot.text:
                units.append((slot.text, sep, slot.size, False))
        if not units:
            return 0
        text, _, size, vouched = units[-1]
        units[-1] = (text, "", size if vouched else self.counter.count(text), vouched)
        total = sum(u[2] for u in units if u[3])
        plain = [u for u in units if not u[3]]
        if neutral is None:
            return total + count_concat(self.counter, [t + tr for t, tr, _, _ in plain])
        group: list[_Emitted] = []
        prev_end = ""
        for unit in units:
            text, trailing, _, vouched = unit
            start = text[:1] or trailing[:1]
            if vouched:
                total += self._group_size(group)
                group = []
                prev_end = ""
                continue
            if group and start and not neutral(prev_end, start):
                group.append(unit)
            else:
                total += self._group_size(group)
                group = [unit]
            end = (trailing or text)[-1:]
            if end:
                prev_end = end
        return total + self._group_size(group)

    def _exact_total_fast(self, slots: list[_Slot], neutral: Any) -> int | None:
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
            if slot.dropped or slot.size == 0:
                continue
            if not slot.is_list:
                text = slot.text
                if not text:
                    continue
                if not first and not (
                    slot.template.start_ok if text is slot.section.content and slot.template else neutral("\n", text[0])
                ):
                    return None
                total += slot.size
                last_text, last_size, last_vouched, first = text, slot.size, False, False
                continue
            if not slot.section.item_separator.endswith("\n"):
                return None
            for text, _, size, vouched in self._emitted(slot):
                if not vouched and (not text or (not first and not neutral("\n", text[0]))):
                    return None
                total += size
                last_text, last_size, last_vouched, first = text, size, vouched, False
        if first:
            return 0
        if last_vouched:
            return total
        return total - last_size + self.counter.count(last_text)

    def _group_size(self, group: list[_Emitted]) -> int:
        if not group:
            return 0
        if len(group) == 1:
            return group[0][2]
        return self.counter.count("".join(t + tr for t, tr, _, _ in group))

    def _result(self, slot: _Slot) -> LaidOutSection:
        if slot.outranked:
            return self._outranked_result(slot.section)
        template = slot.template
        assert template is not None
        if slot.pristine_drop:
            if template.dropped is None:
                template.dropped = self._build_result(slot)
            return template.dropped
        untouched = not slot.actions and not slot.dropped and slot.size == slot.full_size
        if untouched and template.untouched is not None:
            return template.untouched
        result = self._build_result(slot)
        if untouched:
            template.untouched = result
        return result

    def _outranked_result(self, section: Section) -> LaidOutSection:
        """The record of a section dropped unmeasured; its sizes are counted when first read."""
        cached = self._outranked.get(section)
        if cached is not None:
            return cached

        def late() -> tuple[int, int, tuple[RemovedItem, ...]]:
            slot = _Slot(section=section, template=None, index=0, critical=False)
            self._ensure_measured([slot])
            full = slot.size
            removed = tuple(
                RemovedItem(
                    id=u.item.id,
                    section=section.id,
                    reason="section dropped",
                    tokens=u.size,
                    score=u.item.score,
                    group=u.item.group,
                )
                for u in slot.units
            )
            self._claim(slot)
            return full, slot.size, removed

        result = LaidOutSection(
            id=section.id,
            status="dropped",
            critical=False,
            priority=section.priority,
            shrink=section.shrink,
            grow=section.grow,
            min_tokens=section.min_tokens,
            full_tokens=None,
            base_tokens=None,
            allocated_tokens=0,
            final_tokens=0,
            content=() if section.is_list else "",
            text="",
            role=section.role,
            actions=(Action("drop", "outranked", 0, 0, OUTRANKED_DETAIL),),
            removed=None,
            late=late,
        )
        self._outranked[section] = result
        return result

    def _build_result(self, slot: _Slot) -> LaidOutSection:
        section = slot.section
        status: Status
        if slot.dropped or (slot.size == 0 and slot.full_size > 0):
            status = "dropped"
        elif slot.truncated:
            status = "truncated"
        elif slot.lensed and any(a.kind == "lens" for a in slot.actions):
            status = "compressed"
        elif slot.size > slot.base_size and not slot.critical:
            status = "expanded"
        else:
            status = "kept"
        content: str | tuple[Item, ...]
        if slot.is_list:
            kept = tuple(
                u.item if u.text == u.item.content else replace(u.item, content=u.text, tokens=None)
                for u in slot.units
                if slot.kept[u.index]
            )
            content = kept
            parts = ([slot.marker] if slot.marker else []) + [it.content for it in kept if it.content]
            rendered = section.item_separator.join(parts)
        else:
            content = rendered = slot.text
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
            selection=slot.selection,
        )


def _input_hash(sections: Sequence[Section], box: TokenBox) -> str:
    """sha256 over everything that determines a layout (computed on demand)."""
    import hashlib

    h = hashlib.sha256()
    h.update(repr((box.budget.to_dict(), box.counter.name, box.separator, box.mode)).encode())
    for s in sections:
        h.update(
            repr(
                (
                    s.id,
                    s.priority,
                    s.min_tokens,
                    s.max_tokens,
                    s.basis,
                    s.grow,
                    s.shrink,
                    tuple(lens_name(x) for x in s.strategy),
                    s.keep,
                    s.role,
                    s.eviction,
                    s.partial,
                    s.omission_marker,
                    s.item_separator,
                )
            ).encode()
        )
        if isinstance(s.content, str):
            h.update(s.content.encode("utf-8", "surrogatepass"))
        else:
            for it in s.content:
                h.update(
                    repr((it.id, it.role, it.kind, it.score, it.priority, it.group, it.pinned, it.tokens)).encode()
                )
                h.update(it.content.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()
