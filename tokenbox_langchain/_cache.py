"""A thread-safe LRU keyed by content digests and bounded by bytes (issue 10 item 15).

Keys are short digests of what a value depends on, so a cache never keeps a
message's content alive; each entry is charged an estimate of the bytes it
holds (the key, the value and whatever text the value carries), and the
oldest entries go once the total passes ``max_bytes``.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["ENTRY_OVERHEAD", "BytesLRU", "digest"]

_V = TypeVar("_V")

ENTRY_OVERHEAD = 200
"""Bytes charged per entry besides its payload (dict slot, key bytes, tuple, int)."""


def digest(*parts: str | bytes) -> bytes:
    """A 16-byte BLAKE2b digest of ``parts``, each length-prefixed so no two sequences collide by joining."""
    h = hashlib.blake2b(digest_size=16)
    for part in parts:
        data = part.encode("utf-8", "surrogatepass") if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.digest()


class BytesLRU(Generic[_V]):
    """An LRU of values by key, bounded by the estimated bytes its entries hold."""

    def __init__(self, max_bytes: int = 32_000_000) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self.data: OrderedDict[Hashable, tuple[_V, int]] = OrderedDict()
        self.lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.data)

    def get(self, key: Hashable) -> _V | None:
        hit = self.data.get(key)
        if hit is None:
            return None
        with contextlib.suppress(KeyError):  # evicted by another thread meanwhile: still a valid answer
            self.data.move_to_end(key)
        return hit[0]

    def put(self, key: Hashable, value: _V, payload: int = 0) -> None:
        cost = ENTRY_OVERHEAD + payload
        with self.lock:
            old = self.data.pop(key, None)
            if old is not None:
                self.bytes -= old[1]
            if cost > self.max_bytes:
                return
            self.data[key] = (value, cost)
            self.bytes += cost
            while self.bytes > self.max_bytes and self.data:
                _, (_, dropped) = self.data.popitem(last=False)
                self.bytes -= dropped

    def get_or_make(self, key: Hashable, make: Callable[[], _V], payload: Callable[[_V], int]) -> _V:
        value = self.get(key)
        if value is None:
            value = make()
            self.put(key, value, payload(value))
        return value

    def clear(self) -> None:
        with self.lock:
            self.data.clear()
            self.bytes = 0
