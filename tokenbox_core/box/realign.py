"""Carry a settled layout's state over to inputs that append, remove or move sections (issue 16 §1).

The incremental re-layout (:mod:`.incremental`) works on positions of the
protection order.  A chat turn appends a message section (and may drop the
oldest one, or re-prioritise one): positions shift, but every section that
did not change keeps what the window argument needs from it — its claim
(a pure function of the section), whether it is plain, and its class in the
previous layout (outranked, whole, or neither).  :func:`align` pairs the new
inputs with the old ones; :func:`carry` re-indexes that state by the new
protection order.  Sections that are new or not the identical object are
*edited*: the incremental path measures and claims them afresh.  Whatever
cannot be carried (a critical section added, removed, edited or moved) gives
None and the full path decides.
"""

from __future__ import annotations

from itertools import compress
from operator import is_not

from tokenbox_core.layout import LaidOutSection
from tokenbox_core.sections import Section

__all__ = ["Carried", "align", "carry"]


def _mismatches(old: tuple[Section, ...], new: tuple[Section, ...], lo: int, shift: int, cap: int) -> list[int]:
    """New indices ``i >= lo`` (while ``i + shift`` is an old index) whose section is not ``old[i + shift]``."""
    end = min(len(new), len(old) - shift)
    if end <= lo:
        return []
    found = list(compress(range(lo, end), map(is_not, old[lo + shift : end + shift], new[lo:end])))
    return found[: cap + 1]


def align(old: tuple[Section, ...], new: tuple[Section, ...], cap: int) -> tuple[list[int], list[int], int, int] | None:
    """The old index of each new section (-1: appended), the edited new indices, and where (``r``) ``shift``
    old sections (0 or 1) were removed; None when more than ``cap`` sections are edited.

    Two pairings are tried: position by position (edits, appends at the
    end), and the same with one old section removed at the first position
    where the inputs differ (a removal, or a removal and an append: a
    sliding chat window).  The one with fewer edits wins; any pairing is
    correct, since only identical objects are carried over.
    """
    n, m = len(new), len(old)
    straight = _mismatches(old, new, 0, 0, cap)
    best = (straight, 0, straight[0] if straight else min(n, m))
    if m >= 1 and (straight or n < m):
        r = straight[0] if straight else n
        shifted = _mismatches(old, new, r, 1, cap)
        tail_s, tail_r = max(0, n - m), max(0, n - (m - 1))
        if len(shifted) + tail_r < len(straight) + tail_s:
            best = (shifted, 1, r)
    edits, shift, r = best
    paired = min(n, m - shift)
    edited = edits + list(range(paired, n))
    if len(edited) > cap:
        return None
    of_old = list(range(r)) + list(range(r + shift, paired + shift)) + [-1] * (n - paired)
    return of_old, edited, r, shift


class Carried:
    """The previous layout's per-position state, re-indexed by the new protection order."""

    __slots__ = ("csize", "high", "low", "plain", "pos_of", "records", "stop")

    def __init__(
        self,
        csize: list[int],
        plain: list[bool],
        pos_of: list[int],
        records: list[LaidOutSection | None],
        stop: int,
        low: int,
        high: int,
    ) -> None:
        self.csize, self.plain, self.pos_of, self.records = csize, plain, pos_of, records
        self.stop, self.low, self.high = stop, low, high


def carry(
    prev_state: tuple[list[int], list[bool], list[int], int, int, int],
    prev_records: tuple[LaidOutSection, ...],
    of_old: list[int],
    edited: list[int],
    order: list[int],
) -> Carried:
    """Claims, plainness, records and the stop/low/high positions of the carried sections, re-indexed.

    ``prev_state``: the previous (csize, plain, pos_of, stop, low, high).
    Edited positions get a placeholder claim and plainness (the caller
    measures them; their claims count as known); a claim is carried only
    from at or above the previous ``stop`` (below it nothing was claimed).
    """
    pcs, pplain, ppos, pstop, plow, phigh = prev_state
    n, m = len(of_old), len(order)
    pos_of = [-1] * n
    for k, i in enumerate(order):
        pos_of[i] = k
    at = [ppos[a] if (a := of_old[i]) >= 0 else -1 for i in order]  # each position's previous position
    for i in edited:  # the caller measures it: its claim will be known; it is re-decided wherever it lands
        at[pos_of[i]] = -1
    csize = [pcs[pk] if pk >= pstop else -1 for pk in at]
    plain = [pk >= 0 and pplain[pk] for pk in at]
    for i in edited:
        csize[pos_of[i]] = 0
    # every section's previous record (critical ones too); an edited section's is replaced by the caller
    records: list[LaidOutSection | None] = [prev_records[a] if a >= 0 else None for a in of_old]
    stop = m
    while stop > 0 and csize[stop - 1] >= 0:
        stop -= 1
    # low/high: the carried sections outranked before form a prefix of the carried ones (their relative
    # order is kept), the whole ones a suffix; edited positions (at == -1) are skipped: they are patched anyway
    low = next((k for k, pk in enumerate(at) if pk >= plow), m)
    high = next((k + 1 for k in range(m - 1, low - 1, -1) if 0 <= at[k] < phigh), low)
    return Carried(csize, plain, pos_of, records, stop, low, high)
