"""The Token Box: a deterministic layout of sections into a fixed budget.

The algorithm (the Token Box Model, ``docs/concepts.md#the-token-box``), one
module per step:

1. **Measure** every section with the declared counter (:mod:`.measure`).
   A section's size includes the separator that follows it, so sizes add up
   exactly wherever a join cannot change a count; the emitted total is
   re-counted at the end (:mod:`.totals`).
2. **Fixed load**: critical sections (``shrink == 0``) are kept whole.  If they
   alone exceed the capacity (``max_tokens - output_reserve - reserved``),
   :class:`~tokenbox_core.errors.ContextCriticalOverflow` is raised.  The
   flexible budget is Cupel's effective budget with the critical load as
   the pinned tokens.
3. **Claims** and **expansion** (:mod:`.claim`): each flexible section claims
   ``min(basis, content, max_tokens)``; free space goes to ``grow > 0``.
4. **Compression** (:mod:`.compress`): while over the target, flexible
   sections are visited in (priority ASC, shrink DESC, declaration order):
   lenses, then a cut of exactly ``min(deficit, size - min)``, then a drop.
   The output is re-counted exactly; if BPE merges at the joins left it over
   the target, compression continues.  An atomic group that lost a member in
   one section loses its members in the others (:mod:`.groups`).
5. **Refill** (:mod:`.refill`): what compression took is re-admitted, in
   protection order, into the room that is left (not with ``strict=True``).
6. **Results** (:mod:`.results`): one record per section, in declaration order.
"""

from __future__ import annotations

import functools
import threading
import time
import uuid
from collections.abc import Sequence
from typing import Any

from tokenbox_core.budget import ContextBudget
from tokenbox_core.errors import ContextCriticalOverflow, SectionError
from tokenbox_core.layout import LaidOutSection, Layout
from tokenbox_core.logs import log_layout
from tokenbox_core.sections import Section
from tokenbox_core.tokens import PRIMING_TOKENS, TokenCounter, get_counter

from .claim import expand
from .compress import compress
from .flow import claims, settle
from .groups import enforce_groups, group_members, incomplete_groups
from .incremental import Settled, relayout
from .inputs import input_hash
from .measure import Ruler
from .memo import LayoutMemo, same_config
from .refill import refill
from .results import Results
from .shape import Shape, new_shape, next_shape
from .state import Mode
from .totals import exact_total

