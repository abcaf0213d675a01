"""The default PII detector: verified cards and IBANs, e-mail, phones, keys."""

from __future__ import annotations

import pytest

from tokenbox_core.compiler import PIIDetector, RegexPIIDetector
from tokenbox_core.compiler.pii import iban_valid, luhn_valid


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


def test_findings_are_remembered_per_text_and_the_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """A second look at the same text gives the same findings (a fresh list); the memo empties past its bound."""
    from tokenbox_core.compiler import pii

    detector = RegexPIIDetector()
    text = "write to bob@example.com"
    first = detector.find(text)
    first.clear()
    assert [m.kind for m in detector.find(text)] == ["email"]
    assert RegexPIIDetector(kinds=("phone",)).find(text) == []  # the kinds are part of the key
    monkeypatch.setattr(pii, "_FOUND_CHARS", 50)
    for n in range(10):
        detector.find(f"plain text number {n}")
    assert pii._FOUND_HELD[0] <= 50 and len(pii._FOUND) <= 3
