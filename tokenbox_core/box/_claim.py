"""Step 4, claims and expansion (``docs/concepts.md#the-token-box``).

Each flexible section claims ``min(basis, content, max_tokens)``; a section
capped by ``max_tokens`` is compressed (lenses) before it is cut.  Free space
up to the effective target is then shared among sections with ``grow > 0``
in proportion to ``grow``: integer shares by largest remainder, ties by
declaration order; a section capped by its content or ``max_tokens`` passes
the rest on, so no budget is stranded.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from tokenbox_core.layout import Action

from ._compress import apply_lenses, cut_text, shrink_to
from ._measure import Ruler
from ._selector import fill_with_selector
from ._state import Slot

__all__ = ["cap", "claim", "claims", "expand", "grow_to", "restore_groups"]


def cap(slot: Slot) -> int:
    """The most ``slot`` may ever hold: its whole content, or ``max_tokens``."""
    limit = slot.full_size
    if slot.section.max_tokens is not None:
        limit = min(limit, slot.section.max_tokens)
    return limit


def claim(ruler: Ruler, slot: Slot) -> None:
    """Set ``slot`` to its claim: ``min(basis, content, max_tokens)`` (its policy's choice for a list)."""
    amount = cap(slot)
    basis = slot.section.basis
    if basis is not None:
        amount = min(amount, basis)
    if amount < slot.size or (slot.is_list and slot.section.policy is not None):
        reason = "basis" if basis is not None and amount == basis else "max_tokens"
        if reason == "max_tokens" and amount < slot.size and slot.section.strategy and not slot.lensed:
            apply_lenses(ruler, slot, amount)  # a capped section is compressed before it is cut
        if slot.size > amount or (slot.is_list and slot.section.policy is not None):
            before = slot.size
            shrink_to(ruler, slot, amount, reason=reason, record_as="claim")
            if reason == "max_tokens" and slot.size < before:
                slot.truncated = True  # content was lost to the cap, not merely left unclaimed
    slot.base_size = slot.size
    slot.alloc = slot.size


def claims(ruler: Ruler, order: Sequence[Slot], running: int, limit_target: int) -> int:
    """Claims in protection order (the reverse of ``order``, the compression order), from ``running`` up.

    Returns the running total.  Once the sections that outrank a section
    alone exceed the target, compression would drop it whatever its size
    (and lenses cannot save it), so it is dropped before its claim
    (*outranked*; refill may still give it back).
    """
    outranked = 0
    for pos in range(len(order) - 1, -1, -1):
        slot = order[pos]
        claim(ruler, slot)
        running += slot.size
        if running > limit_target:
            outranked = pos
            break
    for slot in order[:outranked]:
        slot.dropped = slot.outranked = True
    return running


def expand(ruler: Ruler, flexible: Sequence[Slot], free: int) -> None:
    """Share ``free`` units among the growable slots, in proportion to ``grow``."""
    if free <= 0:
        return
    active = [s for s in flexible if s.section.grow > 0 and cap(s) > s.size]
    if not active:
        return
    target = {s.index: s.size for s in active}
    while free > 0 and active:
        total_grow = sum(Fraction(s.section.grow) for s in active)
        quotas = [(s, Fraction(free) * Fraction(s.section.grow) / total_grow) for s in active]
        shares = {s.index: int(q) for s, q in quotas}
        leftover = free - sum(shares.values())
        by_remainder = sorted(quotas, key=lambda sq: (-(sq[1] - int(sq[1])), sq[0].index))
        for s, _ in by_remainder[:leftover]:
            shares[s.index] += 1
        spent = 0
        still = []
        for s in active:
            give = min(cap(s) - target[s.index], shares[s.index])
            target[s.index] += give
            spent += give
            if target[s.index] < cap(s):
                still.append(s)
        free -= spent
        if spent == 0 or len(still) == len(active):
            break
        active = still
    for slot in flexible:
        if slot.index in target and target[slot.index] > slot.size:
            before = slot.size
            grow_to(ruler, slot, target[slot.index])
            if slot.size > before:
                slot.act(
                    Action(
                        "expand", "grow", before, slot.size, f"expanded into free space (grow={slot.section.grow:g})"
                    )
                )


def grow_to(ruler: Ruler, slot: Slot, alloc: int) -> None:
    """Re-materialise content up to ``alloc`` from the full content (what was cut or evicted comes back)."""
    if not slot.is_list:
        text = slot.section.content
        assert isinstance(text, str)
        size = ruler.size_of_text(slot, text)
        if size > alloc:
            text, size = cut_text(ruler, slot, text, alloc)
        slot.text, slot.size = text, size
    elif slot.section.policy is not None:  # a selection policy decides the items
        fill_with_selector(ruler, slot, alloc)
    else:
        restore_groups(ruler, slot, alloc)
    slot.alloc = alloc


def restore_groups(
    ruler: Ruler, slot: Slot, alloc: int, blocked: frozenset[str] = frozenset(), *, keep_marker: bool = False
) -> None:
    """Restore evicted groups in reverse eviction order while they fit ``alloc`` (stop at a ``blocked`` group).

    The omission marker is kept where it fits (``keep_marker``: only groups
    that fit beside the marker come back, so the marker never gives way).
    """
    marker = ruler.set_marker if keep_marker else lambda s: ruler.fit_marker(s, alloc)
    restored: set[str] = set()
    while slot.evicted_groups > 0:
        group = slot.evict_order[slot.evicted_groups - 1]
        if blocked and any(slot.units[i].item.group in blocked for i in group):
            break
        slot.set_kept(group, True)
        slot.evicted_groups -= 1
        marker(slot)
        if ruler.list_size(slot) > alloc:
            slot.set_kept(group, False)
            slot.evicted_groups += 1
            marker(slot)
            break
        restored.update(slot.units[i].item.id for i in group)
    slot.removed = tuple(r for r in slot.removed if r.id not in restored)
    slot.size = ruler.list_size(slot)
