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

from tokenbox_core.tokens.base import TokenCounter
from tokenbox_core.tokens.cache import COUNT_CACHE

__all__ = ["TAIL_MIN_CHARS", "count_minus", "count_plus", "neutral_split"]

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
    neutral: Callable[[str, str], bool] | None = getattr(counter, "neutral_join", None)
    if neutral is None:
        return None
    stop = max(0, len(text) - window)
    for p in range(len(text) - 1, stop, -1):
        if neutral(text[p - 1], text[p]):
            return p
    return None


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
