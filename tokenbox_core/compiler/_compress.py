"""Stage 4, Compress: allocation, overflow policy, then the Token Box (chapter §6.4.1, §6.4.3, §6.4.4).

1. **Measure** every section body with the compile's counter.  The fixed
   tiers (critical sections) plus the assembly scaffolding (headers, labels,
   chat overhead: ``reserve``) come off the window first; what is left is the
   elastic budget ``B``.
2. **Overflow**: when the elastic minimums exceed ``B`` the configured
   policy runs (:mod:`tokenbox_core.compiler._overflow`).
3. **Allocate**:

   - ``"priority"``: the Token Box decides alone (FACET's rule: lower
     priority is lost first; minimums become ``min_tokens``, maximums
     ``max_tokens``); the reported allocation is the box's.
   - ``"utility"``: Algorithm 6.2 water-filling
     (:func:`~tokenbox_core.compiler._allocate.water_fill`) decides each
     elastic section's allocation, which becomes its ``max_tokens`` cap.

4. **Lay out** every section in canonical order with one Token Box: it
   compresses each section into its cap (lenses, truncation, whole-item
   eviction in the section's eviction order, atomic tool groups kept whole).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from tokenbox_core._budget import ContextBudget
from tokenbox_core._sections import Section
from tokenbox_core.box import TokenBox
from tokenbox_core.compiler._allocate import Demand, priority_fill, water_fill
from tokenbox_core.compiler._build import SectionPlan
from tokenbox_core.compiler._config import CompilerConfig
from tokenbox_core.compiler._filter import Exclusion
from tokenbox_core.compiler._overflow import OverflowEvent, resolve_overflow
from tokenbox_core.errors import ContextCriticalOverflow, FixedTiersOverflow, Violation
from tokenbox_core.layout import Layout
from tokenbox_core.tokens import TokenCounter

__all__ = ["SEPARATOR", "Compressed", "compress", "measure"]

SEPARATOR = "\n\n"
"""Joins section bodies in the Token Box layout (text mode)."""


@dataclass(frozen=True)
class Compressed:
    """The Compress stage's result: the layout and every allocation decision behind it."""

    layout: Layout
    plans: tuple[SectionPlan, ...]
    allocations: dict[str, int]  # elastic tier -> tokens
    caps: dict[str, int]  # elastic section id -> tokens (a tier's allocation split over its sections)
    minimums: dict[str, int]
    demands: dict[str, int]
    elastic_budget: int
    fixed_tokens: int
    shadow_price: float | None
    marginal_utilities: dict[str, float]
    events: tuple[OverflowEvent, ...]
    excluded: tuple[Exclusion, ...]
    retrieval_pending: tuple[str, ...]


def measure(section: Section, counter: TokenCounter) -> int:
    """A section body's size as the Token Box will see it (content plus separators; vouched item sizes)."""
    if not section.is_list:
        text = section.content
        assert isinstance(text, str)
        return counter.count(text) + (counter.count(SEPARATOR) if text else 0)
    total = 0
    sep = counter.count(section.item_separator)
    for item in section.items:
        total += item.tokens if item.tokens is not None else counter.count(item.content) + sep
    return total + (counter.count(SEPARATOR) if section.items else 0)


def _tier_demands(plans: tuple[SectionPlan, ...], demands: Mapping[str, int]) -> dict[str, int]:
    tiers: dict[str, int] = {}
    for plan in plans:
        if plan.elastic_tier is not None:
            tiers[plan.elastic_tier] = tiers.get(plan.elastic_tier, 0) + demands[plan.id]
    return tiers


def _section_caps(
    plans: tuple[SectionPlan, ...], demands: Mapping[str, int], allocations: Mapping[str, int]
) -> dict[str, int]:
    """A tier's allocation split over its sections, newest first (a conversation loses its oldest turns first)."""
    caps: dict[str, int] = {}
    left = dict(allocations)
    for plan in reversed(plans):
        tier = plan.elastic_tier
        if tier is not None and tier in left:
            caps[plan.id] = min(demands[plan.id], left[tier])
            left[tier] -= caps[plan.id]
    return caps


