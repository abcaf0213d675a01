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

With ``pinned`` the last unit (the newest agent step: the assistant's tool call
and all its results, which the model is about to read) is kept before anything
else is planned: the rest is planned in the room it leaves; a step too large
for the room is shown as previews (``WindowPlan.shown``, made by the session),
never left out.

With ``step`` (a session's window) it is prefix-stable instead: the cut
moves in blocks of ``step`` tokens, at the first unit boundary past each multiple
of ``step`` verbatim tokens counted from the conversation's start (as
:func:`~tokenbox_core.cache._eviction.plan_block_cut` places them) — inside a long
agent loop too, because a unit is a tool group, not a user turn with all its
replies — and the masked results are those of the window's oldest block, so the
window changes only when the cut moves.

>>> units = [Unit((0,), user=True), Unit((1,)), Unit((2,), user=True), Unit((3,))]
>>> plan = plan_window(units, sizes=[10, 10, 10, 10], masked_sizes={}, groups=[], room=25)
>>> plan.kept, plan.omitted
((2, 3), (0, 1))
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

from tokenbox_core.cache._eviction import plain_cut

__all__ = ["STEP_GRAIN", "Unit", "WindowPlan", "Windows", "id_ranges", "plan_window"]

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
    """Entry positions: ``kept`` (in order), ``masked`` (kept, shown as a placeholder), ``omitted`` (left out);
    ``shown``: kept positions shown as another message (the newest step's results previewed to fit)."""

    kept: tuple[int, ...]
    masked: tuple[int, ...]
    omitted: tuple[int, ...]
    tokens: int
    shown: Mapping[int, Mapping[str, Any]] = field(default_factory=dict)


def _size(unit: Unit, sizes: Sequence[int], masked_sizes: Mapping[int, int], masked: set[int]) -> int:
    return sum(masked_sizes[j] if j in masked else sizes[j] for j in unit.members)


def _start_on_user(units: Sequence[Unit], start: int) -> int:
    """The first unit at or after ``start`` that a history may open with: a user message, or (when no user
    message is left before it) the first agent step after the current user message — the conversation engine's
    start-on rule, which the compiler applies too."""
    while start < len(units) and not (units[start].user or units[start].after_anchor):
        start += 1
    return start


def _openings(units: Sequence[Unit]) -> list[int]:
    """``_start_on_user(units, i)`` for every ``i`` (and ``len(units)``), in one pass from the end: the block
    window asks it of every candidate cut, and a long agent loop before the current user message would make each
    answer a scan to its end (quadratic in the session's length)."""
    opens = [len(units)] * (len(units) + 1)
    for i in range(len(units) - 1, -1, -1):
        opens[i] = i if units[i].user or units[i].after_anchor else opens[i + 1]
    return opens


