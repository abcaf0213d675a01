"""Positions no token can span, for the o200k/cl100k encodings, and a C-level scan for them (issue 16 §1).

A *neutral* position ``p`` of a text ``T`` is one where, for every ``a`` ending like ``T[:p]`` and every ``b``
starting like ``T[p:]``, ``encode(a + b) == encode(a) + encode(b)`` — so counts add up, a long text's count
with or without a suffix differs only in the few characters after its last neutral position, and a cut's
count is read off the ids before it (:mod:`~tokenbox_core.tokens.fast_tail`, :mod:`~tokenbox_core.tokens.fast_cut`,
:mod:`~tokenbox_core.tokens.fast_measure`).  ``TiktokenCounter.neutral_join(left_end, right_start)`` answers for
the two characters around ``p``; :func:`scan_neutral` finds such positions in a text.

**The rules** (o200k_base, o200k_harmony — which reuses o200k's pattern — and cl100k_base; no other encoding
has neutral positions here: r50k/p50k's ``\\s++$`` reads to the end of the text, and they cannot be verified
offline).  ``p`` is neutral when

1. *newline rule*: ``T[p - 1]`` is ``"\\n"`` and ``T[p]`` is neither whitespace nor ``/``; or
2. *letter rule*: ``T[p - 1]`` is an ASCII letter and ``T[p]`` is an ASCII character that is neither a letter
   nor an apostrophe (a space, a digit, punctuation, a control character, ``\\n``, ...).

**Why no token spans them.**  tiktoken splits a text into *pieces* with the encoding's regular expression
(leftmost-first alternatives, matched one after another from the start) and byte-pair-encodes each piece on its
own, so ``encode(T)`` is the concatenation of the pieces' encodings.  It suffices that the pieces of ``a + b``
are the pieces of ``a`` followed by those of ``b``: (i) no match of any alternative that starts before ``p``
contains both ``p - 1`` and ``p``; (ii) every match attempt starting before ``p`` that reads ``T[p]`` decides
there as it does at the end of ``a``: a letter run (possessive or greedy), an optional contraction suffix and a
punctuation piece's trailing ``[\\r\\n]``/``[\\r\\n/]`` run all stop (``T[p]`` can continue none of them, by
(i)); the only look-arounds are ``\\s+(?!\\S)`` and cl100k's ``\\s++$`` at the end of a whitespace match, and
under the letter rule no whitespace match ends at ``p`` (``T[p - 1]`` is a letter), while under the newline rule,
at every position of the whitespace run that ends with the newline at ``p``, an earlier alternative already
matches exactly to ``p`` — cl100k ``\\s*[\\r\\n]`` in ``a + b`` and ``\\s++$`` in ``a`` (the same piece),
o200k ``\\s*[\\r\\n]+`` in both — so the look-around alternatives are never reached there; (iii) a match
starting at ``p`` or later reads nothing before ``p`` (there is no look-behind, ``^`` or ``\\b``).  Then the
piece holding ``p - 1`` ends at ``p`` in ``a + b`` as in ``a``, every earlier piece is the same, and the scan
restarts at ``p`` exactly as it starts ``b``.  For (i), alternative by alternative:

- cl100k ``'(?i:[sdmt]|ll|ve|re)`` and o200k's contraction suffixes ``(?i:'s|'t|'re|'ve|'m|'ll|'d)``: after a
  letter they hold only letters; a contraction can only *start* with the apostrophe (excluded on the right by
  the letter rule; a newline is not a letter).
- cl100k ``[^\\r\\n\\p{L}\\p{N}]?+\\p{L}++``, o200k ``[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*
  [\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(…)?`` and its mirror: the optional leading character excludes ``\\r``/``\\n``
  and is followed by letters (o200k: letters *and marks*, with a case split inside a run), so after a letter
  comes only a letter, a mark or an apostrophe, and the only ASCII characters among those are the letters
  and ``'`` — both excluded on the right by the letter rule (ASCII letters are letters in every Unicode
  version, so Python's and the regex engine's tables cannot disagree); a newline is never inside such a match.
- ``\\p{N}{1,3}``: digits only.
- cl100k `` ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*+``, o200k `` ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*``: no letter at all (letter
  rule); a newline only in the trailing run, which can continue after it with ``\\r``, ``\\n`` or (o200k) ``/``
  — whitespace or ``/``, excluded on the right by the newline rule.
- the whitespace alternatives (``\\s++$``, ``\\s*[\\r\\n]``, ``\\s*[\\r\\n]+``, ``\\s+(?!\\S)``, ``\\s+``, ``\\s``):
  no letter; after a newline they continue only with whitespace, excluded by the newline rule.

The o200k and cl100k patterns differ (o200k: marks count as letters, the leading non-letter character and
the case split inside letter runs, contractions only as a suffix, ``/`` after punctuation runs; cl100k:
possessive quantifiers, contractions as their own pieces, ``\\s++$``), and the rules above hold for both.
``tests/core/test_neutral.py`` checks, for both encodings and both counters (tiktoken and the fast
``rs-bpe`` counter, whose counts are proven equal to tiktoken's), that counts and ids add up at every position
``neutral_join`` accepts, on generated adversarial text (multi-byte, marks, digits, punctuation, whitespace runs,
apostrophes, CJK), and that :func:`scan_neutral` finds exactly the positions ``neutral_join`` names.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from tokenbox_core.tokens.base import TokenCounter

__all__ = ["NEUTRAL_ENCODINGS", "scan_neutral", "tiktoken_neutral_join"]

NEUTRAL_ENCODINGS = frozenset({"cl100k_base", "o200k_base", "o200k_harmony"})
"""The tiktoken encodings whose neutral positions follow the rules in this module's docstring."""

