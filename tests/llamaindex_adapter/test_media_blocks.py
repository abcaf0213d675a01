"""Framework media blocks reach the core as OpenAI-shaped parts costed by the model's rules (issue 14 §2)."""

from __future__ import annotations

import base64
import io
import wave
from pathlib import Path

import pytest

from tokenbox_core import count_message_tokens
from tokenbox_core.media import image_tokens, remote_images
from tokenbox_llamaindex._media import media_part

PIL = pytest.importorskip("PIL.Image")


def _png(size: tuple[int, int]) -> bytes:
    buf = io.BytesIO()
    PIL.new("RGB", size, (1, 2, 3)).save(buf, "PNG")
    return buf.getvalue()


def _cost(part: dict, model: str) -> int:
    empty = count_message_tokens([{"role": "user", "content": []}], model)
    return count_message_tokens([{"role": "user", "content": [part]}], model) - empty


def test_llamaindex_image_blocks_cost_by_the_rule(tmp_path: Path) -> None:
    """ImageBlock from bytes or a local path costs the image rule, not LlamaIndex's flat 256."""
    from llama_index.core.base.llms.types import AudioBlock, DocumentBlock, ImageBlock

    data = _png((1024, 1024))
    from_bytes = media_part(ImageBlock(image=data, detail="high"))
    assert from_bytes is not None and _cost(from_bytes, "gpt-4o") == 765
    path = tmp_path / "shot.png"
    path.write_bytes(data)
    from_path = media_part(ImageBlock(path=path))
    assert from_path is not None and _cost(from_path, "claude-sonnet-4-5") == image_tokens(
        1024, 1024, model="claude-sonnet-4-5"
    )
    from_url = media_part(ImageBlock(url="https://example.com/x.png", detail="low"))
    assert from_url is not None and _cost(from_url, "gpt-4o") == 85  # remote, low detail: never fetched
    buf = io.BytesIO()
    with wave.open(buf, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(8000)
        out.writeframes(b"\x00\x00" * 8000 * 3)
    audio = media_part(AudioBlock(audio=buf.getvalue(), format="wav"))
    assert audio is not None and _cost(audio, "gemini-2.0-flash") == 96
    assert media_part(DocumentBlock(data=b"%PDF-1.4", document_mimetype="application/pdf")) is None


def test_langchain_v1_blocks_through_the_openai_converter() -> None:
    """LangChain's standard image blocks, converted as the chat adapter converts them, cost by the rule."""
    from langchain_core.messages import HumanMessage, convert_to_openai_messages

    data = base64.b64encode(_png((2048, 4096))).decode()
    message = HumanMessage(
        content=[
            {"type": "text", "text": "Describe."},
            {"type": "image", "base64": data, "mime_type": "image/png"},
            {"type": "image", "url": "https://example.com/remote.png"},
        ]
    )
    converted = convert_to_openai_messages([message])
    text_only = count_message_tokens([{"role": "user", "content": "Describe."}], "gpt-4o")
    with remote_images((1024, 1024)):
        assert count_message_tokens(converted, "gpt-4o") == text_only + 1105 + 765


def test_a_bare_media_placeholder_follows_the_remote_policy() -> None:
    """A placeholder part with no data is costed like a remote image, not as JSON text."""
    assert _cost({"type": "image"}, "gpt-4o") == 1445
    with remote_images((512, 512)):
        assert _cost({"type": "image"}, "gpt-4o") == 255
