"""LlamaIndex media blocks as OpenAI-shaped content parts the core can cost (duck typing).

LangChain messages already convert to OpenAI parts (``convert_to_openai_messages`` turns v1 ``image`` /
``audio`` blocks into ``image_url`` / ``input_audio`` parts).  LlamaIndex has no such converter in core:
:func:`media_part` maps its ``ImageBlock`` (``image`` base64 bytes, ``path``, ``url``, ``image_mimetype``,
``detail``) and ``AudioBlock`` (``audio``, ``path``, ``url``, ``format``) to those parts, reading a local
``path`` from disk and leaving a URL as a reference that the remote-image policy costs (never fetched).
``VideoBlock`` and ``DocumentBlock`` have no published per-provider rule here and return ``None``.
"""

from __future__ import annotations

import base64
import os
from typing import Any

__all__ = ["media_part"]


def _b64(raw: Any) -> str | None:
    """Base64 text of a block's payload (LlamaIndex keeps it base64-encoded already)."""
    if isinstance(raw, bytes | bytearray):
        text = bytes(raw).decode("ascii", "replace")
        try:
            base64.b64decode(text[:64] + "=" * (-len(text[:64]) % 4), validate=True)
            return text
        except ValueError:
            return base64.b64encode(bytes(raw)).decode("ascii")
    if isinstance(raw, str) and raw:
        return raw
    return None


def _payload(block: Any, field: str) -> str | None:
    data = _b64(getattr(block, field, None))
    if data is None:
        path = getattr(block, "path", None)
        if path and os.path.isfile(os.fspath(path)):
            with open(os.fspath(path), "rb") as handle:
                data = base64.b64encode(handle.read()).decode("ascii")
    return data


def media_part(block: Any) -> dict[str, Any] | None:
    """The OpenAI-shaped part for a LlamaIndex image or audio block, or ``None`` for other blocks."""
    kind = getattr(block, "block_type", None)
    if kind == "image":
        detail = getattr(block, "detail", None) or "auto"
        data = _payload(block, "image")
        if data is not None:
            mime = getattr(block, "image_mimetype", None) or "image/png"
            return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}", "detail": detail}}
        url = getattr(block, "url", None)
        return {"type": "image_url", "image_url": {"url": str(url) if url else "", "detail": detail}}
    if kind == "audio":
        data = _payload(block, "audio")
        fmt = getattr(block, "format", None) or "wav"
        if data is not None:
            return {"type": "input_audio", "input_audio": {"data": data, "format": fmt}}
        url = getattr(block, "url", None)
        return {"type": "input_audio", "input_audio": {"data": str(url) if url else "", "format": fmt}}
    return None
