"""Re-count only the tail: exact counts of ``text + suffix`` from ``text``'s count and back (issue 16 §1).

A counter with ``neutral_join`` (tiktoken's o200k/cl100k, ``bytes``,
``whitespace``) names positions no token can span and past which no match
looks: if ``p`` is one, ``count(text + s) == count(text[:p]) + count(text[p:] + s)``
for every ``s``.  So once a long text is counted with its separator, the
count without it (and the other way round) costs a count of the few
characters after the last such position, not another pass over megabytes.
Without a neutral position near the end, or for other counters, the helpers
simply count.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tokenbox_core.tokens.base import TokenCounter
from tokenbox_core.tokens.cache import COUNT_CACHE

__all__ = ["TAIL_MIN_CHARS", "count_minus", "count_plus", "neutral_split", "scan_neutral"]

TAIL_MIN_CHARS = 8_192
"""Texts shorter than this are simply counted: the tail arithmetic would not pay for itself."""
TAIL_WINDOW = 4_096
"""How far back from the end a neutral position is looked for."""


def neutral_split(counter: TokenCounter, text: str, *, window: int = TAIL_WINDOW) -> int | None:
    """The last position ``p`` (0 < p < len(text)) in the last ``window`` characters no token can span, or None.

    >>> from tokenbox_core.tokens import get_counter
    >>> neutral_split(get_counter("whitespace"), "one two")
    4
    """
    return scan_neutral(counter, text, max(0, len(text) - window) + 1, len(text), last=True)


def scan_neutral(counter: TokenCounter, text: str, lo: int, hi: int, *, last: bool) -> int | None:
    """The last (``last``) or first ``p`` with ``lo <= p < hi`` where ``counter.neutral_join(text[p - 1], text[p])``.

    The tiktoken counters are neutral only right after a newline, so their positions are found by ``str.find``
    over newlines instead of a call per character; any other ``neutral_join`` is asked position by position, and
    a counter without one has none.  (fast_cut and fast_measure find their split positions here too.)
    """
    join: Callable[[str, str], bool] | None = getattr(counter, "neutral_join", None)
    lo = max(lo, 1)
    hi = min(hi, len(text))
    if join is None or hi <= lo:
        return None
    if getattr(type(counter), "neutral_join", None) is _tiktoken_join():
        if last:
            i = text.rfind("\n", lo - 1, hi - 1)
            while i >= 0:
                if join("\n", text[i + 1]):
                    return i + 1
                i = text.rfind("\n", lo - 1, i)
        else:
            i = text.find("\n", lo - 1, hi - 1)
            while i >= 0:
                if join("\n", text[i + 1]):
                    return i + 1
                i = text.find("\n", i + 1, hi - 1)
        return None
    for p in range(hi - 1, lo - 1, -1) if last else range(lo, hi):
        if join(text[p - 1], text[p]):
            return p
    return None


def _tiktoken_join() -> Any:
    from tokenbox_core.tokens.tiktoken_counter import TiktokenCounter

    return TiktokenCounter.neutral_join


def _cached(counter: TokenCounter, text: str) -> int | None:
    key = getattr(counter, "_cache_key", None)
    if key is None:
        return None
    return COUNT_CACHE.get(COUNT_CACHE.key(key, text))


def _remember(counter: TokenCounter, text: str, value: int) -> int:
    key = getattr(counter, "_cache_key", None)
    if key is not None:
        COUNT_CACHE.put(COUNT_CACHE.key(key, text), value)
    return value


def count_plus(counter: TokenCounter, text: str, suffix: str) -> int:
    """``counter.count(text + suffix)``, re-counting only ``text``'s tail when ``text``'s count is known.

    >>> from tokenbox_core.tokens import get_counter
    >>> count_plus(get_counter("whitespace"), "one two", " three")
    3
    """
    if len(text) < TAIL_MIN_CHARS:
        return counter.count(text + suffix)
    known = _cached(counter, text)
    p = neutral_split(counter, text) if known is not None else None
    if known is not None and p is not None:  # no copy of the long text is made, nor kept alive by the cache
        tail = text[p:]
        return known - counter.count(tail) + counter.count(tail + suffix)
    return counter.count(text + suffix)


def count_minus(counter: TokenCounter, text: str, suffix: str, *, joined: int | None = None) -> int:
    """``counter.count(text)``, re-counting only the tail when ``count(text + suffix)`` is known.

    ``joined``, when the caller has it, is ``count(text + suffix)``: then a
    long text is not even hashed for a cache lookup.

    >>> from tokenbox_core.tokens import get_counter
    >>> count_minus(get_counter("whitespace"), "one two", " three")
    2
    """
    if len(text) < TAIL_MIN_CHARS:
        return counter.count(text)
    if joined is not None:
        p = neutral_split(counter, text)
        if p is not None:
            tail = text[p:]
            return joined - counter.count(tail + suffix) + counter.count(tail)
    if _cached(counter, text) is not None:
        return counter.count(text)
    known = _cached(counter, text + suffix)
    p = neutral_split(counter, text) if known is not None else None
    if known is None or p is None:
        return counter.count(text)
    tail = text[p:]
    return _remember(counter, text, known - counter.count(tail + suffix) + counter.count(tail))
