"""The shape of a layout's input, carried over to the next call that differs in a few sections (issue 16 §1).

A layout's *shape* is what it derives from the sections' ids, priorities
and shrink weights alone: that the list is valid (Section objects, unique
ids), whether a layout memo may key on it, which sections are flexible, and the protection order — the sort by
(priority ASC, shrink DESC, declaration order) that claims, compression and
refill follow.  The realistic next call (one section edited, a few
appended) changes almost none of it, so :func:`next_shape` patches the
previous shape instead of re-validating and re-sorting a thousand sections:
an edited section leaves and re-enters the order by binary search, an
appended one enters it, one removed section leaves it (the indices above it
shift down by one, which keeps their order).  Anything else — a reordered
section, a changed id, more than :data:`MAX_PATCHED` edits — rebuilds the shape from
scratch (:func:`new_shape`), so a patched shape is always the shape the
full computation gives (a hypothesis property compares the two).
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Sequence
from itertools import compress
from operator import attrgetter, is_, is_not

from tokenbox_core.sections import Section, validate_sections

from .memo import memo_safe

__all__ = ["MAX_PATCHED", "Shape", "new_shape", "next_shape"]

MAX_PATCHED = 32
"""A call that edits or appends more sections than this rebuilds its shape (patching costs O(edits · n))."""

_BY_SHRINK = attrgetter("shrink")
_BY_PRIORITY = attrgetter("priority")


class Shape:
    """Validated sections, the flexible ones' indices (declaration order) and the protection order (indices)."""

    __slots__ = ("_ids", "flexible", "memo_safe", "order", "sections")

    def __init__(self, sections: tuple[Section, ...], flexible: list[int], order: list[int], memo_safe: bool) -> None:
        self.sections = sections
        self.flexible = flexible
        self.order = order
        self.memo_safe = memo_safe
        """Whether every section's inputs are immutable, so a layout memo may key on them (:mod:`.memo`)."""
        self._ids: frozenset[str] | None = None

    @property
    def ids(self) -> frozenset[str]:
        if self._ids is None:
            self._ids = frozenset(s.id for s in self.sections)
        return self._ids


def new_shape(sections: Sequence[Section]) -> Shape:
    """The shape of ``sections``, computed in full (raises :class:`SectionError` for an invalid list)."""
    checked = validate_sections(sections)
    flexible = [i for i, s in enumerate(checked) if s.shrink != 0]
    safe = all(memo_safe(s) for s in checked if s.strategy or s.policy is not None)
    return Shape(checked, flexible, protection_order(checked, flexible), safe)


def protection_order(sections: Sequence[Section], flexible: list[int]) -> list[int]:
    """``flexible`` (indices, ascending) sorted by (priority ASC, shrink DESC, declaration order).

    Two stable sorts of the indices on C-level keys (shrink descending,
    then priority): stability keeps declaration order within ties, so the
    result is the sort by ``(priority, -shrink, index)`` without building a
    key per section.
    """
    shrink = list(map(_BY_SHRINK, sections))
    priority = list(map(_BY_PRIORITY, sections))
    return sorted(sorted(flexible, key=shrink.__getitem__, reverse=True), key=priority.__getitem__)


def next_shape(previous: Shape | None, sections: tuple[Section, ...]) -> Shape | None:
    """``previous`` patched to ``sections`` (a few edited or appended sections, at most one removed), or None."""
    if previous is None:
        return None
    shape = _patched(previous, sections)
    n, n_old = len(sections), len(previous.sections)
    if shape is None and n_old:  # one section removed (and a few appended: a sliding chat window)?
        first = next(compress(range(min(n, n_old)), map(is_not, previous.sections, sections)), min(n, n_old))
        for r in (first, n_old - 1) if n < n_old and first < n_old - 1 else (first,):
            shorter = _without(previous, sections, r)
            shape = _patched(shorter, sections) if shorter is not None else None
            if shape is not None:
                break
    return shape


def _without(previous: Shape, sections: tuple[Section, ...], r: int) -> Shape | None:
    """``previous`` less its section ``r``, if the sections after it follow in ``sections`` from ``r`` on."""
    old = previous.sections
    n, n_old = len(sections), len(old)
    tail = old[r + 1 :]
    if r >= n_old or len(tail) > n - r or not previous.memo_safe:
        return None
    if not all(map(is_, tail, sections[r : r + len(tail)])):
        return None
    flexible = [j - (j > r) for j in previous.flexible if j != r]
    order = [j - (j > r) for j in previous.order if j != r]
    shape = Shape((*old[:r], *tail), flexible, order, True)  # a part of a memo-safe input is memo-safe
    if previous._ids is not None:
        shape._ids = previous._ids - {old[r].id}
    return shape


def _patched(previous: Shape, sections: tuple[Section, ...]) -> Shape | None:
    old = previous.sections
    n_old = len(old)
    if len(sections) < n_old:
        return None
    edited = list(compress(range(n_old), map(is_not, old, sections)))
    appended = range(n_old, len(sections))
    if len(edited) + len(appended) > MAX_PATCHED:
        return None
    for i in edited:
        section = sections[i]
        if type(section) is not Section or section.id != old[i].id:
            return None  # a new id might collide: validate in full
    if appended:
        seen = set(previous.ids)
        for i in appended:
            section = sections[i]
            if type(section) is not Section or section.id in seen:
                return None  # validate_sections names the problem
            seen.add(section.id)
    flexible = previous.flexible
    order = previous.order
    touched = False
    for i in edited:  # leave the order by the old keys
        before, after = old[i], sections[i]
        if before.priority == after.priority and before.shrink == after.shrink:
            continue
        if not touched:
            flexible, order, touched = list(flexible), list(order), True
        if before.shrink != 0:
            del order[bisect_left(order, _key(old, i), key=lambda j: _key(old, j))]
            del flexible[bisect_left(flexible, i)]
    if touched or appended:
        if not touched:
            flexible, order = list(flexible), list(order)
        for i in edited:  # re-enter by the new keys
            before, after = old[i], sections[i]
            if (before.priority == after.priority and before.shrink == after.shrink) or after.shrink == 0:
                continue
            insort(order, i, key=lambda j: _key(sections, j))
            insort(flexible, i)
        for i in appended:
            if sections[i].shrink != 0:
                insort(order, i, key=lambda j: _key(sections, j))
                flexible.append(i)
    safe = previous.memo_safe and all(memo_safe(sections[i]) for i in (*edited, *appended))
    shape = Shape(sections, flexible, order, safe)
    shape._ids = frozenset(seen) if appended else previous._ids  # edited sections keep their ids
    return shape


def _key(sections: Sequence[Section], i: int) -> tuple[int, float, int]:
    section = sections[i]
    return (section.priority, -section.shrink, i)
