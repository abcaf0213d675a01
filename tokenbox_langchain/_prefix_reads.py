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

Exactness: the new messages are checked with the core's own
:func:`~tokenbox_core.chat.conversation_problems` (``complete=True``), the
earlier calls answered already; a conversation that was valid and
complete stays valid when the added messages pass that check on their own, and the grouping
continues from where it stopped (the core's grouper, fed in order).  When the
added messages have a problem, carry ``"tokenbox"`` overrides or an odd shape,
:meth:`PrefixReads.read` returns ``None`` and the whole list goes to the core,
which checks it and raises its own error.

Owner: one per :class:`~tokenbox_langchain._converted.ConvertedMessages`
(hence per middleware).  Bound: at most ``keep`` conversations (a thread's
newest request replaces the one it extends) and ``max_bytes``, estimated from
the entries each conversation holds; the oldest go first.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tokenbox_core.chat import ReadMessages, conversation_problems
from tokenbox_core.chat._messages import OVERRIDE_KEY, _Grouper
from tokenbox_core.chat._validate import FRAMEWORK_ROLES

if TYPE_CHECKING:
    from tokenbox_langchain._converted import Entry

__all__ = ["PrefixReads"]

_PER_MESSAGE = 200
"""Bytes a read conversation costs per message beyond its entries (references, group maps): an estimate."""


@dataclass(frozen=True)
class _Read:
    """A conversation read: its entries in order, the grouper after its last message (never fed again) and the
    bytes it holds."""

    entries: tuple[Entry, ...]
    grouper: _Grouper
    nbytes: int


def _plain_shapes(dicts: Sequence[Mapping[str, Any]]) -> bool:
    """True when every dict has a non-empty string role, ``tool_calls`` a list or absent, and no overrides (what
    the core's reader checks in its fast path)."""
    for d in dicts:
        role = d.get("role")
        calls = d.get("tool_calls")
        if not (type(role) is str and role and (calls is None or type(calls) is list)) or OVERRIDE_KEY in d:
            return False
    return True


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
        dicts = tuple(e.neutral for e in entries)
        new = dicts[start:]
        if not _plain_shapes(new):
            return None
        # the base was valid and complete, so every call it made is answered: a new result answering one of them
        # is a duplicate or stands apart from its call, and the whole list goes to the core (no known_calls)
        if conversation_problems(new, roles=FRAMEWORK_ROLES):
            return None
        grouper = _Grouper() if base is None else base.grouper.copy()
        add = grouper.add
        for i in range(start, n):
            d = dicts[i]
            add(i, d, d["role"], d.get("tool_calls"))
        done = _Read(
            tuple(entries),
            grouper,
            (0 if base is None else base.nbytes) + sum(e.nbytes + _PER_MESSAGE for e in entries[start:]),
        )
        self._store(done, base)
        return ReadMessages(dicts, grouper.groups(), {})  # the core reads the groups; the next read copies them

    def _store(self, done: _Read, base: _Read | None) -> None:
        with self._lock:
            reads = [r for r in self._reads if r is not base]
            reads.append(done)
            while reads and (len(reads) > self.keep or sum(r.nbytes for r in reads) > self.max_bytes):
                reads.pop(0)
            self._reads = reads