_AFTER_LETTER_CLASS = r"[\x00-\x26\x28-\x40\x5b-\x60\x7b-\x7f]"  # ASCII less the letters and ' (0x27)
FORWARD = re.compile(r"[\nA-Za-z](?:(?<=\n)(?=[^\s/])|(?<=[A-Za-z])(?=" + _AFTER_LETTER_CLASS + "))")
"""Matches the character just *before* a neutral position (``match.end()`` is the position).

It starts with a character class, so ``re`` skips to candidates in C; Python's ``\\s`` in a ``str`` pattern is
exactly ``str.isspace()``, which ``neutral_join`` uses (tests/core/test_neutral.py checks every code point)."""
BACKWARD = re.compile(r"[\nA-Za-z](?<=" + _AFTER_LETTER_CLASS + r"[A-Za-z]|[^\s/]\n)")
""":data:`FORWARD` for the *reversed* text: matches the character before a neutral position, reading the one
after it behind it (``re`` has no backward search; the last position is the first one in the reversed text)."""

_ASCII_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_AFTER_LETTER = frozenset(map(chr, range(128))) - _ASCII_LETTERS - {"'"}
_FIRST_WINDOW = 64


def tiktoken_neutral_join(left_end: str, right_start: str) -> bool:
    """Whether the position between ``left_end`` and ``right_start`` is neutral for o200k/cl100k (rules above).

    >>> tiktoken_neutral_join("\\n", "x"), tiktoken_neutral_join("\\n", "/"), tiktoken_neutral_join("\\n", " ")
    (True, False, False)
    >>> tiktoken_neutral_join("s", " "), tiktoken_neutral_join("s", "."), tiktoken_neutral_join("s", "'")
    (True, True, False)
    >>> tiktoken_neutral_join("é", " "), tiktoken_neutral_join("s", "t"), tiktoken_neutral_join("1", " ")
    (False, False, False)
    """
    if left_end == "\n":
        return right_start != "/" and not right_start.isspace()
    return left_end in _ASCII_LETTERS and right_start in _AFTER_LETTER


def scan_neutral(counter: TokenCounter, text: str, lo: int, hi: int, *, last: bool) -> int | None:
    """The last (``last``) or first ``p`` with ``lo <= p < hi`` where ``counter.neutral_join(text[p - 1], text[p])``.

    For the tiktoken counters the positions are found in C by :data:`FORWARD` (or :data:`BACKWARD` over
    reversed windows that grow from ``hi``), not by a Python call per character: a few nanoseconds a character
    where no ASCII letter or newline is, a microsecond or two in prose; any other ``neutral_join`` is asked
    position by position, and a counter without one has none.
    """
    join: Callable[[str, str], bool] | None = getattr(counter, "neutral_join", None)
    lo = max(lo, 1)
    hi = min(hi, len(text))
    if join is None or hi <= lo:
        return None
    if getattr(type(counter), "neutral_join", None) is _tiktoken_join():
        if not getattr(counter, "_neutral", False):
            return None
        if not last:
            found = FORWARD.search(text, lo - 1, hi)  # the character before p is at lo - 1 or later
            return None if found is None else found.end()
        return _last_neutral(text, lo, hi)
    for p in range(hi - 1, lo - 1, -1) if last else range(lo, hi):
        if join(text[p - 1], text[p]):
            return p
    return None


def _last_neutral(text: str, lo: int, hi: int) -> int | None:
    """The last neutral ``p`` in ``[lo, hi)``: :data:`BACKWARD` over reversed windows growing back from ``hi``."""
    size = _FIRST_WINDOW
    end = hi
    while end > lo:
        start = max(lo, end - size)
        window = text[end - 1 : start - 2 if start >= 2 else None : -1]  # text[start - 1 : end], reversed
        found = BACKWARD.search(window, 1)  # window[k] is text[end - 1 - k]; a match at k means p = end - k
        if found is not None:
            return end - found.start()
        end = start
        size *= 4
    return None


_JOIN: list[Any] = []


def _tiktoken_join() -> Any:
    """``TiktokenCounter.neutral_join`` (imported on first use: tiktoken_counter imports this module)."""
    if not _JOIN:
        from tokenbox_core.tokens.tiktoken_counter import TiktokenCounter

        _JOIN.append(TiktokenCounter.neutral_join)
    return _JOIN[0]
