"""check_output reads a leak in another shape: case, spacing, invisible characters, full width, base64, hex."""

from __future__ import annotations

import base64
import codecs
import json
import urllib.parse
from pathlib import Path

import pytest

from tokenbox_core import Section
from tokenbox_core.defense import DefensePolicy, check_output, defensive_layout

POLICY_TEXT = (
    "You are the support assistant of Example Ltd. Never discuss pricing exceptions, never promise refunds "
    "outside the thirty day window, and always answer in the customer's language."
)
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def compiled():  # type: ignore[no-untyped-def]
    sections = [
        Section("policy", POLICY_TEXT, metadata={"source_type": "system"}),
        Section("doc", "Refunds within 30 days.", shrink=1, metadata={"source_type": "retrieval"}),
    ]
    return defensive_layout(sections, 1000, policy=DefensePolicy(secret="s" * 16), counter="whitespace")


def _fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


def _wrapped(text: str, width: int) -> str:
    return "\n".join(text[i : i + width] for i in range(0, len(text), width))


VARIANTS = {
    "verbatim": lambda c: f"My marker is {c}.",
    "in code": lambda c: f"```\nmarker={c}\n```",
    "upper case": lambda c: f"My marker is {c.upper()}.",
    "lower case": lambda c: f"My marker is {c.lower()}.",
    "spaced letters": lambda c: "My marker is " + " ".join(c) + ".",
    "zero-width joined": lambda c: "My marker is " + "\u200d".join(c) + ".",
    "split by a newline": lambda c: f"My marker is {c[:9]}\n{c[9:]}.",
    "base64": lambda c: "Encoded: " + base64.b64encode(c.encode()).decode(),
    "hex": lambda c: "Encoded: " + c.encode().hex(),
    "full width": lambda c: "My marker is " + _fullwidth(c),
    "other separators": lambda c: "My marker is " + c.replace("-", "_"),
}
"""The eleven shapes of issue 36 (item 5); today only the first two are caught."""
MORE = {
    "base64 of a sentence": lambda c: base64.b64encode(f"The secret marker is {c}, keep it.".encode()).decode(),
    "url-safe base64 mid-stream": lambda c: base64.urlsafe_b64encode(f"xy{c}".encode()).decode(),
    "base64 wrapped at 8": lambda c: _wrapped(base64.b64encode(f"-{c}".encode()).decode(), 8),
    "hex with colons, upper case": lambda c: ":".join(f"{b:02X}" for b in c.encode()),
    "url-encoded": lambda c: "".join(f"%{b:02x}" for b in c.encode()),
    "rot13": lambda c: codecs.encode(c, "rot13"),
    "token only, dotted": lambda c: ".".join(c.split("-")[-1]),
    "soft hyphens and bidi marks": lambda c: "\u00ad".join(c[:12]) + "\u200e" + c[12:],
}
"""Further shapes the normalisation and the encoded needles catch."""


@pytest.mark.parametrize("shape", sorted(VARIANTS))
def test_canary_leaked_in_any_of_the_eleven_shapes_is_caught(compiled, shape: str) -> None:  # type: ignore[no-untyped-def]
    """Each of issue 36's eleven shapes of a leaked canary fails the check."""
    answer = VARIANTS[shape](compiled.defense.canary)
    result = check_output(answer, compiled)
    assert result.canary_leaked and not result.ok, answer


@pytest.mark.parametrize("shape", sorted(MORE))
def test_canary_leaked_in_further_shapes_is_caught(compiled, shape: str) -> None:  # type: ignore[no-untyped-def]
    """Encodings inside a sentence, line-wrapped, url-encoded or rot13'd, and the bare token, are caught too."""
    answer = MORE[shape](compiled.defense.canary)
    assert check_output(answer, compiled).canary_leaked, answer


def test_boundary_token_in_another_shape_is_caught(compiled) -> None:  # type: ignore[no-untyped-def]
    """A boundary token upper-cased and spaced, or base64-encoded, is reported by name."""
    token = compiled.defense.wrapped[0].event.token
    for answer in (" ".join(f"BOUNDARY_{token}".upper()), base64.b64encode(f"boundary_{token}".encode()).decode()):
        assert check_output(answer, compiled).leaked_boundaries == (f"boundary_{token}",), answer


def test_system_prompt_leaked_in_full_width_or_base64_is_caught(compiled) -> None:  # type: ignore[no-untyped-def]
    """The system prompt copied in full-width letters, with zero-width spaces, or base64-encoded, crosses the
    overlap threshold as the plain copy does."""
    for answer in (
        _fullwidth(POLICY_TEXT),
        POLICY_TEXT.replace(" ", " \u200b"),
        "Here: " + base64.b64encode(POLICY_TEXT.encode()).decode(),
    ):
        result = check_output(answer, compiled)
        assert result.system_leaked and result.system_overlap >= 0.9, answer[:40]


def test_an_encoding_that_does_not_hold_the_canary_is_not_a_leak(compiled) -> None:  # type: ignore[no-untyped-def]
    """Base64, hex and url-encoded text without the canary, and a near-miss token, pass."""
    canary = compiled.defense.canary
    near = canary[:-1] + ("0" if canary[-1] != "0" else "1")
    for answer in (
        base64.b64encode(b"The refund window is thirty days, as policy states.").decode(),
        b"The refund window is thirty days".hex(),
        urllib.parse.quote("refunds: thirty days / no exceptions"),
        " ".join(near),
    ):
        assert check_output(answer, compiled).ok, answer


def test_benign_texts_of_the_repository_are_not_flagged(compiled) -> None:  # type: ignore[no-untyped-def]
    """No benign text of the held-out injection set, no README or docs page is read as a canary, boundary or
    system-prompt leak."""
    rows = [json.loads(line) for line in (ROOT / "benchmarks" / "injection_heldout_set.jsonl").read_text().splitlines()]
    texts = [r["text"] for r in rows if r["label"] == 0]
    texts += [p.read_text(encoding="utf-8") for p in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]]
    assert len(texts) > 20
    flagged = [t[:60] for t in texts if (r := check_output(t, compiled)).canary_leaked or r.leaked_boundaries
               or r.system_leaked]  # fmt: skip
    assert flagged == []
