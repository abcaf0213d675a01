"""The cache simulator's units: a message as a cache block, and a cached prefix as an entry.

A block is one message of a request: its hash (of the canonical serialisation,
without breakpoint markers), its exact size in the simulation's counter, and,
when needed, its token ids (to measure how much of the first differing message
two prompts still share).  An entry is a cached prefix: the blocks it covers,
when it was written and last used, the route it was written on (OpenAI's
``prompt_cache_key``) and its write order (OpenAI considers only the latest 80
breakpoints of a conversation).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tokenbox_core.errors import BudgetError
from tokenbox_core.tokens import TokenCounter, canonical_json
from tokenbox_core.tokens._messages import message_token_count

__all__ = [
    "Block",
    "Blocks",
    "Entry",
    "common_prefix",
    "has_marker",
    "leading_system",
    "marker_ttl",
    "shared_tokens",
]

_CACHE_FIELDS = ("role", "content", "name", "tool_calls", "tool_call_id")
_MARKERS = ("cache_control", "prompt_cache_breakpoint")


@dataclass
class Block:
    """One message as the cache sees it."""

    key: bytes
    tokens: int
    ids: tuple[int, ...] = field(default=())


@dataclass
class Entry:
    """A cached prefix: ``keys`` of its blocks, written at ``created``, last read or refreshed at ``used``."""

    keys: tuple[bytes, ...]
    blocks: list[Block]
    messages: list[Mapping[str, Any]]
    used: float
    created: float = 0.0
    route: str | None = None
    order: int = 0
    ttl: float | None = None
    """Seconds it lives unused, when its breakpoint set its own (``"ttl": "1h"``); else the rules' TTL."""


def _wire(message: Mapping[str, Any]) -> dict[str, Any]:
    """What the cache keys on: the message without its breakpoint markers.

    A breakpoint does not change the content it marks, and one text part is the
    same content as a plain string.
    """
    wire = {k: message[k] for k in _CACHE_FIELDS if message.get(k) is not None}
    content = wire.get("content")
    if isinstance(content, list):
        parts = [{k: v for k, v in p.items() if k not in _MARKERS} if isinstance(p, Mapping) else p for p in content]
        if len(parts) == 1 and isinstance(parts[0], Mapping) and set(parts[0]) == {"type", "text"}:
            wire["content"] = parts[0]["text"]
        else:
            wire["content"] = parts
    return wire


class Blocks:
    """Message → cache block (hash, exact size, token ids), memoised by content for one simulation."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self.memo: dict[str, Block] = {}  # owned by one simulate_cache call; keyed by the message's wire form

    def __call__(self, message: Mapping[str, Any]) -> Block:
        text = canonical_json(_wire(message))
        block = self.memo.get(text)
        if block is None:
            key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
            block = Block(key, message_token_count(message, self.counter))
            self.memo[text] = block
        return block

    def ids(self, block: Block, message: Mapping[str, Any]) -> tuple[int, ...]:
        """Token ids of the message's canonical serialisation (bytes for counters without ids)."""
        if not block.ids:
            encode = getattr(self.counter, "encode", None)
            text = canonical_json(_wire(message))
            block.ids = tuple(encode(text)) if callable(encode) else tuple(text.encode("utf-8", "surrogatepass"))
        return block.ids


def common_prefix(a: Sequence[Block], b: Sequence[Block]) -> tuple[int, int]:
    """(whole blocks in common, tokens of those blocks)."""
    n = tokens = 0
    for x, y in zip(a, b, strict=False):
        if x.key != y.key:
            break
        n += 1
        tokens += x.tokens
    return n, tokens


def shared_tokens(blocks_of: Blocks, a: Block, am: Mapping[str, Any], b: Block, bm: Mapping[str, Any]) -> int:
    """Leading tokens two different messages still share (at most the smaller message's size)."""
    ia, ib = blocks_of.ids(a, am), blocks_of.ids(b, bm)
    n = 0
    for x, y in zip(ia, ib, strict=False):
        if x != y:
            break
        n += 1
    return min(n, a.tokens, b.tokens)


def has_marker(message: Mapping[str, Any], marker: str) -> bool:
    """True when the message, or one of its content parts, carries the breakpoint field ``marker``."""
    if message.get(marker):
        return True
    content = message.get("content")
    if isinstance(content, list):
        return any(isinstance(p, Mapping) and p.get(marker) for p in content)
    return False


_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}


def marker_ttl(message: Mapping[str, Any], marker: str) -> float | None:
    """Seconds of the ``ttl`` the message's breakpoint marker sets (``"5m"``, ``"1h"``, ``"30m"``), or None."""
    marks = [message.get(marker)]
    content = message.get("content")
    if isinstance(content, list):
        marks += [p.get(marker) for p in content if isinstance(p, Mapping)]
    ttls = [m.get("ttl") for m in marks if isinstance(m, Mapping) and m.get("ttl")]
    if not ttls:
        return None
    ttl = str(ttls[-1])
    if len(ttl) < 2 or ttl[-1] not in _UNITS or not ttl[:-1].isdigit():
        raise BudgetError(f"a cache breakpoint's ttl must look like '5m' or '1h', got {ttl!r}")
    return int(ttl[:-1]) * _UNITS[ttl[-1]]


def leading_system(messages: Sequence[Mapping[str, Any]]) -> int:
    """How many messages at the start are system or developer messages."""
    lead = 0
    while lead < len(messages) and messages[lead].get("role") in ("system", "developer"):
        lead += 1
    return lead
