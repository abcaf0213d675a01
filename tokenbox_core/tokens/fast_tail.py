"""Re-count only the tail: exact counts of ``text + suffix`` from ``text``'s count and back (issue 16 §1).

A counter with ``neutral_join`` (tiktoken's o200k/cl100k — the rules and their
proof are in :mod:`tokenbox_core.tokens.neutral` —, ``bytes``, ``whitespace``)
names positions no token can span and past which no match looks: if ``p`` is
one, ``count(text + s) == count(text[:p]) + count(text[p:] + s)`` for every
``s``.  So once a long text is counted with its separator, the count without
it (and the other way round) costs a count of the few characters after the
last such position, not another pass over megabytes.
Without a neutral position near the end, or for other counters, the helpers
simply count.
"""

from __future__ import annotations

from tokenbox_core.tokens.base import TokenCounter
from tokenbox_core.tokens.cache import COUNT_CACHE
from tokenbox_core.tokens.neutral import scan_neutral

__all__ = ["TAIL_MIN_CHARS", "count_apart", "count_minus", "count_plus", "neutral_split", "scan_neutral"]

TAIL_MIN_CHARS = 512
"""Texts shorter than this are simply counted: the tail arithmetic would not pay for itself.  (With the letter
rule of tokens/neutral.py prose has a neutral position every few characters, so the tail is a few characters and
re-counting it costs ~4-7 us where counting 0.9k / 1.8k / 7k characters of prose costs ~22 / 44 / 250 us.)"""
TAIL_WINDOW = 4_096
"""How far back from the end a neutral position is looked for."""


def neutral_split(counter: TokenCounter, text: str, *, window: int = TAIL_WINDOW) -> int | None:
    """The last position ``p`` (0 < p < len(text)) in the last ``window`` characters no token can span, or None.

    >>> from tokenbox_core.tokens import get_counter
    >>> neutral_split(get_counter("whitespace"), "one two")
    4
    """
    return scan_neutral(counter, text, max(0, len(text) - window) + 1, len(text), last=True)


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
            return _without_suffix(counter, text, suffix, joined, p)
    if _cached(counter, text) is not None:
        return counter.count(text)
    known = _cached(counter, text + suffix)
    p = neutral_split(counter, text) if known is not None else None
    if known is None or p is None:
        return counter.count(text)
    return _remember(counter, text, _without_suffix(counter, text, suffix, known, p))


def count_apart(counter: TokenCounter, text: str, suffix: str) -> int:
    """``counter.count(text)``, counting ``text + suffix`` whole and re-counting only ``text``'s tail.

    For a caller that needs both numbers — a passage's own size now, the
    passage with its item separator (the string the Token Box looks up) next
    — this reads the text once instead of twice: ``text + suffix`` is counted
    (and cached), and ``count(text)`` follows from the characters after its
    last neutral position (at most a quarter of the text back, so the tail
    costs less than the text would), and is cached too.  Without a neutral
    position there, without a suffix, or for a counter without a count cache
    or ``neutral_join``, the text is simply counted.

    >>> from tokenbox_core.tokens import get_counter
    >>> counter = get_counter("o200k_base")
    >>> count_apart(counter, "Refunds take two weeks.", "\\n") == counter.count("Refunds take two weeks.")
    True
    """
    if not suffix or getattr(counter, "_cache_key", None) is None:
        return counter.count(text)
    known = _cached(counter, text)
    if known is not None:  # counted (or derived) before
        return known
    p = neutral_split(counter, text, window=min(TAIL_WINDOW, len(text) // 4))
    if p is None:
        return counter.count(text)
    return _remember(counter, text, _without_suffix(counter, text, suffix, counter.count(text + suffix), p))


def _without_suffix(counter: TokenCounter, text: str, suffix: str, joined: int, p: int) -> int:
    """``count(text)`` from ``joined == count(text + suffix)`` and a neutral position ``p`` of ``text``."""
    tail = text[p:]
    return joined - counter.count(tail + suffix) + counter.count(tail)
