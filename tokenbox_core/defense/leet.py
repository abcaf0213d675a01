"""Leetspeak for detection (chapter §6.9.2, encoding normalisation): "1gn0re pr3v10us" read as letters.

:func:`leet_candidate` turns ``low`` (the case-folded detection view) into the
text with leet digits and ``@``/``$`` read as letters when two or more of its
tokens spell instruction keywords; :func:`may_hold_leet` is the cheap gate that
says no when no token can (both used by the heuristic detector).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["leet_candidate", "may_hold_leet"]

_WORD_RUN = re.compile(r"\w+")
_LEET = str.maketrans("013457@$", "oieasta" + "s")
_LEET_TOKEN = re.compile(r"[\w@$]+")
_LEET_WORDS = frozenset({
    "ignore", "disregard", "forget", "previous", "prior", "instructions", "instruction", "rules", "prompt", "system",
    "reveal", "secret", "password", "override", "guidelines", "above", "all",
})  # fmt: skip
_LEET_CLASS = bytes(0x6C if 0x61 <= b <= 0x7A else 0x64 if b in b"013457" else 0x20 for b in range(256))
"""Each byte to ``l`` (a-z), ``d`` (a leet digit) or a space: a letter next to a leet digit is ``ld`` or ``dl``.

Every leetspeak keyword token without ``@``/``$`` holds such a pair (a test pins it against the pattern
``[a-z][013457]|[013457][a-z]``)."""
_NON_WORD = bytes(b if chr(b).isalnum() or b == 0x5F else 0x20 for b in range(128)) + b" " * 128
"""ASCII word bytes (``\\w``) kept, every other byte a space: ``split()`` then gives the ``\\w+`` runs."""
_NON_TOKEN = bytes(b if chr(b).isalnum() or b in b"_@$" else 0x20 for b in range(128)) + b" " * 128
"""As :data:`_NON_WORD`, keeping ``@`` and ``$`` (the token characters of :data:`_LEET_TOKEN` in ASCII)."""
_LEET_BYTES = bytes.maketrans(b"013457@$", b"oieastas")
_LEET_WORDS_BYTES = frozenset(w.encode() for w in _LEET_WORDS)


def may_hold_leet(low: str) -> bool:
    """False when no token of ``low`` can be a leetspeak keyword (no ``@``/``$``, no letter beside a leet digit).

    The letter-digit pair (ASCII only) is looked for in the UTF-8 bytes mapped to
    letter/digit/other classes: two ``find`` calls at C speed; other characters are bytes of the
    third class, so a pair is adjacent in the bytes exactly when it is in the text.
    """
    if "@" in low or "$" in low:
        return True
    if not ("0" in low or "1" in low or "3" in low or "4" in low or "5" in low or "7" in low):
        return False
    mask = low.encode("utf-8", "surrogatepass").translate(_LEET_CLASS)
    return b"ld" in mask or b"dl" in mask


def leet_candidate(low: str, runs: set[str] | None = None) -> str | None:
    """``low`` with digits read as letters when two or more leetspeak tokens spell instruction keywords.

    ``runs`` are the distinct ``\\w+`` runs of ``low`` (found here when ``None``); ``@`` and ``$``
    (not word characters) are read as letters too, so tokens are re-cut only when one of them occurs.
    Without ``runs``, tokens are first cut at C speed from the UTF-8 bytes (every byte but an ASCII word
    byte, ``@`` or ``$`` mapped to a space, then split): in ASCII text those are the tokens; in other text
    every keyword token is one of them (its characters are ASCII, its neighbours are not token
    characters), so fewer than two keyword byte tokens means fewer than two keyword tokens, and only
    otherwise are the tokens cut by the expression.
    """
    at = "@" in low or "$" in low
    if runs is None:
        data = low.encode("utf-8", "surrogatepass")
        if _keyword_tokens(data.translate(_NON_TOKEN if at else _NON_WORD)) < 2:
            return None
        if len(data) == len(low):
            return low.translate(_LEET)
    if at:
        tokens: Iterable[str] = set(_LEET_TOKEN.findall(low))
    elif runs is not None:
        tokens = runs
    else:
        tokens = set(_WORD_RUN.findall(low))
    hits = 0
    for token in tokens:
        if (
            3 <= len(token) <= 15
            and not token.isalpha()
            and not token.isdigit()
            and token.translate(_LEET) in _LEET_WORDS
        ):
            hits += 1
            if hits >= 2:
                return low.translate(_LEET)
    return None


def _keyword_tokens(mask: bytes) -> int:
    """How many distinct tokens of ``mask`` (split at spaces) spell a keyword in leetspeak, counting up to 2."""
    hits = 0
    for token in set(mask.split()):
        if (
            3 <= len(token) <= 15
            and not token.isalpha()
            and not token.isdigit()
            and token.translate(_LEET_BYTES) in _LEET_WORDS_BYTES
        ):
            hits += 1
            if hits >= 2:
                break
    return hits
