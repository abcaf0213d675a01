"""The history tier of a session's compile: which archived messages the window shows, and how.

The history is cut into *units*: a tool group (an assistant message with tool
calls and every result answering them) or a single message; units are never
split.  :func:`plan_window` fills ``room`` tokens:

1. everything, verbatim, when it fits;
2. else tool results older than the newest ``keep_last`` tool groups are
   masked (shown as a placeholder), oldest first, as many as needed;
3. else, with all of those masked, the oldest units are left out until the
   rest fits (newest first, units whole); the history before the current user
   message then starts on a user message (an agent loop after it is never
   emptied for that); the room a cut frees beyond what it needed unmasks the
   newest masked results again.

With ``step`` (``cache_aware``) the window is prefix-stable instead: results
are masked in fixed blocks of tool groups, all at once, and the cut moves in
blocks of ``step`` tokens at unit boundaries
(:func:`~tokenbox_core.cache.eviction.plan_block_cut`) — inside a long agent
loop too, because a unit is a tool group, not a user turn with all its replies.

>>> units = [Unit((0,), user=True), Unit((1,)), Unit((2,), user=True), Unit((3,))]
>>> plan = plan_window(units, sizes=[10, 10, 10, 10], masked_sizes={}, groups=[], room=25)
>>> plan.kept, plan.omitted
((2, 3), (0, 1))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tokenbox_core.cache.eviction import plain_cut, plan_block_cut

__all__ = ["STEP_GRAIN", "Unit", "WindowPlan", "id_ranges", "plan_window"]

STEP_GRAIN = 64
"""A cache-aware step is a multiple of this many tokens (small changes of the room keep the cut's candidates)."""


@dataclass(frozen=True)
class Unit:
    """Entry positions kept or left out together; ``user``: a user message (a history may start on it);
    ``after_anchor``: an agent step after the current user message."""

    members: tuple[int, ...]
    user: bool = False
    after_anchor: bool = False


@dataclass(frozen=True)
class WindowPlan:
    """Entry positions: ``kept`` (in order), ``masked`` (kept, shown as a placeholder), ``omitted`` (left out)."""

    kept: tuple[int, ...]
    masked: tuple[int, ...]
    omitted: tuple[int, ...]
    tokens: int


def _size(unit: Unit, sizes: Sequence[int], masked_sizes: Mapping[int, int], masked: set[int]) -> int:
    return sum(masked_sizes[j] if j in masked else sizes[j] for j in unit.members)


def _start_on_user(units: Sequence[Unit], start: int) -> int:
    """The first unit at or after ``start`` that a history may open with: a user message, or (when no user
    message is left before it) the first agent step after the current user message — the conversation engine's
    start-on rule, which the compiler applies too."""
    while start < len(units) and not (units[start].user or units[start].after_anchor):
        start += 1
    return start


def plan_window(
    units: Sequence[Unit],
    *,
    sizes: Sequence[int],
    masked_sizes: Mapping[int, int],
    groups: Sequence[Sequence[int]],
    room: int,
    keep_last: int = 3,
    step: int | None = None,
) -> WindowPlan:
    """See the module docstring.

    Args:
        units: the history's units, oldest first.
        sizes: each entry's size as shown verbatim (an offloaded result: its preview).
        masked_sizes: entry position → its size as a masking placeholder (results that may be masked).
        groups: the maskable results of each tool group, oldest group first.
        room: tokens the window may use.
        keep_last: the newest tool groups never masked.
        step: cache-aware block step in tokens (``None``: evict just enough).
    """
    room = max(0, room)
    everything = tuple(j for u in units for j in u.members)
    total = sum(sizes[j] for j in everything)
    if total <= room:
        return WindowPlan(everything, (), (), total)
    old = [j for g in groups[: max(0, len(groups) - keep_last)] for j in g if j in masked_sizes]
    if step is not None:  # the masking boundary moves in blocks of keep_last groups, all at once
        block = max(keep_last, 4)
        cut_groups = max(0, (len(groups) - keep_last) // block * block)
        old = [j for g in groups[:cut_groups] for j in g if j in masked_sizes]
    masked: set[int] = set()
    if step is None:
        for j in old:  # oldest first, only as many as needed
            masked.add(j)
            total -= sizes[j] - masked_sizes[j]
            if total <= room:
                return WindowPlan(everything, tuple(sorted(masked)), (), total)
    masked = set(old)
    unit_sizes = [_size(u, sizes, masked_sizes, masked) for u in units]
    start = plain_cut(unit_sizes, room) if step is None else plan_block_cut(unit_sizes, room, step=max(1, step))
    start = _start_on_user(units, start)
    kept = [j for u in units[start:] for j in u.members]
    used = sum(unit_sizes[start:])
    if step is None:  # the room the cut freed beyond need unmasks the newest masked results
        for j in sorted((j for j in kept if j in masked), reverse=True):
            extra = sizes[j] - masked_sizes[j]
            if used + extra <= room:
                masked.discard(j)
                used += extra
    omitted = tuple(j for u in units[:start] for j in u.members)
    return WindowPlan(tuple(kept), tuple(sorted(j for j in kept if j in masked)), omitted, used)


def id_ranges(ids: Sequence[str], positions: Sequence[int]) -> str:
    """Ids as ranges of consecutive positions: ``t_2–t_40, t_44, t_47–t_90``."""
    parts: list[str] = []
    run_start = 0
    for n in range(1, len(ids) + 1):
        if n == len(ids) or positions[n] != positions[n - 1] + 1:
            first, last = ids[run_start], ids[n - 1]
            parts.append(first if n - 1 == run_start else f"{first}–{last}")
            run_start = n
    return ", ".join(parts)
