"""The default PII detector: verified cards and IBANs, e-mail, phones, keys."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core.compiler import PIIDetector
from tokenbox_core.compiler import _pii as pii
from tokenbox_core.compiler._pii import RegexPIIDetector, iban_valid, luhn_valid


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("write to jane.doe+news@mail.example.org", "email"),
        ("call +44 20 7946 0958", "phone"),
        ("call (555) 123-4567", "phone"),
        ("card 4111-1111-1111-1111", "card"),
        ("IBAN DE89 3704 0044 0532 0130 00", "iban"),
        ("key AKIAIOSFODNN7EXAMPLE", "api_key"),
        ("token ghp_" + "a" * 36, "api_key"),
        ("-----BEGIN OPENSSH PRIVATE KEY-----", "private_key"),
    ],
)
def test_finds_each_kind(text: str, kind: str) -> None:
    """Each kind is found with its offsets."""
    (match,) = RegexPIIDetector().find(text)
    assert match.kind == kind and text[match.start : match.end]


@pytest.mark.parametrize(
    "text",
    ["order 4111 1111 1111 1112", "IBAN DE89 3704 0044 0532 0130 01", "revenue 1,234,567 in 2024", "version 1.2.3"],
)
def test_ignores_unverified_numbers(text: str) -> None:
    """Digit runs failing Luhn or mod-97, and ordinary numbers, are not PII."""
    assert RegexPIIDetector().find(text) == []


def test_checksums_and_protocol() -> None:
    """Luhn and mod-97 checks; the detector satisfies the PIIDetector protocol; kinds can be restricted."""
    assert luhn_valid("4111111111111111") and not luhn_valid("4111111111111112")
    assert iban_valid("GB82WEST12345698765432") and not iban_valid("GB82WEST12345698765433")
    assert isinstance(RegexPIIDetector(), PIIDetector)
    assert RegexPIIDetector(kinds=("email",)).find("call +44 20 7946 0958") == []


_PIECES = [
    "word ",
    "\n",
    "@",
    "7",
    "4111 1111 1111 1111",
    "bob@example.com",
    "sk-",
    "AKIA",
    "gh",
    "p_",
    "xox",
    "-----BEGIN",
    "AIza",
    "s",
    "k-",
    "é ",
    "+44 20 7946 0958",
    "",
    "ghp_",
    "x",
    "-",
    "_",
    "A",
    "xo",
]
_texts = st.lists(st.lists(st.sampled_from(_PIECES), max_size=8).map("".join), max_size=24)


@given(_texts.map(" ".join))
def test_the_prescreen_never_hides_a_finding(text: str) -> None:
    """A text the cheap pre-screen skips (no @, digit or key prefix) matches none of the detector's patterns."""
    patterns = (pii._EMAIL, pii._CARD, pii._IBAN, pii._PHONE, pii._API_KEY, pii._PRIVATE_KEY)
    if any(p.search(text) for p in patterns):
        assert pii._may_hold_pii(text)


@pytest.mark.parametrize(
    "text",
    ["SSN 123-45-6789 on file", "ssn: 123 45 6789", "NI number AB 12 34 56 C", "nino AB123456C", "SIN 046 454 286"],
)
def test_national_identifiers_are_found(text: str) -> None:
    """US social-security numbers, UK National Insurance numbers and Luhn-valid Canadian SINs are PII."""
    assert [m.kind for m in RegexPIIDetector().find(text)] == ["national_id"]


@pytest.mark.parametrize(
    "text",
    [
        "ssn 000-12-3456",  # area 000 is never issued
        "ssn 666-12-3456",
        "ssn 912-34-5678",  # 900-999 are not SSNs
        "ssn 123-00-4567",
        "ssn 123-45-0000",
        "mixed 123-45 6789",
        "placeholder QQ 12 34 56 C",  # HMRC's example prefix is invalid
        "nino GB123456C",
        "SIN 046 454 287",  # fails Luhn
        "order 2024-11-27",
    ],
)
def test_shapes_that_are_not_national_identifiers_pass(text: str) -> None:
    """Never-issued SSN ranges, invalid NINO prefixes, Luhn-invalid SINs and dates are not flagged."""
    assert RegexPIIDetector().find(text) == []


def _plain_find(text: str, kinds: tuple[str, ...] = RegexPIIDetector().kinds) -> list[pii.PIIMatch]:
    """The detector as each pattern run over the whole text (what the one-pass scan must equal)."""
    found: list[pii.PIIMatch] = []
    taken: list[tuple[int, int]] = []

    def add(kind: str, start: int, end: int) -> None:
        if kind in kinds and not any(s < end and start < e for s, e in taken):
            found.append(pii.PIIMatch(kind, start, end))
            taken.append((start, end))

    for m in pii._PRIVATE_KEY.finditer(text):
        add("private_key", m.start(), m.end())
    for m in pii._API_KEY.finditer(text):
        add("api_key", m.start(), m.end())
    for m in pii._EMAIL.finditer(text):
        add("email", m.start(), m.end())
    for m in pii._IBAN.finditer(text):
        if iban_valid(m.group()):
            add("iban", m.start(), m.end())
    for pattern in (pii._SSN, pii._NINO):
        for m in pattern.finditer(text):
            add("national_id", m.start(), m.end())
    for m in pii._SIN.finditer(text):
        if luhn_valid("".join(ch for ch in m.group() if ch.isdigit())):
            add("national_id", m.start(), m.end())
    for m in pii._CARD.finditer(text):
        digits = m.group().replace(" ", "").replace("-", "")
        if 13 <= len(digits) <= 19 and luhn_valid(digits):
            add("card", m.start(), m.end())
    for m in pii._PHONE.finditer(text):
        if 8 <= sum(ch.isdigit() for ch in m.group()) <= 15:
            add("phone", m.start(), m.end())
    return sorted(found, key=lambda x: (x.start, x.end, x.kind))


_SHAPES = [
    "4111 1111 1111 1111",
    "4111-1111-1111-1111",
    "4111111111111111",
    "4222222222222",  # 13 digits, Luhn-valid
    "4111 1111 1111 1111 7",
    "+44 20 7946 0958",
    "+1 (555) 123-4567",
    "(555) 123-4567",
    "555.123.4567",
    "123-45-6789",
    "123 45 6789",
    "046 454 286",
    "AB 12 34 56 C",
    "AB123456C",
    "DE89 3704 0044 0532 0130 00",
    "GB82WEST12345698765432",
    "bob@example.com",
    "sk-" + "a" * 22,
    "AKIAIOSFODNN7EXAMPLE",
    "-----BEGIN RSA PRIVATE KEY-----",
    "\u0664\u0661\u0661\u0661",  # Arabic-Indic digits: \d matches them
]
_digit_texts = st.lists(
    st.tuples(
        st.one_of(st.sampled_from(_SHAPES), st.text(alphabet="0123456789 -.()+@ABCDGWZaé\u0663\n", max_size=14)),
        st.sampled_from(["", " ", " ", "\n", "-", "a"]),  # what follows: often a space, sometimes adjacent
    ),
    max_size=20,
).map(lambda parts: "".join(piece + sep for piece, sep in parts))


@given(_digit_texts, st.sampled_from([RegexPIIDetector().kinds, ("card",), ("national_id", "phone"), ("email",)]))
def test_the_one_pass_scan_equals_each_pattern_over_the_whole_text(text: str, kinds: tuple[str, ...]) -> None:
    """Trying the digit patterns only where a digit run lets them start finds exactly what whole-text scans find."""
    assert RegexPIIDetector(kinds=kinds).find(text) == _plain_find(text, kinds)
