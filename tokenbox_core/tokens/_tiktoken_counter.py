"""Exact token counts with a tiktoken encoding, and cuts at token boundaries (:mod:`._cut`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tokenbox_core.tokens._base import Keep, validate_text
from tokenbox_core.tokens._counters import _CachedCounter
from tokenbox_core.tokens._cut import cut, encode
from tokenbox_core.tokens._encodings import _load_encoding

if TYPE_CHECKING:
    import tiktoken

__all__ = ["TiktokenCounter"]

_IDS_ARRAY_ABOVE = 100_000
"""Longer texts are counted from a numpy array of ids (4 bytes a token) rather than a list (~36 bytes a token)."""


class TiktokenCounter(_CachedCounter):
    """Exact token counts with a tiktoken encoding (special tokens are counted as plain text)."""

    def __init__(self, encoding: str | tiktoken.Encoding) -> None:
        if isinstance(encoding, str):
            encoding = _load_encoding(encoding)
        self.encoding = encoding
        self.name = encoding.name
        super().__init__()
        self._cache_key = f"tiktoken:{encoding.name}"  # shared by every instance of one encoding

    def _raw_count(self, text: str) -> int:
        if len(text) > _IDS_ARRAY_ABOVE:
            return len(encode(self, text))  # a rule encoding's long text: piece by piece
        return len(self.encoding.encode_ordinary(text))

    def encode(self, text: str) -> list[int]:
        validate_text(text)
        return self.encoding.encode_ordinary(text)

    def truncate(self, text: str, limit: int, *, keep: Keep = "head") -> str:
        return cut(self, text, limit, keep)  # the count cache's key of the text rejects what is not text
