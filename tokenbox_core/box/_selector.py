"""How item selection plugs into the box: the :class:`ItemSelector` protocol.

A list section whose ``policy`` is set does not lose items in its eviction
order: whenever the box claims, shrinks, grows or refills it, it asks the
policy which items fill the allocation.  The box calls
``policy.choose(items, allocation, size_of)`` with

- ``items``: the section's items with what each costs in this layout
  (:class:`SizedItem`; a vouched ``Item.tokens`` or the box's own count);
- ``allocation``: the hard limit for the whole rendered section;
- ``size_of(kept)``: the rendered size of the section if the items at
  ``kept`` (indices, in emitted order) were kept — omission marker and the
  separator after the last item included — so a selector can check its
  answer against the allocation.

and gets back a :class:`Choice`.  The box emits the kept items in the
chosen order and records every other item as removed with the choice's
reason.  A choice that does not fit the allocation keeps nothing (the
allocation is a hard limit).  Critical sections are never cut, so their
policy is not consulted.  :class:`tokenbox_core.select.SelectionPolicy`
implements this protocol (``tokenbox_core/select/_boxing.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from tokenbox_core._sections import Item
from tokenbox_core.errors import SectionError
from tokenbox_core.layout import Action

from ._measure import Ruler
from ._state import Slot, Unit, removed_record

__all__ = ["Choice", "ItemSelector", "SizedItem", "fill_with_selector"]


@dataclass(frozen=True, slots=True)
class SizedItem:
    """An item and what it costs in this layout (text plus item separator, or its message size)."""

    item: Item
    tokens: int


@dataclass(frozen=True)
class Choice:
    """A selector's answer: the kept items (indices into the items given, in emitted order) and why the rest are out."""

    kept: tuple[int, ...]
    reasons: Mapping[int, str] = field(default_factory=dict)
    """Why each item left out is out, by index (default ``"BudgetExceeded"``)."""
    report: Mapping[str, Any] | None = None
    """The selection report; becomes the section's ``selection`` and appears in ``Layout.trace``."""
    name: str = "policy"
    """The label of the ``select`` action in the section's record."""


@runtime_checkable
class ItemSelector(Protocol):
    """Chooses which items of a list section fill its allocation, and in which order."""

    def choose(self, items: Sequence[SizedItem], allocation: int, size_of: Callable[[Sequence[int]], int]) -> Choice:
        """Return the kept items for ``allocation`` (see the module docstring)."""
        ...


def fill_with_selector(ruler: Ruler, slot: Slot, alloc: int) -> None:
    """Fill ``slot`` (a list section with a policy) to at most ``alloc`` units, in the policy's order."""
    policy = slot.section.policy
    if not isinstance(policy, ItemSelector):
        raise SectionError(
            f"section {slot.section.id!r}: policy must be a tokenbox_core.select.SelectionPolicy "
            f"(or implement tokenbox_core.box.ItemSelector), got {policy!r}"
        )
    position = {id(item): n for n, item in enumerate(slot.section.items)}
    units = sorted(slot.units, key=lambda u: position[id(u.item)])  # the section's own order
    before = slot.size
    alloc = max(0, alloc)

    def size_of(kept: Sequence[int]) -> int:
        _arrange(ruler, slot, units, _checked(slot, kept, len(units)), alloc)
        return slot.size

    choice = policy.choose(tuple(SizedItem(u.item, u.size) for u in units), alloc, size_of)
    kept = _checked(slot, choice.kept, len(units))
    _arrange(ruler, slot, units, kept, alloc)
    if slot.size > alloc:  # the allocation is a hard limit
        kept = ()
        _arrange(ruler, slot, units, kept, alloc)
    chosen = set(kept)
    slot.removed = tuple(
        removed_record(slot, u, choice.reasons.get(n, "BudgetExceeded")) for n, u in enumerate(units) if n not in chosen
    )
    slot.selection = None if choice.report is None else dict(choice.report)
    slot.act(Action("select", choice.name, before, slot.size, f"policy kept {len(kept)} of {len(units)} items"))


def _checked(slot: Slot, kept: Sequence[int], n: int) -> tuple[int, ...]:
    out = tuple(kept)
    if len(set(out)) != len(out) or any(isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < n for i in out):
        raise SectionError(
            f"section {slot.section.id!r}: the policy chose {out!r}; a choice must list distinct item "
            f"indices from 0 to {n - 1}"
        )
    return out


def _arrange(ruler: Ruler, slot: Slot, units: list[Unit], kept: tuple[int, ...], alloc: int) -> None:
    """Re-index the slot's units as kept-then-removed, so the box emits them in the chosen order."""
    chosen = set(kept)
    order = [units[i] for i in kept] + [u for n, u in enumerate(units) if n not in chosen]
    slot.units = [Unit(item=u.item, index=i, text=u.text, size=u.size, vouched=u.vouched) for i, u in enumerate(order)]
    slot.kept = [True] * len(kept) + [False] * (len(order) - len(kept))
    slot.kept_total = sum(u.size for u in slot.units[: len(kept)])
    slot.last_kept = len(kept) - 1
    slot.evict_order = [[i] for i in range(len(kept), len(order))]  # the marker lists these
    slot.evicted_groups = len(order) - len(kept)
    ruler.fit_marker(slot, alloc)  # the omission marker only where it fits, as for any list
    slot.size = ruler.list_size(slot)
