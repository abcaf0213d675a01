"""The default PII detector: verified cards and IBANs, e-mail, phones, keys."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core.compiler import PIIDetector, RegexPIIDetector, pii
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


def test_every_key_prefix_is_filed_under_a_character_it_holds() -> None:
    filed = [(char, mark) for char, marks in pii._KEY_MARKS_BY_CHAR.items() for mark in marks]
    assert sorted(mark for _, mark in filed) == sorted(pii._KEY_MARKS)
    assert all(char in mark for char, mark in filed)


@given(_texts)
def test_the_batch_prescreen_equals_the_per_text_one(texts: list[str]) -> None:
    """One scan per mark over the joined texts flags exactly the texts the per-text screen flags."""
    assert pii._may_hold_pii_many(texts) == [pii._may_hold_pii(t) for t in texts]


@given(_texts)
def test_find_many_equals_find_per_text(texts: list[str]) -> None:
    detector = RegexPIIDetector()
    pii.clear_caches()
    many = detector.find_many(texts)
    pii.clear_caches()
    assert many == [detector.find(t) for t in texts]
    assert detector.find_many(texts) == many  # and again, from the memo


def test_a_subclass_with_its_own_find_is_asked_text_by_text() -> None:
    class Strict(RegexPIIDetector):
        def find(self, text: str) -> list[pii.PIIMatch]:
            return [pii.PIIMatch("custom", 0, 1)] if "secret" in text else []

    assert Strict().find_many(["a secret", "plain"] * 5) == [[pii.PIIMatch("custom", 0, 1)], []] * 5


@given(st.lists(_texts.map(" ".join), min_size=1, max_size=12), st.booleans())
def test_filter_gives_the_same_exclusions_with_and_without_the_batch(texts: list[str], authorized: bool) -> None:
    """Filter with the default detector (batched) excludes exactly what a detector asked text by text does."""

    class OneByOne:  # the same findings, without find_many
        def find(self, text: str) -> list[pii.PIIMatch]:
            return RegexPIIDetector().find(text)

    from tokenbox_core import CompilerConfig
    from tokenbox_core.compiler.collect import collect
    from tokenbox_core.compiler.filter import filter_candidates

    from .conftest import NOW, evidence

    sources = {
        "evidence": [evidence(f"e{i % 5}", t or "x", relevance=(i % 4) / 4) for i, t in enumerate(texts)],
        "task": {"objective": "o", "pii_authorized": authorized},
    }
    batched = filter_candidates(collect(sources), CompilerConfig(clock=NOW, evidence_threshold=0.3), NOW)
    single = filter_candidates(
        collect(sources), CompilerConfig(clock=NOW, evidence_threshold=0.3, pii_detector=OneByOne()), NOW
    )
    assert batched == single


def test_find_many_scans_and_counts_a_repeated_text_once() -> None:
    pii.clear_caches()
    text = "Write to ana@example.com or call +44 20 7946 0958."
    found = RegexPIIDetector().find_many([text, "nothing here", text])
    assert found[0] == found[2] and [m.kind for m in found[0]] == ["email", "phone"]
    assert pii._FOUND_HELD[0] == len(text) + len("nothing here")
