"""A session's view of its archive: the turns read so far, their recall index, their sizes.

:class:`Archive` belongs to one :class:`~tokenbox_core.ContextSession` and lives
as long as it.  Archived messages never change, so what it derives from them —
the turns, the FTS5 index, the token sizes (keyed by archived id and counter) —
stays valid; it catches up with messages other processes appended by reading
only the turns past the ones it holds.  A session that lost turns (``clear`` or
``replace`` through another handle) is read again from the start.  Its memory is
the session's messages and their index: bounded by the session, released with it.

:func:`sync_new` finds the messages of a framework's whole conversation that
the archive does not hold yet.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tokenbox_core.chat._messages import ToolGroups, _Grouper
from tokenbox_core.session._model import Turn
from tokenbox_core.session._recall import RecallIndex, SearchableStore, StoreIndex
from tokenbox_core.session._store import SessionStore
from tokenbox_core.tokens import TokenCounter, canonical_json
from tokenbox_core.tokens._messages import message_token_count

__all__ = ["Archive", "message_key", "sync_new"]


class Archive:
    """The turns of ``session_id`` in ``store`` as this session has read them (see the module docstring)."""

    def __init__(
        self,
        store: SessionStore,
        session_id: str,
        counter: TokenCounter,
        *,
        embedder: Callable[[str], Sequence[float]] | None = None,
        rrf_k: int = 60,
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.counter = counter
        self._embedder = embedder
        self._rrf_k = rrf_k
        self._lock = threading.RLock()
        self._turns: list[Turn] = []
        self._messages: list[dict[str, Any]] = []  # each turn as a message whose id is its archived id
        self._grouper = _Grouper()
        self._open: dict[str, int] = {}  # tool-call id -> position, for calls no result answered yet
        self._orphans = 0  # results answering no call (written by a writer that did not validate)
        self._views: dict[tuple[str, str], tuple[Mapping[str, Any], int]] = {}
        self._calls: set[str] = set()
        self._answers: dict[str, str] = {}  # tool-call id -> the archived id of its (first) result
        self._sizes: dict[tuple[str, str], int] = {}
        self._keys: list[str] = []
        self._vectors: dict[str, tuple[float, ...]] = {}
        self._queries: dict[str, tuple[float, ...]] = {}  # the latest queries' vectors: one embedding a query
        self._index = self._new_index()
        self._prefixes: list[RecallIndex] = []  # prefix_index's, at most two, the most recently used last
        # a store with its own full-text index (PostgreSQL) ranks recall itself; embeddings fuse in process
        self._database = store if embedder is None and isinstance(store, SearchableStore) else None

    def _new_index(self) -> RecallIndex:
        """An empty index sharing the session's message and query vectors."""
        return RecallIndex(self._embedder, rrf_k=self._rrf_k, vectors=self._vectors, queries=self._queries)

    def turns(self) -> list[Turn]:
        """Every archived turn, in order (new ones read from the store)."""
        with self._lock:
            count = self.store.count(self.session_id)
            if count < len(self._turns):  # cleared or replaced elsewhere: start over
                self._reset()
            if count > len(self._turns):
                start = len(self._turns)
                for turn in self.store.turns(self.session_id, start=start):
                    self._read(turn)
                if self._database is None:  # a store that searches itself (PostgreSQL) needs no index here
                    self._index.extend([(t.turn_id, t.text) for t in self._turns[start:]])  # embedded as added
            return list(self._turns)

    def _read(self, turn: Turn) -> None:
        position = len(self._turns)
        message = turn.as_message()
        self._turns.append(turn)
        self._messages.append(message)
        role = message.get("role")
        calls = message.get("tool_calls") if role != "tool" else None
        self._grouper.add(position, message, role, calls)
        for call in calls or ():
            if isinstance(call, Mapping) and call.get("id"):
                self._calls.add(str(call["id"]))
                self._open[str(call["id"])] = position
        if role == "tool":
            if position not in self._grouper.group_of:
                self._orphans += 1
            self._open.pop(str(message.get("tool_call_id")), None)
            self._answers.setdefault(str(message.get("tool_call_id")), turn.turn_id)

    def _reset(self) -> None:
        self._index.close()
        for prefix in self._prefixes:
            prefix.close()
        self._vectors, self._queries = {}, {}
        self._index = self._new_index()
        self._prefixes = []
        self._turns, self._calls, self._sizes, self._keys = [], set(), {}, []
        self._answers = {}
        self._messages, self._grouper, self._open, self._orphans, self._views = [], _Grouper(), {}, 0, {}

    def messages(self) -> tuple[list[dict[str, Any]], ToolGroups, bool]:
        """Every turn as a message (id = archived id; do not modify them), their tool groups, and whether the
        archive is already valid to send (no result answering no call, every call answered)."""
        self.turns()
        with self._lock:
            valid = not self._orphans and not self._open and self._grouper.contiguous
            return list(self._messages), self._grouper.groups(), valid

    def view(self, turn_id: str, variant: str, make: Callable[[], Mapping[str, Any]]) -> tuple[Mapping[str, Any], int]:
        """``variant`` of an archived message (a masking placeholder, an offload preview) and its size, made once
        (archived messages never change and a session's options are fixed)."""
        key = (turn_id, variant)
        with self._lock:
            found = self._views.get(key)
        if found is None:
            message = make()
            found = (message, message_token_count(message, self.counter))
            with self._lock:
                self._views[key] = found
        return found

    def keys(self) -> list[str]:
        """Each turn's :func:`message_key`, in order (what :func:`sync_new` compares by content)."""
        turns = self.turns()
        with self._lock:
            self._keys.extend(message_key(t.message) for t in turns[len(self._keys) :])
            return list(self._keys)

    def index(self) -> RecallIndex | StoreIndex:
        """The recall index over every archived turn (the store's own, when it has one)."""
        turns = self.turns()
        return self._index if self._database is None else StoreIndex(self._database, self.session_id, len(turns))

    def prefix_index(self, upto: int) -> RecallIndex | StoreIndex:
        """An index of the first ``upto`` turns only: its statistics change only when ``upto`` does, so a
        cache-aware window's recall stays the same until its cut moves (the whole index's statistics move with
        every message added).  Grown in place as the cut moves on; built again when it moves back.  The two most
        recently used are kept: a compile plans its window twice (with and without the recall block), at two cuts,
        and rebuilding the other one each time cost ~25 ms a call at 500 turns."""
        turns = self.turns()
        if self._database is not None:
            return StoreIndex(self._database, self.session_id, min(upto, len(turns)))
        with self._lock:
            index = next((p for p in self._prefixes if len(p) == min(upto, len(turns))), None)
            if index is None:
                shorter = [p for p in self._prefixes if len(p) < upto]
                index = max(shorter, key=len) if shorter else self._new_index()
                index.extend([(t.turn_id, t.text) for t in turns[len(index) : upto]])
            self._prefixes = [p for p in self._prefixes if p is not index] + [index]
            while len(self._prefixes) > 2:
                self._prefixes.pop(0).close()
            return index

    def call_ids(self) -> set[str]:
        """Ids of every tool call archived (results in a later ``add`` may answer them)."""
        self.turns()
        with self._lock:
            return set(self._calls)

    def answer_of(self, call_id: str) -> str | None:
        """The archived id of the result answering tool call ``call_id`` (``None`` while unanswered)."""
        self.turns()
        with self._lock:
            return self._answers.get(call_id)

    def previewed(self, message: Mapping[str, Any]) -> str | None:
        """The archived id of the result ``message`` is the offload preview of (what
        :meth:`~tokenbox_core.ContextSession.offload` returned, back from a framework's state), else ``None``."""
        call = message.get("tool_call_id") if message.get("role") == "tool" else None
        answer = self.answer_of(str(call)) if call else None
        text = message.get("content")
        return answer if answer and isinstance(text, str) and f'rehydrate("{answer}", offset=' in text else None

    def append(self, messages: Sequence[Mapping[str, Any]]) -> list[str]:
        """Archive ``messages`` in one transaction; their ids."""
        if not messages:
            return []
        ids = self.store.extend(self.session_id, messages)
        self.turns()
        return ids

    def size(self, turn_id: str, variant: str, message: Mapping[str, Any]) -> int:
        """The tokens ``message`` (``variant`` of archived ``turn_id``: verbatim, masked, preview) costs."""
        key = (turn_id, variant)
        with self._lock:
            found = self._sizes.get(key)
        if found is None:
            found = message_token_count(message, self.counter)
            with self._lock:
                self._sizes[key] = found
        return found

    def close(self) -> None:
        """Release the recall indexes."""
        self._index.close()
        for prefix in self._prefixes:
            prefix.close()


