"""Claims in protection order and the exact settling of the total: the steps the full and the incremental layout share.

Both take the slots to work on as a sequence in protection order (lowest
first) and the exact total as a function, so the incremental re-layout
(:mod:`.incremental`) can run them over the few sections a change can
reach while the sections above stay as they were (``docs/concepts.md#the-token-box``,
steps 3–4).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .claim import claim
from .compress import compress, drop
from .measure import Ruler
from .state import MAX_PASSES, Slot

__all__ = ["CLAIM_CHARS_PER_TOKEN", "OutOfReach", "claims", "settle"]

CLAIM_CHARS_PER_TOKEN = 4
"""A claim batch holds text for the room left at about this many characters a token (English prose with
o200k/cl100k): denser text measures a little more than needed, sparser text takes another, smaller batch."""


class OutOfReach(Exception):
    """A bounded step needed sections beyond the ones it was given (the incremental path falls back)."""


def claims(ruler: Ruler, order: Sequence[Slot], running: int, limit_target: int) -> tuple[int, int]:
    """Claims in protection order (the reverse of the compression order), from ``running`` up.

    Returns the running total and the position in ``order`` of the section
    whose claim crossed ``limit_target`` (0 when none did).  Once the
    sections that outrank a section alone exceed the target, compression
    would drop it whatever its size (and lenses cannot save it), so it is
    dropped without being measured.
    """
    outranked = 0
    for pos in range(len(order) - 1, -1, -1):
        slot = order[pos]
        if slot.template is None:  # issue 16: measure what the claims will need in one batch, not one by one
            ruler.ensure_measured(_claim_batch(order, pos, limit_target - running))
        section = slot.section
        if section.basis is not None or section.max_tokens is not None or section.policy is not None:
            claim(ruler, slot)
        else:  # the common case: the claim is the whole content
            slot.base_size = slot.alloc = slot.size
        running += slot.size
        if running > limit_target:
            outranked = pos
            break
    for slot in order[:outranked]:
        slot.dropped = slot.outranked = True
    return running, outranked


def settle(
    ruler: Ruler, total: Callable[[], int], order: Sequence[Slot], limit_target: int, *, bounded: bool = False
) -> int:
    """Re-count the output exactly; compress again while BPE merges at the joins leave it over.

    ``bounded``: ``order`` is only the lowest part of the protection order;
    raise :class:`OutOfReach` where the full order would have been needed.
    """
    exact = total()
    passes = 0
    while exact > limit_target and passes < MAX_PASSES:
        if compress(ruler, order, exact - limit_target) > 0 and bounded:
            raise OutOfReach
        exact = total()
        passes += 1
    for slot in order:  # pathological joins only: drop what is left, lowest first
        if exact <= limit_target:
            break
        if not slot.dropped:
            drop(slot, "budget")
            exact = total()
    if bounded and exact > limit_target:
        raise OutOfReach
    return exact


def _claim_batch(order: Sequence[Slot], pos: int, room: int) -> list[Slot]:
    """The unmeasured slots from ``pos`` down (protection order) with enough text to fill ``room`` tokens.

    Measuring them in one batch instead of one at a time costs one call
    instead of hundreds; the few extra sections it measures past the point
    where the rest are outranked cost a little counting, never a different
    layout (measurements are pure and memoised).  Slots measured before fill
    the room by their known size, so a re-layout that meets one new section
    among measured ones measures that section, not the never-measured
    sections far below it that the room will not reach.
    """
    want = max(0, room) * CLAIM_CHARS_PER_TOKEN
    batch: list[Slot] = []
    chars = 0
    for i in range(pos, -1, -1):
        slot = order[i]
        if slot.template is not None:
            chars += slot.size * CLAIM_CHARS_PER_TOKEN
        else:
            batch.append(slot)
            content = slot.section.content
            chars += len(content) if isinstance(content, str) else sum(len(it.content) for it in content)
        if chars > want:
            break
    return batch
