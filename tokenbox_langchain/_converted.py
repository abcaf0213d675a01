"""Each message of an agent loop converted and counted once: :class:`ConvertedMessages`.

Why it exists (what a user sees): an agent built with ``create_agent`` sends
its whole history to every model call, so a middleware that converts every
message to the core's neutral dict (``convert_to_openai_messages``) and counts
it again on each call spends more per call the longer the loop runs — in a
300-step loop that was most of :class:`~tokenbox_langchain.TokenBoxMiddleware`'s
added CPU per model call.  With this cache a call converts and counts only
the messages that are new (or changed) since the calls before it.

- Owner and lifetime: one per middleware instance (it lives as long as the
  middleware; nothing is process-wide and nothing is written onto the
  messages).
- Key: the message's ``id`` and its content.  An entry is used only when the
  message still has the content it was converted from — type, content, name,
  tool calls, tool-call id, ``additional_kwargs`` — compared by value with a
  copy taken at conversion; a message edited under the same id (a masked tool
  result, a tool call edited by a human-in-the-loop step) is converted again.
  A message without an id is keyed by its type and text (the agent's system
  message); one with neither an id nor text content is converted on every call.
- Bound: ``max_bytes`` (default 16 MiB), estimated from each entry's JSON
  length; the least recently used entries are dropped first.

The value of an entry is a pure function of the message's content, so one
cache serves every thread the middleware runs (an id seen in two threads with
the same content converts the same way).
"""

from __future__ import annotations

import copy
import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage

from tokenbox_core.errors import ConfigError
from tokenbox_langchain._counting import MessageCounter
from tokenbox_langchain._fit import neutral
from tokenbox_langchain._prefix_reads import PrefixReads

__all__ = ["DEFAULT_MAX_BYTES", "ConvertedMessages", "Entry"]

DEFAULT_MAX_BYTES = 16 * 1024 * 1024
_OVERHEAD = 400
"""Bytes an entry costs beyond its JSON (the entry, its key, the dict and tuple headers): an estimate."""


def _content(message: BaseMessage) -> tuple[Any, ...]:
    """What a message's neutral form and size depend on, as live values (compared by value); read from the
    model's fields directly (a field a message class lacks is ``None``, without pydantic's slow miss)."""
    fields = message.__dict__
    get = fields.get
    return (
        type(message),
        get("content"),
        get("name"),
        get("tool_call_id"),
        get("tool_calls"),
        get("invalid_tool_calls"),
        get("role"),
        get("additional_kwargs"),
    )


def _key(message: BaseMessage) -> str | tuple[str, str] | None:
    """The cache key of ``message``: its id, else its type and text content, else None (not cached)."""
    mid = message.id
    if mid:
        return mid
    content = message.content
    return (message.type, content) if isinstance(content, str) else None


class Entry:
    """One converted message: its neutral dict, its size once counted, and the content it was made from."""

    __slots__ = ("content", "nbytes", "neutral", "size")

    def __init__(self, content: tuple[Any, ...], neutral: dict[str, Any]) -> None:
        self.content = content
        self.neutral = neutral
        self.size: int | None = None
        self.nbytes = _OVERHEAD + 2 * len(json.dumps(neutral, default=str))  # the dict and the copy of its source


class ConvertedMessages:
    """Neutral dicts and sizes of messages, converted once per content (see the module docstring).

    >>> from langchain_core.messages import HumanMessage
    >>> cache = ConvertedMessages(MessageCounter("o200k_base"))
    >>> first = cache.entries([HumanMessage("find x", id="task")])
    >>> again = cache.entries([HumanMessage("find x", id="task")])   # same id, same content: reused
    >>> first[0] is again[0], again[0].neutral
    (True, {'role': 'user', 'content': 'find x', 'id': 'task'})
    >>> cache.entries([HumanMessage("find y", id="task")])[0] is first[0]   # same id, new content
    False
    """

    def __init__(self, counter: MessageCounter, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
            raise ConfigError(f"max_bytes must be an integer >= 0, got {max_bytes!r}; e.g. max_bytes=16 * 1024 * 1024")
        self.counter = counter
        self.max_bytes = max_bytes
        self.nbytes = 0
        self._entries: OrderedDict[str | tuple[str, str], Entry] = OrderedDict()
        self._lock = threading.Lock()
        self.reads = PrefixReads()
        """The conversations read so far (checked and grouped), extended call after call."""

    def __len__(self) -> int:
        return len(self._entries)

    def entries(self, messages: Sequence[BaseMessage]) -> list[Entry]:
        """One entry per message, in order: cached ones reused, the others converted together (one
        ``convert_to_openai_messages`` call) and kept.  A message listed twice is converted again for its second
        position, so every position has its own dict."""
        out: list[Entry | None] = []
        missing: list[int] = []
        seen: set[str | tuple[str, str]] = set()
        with self._lock:
            found = self._entries
            for i, m in enumerate(messages):
                key = _key(m)
                entry = found.get(key) if key is not None else None
                if entry is not None and key not in seen and entry.content == _content(m):
                    found.move_to_end(key)  # type: ignore[arg-type]  # key is not None here
                    out.append(entry)
                else:
                    out.append(None)
                    missing.append(i)
                if key is not None:
                    seen.add(key)
        if not missing:
            return out  # type: ignore[return-value]  # no None left
        converted = neutral([messages[i] for i in missing])
        added: list[tuple[str | tuple[str, str], Entry]] = []
        owned: set[str | tuple[str, str]] = set()
        for i, d in zip(missing, converted, strict=True):
            m = messages[i]
            try:
                content = copy.deepcopy(_content(m))
            except Exception:  # a field that cannot be copied (a provider object in additional_kwargs): not kept
                out[i] = Entry(_content(m), d)
                continue
            entry = Entry(content, d)
            out[i] = entry
            key = _key(m)
            if key is not None and key not in owned:
                owned.add(key)
                added.append((key, entry))
        self._keep(added)
        return out  # type: ignore[return-value]  # every position filled

    def _keep(self, added: list[tuple[str | tuple[str, str], Entry]]) -> None:
        """Store the new entries (an id listed twice in one call keeps its first), then drop the least recently
        used ones over the bound."""
        with self._lock:
            found = self._entries
            for key, entry in added:
                old = found.pop(key, None)
                if old is not None:
                    self.nbytes -= old.nbytes
                if entry.nbytes > self.max_bytes:
                    continue
                found[key] = entry
                self.nbytes += entry.nbytes
            while self.nbytes > self.max_bytes and found:
                _, gone = found.popitem(last=False)
                self.nbytes -= gone.nbytes

    def size(self, entry: Entry, message: BaseMessage) -> int:
        """The size of ``message`` (whose entry is ``entry``) in the counter's units, counted once."""
        size = entry.size
        if size is None:
            size = entry.size = self.counter.size(message)
        return size

    def count(self, messages: Sequence[BaseMessage]) -> int:
        """What ``messages`` cost in the counter's units (``counter.count``), each message counted once per content."""
        return self.counter.base + sum(self.size(e, m) for e, m in zip(self.entries(messages), messages, strict=True))