__all__ = ["TokenBox"]


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
            stays empty (see :mod:`tokenbox_core.box.refill`).

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
        self._ruler = Ruler(self.counter, separator, mode)
        self._results = Results(self._ruler)
        self._memo = LayoutMemo()
        self._shape: Shape | None = None  # the last layout's shape, patched by the next call (.shape)
        self._settled: Settled | None = None  # the last layout's settled state (.incremental)
        self._lock = threading.Lock()
        self._incremental_hits = 0  # layouts the incremental path computed (tests, benchmarks)

    def __repr__(self) -> str:
        strict = ", strict=True" if self.strict else ""
        return f"TokenBox(budget={self.budget.max_tokens}, counter={self.counter.name!r}, mode={self.mode!r}{strict})"

    def layout(self, sections: Sequence[Section]) -> Layout:
        """Lay out ``sections`` into the budget and return the :class:`Layout`.

        A call whose inputs equal one of the box's last few calls returns
        that call's decisions under a fresh trace id (:mod:`.memo`); a call
        that edits a few sections of the previous one, or runs under a new
        budget, is re-decided only where the change can reach
        (:mod:`.incremental`) — both give exactly the layout a fresh box would.
        """
        started = time.perf_counter()
        if self.mode == "messages":  # issue 26 item 2: a misspelt role would be sent to the provider
            from tokenbox_core.chat.validate import check_section_roles

            check_section_roles(sections)
        # the budget last: the incremental path takes a configuration that differs only there (config[:-1])
        config = (self._ruler, self.counter, self.separator, self.mode, self.strict, self.config_version, self.budget)
        if isinstance(sections, list | tuple) and self._memo:
            remembered = self._memo.lookup(config, tuple(sections))
            if remembered is not None:
                log_layout(remembered)
                return remembered
        ruler = self._ruler
        seq = tuple(sections) if isinstance(sections, list | tuple) else None
        shape = next_shape(self._shape, seq) if seq is not None else None
        if shape is None:
            shape = new_shape(sections)
        self._shape = shape
        checked = shape.sections
        capacity = max(0, self.budget.max_tokens - self.budget.output_reserve - self.budget.reserved_tokens)
        ruler.reach = capacity  # the most a section can receive: what a long one's measure encodes (fast_measure)
        with self._lock:  # the settled state serves one call: a concurrent one takes the full path
            prev, self._settled = self._settled, None
        done = None
        # the same configuration but perhaps the budget: the fixed load does not depend on it, the limits do
        if (
            prev is not None
            and seq is not None
            and prev.fixed <= capacity
            and same_config(prev.config[:-1], config[:-1])
        ):
            limits = self._limits(prev.fixed)
            done = relayout(ruler, self._results, prev, checked, shape.order, self.strict, config, limits)
        if done is not None:  # issue 16: re-decided only where the edit reaches (.incremental)
            laid_out, total, settled = done
            self._incremental_hits += 1
            fixed, limit_max, limit_target = settled.fixed, settled.limit_max, settled.limit_target
            if total > limit_max or total > capacity:
                raise ContextCriticalOverflow(capacity, total, settled.critical_ids)
        else:
            laid_out, total, settled = self._full(config, shape, capacity)
            fixed, limit_max, limit_target = settled.fixed, settled.limit_max, settled.limit_target
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
            input_hasher=lambda: input_hash(checked, self),
            latency_ms=(time.perf_counter() - started) * 1000.0,
            trace_id=str(uuid.uuid4()),
            timestamp=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        )
        log_layout(result)  # one DEBUG line under the "tokenbox" logger (tokenbox_core.logs)
        self._memo.remember(config, checked, result, shape.memo_safe)
        if settled.keep:
            with self._lock:
                self._settled = settled
        return result

    def _limits(self, fixed: int) -> tuple[int, int, int]:
        """The fixed load and the most and the target a layout may reach above it under this box's budget."""
        effective = self.budget.effective(pinned_tokens=fixed)
        return fixed, fixed + effective.max_tokens, fixed + effective.target_tokens

    def _full(
        self, config: tuple[Any, ...], shape: Shape, capacity: int
    ) -> tuple[tuple[LaidOutSection, ...], int, Settled]:
        """The whole algorithm over every section: the records, the exact total and the state it leaves."""
        ruler = self._ruler
        checked = shape.sections
        slots = ruler.new_slots(checked)
        groups = group_members(slots)
        critical = [s for s in slots if s.critical]
        ruler.ensure_measured(critical)
        for slot in critical:
            if slot.section.max_tokens is not None and slot.full_size > slot.section.max_tokens:
                raise SectionError(
                    f"critical section {slot.section.id!r} has {slot.full_size} tokens, over its max_tokens "
                    f"({slot.section.max_tokens}); critical sections are never cut: raise max_tokens or give it "
                    f"shrink > 0"
                )

        if self.mode == "messages":
            fixed = PRIMING_TOKENS + sum(s.size for s in critical)
        else:  # exact: the last critical section's separator is only paid if something follows it
            fixed = exact_total(ruler, critical)
        critical_ids = [s.section.id for s in critical]
        if fixed > capacity:
            raise ContextCriticalOverflow(capacity, fixed, critical_ids)
        fixed, limit_max, limit_target = self._limits(fixed)

        flexible = [slots[i] for i in shape.flexible]
        order = [slots[i] for i in shape.order]
        running, stop = claims(ruler, order, fixed, limit_target)
        expand(ruler, flexible, limit_target - running)

        estimate = fixed + sum(s.size for s in flexible if not s.dropped)
        if estimate > limit_target:  # sizes carry their separators, so the sum is (nearly) exact
            compress(ruler, order, estimate - limit_target)
        exact = functools.partial(exact_total, ruler, slots)
        total = settle(ruler, exact, order, limit_target)
        if groups and enforce_groups(ruler, groups):
            total = exact_total(ruler, slots)
        if not self.strict and total < limit_target:
            blocked = incomplete_groups(groups) if groups else frozenset()
            total = refill(ruler, exact, reversed(order), limit_target, blocked, total)
        if total > limit_max or total > capacity:
            raise ContextCriticalOverflow(capacity, total, critical_ids)

        laid_out = self._results.results(slots)
        limits = (fixed, limit_max, limit_target)
        settled = Settled(config, shape.sections, shape.order, laid_out, critical, limits, stop, slots)
        settled.keep = not groups
        return laid_out, total, settled
