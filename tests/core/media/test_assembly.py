"""Multi-modal assembly (Algorithm 6.9) and typed cross-modal references (chapter §6.12.4-§6.12.5)."""

from __future__ import annotations

import io

import pytest

from tokenbox_core import count_message_tokens
from tokenbox_core.errors import MediaError
from tokenbox_core.media._assembly import ModalityInput, assemble_multimodal
from tokenbox_core.media._references import CrossModalReference, evidence_label, validate_references

PIL = pytest.importorskip("PIL.Image")


def _png(size: tuple[int, int]) -> bytes:
    buf = io.BytesIO()
    PIL.new("RGB", size, (200, 200, 200)).save(buf, "PNG")
    return buf.getvalue()


ROWS = [{"region": ["north", "south"][i % 2], "revenue": 1000 + 37 * i, "quarter": f"Q{i % 4 + 1}"} for i in range(60)]


def test_substitution_compression_and_one_budget() -> None:
    """OCR text replaces a document image when cheaper; a screenshot is downscaled; a table is rendered cheapest;
    the messages sent fit the budget, counted as providers count them."""
    inputs = [
        ModalityInput("1", "image", _png((2560, 1440)), caption="Screenshot of dashboard", utility=0.9),
        ModalityInput("2", "image", _png((1700, 2200)), caption="Scanned invoice", substitute=("Total: $1,234", 0.95)),
        ModalityInput("3", "structured", ROWS, caption="revenue by region", utility=0.7),
    ]
    ctx = assemble_multimodal(
        "Why did revenue drop?", inputs, 2_000, model="claude-sonnet-4-5", allocations={"image": 600, "structured": 150}
    )
    actions = {a.input.id: a.action for a in ctx.inputs}
    assert actions == {"1": "downscaled", "2": "substituted", "3": "sampled"}
    assert ctx.total_tokens <= 2_000
    assert count_message_tokens(list(ctx.messages), "claude-sonnet-4-5") == ctx.total_tokens
    (ref,) = ctx.references
    assert (ref.source, ref.source_modality, ref.method, ref.target_modality) == ("2", "image", "ocr", "text")
    texts = [p["text"] for p in ctx.messages[0]["content"] if p["type"] == "text"]
    assert '[EVIDENCE_TEXT_2_text: "Total: $1,234" — extracted from EVIDENCE_IMG_2 via OCR]' in texts
    assert texts[1] == "[EVIDENCE_IMG_1: Screenshot of dashboard]"
    assert "showing" in texts[-1] and "of 60 rows" in texts[-1]


def test_low_utility_inputs_are_evicted_first() -> None:
    """When everything cannot fit, the lowest-utility input is dropped and the rest keep their order."""
    inputs = [
        ModalityInput("a", "image", _png((1024, 1024)), utility=0.9),
        ModalityInput("b", "image", _png((1024, 1024)), utility=0.2),
        ModalityInput("c", "text", "The release shipped on Friday.", utility=0.5),
    ]
    ctx = assemble_multimodal("Summarise.", inputs, 1_000, model="gpt-4o")
    assert [a.action for a in ctx.inputs] == ["kept", "dropped", "kept"]
    assert ctx.total_tokens <= 1_000


def test_a_substitute_that_loses_too_much_utility_is_not_used() -> None:
    """Fidelity rule: low-confidence OCR keeps the image."""
    item = ModalityInput("1", "image", _png((512, 512)), substitute=lambda _: ("smudged text", 0.3))
    ctx = assemble_multimodal("Read it.", [item], 2_000, model="gpt-4o", fidelity=0.9)
    assert ctx.inputs[0].action == "kept" and ctx.references == ()


def test_audio_is_transcribed_when_cheaper() -> None:
    """A transcript substitutes 60 s of audio on Gemini (1,920 tokens) with a typed 'transcript' reference."""
    item = ModalityInput("1", "audio", b"", seconds=60, substitute="Customer asks for a refund.")
    ctx = assemble_multimodal("What does the caller want?", [item], 5_000, model="gemini-2.0-flash")
    assert ctx.inputs[0].action == "substituted" and ctx.references[0].method == "transcript"


def test_inputs_and_references_validate() -> None:
    """Bad inputs and references fail at construction with the reason."""
    with pytest.raises(MediaError, match="unique"):
        assemble_multimodal("t", [ModalityInput("x", "text", "a"), ModalityInput("x", "text", "b")], 100)
    with pytest.raises(MediaError, match="modality must be"):
        ModalityInput("x", "smell", "a")  # type: ignore[arg-type]
    with pytest.raises(MediaError, match="cannot link audio to text"):
        CrossModalReference("a", "b", "audio", "text", "ocr")
    with pytest.raises(MediaError, match="confidence must be"):
        CrossModalReference("a", "b", "image", "text", "ocr", 1.5)
    ref = CrossModalReference("IMG1", "T1", "image", "text", "ocr", 0.9)
    with pytest.raises(MediaError, match="not in the context"):
        validate_references([ref], {"IMG1": "image"})
    with pytest.raises(MediaError, match="evidence is audio"):
        validate_references([ref], {"IMG1": "audio", "T1": "text"})
    loop = [
        CrossModalReference("D", "E", "structured", "structured", "aggregate"),
        CrossModalReference("E", "D", "structured", "structured", "sample"),
    ]
    with pytest.raises(MediaError, match="cycle"):
        validate_references(loop, {"D": "structured", "E": "structured"})
    validate_references([ref], {"IMG1": "image", "T1": "text"})
    assert evidence_label("image", "1") == "EVIDENCE_IMG_1"


def test_audio_with_a_transcript_sends_the_transcript_to_a_model_without_audio_input() -> None:
    """Audio with a transcript on a model that takes no audio (Claude) sends the transcript, and says 'audio'."""
    import wave

    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(b"\0\0" * 8000)
    call = ModalityInput("a1", "audio", buffer.getvalue(), substitute="the caller asked for a refund")
    (planned,) = assemble_multimodal("Summarise the call", [call], 4000, model="claude-sonnet-4-5").inputs
    assert planned.action == "substituted" and "the caller asked for a refund" in planned.text
    assert "audio" in planned.reason and "image" not in planned.reason
    silent = ModalityInput("a2", "audio", buffer.getvalue())
    with pytest.raises(MediaError, match="takes no audio input"):  # without a transcript there is nothing to send
        assemble_multimodal("Summarise the call", [silent], 4000, model="claude-sonnet-4-5")
