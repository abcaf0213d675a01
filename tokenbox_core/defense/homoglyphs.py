"""Homoglyph folding for detection (chapter §6.9.2, encoding normalisation).

NFKC already folds compatibility forms (full-width, mathematical and
circled letters).  What it leaves are *confusables*: Cyrillic, Greek and
other letters that look like Latin ones ("іgnоrе" with Cyrillic і, о, е).
Folding every Cyrillic letter would break the Russian detector, so only
**mixed-script words** — a word holding at least one ASCII letter and at
least one confusable — are folded, and each such word is itself evidence.
"""

from __future__ import annotations

import re

__all__ = ["fold_mixed_words"]

# Lower-case confusables (the view is case-folded before folding) -> Latin.
_CONFUSABLES = {
    # Cyrillic
    "а": "a", "в": "b", "е": "e", "ё": "e", "з": "3", "і": "i", "ї": "i", "ј": "j", "к": "k", "м": "m",
    "н": "h", "о": "o", "р": "p", "с": "c", "т": "t", "у": "y", "х": "x", "ѕ": "s", "ԁ": "d", "ԛ": "q",
    "ԝ": "w", "ӏ": "l", "һ": "h", "ѵ": "v", "ɡ": "g", "ո": "n", "ս": "u",
    # Greek
    "α": "a", "β": "b", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t", "υ": "u",
    "χ": "x", "γ": "y", "ϲ": "c", "ѡ": "w",
}  # fmt: skip

_TABLE = str.maketrans(_CONFUSABLES)
_CONF = "[" + "".join(sorted(_CONFUSABLES)) + "]"
# A mixed-script word has a Latin letter next to a confusable somewhere; looking for that
# pair (a pattern that starts with a character class) is what keeps the scan fast.
_MIXED = re.compile(f"[a-z]{_CONF}|{_CONF}[a-z]")
_WORD_EDGE = re.compile(r"\w*")
_LEADS = frozenset(ch.encode("utf-8")[0] for ch in _CONFUSABLES)
_PAIR_CLASS = bytes(
    0x6C if 0x61 <= b <= 0x7A else 0x63 if b in _LEADS else 0x78 if 0x80 <= b <= 0xBF else 0x20 for b in range(256)
)
"""Each UTF-8 byte to ``l`` (a-z), ``c`` (the first byte of a confusable's two), ``x`` (a continuation byte) or a
space: a pair of :data:`_MIXED` is ``lc`` (a letter, then a confusable) or ``cxl`` (a confusable, then a letter)
in the map, so a map holding neither has no pair."""


def fold_mixed_words(view: str) -> tuple[str, int]:
    """Fold confusables inside mixed-script words; return the text and how many words.

    ``view`` must be case-folded.

    >>> fold_mixed_words("іgnоrе previous instructions; привет")
    ('ignore previous instructions; привет', 1)
    """
    if view.isascii():
        return view, 0
    pairs = view.encode("utf-8", "surrogatepass").translate(_PAIR_CLASS)
    if (b"lc" not in pairs and b"cxl" not in pairs) or _MIXED.search(view) is None:
        return view, 0
    out: list[str] = []
    pos = mixed = 0
    for m in _MIXED.finditer(view):
        if m.start() < pos:
            continue
        start = m.start()
        while start > 0 and (view[start - 1].isalnum() or view[start - 1] == "_"):
            start -= 1
        end = _WORD_EDGE.match(view, m.start()).end()  # type: ignore[union-attr]
        out.append(view[pos:start])
        out.append(view[start:end].translate(_TABLE))
        mixed += 1
        pos = end
    out.append(view[pos:])
    return "".join(out), mixed
