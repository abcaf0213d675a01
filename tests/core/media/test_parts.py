"""Image sizes from headers and media parts in chat messages (issue 14 §2)."""

from __future__ import annotations

import base64
import io
import struct
import wave

import pytest

from tokenbox_core import count_message_tokens, get_counter
from tokenbox_core.errors import MediaError
from tokenbox_core.media import image_size, image_tokens, remote_images, wav_seconds

PIL = pytest.importorskip("PIL.Image")


def _image_bytes(size: tuple[int, int], fmt: str) -> bytes:
    buf = io.BytesIO()
    PIL.new("RGB", size, (10, 120, 200)).save(buf, fmt)
    return buf.getvalue()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "GIF", "WEBP"])
def test_image_size_reads_headers_of_bytes_base64_and_data_urls(fmt: str) -> None:
    """PNG, JPEG, GIF and WebP sizes come from the header, whatever the wrapping."""
    data = _image_bytes((321, 123), fmt)
    mime = f"image/{fmt.lower()}"
    assert image_size(data) == (321, 123)
    assert image_size(_b64(data)) == (321, 123)
    assert image_size(f"data:{mime};base64,{_b64(data)}") == (321, 123)


def test_webp_lossless_and_extended_headers() -> None:
    """WebP VP8L (lossless) and VP8X (extended) headers are read too."""
    buf = io.BytesIO()
    PIL.new("RGBA", (77, 55), (0, 0, 0, 0)).save(buf, "WEBP", lossless=True)
    assert image_size(buf.getvalue()) == (77, 55)
    vp8x = b"RIFF" + struct.pack("<I", 30) + b"WEBPVP8X" + struct.pack("<I", 10) + b"\x00\x00\x00\x00"
    vp8x += (4999).to_bytes(3, "little") + (2999).to_bytes(3, "little")
    assert image_size(vp8x) == (5000, 3000)


def test_jpeg_with_a_large_exif_segment_before_the_frame_header() -> None:
    """A JPEG whose frame header comes after a big APP1 segment is still read without Pillow."""
    data = _image_bytes((640, 480), "JPEG")
    app1 = b"\xff\xe1" + struct.pack(">H", 60_002) + b"\x00" * 60_000
    big = data[:2] + app1 + data[2:]
    assert image_size(_b64(big)) == (640, 480)


def test_unreadable_images_are_clear_errors() -> None:
    """Garbage, truncated data and remote URLs give MediaError naming what to do."""
    with pytest.raises(MediaError, match="cannot read an image size"):
        image_size(b"definitely not an image")
    with pytest.raises(MediaError, match="never fetches"):
        image_size("https://example.com/cat.png")
    with pytest.raises(MediaError, match="only base64 data URLs"):
        image_size("data:image/png,rawbytes")


def _msg(*parts: dict) -> dict:
    return {"role": "user", "content": [{"type": "text", "text": "What is this?"}, *parts]}


def test_base64_image_part_costs_its_rule_not_its_json() -> None:
    """The bug quoted in issue 14: a base64 image part counted ~14,000 tokens of JSON; now 765 for 1024x1024."""
    data = _image_bytes((1024, 1024), "PNG")
    part = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{_b64(data)}", "detail": "high"}}
    text_only = count_message_tokens([_msg()], "gpt-4o")
    assert count_message_tokens([_msg(part)], "gpt-4o") == text_only + 765
    assert count_message_tokens([_msg(part)], "gpt-4o-2024-08-06") == text_only + 765
    claude = get_counter("claude-sonnet-4-5")
    assert count_message_tokens([_msg(part)], claude) == count_message_tokens([_msg()], claude) + 1399


def test_remote_image_policy_is_explicit() -> None:
    """An https image is never fetched: it costs the detail maximum, a given size, or raises — never 30."""
    part = {"type": "image_url", "image_url": {"url": "https://example.com/chart.png", "detail": "high"}}
    base = count_message_tokens([_msg()], "gpt-4o")
    assert count_message_tokens([_msg(part)], "gpt-4o") == base + 1445
    with remote_images((1024, 1024)):
        assert count_message_tokens([_msg(part)], "gpt-4o") == base + 765
    with remote_images("error"), pytest.raises(MediaError, match="never fetches"):
        count_message_tokens([_msg(part)], "gpt-4o")
    sized = {"type": "image_url", "image_url": {"url": "https://x/y.png", "width": 1024, "height": 1024}}
    assert count_message_tokens([_msg(sized)], "gpt-4o") == base + 765
    with pytest.raises(MediaError, match="'max', 'error' or"), remote_images("sometimes"):  # type: ignore[arg-type]
        pass


def test_provider_and_langchain_block_shapes() -> None:
    """Anthropic source blocks, LangChain v1 image/file blocks and v0 blocks all cost by the rule."""
    data = _b64(_image_bytes((1000, 1000), "PNG"))
    model = "claude-sonnet-4-5"
    counter = get_counter(model)
    base = count_message_tokens([_msg()], counter)
    blocks = [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}},
        {"type": "image", "base64": data, "mime_type": "image/png"},
        {"type": "image", "source_type": "base64", "data": data, "mime_type": "image/png"},
        {"type": "file", "base64": data, "mime_type": "image/png"},
        {"type": "input_image", "image_url": f"data:image/png;base64,{data}"},
    ]
    for block in blocks:
        assert count_message_tokens([_msg(block)], counter) == base + image_tokens(1000, 1000, model=model)
    pdf = {"type": "file", "base64": _b64(b"%PDF-1.4"), "mime_type": "application/pdf"}
    with pytest.raises(MediaError, match="no published token rule for application/pdf"):
        count_message_tokens([_msg(pdf)], counter)
    assert count_message_tokens([_msg(dict(pdf, tokens=1500))], counter) == base + 1500


def _wav(seconds: float) -> bytes:
    buf = io.BytesIO()
    with wave.open(buf, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(8000)
        out.writeframes(b"\x00\x00" * int(8000 * seconds))
    return buf.getvalue()


def test_audio_parts_cost_per_second() -> None:
    """A WAV clip's length comes from its header; Gemini bills 32 tokens a second."""
    clip = _b64(_wav(2.5))
    assert wav_seconds(clip) == pytest.approx(2.5)
    part = {"type": "input_audio", "input_audio": {"data": clip, "format": "wav"}}
    base = count_message_tokens([_msg()], "gemini-2.0-flash")
    assert count_message_tokens([_msg(part)], "gemini-2.0-flash") == base + 80
    with pytest.raises(MediaError, match="takes no audio input"):
        count_message_tokens([_msg(part)], "gpt-4o")
    mp3 = {"type": "audio", "base64": _b64(b"ID3\x03fake"), "mime_type": "audio/mpeg"}
    with pytest.raises(MediaError, match="add 'seconds'"):
        count_message_tokens([_msg(mp3)], "gemini-2.0-flash")
    assert count_message_tokens([_msg(dict(mp3, seconds=10))], "gemini-2.0-flash") == base + 320
