"""Where selection meets the Token Box: a :class:`SelectionPolicy` as the box's item selector.

The box decides a section's allocation; :func:`choose` (which
``SelectionPolicy.choose`` calls, the :class:`tokenbox_core.box.ItemSelector`
protocol) runs the policy with that allocation as the budget and the box's
own item sizes, and answers with the items kept, in the order the policy
placed them.  The box calls it whenever it claims, shrinks, grows or refills
a list section whose ``policy`` is set (critical sections are never cut, so
their policy is not consulted).

Inside a box the allocation is a hard limit, so:

- overflow is always truncated (the policy's ``overflow`` applies to direct
  ``select()`` calls);
- if the pinned items alone exceed the allocation, nothing is kept (reason
  ``PinnedExceedsAllocation``);
- atomic groups (``Item.group``) are never split: a group the policy kept
  only in part is removed whole (reason ``AtomicGroup``);
- the allocation also pays for the omission marker and the separator after
  the last item, so the policy is re-run with a smaller budget until the
  rendered section fits.

Items the policy excluded appear in the section's ``removed`` with the
selection's reason (``BudgetExceeded``, ``Deduplicated``, ...); the report
(a dict) is the section's ``selection`` and appears in ``Layout.trace``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from tokenbox_core._budget import ContextBudget
from tokenbox_core.box import Choice, SizedItem

if TYPE_CHECKING:
    from tokenbox_core.select._pipeline import Selection, SelectionPolicy

__all__ = ["choose"]


def choose(
    policy: SelectionPolicy, items: Sequence[SizedItem], allocation: int, size_of: Callable[[Sequence[int]], int]
) -> Choice:
    """The items ``policy`` keeps in ``allocation``, in its placed order (see the module docstring)."""
    name = policy.name or "policy"
    policy = replace(policy, overflow="truncate", on_overflow=None)
    pinned = sum(s.tokens for s in items if s.item.pinned)
    if pinned <= allocation:
        budget = allocation
        objects = [s.item for s in items]
        sizes = [s.tokens for s in items]
        while True:
            selection = policy.select(objects, ContextBudget(max_tokens=budget), sizes=sizes)
            kept, reasons = _placed(objects, selection)
            size = size_of(kept)
            if size <= allocation or budget <= pinned:
                break
            # the separator after the last item can push the list over: ask again for a little less,
            # never below the pinned items (the selection would refuse that)
            budget = max(pinned, budget - max(1, size - allocation))
        if size <= allocation:
            return Choice(kept, reasons, _report(selection, reasons, allocation, budget), name)
    return Choice(
        (),
        dict.fromkeys(range(len(items)), "PinnedExceedsAllocation"),
        {"allocation": allocation, "pinned_tokens": pinned, "included": [], "excluded": []},
        name,
    )


def _placed(items: Sequence[Any], selection: Selection) -> tuple[tuple[int, ...], dict[int, str]]:
    """The chosen indices in placed order (atomic groups never split) and, by index, why the others are out."""
    at = {id(item): n for n, item in enumerate(items)}
    placed = [at[id(item)] for item in selection.items]
    reasons = {at[id(e.item)]: e.reason for e in selection.report.excluded}
    chosen = set(placed)
    broken = {it.group for n, it in enumerate(items) if it.group is not None and n not in chosen}
    if broken:
        for n in placed:
            if items[n].group in broken:
                reasons[n] = "AtomicGroup"
        placed = [n for n in placed if items[n].group not in broken]
    return tuple(placed), reasons


def _report(selection: Selection, reasons: dict[int, str], alloc: int, budget: int) -> dict[str, Any]:
    out = selection.report.to_dict()
    out["allocation"] = alloc
    out["selection_budget"] = budget
    split = sum(1 for r in reasons.values() if r == "AtomicGroup")
    if split:
        out["removed_for_atomic_groups"] = split
    return out
