"""The built-in counters that need no files: shared machinery, ``bytes``, ``approximate``, ``whitespace``, callables."""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Callable
from typing import Any

from tokenbox_core.errors import CounterError
from tokenbox_core.tokens._base import Keep, _checked
from tokenbox_core.tokens._cache import COUNT_CACHE

__all__ = ["ApproximateCounter", "BytesCounter", "CallableCounter", "WhitespaceCounter"]

_instance_ids = itertools.count()
_WORD = re.compile(r"\S+")


class _CachedCounter:
    """Shared machinery: counting through the count cache (:mod:`tokenbox_core.tokens._cache`)."""

    name: str = "counter"

    def __init__(self) -> None:
        self._cache_key = f"{type(self).__name__}:{self.name}:{next(_instance_ids)}"

    # subclasses implement _raw_count and truncate
    def _raw_count(self, text: str) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def count(self, text: str) -> int:
        """Count ``text`` (once per text: the count cache remembers it)."""
        key = COUNT_CACHE.key(self._cache_key, text)  # also rejects non-text and lone surrogates
        value = COUNT_CACHE.get(key)
        if value is None:
            value = _checked(self._raw_count(text), self.name)
            COUNT_CACHE.put(key, value)
        return value

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


def _cut_chars(text: str, n_keep: int, keep: Keep, total: int) -> str:
    """Keep ``n_keep`` of ``total`` characters as ``keep`` says."""
    if n_keep >= total:
        return text
    if n_keep <= 0:
        return ""
    if keep == "head":
        return text[:n_keep]
    if keep == "tail":
        return text[total - n_keep :]
    head = (n_keep + 1) // 2
    return text[:head] + text[total - (n_keep - head) :]


class _SearchTruncateMixin:
    """Truncation by binary search over character prefixes: works for any monotone counter."""

    def truncate(self, text: str, limit: int, *, keep: Keep = "head") -> str:
        limit = max(0, int(limit))
        count = self.count  # type: ignore[attr-defined]
        if count(text) <= limit:
            return text
        lo, hi = 0, len(text)
        while lo < hi:  # largest n with count(cut(n)) <= limit
            mid = (lo + hi + 1) // 2
            if count(_cut_chars(text, mid, keep, len(text))) <= limit:
                lo = mid
            else:
                hi = mid - 1
        return _cut_chars(text, lo, keep, len(text))


class BytesCounter(_CachedCounter):
    """FACET units: UTF-8 bytes after NFC and LF normalisation (``\\r\\n`` and ``\\r`` become ``\\n``)."""

    name = "bytes"

    @staticmethod
    def normalise(text: str) -> str:
        return unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n"))

    def _raw_count(self, text: str) -> int:
        return len(self.normalise(text).encode("utf-8"))

    def truncate(self, text: str, limit: int, *, keep: Keep = "head") -> str:
        limit = max(0, int(limit))
        norm = self.normalise(text)
        data = norm.encode("utf-8")
        if len(data) <= limit:
            return norm
        if keep == "head":
            return data[:limit].decode("utf-8", "ignore")
        if keep == "tail":
            return data[len(data) - limit :].decode("utf-8", "ignore")
        head = (limit + 1) // 2
        return data[:head].decode("utf-8", "ignore") + data[len(data) - (limit - head) :].decode("utf-8", "ignore")


class ApproximateCounter(_CachedCounter):
    """``ceil(len(text) / 4)``: fast, model-free, pair it with a safety margin."""

    name = "approximate"

    def _raw_count(self, text: str) -> int:
        return -(-len(text) // 4)

    def truncate(self, text: str, limit: int, *, keep: Keep = "head") -> str:
        return _cut_chars(text, max(0, int(limit)) * 4, keep, len(text))


class WhitespaceCounter(_CachedCounter):
    """Counts whitespace-separated words; a fast, exact-by-construction fake for tests and docs."""

    name = "whitespace"

    def _raw_count(self, text: str) -> int:
        return len(text.split())

    def truncate(self, text: str, limit: int, *, keep: Keep = "head") -> str:
        """Cut at word boundaries, keeping the original whitespace between kept words."""
        limit = max(0, int(limit))
        spans = [m.span() for m in _WORD.finditer(text)]
        if len(spans) <= limit:
            return text
        if limit == 0:
            return ""
        if keep == "head":
            return text[: spans[limit - 1][1]]
        if keep == "tail":
            return text[spans[len(spans) - limit][0] :]
        head = (limit + 1) // 2
        tail = limit - head
        out = text[: spans[head - 1][1]]
        if tail:
            out += " " + text[spans[len(spans) - tail][0] :]
        return out


class CallableCounter(_SearchTruncateMixin, _CachedCounter):
    """Wraps a callable that returns an int or a list of token ids for a text."""

    def __init__(self, fn: Callable[[str], Any], name: str | None = None) -> None:
        if not callable(fn):
            raise CounterError(f"expected a callable counter but got {type(fn).__name__}")
        self.fn = fn
        self.name = name or getattr(fn, "__qualname__", None) or type(fn).__name__
        super().__init__()

    def _raw_count(self, text: str) -> int:
        try:
            value = self.fn(text)
        except Exception as exc:  # a user callable: report it as a counter error
            raise CounterError(f"counter {self.name!r} raised {type(exc).__name__}: {exc}") from exc
        return _checked(value, self.name)
