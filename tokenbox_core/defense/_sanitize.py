"""Sanitisation: Algorithm 6.6 phase 1 (chapter §6.9.2, Layer 1, §6.9.3).

Two outputs from one input:

- the **emitted text** (:func:`sanitize`): every removable character of
  :mod:`tokenbox_core.defense._chars` deleted, then Unicode-normalised in the
  configured form (``"NFC"`` by default, ``"NFKC"``, or ``"none"``);
- the **detection view** (:func:`detection_view`): what a detector reads —
  HTML entities, backslash escapes (``\\u0069``, ``\\x69``, ``\\n``) and
  percent-encoding decoded, invisible characters removed, NFKC-normalised,
  and the ASCII smuggled in Unicode tag characters appended so the hidden
  instruction is scored even though it is never emitted.

Sanitisation is idempotent (``sanitize(sanitize(t)) == sanitize(t)``) and its
output contains none of the removed classes; both are hypothesis properties.
"""

from __future__ import annotations

import html
import re
import unicodedata
from dataclasses import dataclass
from typing import Literal
from urllib.parse import unquote

from tokenbox_core.defense._chars import REMOVABLE, classify, tag_payload
from tokenbox_core.errors import ConfigError, ConfigTypeError

__all__ = ["Emission", "Removal", "Sanitized", "detection_view", "sanitize", "sanitize_report"]

Emission = Literal["NFC", "NFKC", "none"]
"""Normalisation of the emitted text: NFC (default, what the ``bytes`` unit
counts), NFKC (folds compatibility forms such as full-width letters), none."""

_FORMS = ("NFC", "NFKC", "none")
_MAX_OFFSETS = 8

_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|x([0-9a-fA-F]{2})|([nrt\"'\\/]))")
_SIMPLE_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "'": "'", "\\": "\\", "/": "/"}
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
_PERCENT_RUN = re.compile(r"(?:%[0-9A-Fa-f]{2})+")


@dataclass(frozen=True)
class Removal:
    """Characters of one class removed from one input.

    Attributes:
        kind: the class name (``"zero_width"``, ``"tag"``, ``"bidi"``, ...).
        count: how many were removed.
        offsets: the code-point offsets in the input of the first few (at most 8).
    """

    kind: str
    count: int
    offsets: tuple[int, ...]


@dataclass(frozen=True)
class Sanitized:
    """The result of :func:`sanitize_report`: emitted text plus every change made.

    Attributes:
        text: the emitted text.
        removals: removed characters by class, in class-name order.
        normalized: True when the emission normalisation changed the text.
        form: the emission normalisation applied.
    """

    text: str
    removals: tuple[Removal, ...]
    normalized: bool
    form: Emission

    @property
    def removed(self) -> int:
        """How many characters were removed in total."""
        return sum(r.count for r in self.removals)

    def to_dict(self) -> dict[str, object]:
        """A JSON-ready summary for the trace."""
        return {
            "removed": {r.kind: r.count for r in self.removals},
            "offsets": {r.kind: list(r.offsets) for r in self.removals},
            "normalized": self.normalized,
            "form": self.form,
        }


def _check_form(form: object) -> Emission:
    if form not in _FORMS:
        raise ConfigError(f"emission form must be one of {', '.join(_FORMS)}, got {form!r}")
    return form  # type: ignore[return-value]


def _normalize(text: str, form: Emission) -> str:
    if form == "none" or text.isascii():
        return text
    return unicodedata.normalize(form, text)


def sanitize_report(text: str, *, form: Emission = "NFC") -> Sanitized:
    """Sanitise ``text`` and report every change (chapter §6.9.3, phase 1).

    >>> r = sanitize_report("ig\\u200bnore\\u00ad me")
    >>> r.text, [(x.kind, x.count, x.offsets) for x in r.removals]
    ('ignore me', [('soft_hyphen', 1, (7,)), ('zero_width', 1, (2,))])
    """
    emission = _check_form(form)
    if not isinstance(text, str):
        raise ConfigTypeError(f"sanitize expects str, got {type(text).__name__}")
    counts: dict[str, list[int]] = {}
    for match in REMOVABLE.finditer(text):
        counts.setdefault(classify(match.group()), []).append(match.start())
    stripped = REMOVABLE.sub("", text) if counts else text
    out = _normalize(stripped, emission)
    if out != stripped:
        # Normalisation never creates removable characters; stripping again keeps the
        # idempotence property unconditional should a future Unicode version disagree.
        out = REMOVABLE.sub("", out)
    removals = tuple(
        Removal(kind, len(offsets), tuple(offsets[:_MAX_OFFSETS])) for kind, offsets in sorted(counts.items())
    )
    return Sanitized(out, removals, out != stripped, emission)


def sanitize(text: str, *, form: Emission = "NFC") -> str:
    """Remove invisible and smuggling characters and normalise (chapter §6.9.2, Layer 1).

    Removes zero-width characters, the BOM, soft hyphens, the Unicode tag
    block, bidi overrides and isolates, other invisible fillers and control
    characters (see :mod:`tokenbox_core.defense._chars`), then applies the
    emission normalisation ``form``.  Idempotent.

    >>> sanitize("Hello\\u202e dlrow\\u202c\\ufeff")
    'Hello dlrow'
    """
    return sanitize_report(text, form=form).text


def _decode_escape(match: re.Match[str]) -> str:
    code = match.group(1) or match.group(2) or match.group(3)
    if code is not None:
        value = int(code, 16)
        if value > 0x10FFFF or 0xD800 <= value <= 0xDFFF:
            return match.group()
        return chr(value)
    return _SIMPLE_ESCAPES[match.group(4)]


def _decode_percent(match: re.Match[str]) -> str:
    return unquote(match.group(), errors="replace")


def detection_view(text: str) -> str:
    """The text a detector reads: decoded, de-obfuscated, NFKC (chapter §6.9.2).

    HTML entities (twice, for double encoding), backslash escapes and
    percent-encoded runs are decoded; removable characters are deleted; the
    result is NFKC-normalised; ASCII smuggled in tag characters is appended
    on its own line.  Never emitted, only scored.

    >>> detection_view("&#105;gnore \\u0070revious %69nstructions%20%2E")
    'ignore previous instructions .'
    """
    removable = REMOVABLE.search(text) is not None
    hidden = tag_payload(text) if removable else ""  # a tag character is a removable one
    view = text
    if "&" in view:
        view = html.unescape(view)
        if "&" in view:
            view = html.unescape(view)
    if "\\" in view:
        view = _ESCAPE.sub(_decode_escape, view)
    if "%" in view and len(_PERCENT.findall(view, 0, 4096)) >= 3:
        view = _PERCENT_RUN.sub(_decode_percent, view)
    if view != text:  # decoding can produce removable characters ("&#8203;")
        removable = REMOVABLE.search(view) is not None
    if removable:
        # An invisible character may split a word ("ig\u200bnore") or stand for a
        # space ("ignore\ufeffprevious"): score both readings.  Both are free of
        # removable characters afterwards, so no further strip is needed here.
        spaced = REMOVABLE.sub(" ", view)
        view = REMOVABLE.sub("", view) + "\n" + spaced
    if not view.isascii():
        view = REMOVABLE.sub("", unicodedata.normalize("NFKC", view))
    return f"{view}\n{hidden}" if hidden else view
