"""The Token Box: a deterministic layout of sections into a fixed budget.

:meth:`TokenBox.layout` is the algorithm (the Token Box Model,
``docs/concepts.md#the-token-box``), one step after another, each in a module
of its own:

1. **Validate** the sections (unique ids; a group may not span critical and
   flexible sections, :mod:`._groups`).
2. **Measure** every section in one pass (:mod:`._measure`).  A section's size
   includes the separator that follows it, so sizes nearly add up; what is
   emitted is re-counted (:mod:`._totals`), since BPE can merge across a join.
3. **Fixed load**: critical sections (``shrink == 0``) are kept whole.  If they
   alone exceed the room (``ContextBudget.room``: ``max_tokens - output_reserve - reserved``),
   :class:`~tokenbox_core.errors.ContextCriticalOverflow` is raised.  The
   flexible budget is Cupel's effective budget with the critical load as
   the pinned tokens.
4. **Claims** and **expansion** (:mod:`._claim`): each flexible section claims
   ``min(basis, content, max_tokens)`` in protection order (priority DESC,
   shrink ASC, the later declaration first); free space goes to ``grow > 0``.
5. **Compression** (:mod:`._compress`): while over the target, flexible
   sections are visited in the reverse order: lenses, then a cut of exactly
   ``min(deficit, size - min)``, then a drop; the output is re-counted and
   compression continues while BPE merges at the joins leave it over.
6. **Groups** (:mod:`._groups`): an atomic group that lost a member in one
   section loses its members in the others.
7. **Refill** (:mod:`._refill`): what compression took is re-admitted, in
   protection order, into the room that is left (not with ``strict=True``).
8. **Results** (:mod:`._results`): one record per section, in declaration order.
"""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import Sequence
from typing import Any

from tokenbox_core._arguments import suggest_keywords
from tokenbox_core._budget import ContextBudget
from tokenbox_core._logs import log_layout
from tokenbox_core._sections import Section, validate_sections
from tokenbox_core.errors import ContextCriticalOverflow, SectionError
from tokenbox_core.layout import Layout
from tokenbox_core.tokens import TokenCounter, get_counter

from ._claim import claims, expand
from ._compress import compress, settle
from ._groups import enforce_groups, group_members, incomplete_groups
from ._inputs import input_hash
from ._measure import Ruler
from ._refill import refill
from ._results import results
from ._state import Mode, Slot
from ._totals import exact_total

__all__ = ["TokenBox"]


@suggest_keywords
class TokenBox:
    """Lays out sections into a budget, deterministically (``docs/concepts.md#the-token-box``).

    Args:
        budget: an int (tokens) or a :class:`ContextBudget`.
        counter: anything :func:`get_counter` accepts (default o200k_base).
        separator: joins sections in ``Layout.text`` (text mode).
        mode: ``"text"`` sizes sections as text joined by ``separator``;
            ``"messages"`` sizes each text section and each list item as one
            chat message (``Item.tokens`` when given, else 4 + role + content)
            plus 3 priming tokens.
        config_version: recorded in the trace (your prompt config's version).
        strict: ``True`` reproduces the seed's algorithm literally: no refill
            after compression, so room freed by a later section's cut or drop
            stays empty (see :mod:`tokenbox_core.box._refill`).

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
        strict: bool = False,
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
        if not isinstance(strict, bool):
            raise SectionError(f"strict must be True or False, got {strict!r}")
        self.strict = strict

    def __repr__(self) -> str:
        strict = ", strict=True" if self.strict else ""
        return f"TokenBox(budget={self.budget.max_tokens}, counter={self.counter.name!r}, mode={self.mode!r}{strict})"

    def layout(self, sections: Sequence[Section]) -> Layout:
        """Lay out ``sections`` into the budget and return the :class:`Layout` (the steps of the module docstring)."""
        started = time.perf_counter()
        ruler = Ruler(self.counter, self.separator, self.mode)

        # 1. validate, 2. measure
        checked = validate_sections(sections)
        if self.mode == "messages":  # issue 26 item 2: a misspelt role would be sent to the provider
            from tokenbox_core.chat._validate import check_section_roles

            check_section_roles(checked)
        slots = [Slot(section, i, section.shrink == 0) for i, section in enumerate(checked)]
        groups = group_members(slots)
        ruler.measure(slots)

        # 3. the fixed load: the critical sections, whole
        critical = [s for s in slots if s.critical]
        for slot in critical:
            if slot.section.max_tokens is not None and slot.full_size > slot.section.max_tokens:
                raise SectionError(
                    f"critical section {slot.section.id!r} has {slot.full_size} tokens, over its max_tokens "
                    f"({slot.section.max_tokens}); critical sections are never cut: raise max_tokens or give it "
                    f"shrink > 0"
                )
        fixed = exact_total(ruler, critical)  # the last one's separator is only paid if something follows it
        critical_ids = [s.section.id for s in critical]
        capacity = self.budget.room
        if fixed > capacity:
            raise ContextCriticalOverflow(capacity, fixed, critical_ids)
        effective = self.budget.effective(pinned_tokens=fixed)
        limit_max, limit_target = fixed + effective.max_tokens, fixed + effective.target_tokens

        # 4. claims in protection order, expansion into what is left
        flexible = [s for s in slots if not s.critical]
        order = sorted(flexible, key=lambda s: (s.section.priority, -s.section.shrink, s.index))  # lowest first
        running = claims(ruler, order, fixed, limit_target)
        expand(ruler, flexible, limit_target - running)

        # 5. compression, lowest first, until the exact total fits
        estimate = fixed + sum(s.size for s in flexible if not s.dropped)
        if estimate > limit_target:  # sizes carry their separators, so the sum is (nearly) exact
            compress(ruler, order, estimate - limit_target)
        exact = functools.partial(exact_total, ruler, slots)
        total = settle(ruler, exact, order, limit_target)

        # 6. atomic groups across sections, 7. refill of the room left
        if groups and enforce_groups(ruler, groups):
            total = exact()
        if not self.strict and total < limit_target:
            blocked = incomplete_groups(groups) if groups else frozenset()
            total = refill(ruler, exact, reversed(order), limit_target, blocked, total)
        if total > limit_max or total > capacity:
            raise ContextCriticalOverflow(capacity, total, critical_ids)

        # 8. the records
        result = Layout(
            sections=results(ruler, slots),
            total_tokens=total,
            budget=self.budget,
            max_tokens=limit_max,
            target_tokens=limit_target,
            fixed_tokens=fixed,
            counter_name=self.counter.name,
            separator=self.separator,
            mode=self.mode,
            config_version=self.config_version,
            input_hasher=lambda: input_hash(checked, self),
            latency_ms=(time.perf_counter() - started) * 1000.0,
            trace_id=str(uuid.uuid4()),
            timestamp=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        )
        log_layout(result)  # one DEBUG line under the "tokenbox" logger (tokenbox_core._logs)
        return result
