"""The process-wide count cache: the same text is never tokenised twice by one counter in a process."""

from __future__ import annotations

import threading

from tokenbox_core.tokens.base import _digest

__all__ = ["COUNT_CACHE"]


class _CountCache:
    """A bounded, thread-safe cache of counts keyed by (counter key, text).

    Keys are the texts themselves: Python caches a string's hash, so a hit on a
    text seen before costs one dict lookup.  The cache is bounded both in
    entries and in the characters it keeps alive; texts longer than
    ``digest_above`` characters are keyed by a sha256 digest instead, so one
    huge section never pins megabytes.  Eviction is first-in-first-out, which
    keeps hits lock-free (a dict read is atomic under the GIL).
    """

    def __init__(self, maxsize: int = 200_000, max_chars: int = 64_000_000, digest_above: int = 1_000_000) -> None:
        self.maxsize = maxsize
        self.max_chars = max_chars
        self.digest_above = digest_above
        self._data: dict[tuple[str, str | bytes], int] = {}
        self._chars = 0
        self._lock = threading.Lock()

    def key(self, counter_key: str, text: str) -> tuple[str, str | bytes]:
        """The cache key of ``text``: the text itself, or the digest of a text over ``digest_above`` characters."""
        if len(text) > self.digest_above:
            return (counter_key, _digest(text))
        return (counter_key, text)

    def get(self, key: tuple[str, str | bytes]) -> int | None:
        return self._data.get(key)

    def get_many(self, keys: list[tuple[str, str | bytes]]) -> list[int | None]:
        """:meth:`get` of each key, in one C-level pass."""
        return list(map(self._data.get, keys))

    def put(self, key: tuple[str, str | bytes], value: int) -> None:
        self.put_many([key], [value])

    def put_many(self, keys: list[tuple[str, str | bytes]], values: list[int]) -> None:
        """:meth:`put` each key with its value, under one lock."""
        data = self._data
        with self._lock:
            for key, value in zip(keys, values, strict=True):
                if key in data:
                    continue
                data[key] = value
                self._chars += len(key[1]) if isinstance(key[1], str) else 16
            while len(data) > self.maxsize or self._chars > self.max_chars:
                old = next(iter(data))
                del data[old]
                self._chars -= len(old[1]) if isinstance(old[1], str) else 16

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._chars = 0

    def __len__(self) -> int:
        return len(self._data)


COUNT_CACHE = _CountCache()
"""The process-wide count cache (``COUNT_CACHE.clear()`` empties it, e.g. in benchmarks)."""