def message_key(message: Mapping[str, Any]) -> str:
    """What identifies a message's content for :func:`sync_new`: its canonical JSON without ``id`` and options."""
    return canonical_json({k: v for k, v in message.items() if k not in ("id", "tokenbox")})


def sync_new(
    turns: Sequence[Turn], messages: Sequence[Mapping[str, Any]], keys: Sequence[str] | None = None
) -> list[Mapping[str, Any]]:
    """The messages of ``messages`` (a framework's whole conversation) that ``turns`` do not hold, in order.

    By ``"id"`` when every message has one.  Else by content (``keys``: the turns' :func:`message_key`):
    the archive as a prefix of ``messages`` (the framework keeps the whole conversation), else the longest
    tail of the archive that ``messages`` starts with (the framework dropped its oldest messages), else the
    archive's newest message found from the end of ``messages``; what follows is new.  Nothing in common:
    everything is new.
    """
    if not turns:
        return list(messages)
    if messages and all(isinstance(m, Mapping) and m.get("id") for m in messages):
        have = {str(t.message.get("id")) for t in turns if t.message.get("id")}
        return [m for m in messages if str(m["id"]) not in have]
    archived = list(keys) if keys is not None else [message_key(t.message) for t in turns]
    given = [message_key(m) if isinstance(m, Mapping) else "" for m in messages]
    n = len(archived)
    if given[:n] == archived:
        return list(messages[n:])
    for k in range(min(n, len(given)), 0, -1):
        if given[:k] == archived[n - k :]:
            return list(messages[k:])
    for end in range(len(given), 0, -1):
        if given[end - 1] == archived[-1]:
            depth = min(end, n)
            if given[end - depth : end] == archived[n - depth :]:
                return list(messages[end:])
    return list(messages)