def compress(
    plans: tuple[SectionPlan, ...],
    *,
    budget: ContextBudget,
    scaffold: Callable[[tuple[SectionPlan, ...]], int],
    correction: int,
    config: CompilerConfig,
    counter: TokenCounter,
) -> Compressed:
    """Allocate the elastic budget and lay out every section (see the module docstring).

    ``scaffold(plans)`` is what assembly adds around the bodies (re-evaluated once the overflow policy has
    dropped sections); ``correction`` is taken off too (the fit loop's excess from an earlier pass).
    """
    effective = budget.effective()
    reserve = scaffold(plans) + correction
    capacity = effective.max_tokens - reserve
    target = effective.target_tokens - reserve
    demands = {p.id: measure(p.section, counter) for p in plans}
    fixed = sum(demands[p.id] for p in plans if not p.elastic)
    elastic_budget = target - fixed
    tiers = _tier_demands(plans, demands)
    minimums = {tier: min(config.minimums.get(tier, 0), size) for tier, size in tiers.items()}
    resolution = resolve_overflow(
        plans,
        minimums,
        budget=elastic_budget,
        fixed=fixed,
        capacity=capacity,
        config=config,
        counter=counter,
        measure=lambda s: measure(s, counter),
    )
    changed = resolution.plans is not plans and resolution.plans != plans
    if changed:  # sections left: their headers and chat overhead are not needed
        reserve = scaffold(resolution.plans) + correction
        capacity = effective.max_tokens - reserve
        target = effective.target_tokens - reserve
        elastic_budget = target - fixed
        demands = {p.id: measure(p.section, counter) for p in resolution.plans}  # else the same sections
        tiers = _tier_demands(resolution.plans, demands)
    plans = resolution.plans
    minimums = resolution.minimums
    shadow: float | None = None
    marginals: dict[str, float] = {}
    allocations: dict[str, int] = {}
    wanted = [
        Demand(
            tier,
            size,
            t_min=minimums.get(tier, 0),
            t_max=config.maximums.get(tier),
            weight=config.weights[tier],
            utility=config.utilities[tier],
            cost=config.cost_coefficients[tier],
        )
        for tier, size in tiers.items()
    ]
    room = max(0, elastic_budget)
    if config.allocator == "utility":
        result = water_fill(wanted, room, quantum=config.quantum, cost_sensitivity=config.cost_sensitivity)
        shadow = result.shadow_price
        marginals = result.marginal_utilities
        allocations = result.allocations
    elif any(d.low for d in wanted) or any(d.t_max is not None for d in wanted):
        allocations = priority_fill(wanted, room, [config.priorities[d.id] for d in wanted]).allocations
    caps = _section_caps(plans, demands, allocations)
    sections = [replace(p.section, max_tokens=caps[p.id]) if p.id in caps else p.section for p in plans]
    box_budget = ContextBudget(max_tokens=max(0, capacity), target_tokens=max(0, min(target, capacity)))
    box = TokenBox(box_budget, counter=counter, separator=SEPARATOR, config_version=config.version)
    try:
        layout = box.layout(sections) if sections else box.layout([Section("empty", "")])
    except ContextCriticalOverflow as exc:
        raise FixedTiersOverflow(
            exc.budget,
            exc.required,
            exc.section_ids,
            Violation(
                "fixed_tiers",
                f"the fixed tiers need {exc.required:,} tokens but {exc.budget:,} remain after the generation "
                f"reserve and {reserve:,} tokens of headers and chat overhead; fixed sections: "
                f"{', '.join(exc.section_ids)}. Shorten the policy, task or tools, or raise the budget",
            ),
        ) from exc
    if not allocations:  # the Token Box decided alone: report what it granted each tier
        for plan in plans:
            if plan.elastic_tier is not None:
                allocations[plan.elastic_tier] = (
                    allocations.get(plan.elastic_tier, 0) + layout[plan.id].allocated_tokens
                )
        caps = {p.id: layout[p.id].allocated_tokens for p in plans if p.elastic}
    return Compressed(
        layout=layout,
        plans=plans,
        allocations=allocations,
        caps=caps,
        minimums=dict(minimums),
        demands=demands,
        elastic_budget=elastic_budget,
        fixed_tokens=fixed,
        shadow_price=shadow,
        marginal_utilities=marginals,
        events=resolution.events,
        excluded=resolution.excluded,
        retrieval_pending=resolution.retrieval_pending,
    )


def section_summary(compressed: Compressed) -> dict[str, Any]:
    """Per-section ``{allocated, used, overflow}`` for the trace (chapter §6.4.2 ``section_allocations``)."""
    out: dict[str, Any] = {}
    for plan in compressed.plans:
        laid = compressed.layout[plan.id]
        allocated = compressed.caps.get(plan.id, laid.allocated_tokens)
        out[plan.id] = {
            "allocated": allocated,
            "used": laid.final_tokens,
            "demand": compressed.demands.get(plan.id, 0),
            "overflow": laid.final_tokens > allocated,
            "status": laid.status,
            "tier": plan.elastic_tier,
        }
    return out
