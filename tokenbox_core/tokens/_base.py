"""The ``TokenCounter`` protocol and the checks every counter shares (valid text in, non-negative counts out)."""

from __future__ import annotations

import hashlib
from typing import Literal, Protocol, runtime_checkable

from tokenbox_core.errors import CounterError, InvalidTextError

__all__ = ["Keep", "TokenCounter", "validate_text"]

Keep = Literal["head", "tail", "middle"]
"""Which part of a text survives a cut: its head, its tail, or both ends (``middle`` cuts the middle)."""


@runtime_checkable
class TokenCounter(Protocol):
    """What the engine needs from a counter.

    ``count`` returns a non-negative int; ``truncate`` returns a version of the
    text that counts at most ``limit`` units and keeps the requested part.
    """

    name: str

    def count(self, text: str) -> int: ...

    def truncate(self, text: str, limit: int, *, keep: Keep = "head") -> str: ...


_DIGEST_CHUNK = 1 << 16
"""Characters encoded at a time for a digest, so a long text is never copied whole."""


def _digest(text: str) -> bytes:
    """A digest of ``text`` (sha256, which CPUs accelerate: twice blake2b's speed on a long text); also rejects
    text that is not valid Unicode."""
    if not isinstance(text, str) or len(text) <= _DIGEST_CHUNK:
        return hashlib.sha256(_utf8(text)).digest()
    digest = hashlib.sha256()
    for start in range(0, len(text), _DIGEST_CHUNK):
        digest.update(_utf8(text[start : start + _DIGEST_CHUNK], start))
    return digest.digest()


def _utf8(text: str, offset: int = 0) -> bytes:
    """UTF-8 bytes of ``text`` (a part of a longer text starting at ``offset``), or a clear error for non-text and
    lone surrogates."""
    if not isinstance(text, str):
        raise InvalidTextError(f"expected text (str) but got {type(text).__name__}: convert it to str first")
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidTextError(
            f"text contains a lone surrogate at index {offset + exc.start} ({text[exc.start]!r}) and is not valid "
            f"Unicode; decode your input with errors='replace' or remove the surrogate"
        ) from exc


def validate_text(text: str) -> None:
    """Raise InvalidTextError unless ``text`` is a str of valid Unicode (no lone surrogates)."""
    if not isinstance(text, str) or not text.isascii():
        _utf8(text)


def _checked(value: object, counter: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, list | tuple):
            return len(value)
        raise CounterError(
            f"counter {counter!r} returned {value!r} ({type(value).__name__}); a counter must return a "
            f"non-negative int or a list of token ids"
        )
    if value < 0:
        raise CounterError(f"counter {counter!r} returned a negative count ({value}); counts must be >= 0")
    return value
