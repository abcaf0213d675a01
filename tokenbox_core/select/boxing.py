"""Where selection meets the Token Box: filling a list section that carries a policy.

The box decides a section's allocation; :func:`fill_slot` runs the section's
:class:`~tokenbox_core.select.SelectionPolicy` with that allocation as the
budget and the box's own unit sizes as the item sizes, then keeps the
section's items in the order the policy placed them.  The box calls it
whenever it claims, shrinks or grows a list section whose ``policy`` is set
(critical sections are never cut, so their policy is not consulted).

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

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from tokenbox_core.budget import ContextBudget
from tokenbox_core.errors import SectionError
from tokenbox_core.layout import Action, RemovedItem
from tokenbox_core.select.pipeline import Selection, SelectionPolicy

if TYPE_CHECKING:
    from tokenbox_core.box import TokenBox, _Slot, _Unit

__all__ = ["fill_slot"]


def fill_slot(box: TokenBox, slot: _Slot, alloc: int) -> None:
    """Fill ``slot`` (a list section with a policy) to at most ``alloc`` units, in the policy's order."""
    policy = slot.section.policy
    if not isinstance(policy, SelectionPolicy):
        raise SectionError(
            f"section {slot.section.id!r}: policy must be a tokenbox_core.select.SelectionPolicy, got {policy!r}"
        )
    policy = replace(policy, overflow="truncate", on_overflow=None)
    position = {id(item): n for n, item in enumerate(slot.section.items)}
    units = sorted(slot.units, key=lambda u: position[id(u.item)])  # the section's own order
    before = slot.size
    alloc = max(0, alloc)
    pinned = sum(u.size for u in units if u.item.pinned)
    fits = pinned <= alloc
    if fits:
        budget = alloc
        while True:
            sizes = [u.size for u in units]
            selection = policy.select([u.item for u in units], ContextBudget(max_tokens=budget), sizes=sizes)
            placed, reasons = _placed(units, selection)
            _arrange(box, slot, units, placed, alloc)
            if slot.size <= alloc or budget <= pinned:
                break
            # the separator after the last item can push the list over: ask again for a little less,
            # never below the pinned items (the selection would refuse that)
            budget = max(pinned, budget - max(1, slot.size - alloc))
        fits = slot.size <= alloc
        if fits:
            _record(slot, units, placed, reasons)
            slot.selection = _report(selection, reasons, alloc, budget)
    if not fits:
        _arrange(box, slot, units, [], alloc)
        _record(slot, units, [], dict.fromkeys(range(len(units)), "PinnedExceedsAllocation"))
        slot.selection = {"allocation": alloc, "pinned_tokens": pinned, "included": [], "excluded": []}
    kept = sum(slot.kept)
    slot.act(Action("select", policy.name or "policy", before, slot.size, f"policy kept {kept} of {len(units)} items"))


def _placed(units: list[_Unit], selection: Selection) -> tuple[list[_Unit], dict[int, str]]:
    """The chosen units in placed order (atomic groups never split) and, by position, why the others are out."""
    at = {id(u.item): n for n, u in enumerate(units)}
    placed = [units[at[id(item)]] for item in selection.items]
    reasons = {at[id(e.item)]: e.reason for e in selection.report.excluded}
    chosen = {id(u.item) for u in placed}
    broken = {u.item.group for u in units if u.item.group is not None and id(u.item) not in chosen}
    if broken:
        for unit in placed:
            if unit.item.group in broken:
                reasons[at[id(unit.item)]] = "AtomicGroup"
        placed = [u for u in placed if u.item.group not in broken]
    return placed, reasons


def _arrange(box: TokenBox, slot: _Slot, units: list[_Unit], placed: list[_Unit], alloc: int) -> None:
    """Re-index the slot's units as placed-then-removed, so the box emits them in placed order."""
    from tokenbox_core.box import _Unit

    chosen = {id(u) for u in placed}
    rest = [u for u in units if id(u) not in chosen]
    slot.units = [_Unit(item=u.item, index=i, text=u.text, size=u.size) for i, u in enumerate(placed + rest)]
    slot.units_shared = False
    slot.kept = [True] * len(placed) + [False] * len(rest)
    slot.kept_total = sum(u.size for u in placed)
    slot.last_kept = len(placed) - 1
    slot.evict_order = [[i] for i in range(len(placed), len(slot.units))]  # the marker lists these
    slot.evicted_groups = len(rest)
    box._fit_marker(slot, alloc)  # the omission marker only where it fits, as in the box itself
    slot.size = box._list_size(slot)


def _record(slot: _Slot, units: list[_Unit], placed: list[_Unit], reasons: dict[int, str]) -> None:
    chosen = {id(u) for u in placed}
    slot.removed = tuple(
        RemovedItem(
            id=u.item.id,
            section=slot.section.id,
            reason=reasons.get(n, "BudgetExceeded"),
            tokens=u.size,
            score=u.item.score,
            group=u.item.group,
        )
        for n, u in enumerate(units)
        if id(u) not in chosen
    )


def _report(selection: Selection, reasons: dict[int, str], alloc: int, budget: int) -> dict[str, Any]:
    out = selection.report.to_dict()
    out["allocation"] = alloc
    out["selection_budget"] = budget
    split = sum(1 for r in reasons.values() if r == "AtomicGroup")
    if split:
        out["removed_for_atomic_groups"] = split
    return out
