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
