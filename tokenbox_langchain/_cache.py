"""A thread-safe LRU bounded by bytes (issue 10 item 15).

Keys are small (hashes and lengths of the texts a value depends on, see
:func:`tokenbox_langchain.counting.message_key`), so a cache never keeps a
message's content alive through its keys; each entry is charged an estimate of
the bytes it holds (the key, the value and whatever text the value carries),
and the oldest entries go once the total passes ``max_bytes``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["ENTRY_OVERHEAD", "BytesLRU"]

_V = TypeVar("_V")

ENTRY_OVERHEAD = 200
"""Bytes charged per entry besides its payload (dict slot, key bytes, tuple, int)."""


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
        try:  # noqa: SIM105 - contextlib.suppress costs a context manager per lookup, on the hot path
            self.data.move_to_end(key)
        except KeyError:  # evicted by another thread meanwhile: still a valid answer
            pass
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
