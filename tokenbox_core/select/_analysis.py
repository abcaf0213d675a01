"""Budget analysis: which items hang on the last tokens of a budget, and the
smallest budget that brings a given item in.

Both run the policy several times (``select`` is deterministic) and assume
inclusion is monotonic in the budget, which percentage quotas break:
:class:`QuotaSlicer` is refused by both, the count slicers by
:func:`min_budget_for` (as the spec demands).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tokenbox_core._budget import ContextBudget
from tokenbox_core._sections import Item
from tokenbox_core.errors import SelectionError
from tokenbox_core.select._pipeline import SelectionPolicy, _sizes
from tokenbox_core.select._quota import CountConstrainedKnapsackSlicer, CountQuotaSlicer, QuotaSlicer

__all__ = ["marginal_items", "min_budget_for"]


def marginal_items(
    policy: SelectionPolicy,
    items: Sequence[Item],
    budget: int | ContextBudget,
    slack_tokens: int,
    *,
    sizes: Sequence[int] | None = None,
    counter: Any = None,
) -> list[Item]:
    """Items included at ``budget`` but not at ``budget - slack_tokens`` (max and target both reduced).

    In the full budget's placed order.
    """
    if isinstance(policy.slicer, QuotaSlicer):
        raise SelectionError(
            "marginal_items requires monotonic item inclusion; QuotaSlicer produces non-monotonic inclusion "
            "as budget changes shift percentage allocations"
        )
    budget = ContextBudget.coerce(budget)
    if isinstance(slack_tokens, bool) or not isinstance(slack_tokens, int) or slack_tokens < 0:
        raise SelectionError(f"slack_tokens must be an integer >= 0, got {slack_tokens!r}")
    room = budget.max_tokens - budget.output_reserve
    if slack_tokens > room:
        raise SelectionError(
            f"slack_tokens ({slack_tokens:,}) exceeds the room of the budget ({room:,} = max_tokens - output_reserve)"
        )
    reduced = ContextBudget(
        max_tokens=budget.max_tokens - slack_tokens,
        target_tokens=max(0, budget.target_tokens - slack_tokens),  # type: ignore[operator]
        output_reserve=budget.output_reserve,
        reserved_slots=budget.reserved_slots,
        estimation_safety_margin_percent=budget.estimation_safety_margin_percent,
    )
    items = tuple(items)
    measured = _sizes(items, sizes, counter)
    primary = policy.select(items, budget, sizes=measured)
    margin = {id(it) for it in policy.select(items, reduced, sizes=measured).items}
    return [it for it in primary.items if id(it) not in margin]


def min_budget_for(
    policy: SelectionPolicy,
    items: Sequence[Item],
    target: Item,
    search_ceiling: int,
    *,
    sizes: Sequence[int] | None = None,
    counter: Any = None,
) -> int | None:
    """The smallest ``max_tokens`` (target = max) at which ``target`` is selected, or ``None``
    if it is not selected at any budget up to ``search_ceiling``.

    Binary search over ``[size of target, search_ceiling]``.  A budget at which
    the policy raises (pins that do not fit, ``overflow="throw"``) counts as
    not including the item.  Unlike the spec's pseudocode, the lower bound
    itself is tested, so an item that fits at exactly its own size is found.
    """
    if isinstance(policy.slicer, QuotaSlicer | CountQuotaSlicer | CountConstrainedKnapsackSlicer):
        raise SelectionError(
            "min_budget_for requires monotonic item inclusion; QuotaSlicer and the count quota slicers produce "
            "non-monotonic inclusion as budget changes shift allocations: use a GreedySlicer or KnapsackSlicer"
        )
    items = tuple(items)
    position = next((i for i, it in enumerate(items) if it is target), None)
    if position is None:
        raise SelectionError(f"target item {getattr(target, 'id', target)!r} must be one of items (the same object)")
    measured = _sizes(items, sizes, counter)
    own = measured[position]
    if isinstance(search_ceiling, bool) or not isinstance(search_ceiling, int) or search_ceiling < own:
        raise SelectionError(f"search_ceiling ({search_ceiling!r}) must be an integer >= the target's size ({own})")
    if own < 0:
        return None

    def included(max_tokens: int) -> bool:
        try:
            chosen = policy.select(items, ContextBudget(max_tokens=max_tokens), sizes=measured).items
        except SelectionError:
            return False
        return any(it is target for it in chosen)

    low, high = own, search_ceiling
    if included(low):
        return low
    if not included(high):
        return None
    while high - low > 1:  # invariant: excluded at low, included at high
        mid = low + (high - low) // 2
        if included(mid):
            high = mid
        else:
            low = mid
    return high
