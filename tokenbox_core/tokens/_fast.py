"""A fast exact BPE counter (the ``fast`` extra), serving an encoding only where it was proven identical to tiktoken.

Counting with tiktoken builds a list of token ids only to take its length.
``rs-bpe`` (Rust bindings to a linear-time BPE for OpenAI's encodings, with
the vocabularies compiled in, so it loads offline) counts without building
ids, about 0.4–0.6× tiktoken's time here, and answers *count up to a limit*
("does this 50k-token document fit in 8k?") after reading only about as much
text as the limit covers (``benchmarks/bench_layout.py`` times layouts with and without it).

Exactness is a rule (``docs/concepts.md#units-and-counters``): a faster counter may serve an encoding
only if it counts exactly as tiktoken does.  :data:`VERIFIED_ENCODINGS` lists
the encodings a property test (``tests/core/test_fast_counter.py``) compares
with tiktoken's ``encode_ordinary`` on generated adversarial text (whitespace
runs, CJK, emoji, code, random Unicode, long runs); :class:`FastBpeCounter`
refuses any other encoding, and :func:`tiktoken_counter` falls back to
:class:`~tokenbox_core.tokens._tiktoken_counter.TiktokenCounter` when the extra
is missing, the encoding is not verified, or ``TOKENBOX_FAST=0``.

Cutting still encodes and decodes with tiktoken (ids, not just counts, are
needed there), so the fast counter loads the tiktoken encoding too, offline.
"""

from __future__ import annotations

import os
from typing import Any, Protocol

from tokenbox_core.errors import TokenizerUnavailable
from tokenbox_core.tokens._base import TokenCounter, _checked, validate_text
from tokenbox_core.tokens._cache import COUNT_CACHE
from tokenbox_core.tokens._cut import pieces
from tokenbox_core.tokens._tiktoken_counter import TiktokenCounter

__all__ = ["FAST_BACKEND", "VERIFIED_ENCODINGS", "FastBpeCounter", "count_up_to", "fast_available", "tiktoken_counter"]

FAST_BACKEND = "rs-bpe"
_PIECES_ABOVE = 1 << 17
"""Longer texts are counted in pieces (:func:`tokenbox_core.tokens._cut.pieces`)."""
"""The library behind :class:`FastBpeCounter` (chosen over ``bpe-openai``: as exact, faster on o200k, loads faster)."""

VERIFIED_ENCODINGS = frozenset({"cl100k_base", "o200k_base"})
"""Encodings whose fast counts the property tests prove identical to tiktoken's; no other is served."""

_INSTALL = 'pip install "tokenbox-context[fast]"'


class _FastTokenizer(Protocol):
    def count(self, text: str) -> int: ...

    def count_till_limit(self, text: str, token_limit: int) -> int | None: ...


def _load_fast(encoding: str) -> _FastTokenizer:
    try:
        from rs_bpe.bpe import openai
    except ImportError as exc:
        raise TokenizerUnavailable(
            f"the fast counter needs the optional extra 'fast' ({FAST_BACKEND} is not installed): {_INSTALL}; "
            f"without it tiktoken counts the same tokens, more slowly"
        ) from exc
    factory: Any = getattr(openai, encoding)
    tokenizer: _FastTokenizer = factory()
    return tokenizer


def fast_available() -> bool:
    """Whether the ``fast`` extra is installed and not disabled by ``TOKENBOX_FAST=0``."""
    if os.environ.get("TOKENBOX_FAST", "1").strip().lower() in ("0", "false", "no", "off"):
        return False
    try:
        import rs_bpe.bpe  # noqa: F401
    except ImportError:
        return False
    return True


class FastBpeCounter(TiktokenCounter):
    """Exact tiktoken counts for a verified encoding, computed by ``rs-bpe`` without building token ids.

    Counts share tiktoken's cache entries (they are the same numbers), the
    counter's ``name`` is the encoding's, so layouts, fingerprints and traces
    are identical whichever counter served them; :attr:`backend` says which.
    Cuts use tiktoken's ids (see :class:`TiktokenCounter`).

    Raises:
        TokenizerUnavailable: for an encoding not in :data:`VERIFIED_ENCODINGS`,
            or when the ``fast`` extra is not installed (the message names it).
    """

    backend = FAST_BACKEND

    def __init__(self, encoding: str) -> None:
        if encoding not in VERIFIED_ENCODINGS:
            raise TokenizerUnavailable(
                f"the fast counter is not verified on {encoding!r} "
                f"(verified: {', '.join(sorted(VERIFIED_ENCODINGS))}); "
                f"use TiktokenCounter({encoding!r}) or get_counter({encoding!r}), which falls back to tiktoken"
            )
        self._fast = _load_fast(encoding)
        super().__init__(encoding)

    def _raw_count(self, text: str) -> int:
        if len(text) > _PIECES_ABOVE:  # piece by piece: the UTF-8 copies CPython makes are a piece's size
            return sum(map(self._fast.count, pieces(text)))
        return self._fast.count(text)

    def count_up_to(self, text: str, limit: int) -> int | None:
        """The exact count of ``text`` if it is at most ``limit``, else None, reading only what it must.

        A text over the limit is not read past the point where the limit is
        exceeded; an exact answer is memoised like any count.
        """
        key = COUNT_CACHE.key(self._cache_key, text)
        cached = COUNT_CACHE.get(key)
        if cached is not None:
            return cached if cached <= limit else None
        validate_text(text)
        if limit < 0:
            return None
        value = self._fast.count_till_limit(text, int(limit))
        if value is None:
            return None
        checked = _checked(value, self.name)
        COUNT_CACHE.put(key, checked)
        return checked


def tiktoken_counter(encoding: str) -> TiktokenCounter:
    """The counter ``get_counter`` uses for a tiktoken encoding: the fast one where it is proven, else tiktoken."""
    if encoding in VERIFIED_ENCODINGS and fast_available():
        return FastBpeCounter(encoding)
    return TiktokenCounter(encoding)


def count_up_to(counter: TokenCounter, text: str, limit: int) -> int | None:
    """``counter.count(text)`` if it is at most ``limit``, else None, for any counter.

    Decisions that only need to know whether a text fits (claims, boundary
    checks, horizons) use this: a counter with a native ``count_up_to`` (the
    fast counter) stops reading once the limit is passed; others count fully.

    >>> from tokenbox_core.tokens import get_counter
    >>> count_up_to(get_counter("whitespace"), "one two three", 5), count_up_to(get_counter("whitespace"), "a b c", 2)
    (3, None)
    """
    native = getattr(counter, "count_up_to", None)
    if native is not None:
        value: int | None = native(text, limit)
        return value
    full = _checked(counter.count(text), getattr(counter, "name", "counter"))
    return full if full <= limit else None
