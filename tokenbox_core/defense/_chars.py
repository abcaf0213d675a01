"""The character classes sanitisation removes (chapter §6.9.2, Layer 1).

Each class is a set of code points that render as nothing (or reorder what
is shown) and so let an attacker hide text from a human reviewer while the
model still reads it:

==============  ===========================================================
class           code points
==============  ===========================================================
zero_width      U+200B ZWSP, U+200C ZWNJ, U+200D ZWJ, U+2060 WJ, U+180E,
                U+2061-U+2064 invisible operators
bom             U+FEFF (byte-order mark / ZWNBSP)
soft_hyphen     U+00AD
tag             U+E0000-U+E007F, the Unicode "tag" block that mirrors ASCII
bidi            U+202A-U+202E embeddings/overrides, U+2066-U+2069 isolates,
                U+200E/U+200F/U+061C marks
invisible       U+034F CGJ, Hangul fillers (U+115F, U+1160, U+3164, U+FFA0),
                U+17B4/U+17B5, U+FFF9-U+FFFB interlinear annotation,
                U+1D173-U+1D17A invisible musical formatting
control         C0 controls except TAB, LF, CR; DEL; C1 controls
==============  ===========================================================

Removing ZWJ splits emoji ZWJ sequences (a family emoji becomes its members)
and removing tags turns subdivision flags into a black flag: a deliberate
trade, the characters are the two most used for smuggling.
"""

from __future__ import annotations

import re

__all__ = ["CHAR_CLASSES", "REMOVABLE", "classify", "tag_payload"]


def _ranges(*spans: tuple[int, int]) -> frozenset[int]:
    return frozenset(cp for lo, hi in spans for cp in range(lo, hi + 1))


CHAR_CLASSES: dict[str, frozenset[int]] = {
    "zero_width": _ranges((0x200B, 0x200D), (0x2060, 0x2064), (0x180E, 0x180E)),
    "bom": _ranges((0xFEFF, 0xFEFF)),
    "soft_hyphen": _ranges((0x00AD, 0x00AD)),
    "tag": _ranges((0xE0000, 0xE007F)),
    "bidi": _ranges((0x202A, 0x202E), (0x2066, 0x2069), (0x200E, 0x200F), (0x061C, 0x061C)),
    "invisible": _ranges(
        (0x034F, 0x034F),
        (0x115F, 0x1160),
        (0x3164, 0x3164),
        (0xFFA0, 0xFFA0),
        (0x17B4, 0x17B5),
        (0xFFF9, 0xFFFB),
        (0x1D173, 0x1D17A),
    ),
    "control": _ranges((0x00, 0x08), (0x0B, 0x0C), (0x0E, 0x1F), (0x7F, 0x9F)),
}
"""Removed character classes by name (the names appear in the trace)."""

_CLASS_OF: dict[int, str] = {cp: name for name, cps in CHAR_CLASSES.items() for cp in cps}


def _class_pattern(cps: list[int]) -> str:
    # Ranges, not a list of code points: a long list makes every position slow for non-BMP sets.
    parts: list[str] = []
    i = 0
    while i < len(cps):
        j = i
        while j + 1 < len(cps) and cps[j + 1] == cps[j] + 1:
            j += 1
        lo, hi = re.escape(chr(cps[i])), re.escape(chr(cps[j]))
        parts.append(lo if i == j else f"{lo}-{hi}")
        i = j + 1
    return "[" + "".join(parts) + "]"


REMOVABLE = re.compile(_class_pattern(sorted(_CLASS_OF)))
"""One character class matching every removable code point."""


def classify(char: str) -> str:
    """The class name of one removable character (``KeyError`` otherwise)."""
    return _CLASS_OF[ord(char)]


_TAG_ASCII = re.compile("[\U000e0020-\U000e007e]+")
_FROM_TAG = {cp: cp - 0xE0000 for cp in range(0xE0020, 0xE007F)}


def tag_payload(text: str) -> str:
    """The ASCII an attacker smuggled in tag characters (U+E0020-U+E007E), in order.

    >>> tag_payload("hi" + "".join(chr(0xE0000 + ord(c)) for c in "run"))
    'run'
    """
    return "".join(_TAG_ASCII.findall(text)).translate(_FROM_TAG)
