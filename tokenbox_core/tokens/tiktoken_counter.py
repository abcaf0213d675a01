"""Exact token counts with a tiktoken encoding, with exact counts of joined texts and clean cuts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tokenbox_core.tokens.base import Keep, validate_text
from tokenbox_core.tokens.counters import _CachedCounter
from tokenbox_core.tokens.encodings import _load_encoding
from tokenbox_core.tokens.fast_cut import encode_ids, truncate_once
from tokenbox_core.tokens.neutral import NEUTRAL_ENCODINGS, tiktoken_neutral_join

if TYPE_CHECKING:
    import tiktoken

__all__ = ["TiktokenCounter"]

_BUFFER_ABOVE = 100_000


class TiktokenCounter(_CachedCounter):
    """Exact token counts with a tiktoken encoding (special tokens are counted as plain text)."""

    def __init__(self, encoding: str | tiktoken.Encoding) -> None:
        if isinstance(encoding, str):
            encoding = _load_encoding(encoding)
        self.encoding = encoding
        self.name = encoding.name
        super().__init__()
        self._cache_key = f"tiktoken:{encoding.name}"  # shared by every instance of one encoding
        self._neutral = encoding.name in NEUTRAL_ENCODINGS  # it has the positions of tokens/neutral.py

    def _raw_count(self, text: str) -> int:
        if len(text) > _BUFFER_ABOVE:  # issue 16: tiktoken's buffer API, 4 bytes a token instead of a list
            return len(encode_ids(self, text))
        return len(self.encoding.encode_ordinary(text))

    def _raw_count_many(self, texts: Sequence[str]) -> list[int]:
        # Sequential on purpose: tiktoken's threaded batch API was slower here (it holds the GIL
        # for much of the work) and keeps every token list alive at once, multiplying peak memory.
        encode = self.encoding.encode_ordinary
        return [len(encode(t)) if len(t) <= _BUFFER_ABOVE else self._raw_count(t) for t in texts]

    def neutral_join(self, left_end: str, right_start: str) -> bool:
        """Whether joining a text ending in ``left_end`` to one starting with ``right_start`` cannot change counts.

        True for o200k/cl100k at the positions :mod:`tokenbox_core.tokens.neutral`
        proves no piece can span and no match reads past: after a newline and
        before a non-space character other than ``/``; after an ASCII letter
        and before an ASCII character that is neither a letter nor ``'``.
        Always False for other encodings (r50k/p50k's ``\\s++$`` reads to the
        end of the text), which then re-count every join.
        """
        return self._neutral and tiktoken_neutral_join(left_end, right_start)

    def encode(self, text: str) -> list[int]:
        validate_text(text)
        return self.encoding.encode_ordinary(text)

    def count_concat(self, parts: Sequence[str]) -> int:
        """Exact count of the joined parts, re-using per-part counts where a join is neutral.

        Where ``neutral_join`` holds (o200k/cl100k, :mod:`tokenbox_core.tokens.neutral`)
        no piece can span the join and no piece's match depends on text beyond
        it; so the joined text's count is the sum of the counts of the groups
        between such joins.  Groups are joined and counted (and cached) otherwise.
        """
        groups: list[str] = []
        current: list[str] = []
        for part in parts:
            if not part:
                continue
            if current and not self.neutral_join(current[-1][-1], part[0]):
                current.append(part)
                continue
            if current:
                groups.append("".join(current))
            current = [part]
        if current:
            groups.append("".join(current))
        return sum(self.count_many(groups))

    def truncate(self, text: str, limit: int, *, keep: Keep = "head") -> str:
        return truncate_once(self, text, limit, keep)  # issue 16: one encode, tail re-counts

    def _truncate_by_recounting(self, text: str, limit: int, *, keep: Keep = "head") -> str:
        """The reference algorithm ``truncate`` reproduces (kept for the property test that compares them)."""
        limit = max(0, int(limit))
        ids = self.encode(text)
        if len(ids) <= limit:
            return text
        while True:
            if keep == "head":
                out = self._decode_prefix(ids[:limit])
            elif keep == "tail":
                out = self._decode_suffix(ids[len(ids) - limit :]) if limit else ""
            else:
                head = (limit + 1) // 2
                tail = ids[len(ids) - (limit - head) :] if limit - head else []
                out = self._decode_prefix(ids[:head]) + (self._decode_suffix(tail) if tail else "")
            # Re-encoding a cut can merge differently; shrink until the result fits.
            if self.count(out) <= max(0, int(limit)) or limit == 0:
                return out
            limit -= 1

    def _decode_prefix(self, ids: list[int]) -> str:
        data = self.encoding.decode_bytes(ids)
        for trim in range(4):  # a token can end inside a multi-byte character
            try:
                return data[: len(data) - trim].decode("utf-8")
            except UnicodeDecodeError:
                continue
        return data.decode("utf-8", "ignore")

    def _decode_suffix(self, ids: list[int]) -> str:
        data = self.encoding.decode_bytes(ids)
        for trim in range(4):
            try:
                return data[trim:].decode("utf-8")
            except UnicodeDecodeError:
                continue
        return data.decode("utf-8", "ignore")
