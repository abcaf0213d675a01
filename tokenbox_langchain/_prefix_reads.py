"""An agent loop's conversation checked and grouped once per message: :class:`PrefixReads`.

Why it exists (what a user sees): before fitting, the core checks the
conversation a provider would receive (a tool result without its call, a call
without results, an unknown role — :func:`~tokenbox_core.chat.check_conversation`)
and groups every tool call with its results.  In an agent loop each request
is the previous one plus a step, so doing both over the whole history on
every model call made the per-call overhead grow with the loop.  This keeps
the conversations it has read (as the :class:`~tokenbox_langchain._converted.Entry`
objects of :class:`~tokenbox_langchain._converted.ConvertedMessages`, in order,
with their tool groups) and, for a request that extends one of them, checks
and groups only the messages added since.

Exactness is the core's: :func:`~tokenbox_core.chat.read_conversation` with
``after=`` the read of the prefix checks and groups only the added messages.
When they have a problem, carry ``"tokenbox"`` overrides or an odd shape,
:meth:`PrefixReads.read` returns ``None`` and the whole list goes to the core,
which checks it and raises its own error.

Owner: one per :class:`~tokenbox_langchain._converted.ConvertedMessages`
(hence per middleware).  Bound: at most ``keep`` conversations (a thread's
newest request replaces the one it extends) and ``max_bytes``, estimated from
the entries each conversation holds; the oldest go first.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tokenbox_core.chat import ReadMessages, read_conversation

if TYPE_CHECKING:
    from tokenbox_langchain._converted import Entry

__all__ = ["PrefixReads"]

_PER_MESSAGE = 200
"""Bytes a read conversation costs per message beyond its entries (references, group maps): an estimate."""


@dataclass(frozen=True)
class _Read:
    """A conversation read: its entries in order, the core's read of them (continued, never changed) and the
    bytes it holds."""

    entries: tuple[Entry, ...]
    read: ReadMessages
    nbytes: int


class PrefixReads:
    """Conversations checked and grouped incrementally (see the module docstring)."""

    def __init__(self, *, keep: int = 8, max_bytes: int = 32 * 1024 * 1024) -> None:
        self.keep = keep
        self.max_bytes = max_bytes
        self._reads: list[_Read] = []
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._reads)

    def read(self, entries: Sequence[Entry]) -> ReadMessages | None:
        """The conversation of ``entries`` checked and grouped, as the core's
        :class:`~tokenbox_core.chat.ReadMessages` (its messages a tuple: the core does not check it again); None
        when it must go to the core whole (see the module docstring)."""
        n = len(entries)
        with self._lock:
            reads = list(self._reads)
        base: _Read | None = None
        for r in reversed(reads):  # the newest first: a thread's previous request
            k = len(r.entries)
            if k <= n and r.entries == tuple(entries[:k]):
                base = r
                break
        start = 0 if base is None else len(base.entries)
        read = read_conversation(tuple(e.neutral for e in entries), after=None if base is None else base.read)
        if read is None:
            return None
        nbytes = (0 if base is None else base.nbytes) + sum(e.nbytes + _PER_MESSAGE for e in entries[start:])
        self._store(_Read(tuple(entries), read, nbytes), base)
        return read

    def _store(self, done: _Read, base: _Read | None) -> None:
        with self._lock:
            reads = [r for r in self._reads if r is not base]
            reads.append(done)
            while reads and (len(reads) > self.keep or sum(r.nbytes for r in reads) > self.max_bytes):
                reads.pop(0)
            self._reads = reads
