"""Measuring a long text that must be cut: encode the part kept, count the rest (issue 16 §1).

A section of a million characters laid out into 128k tokens is measured and
then cut.  Counting it whole and then encoding the head the cut keeps reads
the kept part twice.  :func:`measure_head` reads it once: it encodes a
prefix ending at a position no token can span (``neutral_join``, see
:mod:`tokenbox_core.tokens.fast_tail`) holding at least ``reach`` tokens —
the most the section could ever receive — and counts only the rest, so

``count(text + suffix) == len(prefix ids) + count(middle) + count(end + suffix)``

exactly, where the middle ends at the last neutral position near the end of
``text`` (the same split also gives ``count(text)``).  The rest is counted in
chunks cut at neutral positions, so no copy of it is made whole.  The prefix
ids are remembered for :func:`~tokenbox_core.tokens.fast_cut.truncate_once`,
which then cuts from them without encoding again.  A property test
(``tests/core/test_fast_measure.py``) compares both numbers and the cut with
a full encode on generated multi-byte and adversarial text.
"""

from __future__ import annotations

from typing import Any

from tokenbox_core.tokens import fast_cut
from tokenbox_core.tokens.base import Keep, validate_text
from tokenbox_core.tokens.cache import COUNT_CACHE
from tokenbox_core.tokens.fast_tail import TAIL_WINDOW, neutral_split
from tokenbox_core.tokens.tiktoken_counter import TiktokenCounter

__all__ = ["CHARS_PER_TOKEN", "measure_head"]

CHARS_PER_TOKEN = 4
"""A text is measured by its prefix only when it has more than this many characters per token of ``reach``
(o200k/cl100k average about 4.5 on English): a shorter text probably fits, and counting is cheaper than encoding."""

_CHUNK = 1_048_576
"""Characters per count of the rest (cut at neutral positions): bounded copies, not one of the whole rest
(large enough that per-call overhead stays negligible when tiktoken, which encodes to count, counts it)."""
_SLACK = 1_024
"""Characters added to each prefix piece's estimate, so a second piece is rarely needed."""
END_MARGIN = TAIL_WINDOW
"""A prefix that would reach this close to the end is not worth encoding: the text is simply counted."""


def worth_it(counter: object, text: str, reach: int) -> bool:
    """Whether :func:`measure_head` should measure ``text`` for a section that can receive ``reach`` tokens."""
    return (
        len(text) >= fast_cut.PARTIAL_MIN_CHARS
        and len(text) > CHARS_PER_TOKEN * max(0, reach)
        and getattr(counter, "neutral_join", None) is not None
        and hasattr(counter, "encoding")
    )


def measure_head(counter: TiktokenCounter, text: str, suffix: str, reach: int, keep: Keep = "head") -> int | None:
    """``counter.count(text + suffix)``, encoding only a prefix of ``text`` with at least ``reach`` tokens.

    Returns None (the caller simply counts) for a cut that does not keep the
    head, or when no neutral position is found where one is needed, or when
    the prefix would be the whole text.  Also caches ``count(text)`` and
    leaves the prefix ids where a cut of ``text`` finds them.
    """
    if keep != "head" or reach <= 0:
        return None
    validate_text(text)
    head = _prefix_ids(counter, text, reach)
    if head is None:
        return None
    ids, p = head
    q = neutral_split(counter, text)
    if q is None or q <= p:
        return None
    body = len(ids) + _count_span(counter, text, p, q)
    end = text[q:]
    n_text = body + _count(counter, end)
    joined = body + _count(counter, end + suffix) if suffix else n_text
    COUNT_CACHE.put(COUNT_CACHE.key(counter._cache_key, text), n_text)
    fast_cut.remember_partial(counter, text, fast_cut._Ids(ids, [], n_text, text, p, len(text)))
    return joined


def _count(counter: TiktokenCounter, text: str) -> int:
    """An uncached exact count (the fast counter's, or the length of tiktoken's ids)."""
    fast: Any = getattr(counter, "_fast", None)
    if fast is not None:
        return int(fast.count(text))
    return len(fast_cut._encode(counter, text))


def _count_span(counter: TiktokenCounter, text: str, start: int, end: int) -> int:
    """``count(text[start:end])`` for neutral ``start`` and ``end``, in chunks split at neutral positions."""
    total = 0
    pos = start
    while pos < end:
        cut = fast_cut._next_neutral(counter, text, pos + _CHUNK) if end - pos > _CHUNK + END_MARGIN else None
        if cut is None or cut >= end:
            cut = end
        total += _count(counter, text[pos:cut])
        pos = cut
    return total


def _prefix_ids(counter: TiktokenCounter, text: str, need: int) -> tuple[Any, int] | None:
    """(ids of ``text[:p]``, ``p``): ``p`` a neutral position and at least ``need`` ids; None if none is found.

    Encoded in pieces between neutral positions (the ids of ``text[:b]`` are
    those of ``text[:a]`` followed by those of ``text[a:b]`` when ``a`` is
    neutral), each piece sized from the characters per token seen so far.
    """
    pieces: list[Any] = []
    have = 0
    pos = 0
    per_token = float(CHARS_PER_TOKEN)
    while have < need:
        reach = pos + 1 + int((need - have) * per_token * 1.05) + _SLACK  # past pos: each piece is new text
        if reach >= len(text) - END_MARGIN:
            return None  # the prefix would be (nearly) all of it: counting is cheaper
        p = fast_cut._next_neutral(counter, text, reach)
        if p is None:
            return None
        piece = fast_cut._encode(counter, text[pos:p])
        pieces.append(piece)
        have += len(piece)
        pos = p
        per_token = pos / max(1, have)
    if len(pieces) == 1:
        return pieces[0], pos
    if isinstance(pieces[0], list):
        return [i for piece in pieces for i in piece], pos
    import numpy

    return numpy.concatenate(pieces), pos
