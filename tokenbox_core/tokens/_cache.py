"""The count cache: a text is tokenised once per counter, and the cache stays under a bound in bytes.

Why it exists: the same texts are counted again and again — a chat's next turn re-lays out last turn's
messages plus one, a compile re-measures the same tools and policy, a re-layout with one section changed
re-measures the other 999.  Tokenising a text costs a pass over it; a hit costs a digest of it (sha256, which
CPUs accelerate) and a dict lookup.

Keys are ``(counter key, sha256 of the UTF-8 text)``, so no text is kept alive by the cache and every
entry costs about :data:`ENTRY_BYTES`; the cache holds at most ``max_bytes`` of entries and forgets the
oldest first.  It is process-wide (counts are facts about a text and an encoding, the same for every
caller) and thread-safe: reads are single dict lookups, writes take a lock.
"""

from __future__ import annotations

import threading

from tokenbox_core.tokens._base import _digest

__all__ = ["COUNT_CACHE", "ENTRY_BYTES", "CountCache"]

ENTRY_BYTES = 240
"""What one entry costs: the key tuple (56 bytes), the 32-byte digest object (65), the count (28) and the
dict's share (about 90 with its load factor)."""

Key = tuple[str, bytes]


class CountCache:
    """Counts keyed by (counter key, content digest), at most ``max_bytes`` of them, oldest forgotten first."""

    def __init__(self, max_bytes: int = 32 * 1024 * 1024) -> None:
        self.max_bytes = max_bytes
        self._data: dict[Key, int] = {}
        self._lock = threading.Lock()

    @staticmethod
    def key(counter_key: str, text: str) -> Key:
        """The key of ``text`` for a counter (raises :class:`~tokenbox_core.errors.InvalidTextError` for non-text)."""
        return (counter_key, _digest(text))

    def get(self, key: Key) -> int | None:
        return self._data.get(key)

    def put(self, key: Key, value: int) -> None:
        data = self._data
        with self._lock:
            data[key] = value
            while len(data) * ENTRY_BYTES > self.max_bytes:
                del data[next(iter(data))]

    @property
    def nbytes(self) -> int:
        """The bytes the entries cost (:data:`ENTRY_BYTES` each)."""
        return len(self._data) * ENTRY_BYTES

    def clear(self) -> None:
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        return len(self._data)


COUNT_CACHE = CountCache()
"""The process-wide count cache (``COUNT_CACHE.clear()`` empties it, e.g. for a cold benchmark)."""
