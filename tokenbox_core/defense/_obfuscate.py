"""Obfuscations attackers apply to an instruction, for testing detectors (chapter §6.9.1).

The attack corpus of the test suite stores plain payloads with the name of a
transform; :func:`obfuscate` applies it, so the data files stay readable and
you can red-team your own :class:`~tokenbox_core.defense.InjectionDetector`
the same way.  Every transform is deterministic.
"""

from __future__ import annotations

import base64
import codecs
from collections.abc import Callable
from urllib.parse import quote

from tokenbox_core.defense._decoders import MORSE_CODE, caesar_shift
from tokenbox_core.errors import ConfigError

__all__ = ["TRANSFORMS", "obfuscate"]

_HOMOGLYPHS = str.maketrans({"a": "а", "e": "е", "o": "о", "p": "р", "c": "с", "i": "і", "y": "у", "x": "х"})


def _interleave(sep: str) -> Callable[[str], str]:
    return lambda text: " ".join(sep.join(word) for word in text.split(" "))


def _morse(text: str) -> str:
    """Letters separated by blanks, words by `` / ``; a character Morse has no code for is left out."""
    words = (" ".join(MORSE_CODE[c] for c in word if c in MORSE_CODE) for word in text.lower().split())
    return " / ".join(w for w in words if w)


def _tags(text: str) -> str:
    return "".join(chr(0xE0000 + ord(c)) for c in text if 0x20 <= ord(c) <= 0x7E)


TRANSFORMS: dict[str, Callable[[str], str]] = {
    "base64": lambda t: base64.b64encode(t.encode()).decode(),
    "hex": lambda t: t.encode().hex(),
    "rot13": lambda t: codecs.encode(t, "rot13"),
    "caesar3": lambda t: caesar_shift(t, 3),
    "binary": lambda t: " ".join(f"{b:08b}" for b in t.encode()),
    "morse": _morse,
    "entities": lambda t: "".join(f"&#{ord(c)};" if c.isalpha() else c for c in t),
    "unicode_escape": lambda t: "".join(f"\\u{ord(c):04x}" if c.isalpha() else c for c in t),
    "url": lambda t: quote(t, safe=""),
    "zwsp": _interleave("\u200b"),
    "zwj": _interleave("\u200d"),
    "soft_hyphen": _interleave("\u00ad"),
    "bom": lambda t: "\ufeff" + "\ufeff".join(t.split(" ")),
    "mixed_invisible": lambda t: "".join(c + ("\u2060" if i % 3 == 0 else "\u200c") for i, c in enumerate(t)),
    "tags": _tags,
    "bidi": lambda t: f"\u202e{t}\u202c",
    "homoglyph": lambda t: t.translate(_HOMOGLYPHS),
}
"""Transform name -> function over the payload."""


def obfuscate(payload: str, transform: str) -> str:
    """Apply the named transform to ``payload``.

    >>> obfuscate("hi", "hex"), obfuscate("ab", "zwsp") == "a\\u200bb"
    ('6869', True)
    """
    try:
        return TRANSFORMS[transform](payload)
    except KeyError:
        raise ConfigError(f"unknown transform {transform!r}; choose one of {', '.join(sorted(TRANSFORMS))}") from None
