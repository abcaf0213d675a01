"""Personal-data detection for Filter's PII gate (chapter §6.4.1 stage 2).

A detector is anything with ``find(text) -> list[PIIMatch]`` (the
:class:`PIIDetector` protocol).  :class:`RegexPIIDetector`, the default,
finds:

- e-mail addresses;
- phone numbers (international ``+`` form, or 10+ digits with separators);
- payment-card numbers (13–19 digits) that pass the Luhn check;
- IBANs whose mod-97 check digits verify (ISO 13616);
- national identifiers (kind ``national_id``): US social-security numbers
  written ``123-45-6789`` or ``123 45 6789`` (never-issued areas 000, 666 and
  900–999, group 00 and serial 0000 excluded), UK National Insurance numbers
  (``AB 12 34 56 C``, with the excluded prefixes), and Canadian social
  insurance numbers (``046 454 286``) that pass the Luhn check;
- API-key shapes (``sk-…``, ``AKIA…``, ``ghp_…``, ``xox?-…``, ``AIza…``) and
  private-key blocks (``-----BEGIN … PRIVATE KEY-----``).

Card numbers, IBANs and Canadian SINs are verified, so order numbers and
random digit runs do not trip the gate.  Not found: names, postal addresses,
dates of birth, an SSN written as nine bare digits (indistinguishable from
other numbers), passport and driving-licence numbers, and national
identifiers of other countries; plug in a detector of your own
(``CompilerConfig(pii_detector=...)``) for those.

>>> [m.kind for m in RegexPIIDetector().find("mail bob@example.com, card 4111 1111 1111 1111")]
['email', 'card']
>>> RegexPIIDetector().find("order 4111 1111 1111 1112")
[]
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["PIIDetector", "PIIMatch", "RegexPIIDetector", "iban_valid", "luhn_valid"]


@dataclass(frozen=True)
class PIIMatch:
    """One finding: what kind of data, and where (``start``/``end`` offsets into the text)."""

    kind: str
    start: int
    end: int


@runtime_checkable
class PIIDetector(Protocol):
    """Finds personal or secret data in a text."""

    def find(self, text: str) -> list[PIIMatch]: ...


def luhn_valid(digits: str) -> bool:
    """The Luhn checksum of a digit string (payment cards)."""
    if not digits.isdigit():
        return False
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def iban_valid(iban: str) -> bool:
    """ISO 13616 mod-97 check of an IBAN (spaces ignored)."""
    s = iban.replace(" ", "").upper()
    if not re.fullmatch(r"[A-Z]{2}\d{2}[A-Z0-9]{11,30}", s):
        return False
    moved = s[4:] + s[:4]
    number = "".join(str(int(ch, 36)) for ch in moved)
    return int(number) % 97 == 1


_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
_CARD = re.compile(r"(?<!\d)(?:\d[ -]?){12,18}\d(?!\d)")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b")
_PHONE = re.compile(
    r"(?<![\w+])\+\d{1,3}(?:[ .-]?\(?\d{1,4}\)?){2,5}(?!\d)"  # international: +44 20 7946 0958
    r"|(?<!\d)(?:\(\d{3}\) ?|\d{3}[-. ])\d{3}[-. ]\d{4}(?!\d)"  # North American: (555) 123-4567
)
_SSN = re.compile(r"(?<![\d-])(?!000|666|9\d\d)\d{3}([- ])(?!00)\d{2}\1(?!0000)\d{4}(?![\d-])")
_NINO = re.compile(r"\b(?!BG|GB|KN|NK|NT|TN|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b")
_SIN = re.compile(r"(?<![\d-])\d{3}([- ])\d{3}\1\d{3}(?![\d-])")
_API_KEY = re.compile(
    r"\b(?:sk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}|AKIA[0-9A-Z]{16}|gh[pousr]_[A-Za-z0-9]{36,}"
    r"|xox[abposr]-[A-Za-z0-9-]{10,}|AIza[0-9A-Za-z_-]{35})"
)
_PRIVATE_KEY = re.compile(r"-----BEGIN (?:[A-Z]+ )*PRIVATE KEY-----")
_KEY_MARKS = ("-----BEGIN", "sk-", "AKIA", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "xox", "AIza")


def _may_hold_pii(text: str) -> bool:
    """Something every kind needs (an @, a digit, a key prefix): texts without any are skipped at C speed."""
    # Ten substring scans run about 15x faster than one ``[0-9]`` regex search.
    return "@" in text or any(d in text for d in "0123456789") or any(mark in text for mark in _KEY_MARKS)


_DIGIT_RUN = re.compile(r"\d+")
_DIGIT_PATTERNS = (_IBAN, _SSN, _NINO, _SIN, _CARD, _PHONE)


def _upper_pair(pair: str) -> bool:
    """Two ASCII capital letters (what ``[A-Z]{2}`` needs)."""
    return len(pair) == 2 and pair.isascii() and pair.isalpha() and pair.isupper()


def _starts(text: str) -> dict[re.Pattern[str], list[int]]:
    """Every position where each digit pattern can start a match, ascending, from one pass over the digit runs.

    Each digit pattern's match starts at a fixed offset from the first digit of a run of digits (its look-behind
    or its letters or ``+``/``(`` make that digit a run's first): the run's start (SSN, SIN, card, a North American
    phone number), one before it (``+`` or ``(``), two or three before it (an IBAN's or a NINO's letters).  The
    conditions below are necessary for a match there, so no position where one starts is left out.
    """
    starts: dict[re.Pattern[str], list[int]] = {pattern: [] for pattern in _DIGIT_PATTERNS}
    iban, ssn, nino, sin, card, phone = (starts[pattern] for pattern in _DIGIT_PATTERNS)
    for run in _DIGIT_RUN.finditer(text):
        start, stop = run.span()
        length, after = stop - start, text[stop : stop + 1]
        before = text[start - 1 : start]
        if length == 3 and after in ("-", " "):
            ssn.append(start)
            sin.append(start)
        if length >= 13 or after in (" ", "-"):  # 13 digits, or separators between them
            card.append(start)
        if before == "+" or (before == "(" and length == 3):
            phone.append(start - 1)
        if length == 3 and after in ("-", ".", " "):
            phone.append(start)
        if length >= 2 and start >= 2:
            if _upper_pair(text[start - 2 : start]):
                iban.append(start - 2)
                nino.append(start - 2)
            elif before == " " and start >= 3 and _upper_pair(text[start - 3 : start - 1]):
                nino.append(start - 3)
    return starts


def _matches(pattern: re.Pattern[str], text: str, starts: list[int]) -> Iterator[re.Match[str]]:
    """What ``pattern.finditer(text)`` yields, given (ascending) every position where a match can start.

    ``finditer`` takes the leftmost match, then searches again from its end; positions outside ``starts``
    cannot match, so trying only those (at or after the previous match's end) finds the same matches.
    """
    end = 0
    for start in starts:
        if start >= end:
            found = pattern.match(text, start)
            if found is not None:
                end = found.end()
                yield found


@dataclass(frozen=True)
class RegexPIIDetector:
    """The default detector: e-mail, phone, Luhn-valid cards, mod-97-valid IBANs, national identifiers (US SSN,
    UK NINO, Luhn-valid Canadian SIN), API and private keys.

    ``kinds`` restricts what is reported (all by default).

    The scan finds what running each pattern over the whole text would, in about one pass: the literal a
    pattern needs (``-----BEGIN``, a key prefix, ``@``) is looked for first, and the digit patterns are tried
    only where a run of digits lets one start (:func:`_starts`) rather than at every character.
    """

    kinds: tuple[str, ...] = ("email", "phone", "card", "iban", "national_id", "api_key", "private_key")

    def find(self, text: str) -> list[PIIMatch]:
        """Every finding in ``text``, by position."""
        if not _may_hold_pii(text):
            return []
        found: list[PIIMatch] = []
        taken: list[tuple[int, int]] = []

        def add(kind: str, start: int, end: int) -> None:
            if not any(s < end and start < e for s, e in taken):
                found.append(PIIMatch(kind, start, end))
                taken.append((start, end))

        kinds = self.kinds
        if "private_key" in kinds and "-----BEGIN" in text:
            for m in _PRIVATE_KEY.finditer(text):
                add("private_key", m.start(), m.end())
        if "api_key" in kinds and any(mark in text for mark in _KEY_MARKS[1:]):
            for m in _API_KEY.finditer(text):
                add("api_key", m.start(), m.end())
        if "email" in kinds and "@" in text:
            for m in _EMAIL.finditer(text):
                add("email", m.start(), m.end())
        if not {"iban", "national_id", "card", "phone"} & set(kinds):
            return sorted(found, key=lambda x: (x.start, x.end, x.kind))
        starts = _starts(text)
        if "iban" in kinds:
            for m in _matches(_IBAN, text, starts[_IBAN]):
                if iban_valid(m.group()):
                    add("iban", m.start(), m.end())
        if "national_id" in kinds:
            for m in _matches(_SSN, text, starts[_SSN]):
                add("national_id", m.start(), m.end())
            for m in _matches(_NINO, text, starts[_NINO]):
                add("national_id", m.start(), m.end())
            for m in _matches(_SIN, text, starts[_SIN]):
                if luhn_valid(re.sub(r"\D", "", m.group())):
                    add("national_id", m.start(), m.end())
        if "card" in kinds:
            for m in _matches(_CARD, text, starts[_CARD]):
                digits = re.sub(r"[ -]", "", m.group())
                if 13 <= len(digits) <= 19 and luhn_valid(digits):
                    add("card", m.start(), m.end())
        if "phone" in kinds:
            for m in _matches(_PHONE, text, starts[_PHONE]):
                digits = re.sub(r"\D", "", m.group())
                if 8 <= len(digits) <= 15:
                    add("phone", m.start(), m.end())
        return sorted(found, key=lambda x: (x.start, x.end, x.kind))
