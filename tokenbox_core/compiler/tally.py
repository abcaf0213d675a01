"""Counts the compile derives instead of encoding a text twice (issue 11: "never count the same text twice").

Rank needs each passage's size on its own (the token-cost-inverse factor, chapter §6.4.1 stage 3); the
Token Box then measures the same passage followed by its section's item separator.  Encoding both would
read every passage twice.  :func:`count_before` counts the Token Box's string (``text + suffix``, cached
for the layout) and derives ``count(text)`` from a few characters at the end.

Why that is exact, for the o200k/cl100k encodings: tiktoken splits a text into pieces with a regular
expression and encodes each piece on its own, so a text's count is the sum of its pieces' counts.  Take a
position ``p`` with an ASCII letter before it and a space at it.  The letter belongs to a letter-run piece
(only those pieces hold letters), and that piece ends at ``p`` (a space is no letter and cannot start a
contraction such as ``'s``).  Every piece before ``p`` is decided by ``text[:p + 1]`` alone — the one
look-ahead of the expressions, ``\\s+(?!\\S)``, reads a single character past a whitespace run that ends
before ``p`` — so ``text``, ``text + suffix``, ``text[:p]`` and the tails ``text[p:]``,
``text[p:] + suffix`` split into the same pieces on either side of ``p``::

    count(text) = count(text + suffix) - count(text[p:] + suffix) + count(text[p:])

(tests/core/compiler/test_tally.py checks the identity on generated texts with both encodings).  Other
counters, or texts without such a position near their end, are simply counted.
"""

from __future__ import annotations

from tokenbox_core.tokens import COUNT_CACHE, FastBpeCounter, TiktokenCounter, TokenCounter

__all__ = ["count_before", "letter_space_split"]

_SPLIT_ENCODINGS = frozenset({"o200k_base", "cl100k_base"})
_WINDOW = 256
"""How far back from the end a split position is looked for."""


def letter_space_split(text: str, window: int = _WINDOW) -> int | None:
    """The last ``p`` in the last ``window`` characters with an ASCII letter at ``p - 1`` and a space at ``p``.

    >>> letter_space_split("one two.")
    3
    >>> letter_space_split("1 2 3") is None
    True
    """
    stop = max(0, len(text) - window)
    p = text.rfind(" ", stop)
    while p > 0:
        before = text[p - 1]
        if before.isascii() and before.isalpha():
            return p
        p = text.rfind(" ", stop, p)
    return None


def count_before(counter: TokenCounter, text: str, suffix: str) -> int:
    """``counter.count(text)``, having counted ``text + suffix`` and re-counted only the tail (both cached).

    >>> from tokenbox_core.tokens import get_counter
    >>> counter = get_counter("o200k_base")
    >>> count_before(counter, "Refunds take two weeks.", "\\n") == counter.count("Refunds take two weeks.")
    True
    """
    if (
        not suffix
        or not isinstance(counter, TiktokenCounter)
        or type(counter) not in (FastBpeCounter, TiktokenCounter)
        or counter.name not in _SPLIT_ENCODINGS
    ):
        return counter.count(text)
    key = COUNT_CACHE.key(counter._cache_key, text)
    known = COUNT_CACHE.get(key)
    if known is not None:  # a later turn: counted (or derived) before
        return known
    p = letter_space_split(text)
    if p is None:
        return counter.count(text)
    tail = text[p:]
    value = counter.count(text + suffix) - counter.count(tail + suffix) + counter.count(tail)
    # Remembered like a count (as tokenbox_core.tokens.fast_tail does): later stages asking for count(text)
    # find it instead of encoding the passage.
    COUNT_CACHE.put(key, value)
    return value