def plan_window(
    units: Sequence[Unit],
    *,
    sizes: Sequence[int],
    masked_sizes: Mapping[int, int],
    groups: Sequence[Sequence[int]],
    room: int,
    keep_last: int = 3,
    step: int | None = None,
    pinned: bool = False,
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
        pinned: the last unit is kept whatever the room (the newest agent step; its ``sizes`` as it will be shown).
    """
    windows = Windows(units, sizes=sizes, masked_sizes=masked_sizes, groups=groups, keep_last=keep_last, step=step)
    return windows.plan(room, pinned=pinned)


class Windows:
    """:func:`plan_window` of one history at any room: what does not depend on the room (each unit's verbatim
    size and masking saving, the block cuts and where a history may open) is derived once, because a session's
    compile plans its window at several rooms (before and after recall's room; the room given back) and each
    derivation is a pass over every archived message (a fifth of a compile's CPU at 500 turns).  Planned with
    ``pinned``, the last unit's sizes may be given per plan (the newest step shown fitted to the room)."""

    def __init__(
        self,
        units: Sequence[Unit],
        *,
        sizes: Sequence[int],
        masked_sizes: Mapping[int, int],
        groups: Sequence[Sequence[int]],
        keep_last: int = 3,
        step: int | None = None,
    ) -> None:
        self.units, self.sizes, self.masked_sizes, self.step = units, sizes, masked_sizes, step
        self.groups, self.keep_last = groups, keep_last
        self._rest: Windows | None = None
        self._everything = tuple(j for u in units for j in u.members)
        self._total = sum(sizes[j] for j in self._everything)
        present = set(self._everything)
        maskable = (j for g in groups[: max(0, len(groups) - keep_last)] for j in g)
        self._eligible = {j for j in maskable if j in masked_sizes and j in present}
        self._cuts: tuple[list[int], list[int], list[int], list[int], list[int]] | None = None

    def plan(self, room: int, *, pinned: bool = False, sizes: Sequence[int] | None = None) -> WindowPlan:
        """The window in ``room`` tokens (``sizes``: the pinned last unit's, when they differ from the history's)."""
        room = max(0, room)
        units = self.units
        if pinned and units:
            tail = units[-1].members
            tail_tokens = sum((sizes or self.sizes)[j] for j in tail)
            if self._rest is None:
                self._rest = Windows(
                    units[:-1], sizes=self.sizes, masked_sizes=self.masked_sizes, groups=self.groups,
                    keep_last=self.keep_last, step=self.step,
                )  # fmt: skip
            rest = self._rest.plan(room - tail_tokens)
            return WindowPlan((*rest.kept, *tail), rest.masked, rest.omitted, rest.tokens + tail_tokens)
        if self._total <= room:
            return WindowPlan(self._everything, (), (), self._total)
        if self.step is not None:
            return self._blocks(room)
        sizes, masked_sizes, total = self.sizes, self.masked_sizes, self._total
        masked: set[int] = set()
        for j in sorted(self._eligible):  # oldest first, only as many as needed
            masked.add(j)
            total -= sizes[j] - masked_sizes[j]
            if total <= room:
                return WindowPlan(self._everything, tuple(sorted(masked)), (), total)
        unit_sizes = [_size(u, sizes, masked_sizes, masked) for u in units]
        start = _start_on_user(units, plain_cut(unit_sizes, room))
        kept = [j for u in units[start:] for j in u.members]
        used = sum(unit_sizes[start:])
        for j in sorted((j for j in kept if j in masked), reverse=True):  # room the cut freed unmasks the newest
            extra = sizes[j] - masked_sizes[j]
            if used + extra <= room:
                masked.discard(j)
                used += extra
        omitted = tuple(j for u in units[:start] for j in u.members)
        return WindowPlan(tuple(kept), tuple(sorted(j for j in kept if j in masked)), omitted, used)

    def _block_cuts(self) -> tuple[list[int], list[int], list[int], list[int], list[int]]:
        """Verbatim tokens before each unit, tokens masking saves before each unit, the candidate cuts, where
        each candidate's oldest block ends, and where a history may open from each unit (see :meth:`_blocks`)."""
        if self._cuts is None:
            units, sizes, masked_sizes, eligible, step = (
                self.units,
                self.sizes,
                self.masked_sizes,
                self._eligible,
                self.step,
            )
            assert step is not None
            verbatim = [sum(sizes[j] for j in u.members) for u in units]
            saving = [sum(sizes[j] - masked_sizes[j] for j in u.members if j in eligible) for u in units]
            starts = [0, *accumulate(verbatim)]
            candidates = [0]
            mark = step
            while True:
                i = bisect_left(starts, mark, 1, len(units))  # the first unit boundary at or past ``mark`` tokens
                if i >= len(units):
                    break
                candidates.append(i)
                mark = (starts[i] // step + 1) * step
            ends = [*candidates[1:], len(units)]  # ends[n]: where the n-th candidate's oldest block ends
            self._cuts = (starts, [0, *accumulate(saving)], candidates, ends, _openings(units))
        return self._cuts

    def _blocks(self, room: int) -> WindowPlan:
        """The block window: candidate cuts at the first unit boundary past each multiple of ``step`` verbatim
        tokens (fixed by the conversation); the earliest candidate whose window fits when the eligible results of
        its oldest block (up to the next candidate) are masked.  Masking and cut are functions of the candidate
        alone, so the window changes only when the cut moves.  When every later cut would leave the history out
        whole (no user message to open on after it: tool steps before the current user message), the newest cut
        that still opens on one masks as many of its blocks as it needs instead, oldest first."""
        units, sizes, masked_sizes, eligible = self.units, self.sizes, self.masked_sizes, self._eligible
        starts, saved, candidates, ends, opens = self._block_cuts()

        def fits(cut: int, masked_end: int) -> bool:
            return starts[-1] - starts[cut] - (saved[masked_end] - saved[cut]) <= room

        chosen, masked_to = len(units), len(units)
        last = None
        for n, c in enumerate(candidates):
            if opens[c] >= len(units):
                break  # from here on no window can open on a user message (the history would be left out whole)
            if fits(c, ends[n]):
                chosen, masked_to = c, ends[n]
                break
            last = n
        else:
            last = None
        if chosen == len(units) and last is not None:
            # the newest cut that still opens on a user message: mask as many of its blocks as it needs, oldest first
            c = candidates[last]
            end = next((e for e in ends[last:] if fits(c, e)), None)
            if end is not None:
                chosen, masked_to = c, end
        if chosen == len(units):  # not even the newest block fits: evict just enough, everything eligible masked
            unit_sizes = [_size(u, sizes, masked_sizes, eligible) for u in units]
            chosen = plain_cut(unit_sizes, room)
            masked_to = len(units)
        start = _start_on_user(units, chosen)
        masked = {j for u in units[start:masked_to] for j in u.members if j in eligible}
        kept = tuple(j for u in units[start:] for j in u.members)
        used = sum(masked_sizes[j] if j in masked else sizes[j] for j in kept)
        omitted = tuple(j for u in units[:start] for j in u.members)
        return WindowPlan(kept, tuple(sorted(masked)), omitted, used)


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
