"""Overflow policies (chapter §6.4.3): what happens when the elastic minimums do not fit.

Overflow means ``Σ t_min`` over the elastic sections exceeds the elastic
budget (window − generation reserve − fixed tiers − scaffolding).  Each
policy is a pure function over the section plans and returns a
:class:`Resolution`:

- ``fail_loud``: a :class:`CompilationError` naming the numbers;
- ``truncate_lowest``: drop the lowest-priority elastic section entirely
  (ties: the later one), again until the minimums fit;
- ``cascade_compress``: rewrite every elastic item with the config's most
  aggressive lenses (``cascade_lenses``) before anything is dropped; if the
  minimums still do not fit, scale them down proportionally to what fits;
- ``defer_retrieval``: emit without evidence and flag ``retrieval_pending``
  with the deferred evidence ids;
- ``paginate``: the evidence minimum no longer binds (evidence that does not
  fit moves to further pages, each carrying all fixed tiers; see
  :mod:`tokenbox_core.compiler.paginate`).

When a policy cannot make room (the fixed tiers alone overflow, or deferring
evidence is not enough) it raises :class:`CompilationError` too.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from tokenbox_core._sections import Item, Section
from tokenbox_core.compiler._build import SectionPlan
from tokenbox_core.compiler._config import CompilerConfig
from tokenbox_core.compiler._filter import Exclusion
from tokenbox_core.errors import CompilationError, FixedTiersOverflow, Violation
from tokenbox_core.lenses import get_lens
from tokenbox_core.tokens import TokenCounter
from tokenbox_core.tokens._messages import message_token_count

__all__ = ["OverflowEvent", "Resolution", "resolve_overflow"]

Measure = Callable[[Section], int]


@dataclass(frozen=True)
class OverflowEvent:
    """One overflow decision, recorded in the trace."""

    policy: str
    action: str
    section: str
    detail: str
    numbers: Mapping[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "action": self.action,
            "section": self.section,
            "detail": self.detail,
            "numbers": dict(self.numbers),
        }


@dataclass(frozen=True)
class Resolution:
    """Plans and minimums after the overflow policy ran, with what it did."""

    plans: tuple[SectionPlan, ...]
    minimums: dict[str, int]
    events: tuple[OverflowEvent, ...] = ()
    excluded: tuple[Exclusion, ...] = ()
    retrieval_pending: tuple[str, ...] = ()


def _overflow_error(policy: str, minimum: int, budget: int, fixed: int, capacity: int, why: str) -> CompilationError:
    return CompilationError(
        [
            Violation(
                "overflow",
                f"{why}: the elastic minimums need {minimum:,} tokens but only {budget:,} remain "
                f"(capacity {capacity:,} − fixed tiers {fixed:,}) under overflow policy {policy!r}; "
                f"lower CompilerConfig.minimums, shorten the fixed tiers, raise the budget, or choose "
                f"another overflow policy",
            )
        ]
    )


def _lowest(tiers: list[str], config: CompilerConfig) -> str:
    """The tier lost first: lowest priority, ties the later tier (the Token Box's rule)."""
    return min(enumerate(tiers), key=lambda p: (config.priorities[p[1]], -p[0]))[1]


def _lens_item(item: Item, plan: SectionPlan, lenses: tuple[str, ...], ratio: float, counter: TokenCounter) -> Item:
    text = item.content
    size = counter.count(text)
    target = max(1, math.floor(size * ratio))
    for name in lenses:
        out = get_lens(name)(text, target, counter)
        if isinstance(out, str) and counter.count(out) <= counter.count(text):
            text = out
    if text == item.content:
        return item
    tokens = None
    if item.tokens is not None:
        original = plan.payload.get(item.id)
        message = dict(original) if isinstance(original, Mapping) else {"role": item.role or "user"}
        message["content"] = text
        tokens = message_token_count(message, counter)
    return Item(
        item.id,
        text,
        role=item.role,
        kind=item.kind,
        score=item.score,
        priority=item.priority,
        group=item.group,
        pinned=item.pinned,
        tokens=tokens,
        tags=item.tags,
        metadata=item.metadata,
        timestamp=item.timestamp,
        source=item.source,
    )


def _cascade(plan: SectionPlan, config: CompilerConfig, ratio: float, counter: TokenCounter) -> SectionPlan:
    section = plan.section
    if section.is_list:
        items = tuple(_lens_item(i, plan, config.cascade_lenses, ratio, counter) for i in section.items)
        return plan.with_section(_with_content(section, items))
    text = section.content
    assert isinstance(text, str)
    for name in config.cascade_lenses:
        text = get_lens(name)(text, max(1, math.floor(counter.count(text) * ratio)), counter)
    return plan.with_section(_with_content(section, text))


def _with_content(section: Section, content: str | tuple[Item, ...]) -> Section:
    return replace(section, content=content)


def _scaled(minimums: dict[str, int], budget: int) -> dict[str, int]:
    """Minimums scaled to sum to at most ``budget``: floors, then largest remainders (ties: declaration order)."""
    total = sum(minimums.values())
    if total <= budget:
        return dict(minimums)
    quotas = {k: v * budget / total for k, v in minimums.items()}
    out = {k: math.floor(q) for k, q in quotas.items()}
    leftover = budget - sum(out.values())
    order = sorted(enumerate(quotas.items()), key=lambda p: (-(p[1][1] - math.floor(p[1][1])), p[0]))
    for _, (k, _q) in order[:leftover]:
        out[k] += 1
    return out


def resolve_overflow(
    plans: tuple[SectionPlan, ...],
    minimums: dict[str, int],
    *,
    budget: int,
    fixed: int,
    capacity: int,
    config: CompilerConfig,
    counter: TokenCounter,
    measure: Measure,
) -> Resolution:
    """Apply the configured overflow policy when ``Σ minimums > budget``; otherwise return the input unchanged."""
    policy = config.overflow_policy
    minimum = sum(minimums.values())
    if budget < 0:  # the critical-overflow condition: a ContextCriticalOverflow as on every other path
        ids = [p.id for p in plans if not p.elastic]
        why = (
            f"the fixed tiers alone exceed the window: they need {fixed:,} tokens but the window holds {capacity:,} "
            f"after the generation reserve (over by {fixed - capacity:,}; fixed sections: {', '.join(ids)}); no "
            f"overflow policy cuts fixed tiers — shorten the policy, task, tools or the latest user message, or "
            f"raise the budget"
        )
        raise FixedTiersOverflow(max(0, capacity), fixed, ids, Violation("overflow", why))
    if minimum <= budget:
        return Resolution(plans, dict(minimums))
    numbers = {"minimums": minimum, "elastic_budget": budget, "fixed": fixed, "capacity": capacity}
    if policy == "fail_loud":
        raise _overflow_error(policy, minimum, budget, fixed, capacity, "overflow")
    events: list[OverflowEvent] = []
    excluded: list[Exclusion] = []
    current = list(plans)
    mins = dict(minimums)
    if policy == "truncate_lowest":
        while sum(mins.values()) > budget:
            tier = _lowest(list(mins), config)
            need = mins.pop(tier)
            victims = [p for p in current if p.elastic_tier == tier]
            current = [p for p in current if p.elastic_tier != tier]
            events.append(
                OverflowEvent(policy, "drop_tier", tier, f"lowest priority; its minimum was {need:,}", numbers)
            )
            excluded += [
                Exclusion(i.id, v.id, "overflow_truncate_lowest", i.score) for v in victims for i in v.section.items
            ]
        return Resolution(tuple(current), mins, tuple(events), tuple(excluded))
    if policy == "cascade_compress":
        demand = sum(measure(p.section) for p in current if p.elastic)
        ratio = min(1.0, budget / demand) if demand else 1.0
        sizes: dict[str, list[int]] = {}
        for index, plan in enumerate(current):
            if plan.elastic_tier is not None:
                before = measure(plan.section)
                current[index] = _cascade(plan, config, ratio, counter)
                after = measure(current[index].section)
                sizes.setdefault(plan.elastic_tier, [0, 0])
                sizes[plan.elastic_tier][0] += before
                sizes[plan.elastic_tier][1] += after
        for tier, (before, after) in sizes.items():
            mins[tier] = min(mins.get(tier, 0), after)
            lenses = ", ".join(config.cascade_lenses)
            events.append(OverflowEvent(policy, "lenses", tier, lenses, {"before": before, "after": after}))
        if sum(mins.values()) > budget:
            scaled = _scaled(mins, budget)
            for key in mins:
                if scaled[key] != mins[key]:
                    numbers_scaled = {"before": mins[key], "after": scaled[key]}
                    events.append(
                        OverflowEvent(
                            policy, "scale_minimum", key, "minimum scaled to the elastic budget", numbers_scaled
                        )
                    )
            mins = scaled
        return Resolution(tuple(current), mins, tuple(events))
    if policy == "defer_retrieval":
        evidence = [p for p in current if p.elastic_tier == "evidence"]
        pending: tuple[str, ...] = ()
        if evidence:
            current.remove(evidence[0])
            mins.pop("evidence", None)
            pending = tuple(i.id for i in evidence[0].section.items)
            events.append(
                OverflowEvent(policy, "defer_section", "evidence", f"{len(pending)} evidence items deferred", numbers)
            )
            excluded += [Exclusion(i.id, "evidence", "deferred_retrieval", i.score) for i in evidence[0].section.items]
        if sum(mins.values()) > budget:
            raise _overflow_error(
                policy, sum(mins.values()), budget, fixed, capacity, "deferring evidence is not enough"
            )
        return Resolution(tuple(current), mins, tuple(events), tuple(excluded), pending)
    # paginate: evidence that does not fit moves to further pages, so its minimum no longer binds
    if "evidence" in mins:
        events.append(OverflowEvent(policy, "page_evidence", "evidence", "evidence minimum released to pages", numbers))
        mins["evidence"] = 0
    if sum(mins.values()) > budget:
        raise _overflow_error(policy, sum(mins.values()), budget, fixed, capacity, "paging evidence is not enough")
    return Resolution(tuple(current), mins, tuple(events))
