"""Image sizes and audio durations from headers only (issue 14 §2): bytes, base64 strings, data URLs.

PNG, JPEG, GIF and WebP sizes are read from their headers without decoding a
pixel; base64 input is decoded only as far as the header needs.  Other
formats fall back to Pillow (optional extra ``tokenbox-context[images]``),
which also reads headers lazily.  WAV durations come from the RIFF header.
A remote URL is never fetched here (see :mod:`tokenbox_core.media._parts`).
"""

from __future__ import annotations

import base64
import binascii
import io
import re
import struct

from tokenbox_core.errors import MediaError

__all__ = ["decode_data", "image_size", "is_remote", "wav_seconds"]

_DATA_URL = re.compile(r"^data:(?P<mime>[\w.+-]+/[\w.+-]+)?(?P<params>(?:;[^,;]*)*?)(?P<b64>;base64)?,", re.I)
_JPEG_SOF = frozenset({0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF})


def is_remote(ref: str) -> bool:
    """True for references TokenBox will not read: http(s)/gs/s3 URLs and provider file ids."""
    lowered = ref[:16].lower()
    return lowered.startswith(("http://", "https://", "gs://", "s3://", "file-", "file_"))


def _b64_prefix(text: str, n_bytes: int) -> bytes:
    chars = ((n_bytes + 2) // 3) * 4
    chunk = re.sub(r"\s+", "", text[: chars + chars // 32 + 64])[:chars]
    chunk = chunk[: len(chunk) - len(chunk) % 4]
    try:
        return base64.b64decode(chunk, validate=False)
    except (binascii.Error, ValueError) as exc:
        raise MediaError(f"image data is not valid base64 ({exc})") from exc


def decode_data(data: bytes | str, n_bytes: int | None = None) -> tuple[bytes, str | None]:
    """The bytes (at least the first ``n_bytes``) of raw bytes, a base64 string or a data URL, and its MIME type."""
    if isinstance(data, bytes | bytearray | memoryview):
        return bytes(data), None
    if not isinstance(data, str):
        raise MediaError(f"expected image bytes, a base64 string or a data URL, got {type(data).__name__}")
    mime = None
    match = _DATA_URL.match(data)
    if match:
        mime = (match.group("mime") or "").lower() or None
        payload = data[match.end() :]
        if not match.group("b64"):
            raise MediaError("only base64 data URLs are supported (data:<mime>;base64,...)")
        data = payload
    elif is_remote(data):
        raise MediaError(f"{data[:60]!r} is a remote reference; TokenBox never fetches it (see remote_images)")
    if n_bytes is None:
        return _b64_prefix(data, len(data)), mime
    return _b64_prefix(data, n_bytes), mime


def _png(head: bytes) -> tuple[int, int] | None:
    if head[:8] == b"\x89PNG\r\n\x1a\n" and len(head) >= 24 and head[12:16] == b"IHDR":
        w, h = struct.unpack(">II", head[16:24])
        return int(w), int(h)
    return None


def _gif(head: bytes) -> tuple[int, int] | None:
    if head[:6] in (b"GIF87a", b"GIF89a") and len(head) >= 10:
        w, h = struct.unpack("<HH", head[6:10])
        return int(w), int(h)
    return None


def _webp(head: bytes) -> tuple[int, int] | None:
    if head[:4] != b"RIFF" or head[8:12] != b"WEBP" or len(head) < 30:
        return None
    chunk = head[12:16]
    if chunk == b"VP8 " and head[23:26] == b"\x9d\x01\x2a":
        w, h = struct.unpack("<HH", head[26:30])
        return int(w & 0x3FFF), int(h & 0x3FFF)
    if chunk == b"VP8L" and head[20] == 0x2F:
        bits = int.from_bytes(head[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X":
        return int.from_bytes(head[24:27], "little") + 1, int.from_bytes(head[27:30], "little") + 1
    return None


def _jpeg(data: bytes) -> tuple[int, int] | bool | None:
    """The size from the first SOF marker; ``False`` when more bytes are needed."""
    if data[:2] != b"\xff\xd8":
        return None
    i = 2
    while i + 4 <= len(data):
        if data[i] != 0xFF:
            i += 1
            continue
        marker = data[i + 1]
        if marker == 0xFF:
            i += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            i += 2
            continue
        length = struct.unpack(">H", data[i + 2 : i + 4])[0]
        if marker in _JPEG_SOF:
            if i + 9 > len(data):
                return False
            h, w = struct.unpack(">HH", data[i + 5 : i + 9])
            return int(w), int(h)
        i += 2 + length
    return False


def _from_header(head: bytes) -> tuple[int, int] | bool | None:
    for reader in (_png, _gif, _webp):
        size = reader(head)
        if size is not None:
            return size
    return _jpeg(head)


def _pillow_size(data: bytes) -> tuple[int, int]:
    try:
        from PIL import Image
    except ImportError as exc:
        raise MediaError(
            "this image format is not PNG, JPEG, GIF or WebP; reading its size needs the images extra: "
            'pip install "tokenbox-context[images]"'
        ) from exc
    try:
        with Image.open(io.BytesIO(data)) as image:  # reads the header only
            return int(image.width), int(image.height)
    except Exception as exc:  # Pillow's UnidentifiedImageError and friends
        raise MediaError(corrupt_image(data)) from exc


_MAGIC = ((b"\x89PNG", "PNG"), (b"\xff\xd8", "JPEG"), (b"GIF8", "GIF"), (b"RIFF", "WebP"), (b"BM", "BMP"))


def corrupt_image(data: bytes) -> str:
    """The message for image bytes whose size cannot be read: which format the header claims and the fixes."""
    if not data:
        return (
            "the image data is empty (0 bytes after decoding); check the data URL or base64 string, or give the "
            "image's width and height"
        )
    kind = next((name for magic, name in _MAGIC if data.startswith(magic)), None)
    what = f"a {kind} header that is truncated or corrupt" if kind else "no known image header (PNG, JPEG, GIF, WebP)"
    return (
        f"cannot read an image size from these {len(data):,} bytes: {what}; send the complete image file, or give "
        f"the image's width and height"
    )


def image_size(data: bytes | str) -> tuple[int, int]:
    """``(width, height)`` of an image given as bytes, a base64 string or a data URL, from its header.

    >>> import base64, struct
    >>> png = b"\\x89PNG\\r\\n\\x1a\\n" + b"\\x00\\x00\\x00\\rIHDR" + struct.pack(">II", 1024, 768)
    >>> image_size(png), image_size("data:image/png;base64," + base64.b64encode(png).decode())
    ((1024, 768), (1024, 768))
    """
    for n_bytes in (4_096, 262_144, None):
        head, _ = decode_data(data, n_bytes)
        size = _from_header(head)
        if isinstance(size, tuple):
            if size[0] <= 0 or size[1] <= 0:
                kind = next((name for magic, name in _MAGIC if head.startswith(magic)), "image")
                raise MediaError(
                    f"the {kind} header gives an empty size {size[0]}x{size[1]}; the file is corrupt — send the "
                    f"complete image, or give its width and height"
                )
            return size
        if size is None:
            break  # not one of the four formats: let Pillow try
        if n_bytes is not None and len(head) < n_bytes:
            break  # the whole input was read and the JPEG has no frame header
    full, _ = decode_data(data)
    return _pillow_size(full)


def wav_seconds(data: bytes | str) -> float | None:
    """The duration of a WAV (RIFF/WAVE PCM) clip from its header, or ``None`` for other formats."""
    head, _ = decode_data(data, 4_096)
    if head[:4] != b"RIFF" or head[8:12] != b"WAVE":
        return None
    total, _ = decode_data(data)
    i, byte_rate = 12, 0
    while i + 8 <= len(total):
        chunk, size = total[i : i + 4], struct.unpack("<I", total[i + 4 : i + 8])[0]
        if chunk == b"fmt " and i + 20 <= len(total):
            byte_rate = struct.unpack("<I", total[i + 16 : i + 20])[0]
        elif chunk == b"data":
            if not byte_rate:
                return None
            return float(min(int(size), len(total) - i - 8) / int(byte_rate))
        i += 8 + size + (size & 1)
    return None
