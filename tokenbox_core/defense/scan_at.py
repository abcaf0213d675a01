"""Running a regular expression only where a match can start (chapter §6.9.2 Layer 1, made cheap).

Python's ``re`` skips ahead fast only when it knows the characters a match
can start with; an expression with an alternative opening with ``^`` or a
look-behind, or one that ignores case, is tried at every position of the
text.  When every match is known to start at one of a few literals, trying
``pattern.match`` at their occurrences (in order, after the previous match's
end) yields exactly the matches of ``pattern.finditer`` — a match found by a
scan starts at the leftmost position where the pattern matches, and every
such position is a candidate.  ``match`` sees the text before its start
position, so ``\\b``, ``^`` (multi-line) and look-behinds behave as in a scan.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

__all__ = ["ci_occurrences", "finditer_at", "occurrences", "search_at"]

_UNALIGNED = ("\u0130", "\u0131", "\u017f")
"""Characters an ``IGNORECASE`` pattern matches to an ASCII letter although ``str.lower`` does not give that
letter (İ → "i̇" is even two characters long; ı ~ i, ſ ~ s); a test pins that no other character does."""


def occurrences(text: str, literals: Iterable[str]) -> list[int]:
    """Every position where one of ``literals`` occurs in ``text`` (overlapping occurrences included)."""
    out: list[int] = []
    for literal in literals:
        k = text.find(literal)
        while k >= 0:
            out.append(k)
            k = text.find(literal, k + 1)
    return out


def ci_occurrences(text: str, literals: Iterable[str]) -> list[int] | None:
    """Where the lower-case ASCII ``literals`` occur in ``text`` ignoring case, as an ``IGNORECASE`` pattern sees it.

    Found in ``text.lower()``, whose offsets are those of ``text`` and whose ASCII letters are exactly the
    characters an ``IGNORECASE`` pattern takes for them, unless ``text`` holds one of three characters
    (:data:`_UNALIGNED`): then ``None``, and the caller scans as before.
    """
    if not text.isascii() and any(ch in text for ch in _UNALIGNED):
        return None
    return occurrences(text.lower(), literals)


def finditer_at(pattern: re.Pattern[str], text: str, starts: Iterable[int]) -> Iterator[re.Match[str]]:
    """The matches of ``pattern.finditer(text)`` when every one of them starts at one of ``starts``.

    Non-empty matches only (none of the expressions it serves can match empty).
    """
    end = 0
    for start in sorted(set(starts)):
        if start < end:
            continue
        m = pattern.match(text, start)
        if m is not None and m.end() > start:
            yield m
            end = m.end()


def search_at(pattern: re.Pattern[str], text: str, starts: Iterable[int]) -> re.Match[str] | None:
    """``pattern.search(text)`` when every match of it starts at one of ``starts``: the first that matches."""
    for start in sorted(set(starts)):
        m = pattern.match(text, start)
        if m is not None:
            return m
    return None
