"""Step 6, results: each slot becomes a :class:`~tokenbox_core.layout.LaidOutSection`.

Results of sections a layout left whole, or dropped whole without touching
them, are memoised on the section's template, so a re-layout that changes
one section builds one new record.  A section dropped unmeasured (everything
that outranks it already fills the budget) gets a record whose sizes are
counted only when first read, memoised on the section beside its
measurements (at most :data:`~.state.MEMO_LIMIT` entries a section, the oldest evicted first).
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import Any

from tokenbox_core.layout import Action, LaidOutSection, RemovedItem, Status
from tokenbox_core.sections import Item, Section

from .claim import claim
from .measure import Ruler
from .state import MEMO_ATTR, MEMO_LIMIT, OUTRANKED_DETAIL, Slot, removed_record

OUTRANKED_ACTIONS = (Action("drop", "outranked", 0, 0, OUTRANKED_DETAIL),)
"""The actions of every section dropped unmeasured (immutable, so one tuple serves them all)."""
OUTRANKED_KEY = "outranked"
"""A section's record as a section dropped unmeasured is memoised beside its measurements under this key and the
ruler's key (a measurement's key is a 3-tuple, so they never collide)."""

__all__ = ["Results", "build", "whole_text"]

_new = object.__new__


class Results:
    """Builds the records of one box's layouts (and remembers those of sections dropped unmeasured)."""

    def __init__(self, ruler: Ruler) -> None:
        self.ruler = ruler
        self._key = (OUTRANKED_KEY, ruler.memo_key)  # where a section's outranked record is memoised

    def results(self, slots: list[Slot]) -> tuple[LaidOutSection, ...]:
        """The records of ``slots`` in order (:meth:`result` of each, the common cases inlined)."""
        out: list[LaidOutSection] = []
        append = out.append
        result = self.result
        key = self._key
        for slot in slots:
            if slot.outranked:
                known = slot.section.__dict__.get(MEMO_ATTR)
                record = known.get(key) if known is not None else None
                append(record if record is not None else self._outranked(slot.section, known))
                continue
            template = slot.template
            if (
                template is not None
                and not slot.actions
                and not slot.dropped
                and not slot.pristine_drop
                and slot.size == slot.full_size
            ):
                untouched = template.untouched
                if untouched is None and not slot.is_list:
                    untouched = template.untouched = whole_text(slot)
                append(untouched if untouched is not None else result(slot))
            else:
                append(result(slot))
        return tuple(out)

    def result(self, slot: Slot) -> LaidOutSection:
        if slot.outranked:
            return self.outranked(slot.section)
        template = slot.template
        assert template is not None
        if slot.pristine_drop:
            if template.dropped is None:
                template.dropped = build(slot)
            return template.dropped
        untouched = not slot.actions and not slot.dropped and slot.size == slot.full_size
        if untouched and template.untouched is not None:
            return template.untouched
        result = build(slot)
        if untouched:
            template.untouched = result
        return result

    def outranked(self, section: Section) -> LaidOutSection:
        """The record of a section dropped unmeasured; its sizes are counted when first read."""
        known: dict[Any, Any] | None = section.__dict__.get(MEMO_ATTR)
        cached = known.get(self._key) if known is not None else None
        if isinstance(cached, LaidOutSection):
            return cached
        return self._outranked(section, known)

    def _outranked(self, section: Section, known: dict[Any, Any] | None) -> LaidOutSection:
        """A new record of a section dropped unmeasured, memoised in ``known`` (its memo, or None: none yet)."""
        result: LaidOutSection = _new(LaidOutSection)  # as the keyword constructor would set it, without its cost
        result.id = section.id
        result.status = "dropped"
        result.critical = False
        result.priority = section.priority
        result.shrink = section.shrink
        result.grow = section.grow
        result.min_tokens = section.min_tokens
        result._full_tokens = result._base_tokens = None
        result.allocated_tokens = result.final_tokens = 0
        result.content = "" if isinstance(section.content, str) else ()
        result.text = result.marker = ""
        result.role = section.role
        result.actions = OUTRANKED_ACTIONS
        result._removed = result.selection = None
        result._late = partial(_late_sizes, self.ruler, section)  # one C object, not a closure and its cells
        result.measured = False
        if known is None:
            known = {}
            object.__setattr__(section, MEMO_ATTR, known)
        elif len(known) >= MEMO_LIMIT:
            del known[next(iter(known))]  # bounded like the measurements: the oldest goes first
        known[self._key] = result
        return result


def _late_sizes(ruler: Ruler, section: Section) -> tuple[int, int, tuple[RemovedItem, ...]]:
    """A section dropped unmeasured, measured when its record's sizes are first read: full, claim, removed."""
    slot = Slot(section=section, template=None, index=0, critical=False)
    ruler.ensure_measured([slot])
    full = slot.size
    removed = tuple(removed_record(slot, u, "section dropped") for u in slot.units)
    claim(ruler, slot)
    return full, slot.size, removed


def status_of(slot: Slot) -> Status:
    if slot.dropped or (slot.size == 0 and slot.full_size > 0):
        return "dropped"
    if slot.truncated:
        return "truncated"
    if slot.lensed and any(a.kind == "lens" for a in slot.actions):
        return "compressed"
    if slot.size > slot.base_size and not slot.critical:
        return "expanded"
    return "kept"


def whole_text(slot: Slot) -> LaidOutSection:
    """What :func:`build` gives a text slot left whole with no actions, made without the keyword constructor.

    A cold layout makes hundreds of these; setting the record's slots
    directly costs a tenth of the constructor's keyword handling (a test
    checks every slot against :func:`build`).
    """
    section = slot.section
    record: LaidOutSection = _new(LaidOutSection)
    record.id = section.id
    record.status = status_of(slot)
    record.critical = critical = slot.critical
    record.priority = section.priority
    record.shrink = section.shrink
    record.grow = section.grow
    record.min_tokens = section.min_tokens
    record._full_tokens = slot.full_size
    record._base_tokens = slot.full_size if critical else slot.base_size
    record.allocated_tokens = slot.size if critical else max(slot.alloc, slot.size)
    record.final_tokens = slot.size
    record.content = record.text = slot.text
    record.role = section.role
    record.marker = slot.marker
    record.actions = tuple(slot.actions)
    record._removed = tuple(slot.removed)
    record.selection = slot.selection
    record._late = None
    record.measured = True
    return record


def build(slot: Slot) -> LaidOutSection:
    """The record of ``slot`` as it stands."""
    section = slot.section
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
        status=status_of(slot),
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
