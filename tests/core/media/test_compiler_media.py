"""Modality sections in the prefill compiler (Algorithm 6.9 inside compile, chapter §6.12.4)."""

from __future__ import annotations

import io
from datetime import datetime, timezone

import pytest

from tokenbox_core import ContextBudget, count_message_tokens
from tokenbox_core.compiler import CompilerConfig, ContextCompiler, Evidence
from tokenbox_core.media import ModalityInput, image_tokens
from tokenbox_core.media._evidence import media_evidence

PIL = pytest.importorskip("PIL.Image")
WHEN = datetime(2025, 1, 15, 10, 30, tzinfo=timezone.utc)


def _png(size: tuple[int, int]) -> bytes:
    buf = io.BytesIO()
    PIL.new("RGB", size, (120, 120, 120)).save(buf, "PNG")
    return buf.getvalue()


def _passage(i: int, relevance: float) -> Evidence:
    return Evidence(
        f"doc-{i}",
        f"Quarterly note {i}: revenue moved by {i} percent. " * 4,
        source=f"s3://notes/{i}.md",
        retrieved_at=WHEN,
        authority=0.8,
        relevance=relevance,
    )


def test_an_image_competes_in_the_evidence_tier_and_is_sent_as_a_part() -> None:
    """The screenshot costs its image tokens in the allocation, is sent as an image part, and the compiled total
    (counted as sent) fits the budget."""
    shot = media_evidence(
        ModalityInput("1", "image", _png((1024, 1024)), caption="Dashboard, Q4", utility=0.95),
        source="screenshot://dashboard",
        retrieved_at=WHEN,
        model="gpt-4o",
    )
    assert shot.metadata["media_tokens"] == image_tokens(1024, 1024, model="gpt-4o") == 765
    compiler = ContextCompiler(ContextBudget(4_000, output_reserve=500), counter="gpt-4o", config=CompilerConfig())
    compiled = compiler.compile(
        policy="You answer from the evidence.",
        task={"objective": "explain the Q4 revenue drop"},
        evidence=[shot, _passage(1, 0.6), _passage(2, 0.4)],
        user="Why did Q4 revenue drop?",
    )
    parts = [p for m in compiled.messages if isinstance(m["content"], list) for p in m["content"]]
    assert [p["type"] for p in parts if p["type"] != "text"] == ["image_url"]
    assert "[EVIDENCE_IMG_1: Dashboard, Q4]" in compiled.text
    assert compiled.total_tokens == count_message_tokens(list(compiled.messages), "gpt-4o") <= 3_500


def test_a_tight_budget_drops_the_low_utility_image_before_the_passages() -> None:
    """Evicted lowest relevance first: a low-utility image goes before passages that are worth more."""
    shot = media_evidence(
        ModalityInput("9", "image", _png((2048, 2048)), caption="Decorative banner", utility=0.05),
        source="cdn://banner",
        retrieved_at=WHEN,
        model="gpt-4o",
    )
    compiler = ContextCompiler(ContextBudget(1_000, output_reserve=200), counter="gpt-4o")
    compiled = compiler.compile(
        policy="You answer from the evidence.",
        task={"objective": "summarise the notes"},
        evidence=[shot, _passage(1, 0.9), _passage(2, 0.8)],
        user="Summarise.",
    )
    assert "EVIDENCE_IMG_9" not in compiled.text
    assert all(isinstance(m["content"], str) for m in compiled.messages)
    assert compiled.total_tokens <= 800


def test_ocr_substitute_enters_as_text_evidence_with_its_reference() -> None:
    """An OCR substitute becomes text evidence carrying its typed cross-modal reference."""
    scan = media_evidence(
        ModalityInput("2", "image", _png((1700, 2200)), caption="Invoice", substitute=("Total due: $1,234", 0.97)),
        source="scanner://inbox/17",
        retrieved_at=WHEN,
        model="claude-sonnet-4-5",
    )
    assert scan.metadata["action"] == "substituted" and "media_part" not in scan.metadata
    assert scan.metadata["reference"]["method"] == "ocr"
    assert scan.metadata["reference"]["source"] == "EVIDENCE_IMG_2"
    assert scan.text.startswith('[EVIDENCE_TEXT_2_text: "Total due: $1,234" — extracted from EVIDENCE_IMG_2')
