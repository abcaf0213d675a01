"""The compiler's one cache: what a compile derives from a single text, kept by content for the next turn.

>>> cache = TurnCache()
>>> cache.get("words", "a b c", None, lambda: 3, lambda n: 8)
3
>>> cache.get("words", "a b c", None, lambda: 0, lambda n: 8)  # the same content: made once
3
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

__all__ = ["ENTRY_BYTES", "TurnCache"]

T = TypeVar("T")

ENTRY_BYTES = 320
"""The estimated memory of an entry besides its value: the key (kind, 16-byte digest, parameters), the dict's
slot and its link."""


class TurnCache:
    """Per-text results of a compile (its PII findings, its duplicate-detection sketch), by content: one per
    ``ContextCompiler``.

    Why it exists: an agent compiles its context every turn, and from one turn to the next the evidence,
    memories and history are mostly the same texts.  Scanning them for personal data and sketching their words
    for near-duplicates is most of what a compile costs beyond the layout: on the benchmark's agent context
    (30 tools, 200 passages, 50 memories, 400 messages) the next turn's duplicate check costs about 70 ms of CPU
    without it and 18 with it, its PII gate about 20 ms without it and 2 with it (a loaded 2-core machine).  A
    result depends only on the text, what is derived and its parameters, so the key is ``(kind, a BLAKE2b
    digest of the text's UTF-8 bytes, parameters)``; the texts themselves are not held.
    Bounded by ``max_bytes`` (an estimate of what the entries take in memory, given by each caller's ``size``);
    the least recently used entries go first.  The owner is the compiler: it lives and dies with it.
    """

    def __init__(self, max_bytes: int = 8 * 1024 * 1024) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[str, bytes, Hashable], tuple[Any, int]] = OrderedDict()
        self._held = 0
        self._lock = threading.Lock()  # one compiler may serve several threads

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def held_bytes(self) -> int:
        """The estimated memory the entries take, at most ``max_bytes``."""
        return self._held

    def get(self, kind: str, text: str, params: Hashable, make: Callable[[], T], size: Callable[[T], int]) -> T:
        """``make()`` for this text, from the cache when it was made before for equal content and ``params``.

        ``size(value)`` estimates the value's memory in bytes (the entry's own :data:`ENTRY_BYTES` are added).
        """
        key = (kind, hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest(), params)
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                value: T = found[0]
                return value
        value = make()
        cost = ENTRY_BYTES + size(value)
        with self._lock:
            if key not in self._entries and cost <= self.max_bytes:
                self._entries[key] = (value, cost)
                self._held += cost
                while self._held > self.max_bytes:
                    _, (_, old) = self._entries.popitem(last=False)
                    self._held -= old
        return value
