"""``SessionStore``: the archive every turn, summary and eviction goes to (chapter §6.10, §6.7.2), and
``MemorySessionStore``, its in-process implementation.

>>> store = MemorySessionStore()
>>> store.append("s1", {"role": "user", "content": "hello"})
't_1'
>>> [t.turn_id for t in store.turns("s1")]
['t_1']
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from tokenbox_core.errors import UnknownTurnError
from tokenbox_core.session._model import EvictionEvent, Summary, Turn, check_message, turn_id_for

__all__ = ["USAGE_FIELDS", "MemorySessionStore", "SessionStore", "missing_ids"]

USAGE_FIELDS = ("base", "model", "id", "content", "units", "fixed", "reported")
"""The fields of a usage observation a store keeps (``record_usage`` / ``usage``); texts are never stored."""


@runtime_checkable
class SessionStore(Protocol):
    """The session archive.

    Turns are append-only and get stable ids (``t_1``, ``t_2``, … per session); summaries carry provenance;
    eviction events record what a compile removed; a rehydration request (§6.10.5) pins turns for the next
    compile only.  Implementations must be safe to share between threads.
    """

    def append(self, session_id: str, message: Mapping[str, Any]) -> str:
        """Archive one neutral message; return its turn id."""
        ...

    def extend(self, session_id: str, messages: Iterable[Mapping[str, Any]]) -> list[str]:
        """Archive several messages atomically, in order; return their turn ids."""
        ...

    def turns(self, session_id: str, *, start: int = 0, stop: int | None = None) -> list[Turn]:
        """The session's turns in order (``start``/``stop`` slice by position)."""
        ...

    def get_turns(self, session_id: str, turn_ids: Sequence[str]) -> list[Turn]:
        """The given turns, in the order asked; :class:`UnknownTurnError` names ids the session lacks."""
        ...

    def count(self, session_id: str) -> int:
        """How many turns the session holds."""
        ...

    def sessions(self) -> list[str]:
        """Session ids, sorted."""
        ...

    def clear(self, session_id: str) -> None:
        """Delete a session's turns, summaries, token counts, evictions and pending rehydrations."""
        ...

    def replace(self, session_id: str, messages: Iterable[Mapping[str, Any]]) -> list[str]:
        """Atomically clear the session and archive ``messages`` (ids restart at ``t_1``)."""
        ...

    def token_counts(self, session_id: str, counter: str) -> dict[str, int]:
        """Token counts recorded for ``counter`` (turn id → tokens)."""
        ...

    def record_tokens(self, session_id: str, counter: str, counts: Mapping[str, int]) -> None:
        """Record turn token counts for ``counter`` (a counter's name)."""
        ...

    def put_summary(self, summary: Summary) -> None:
        """Persist a summary (replacing one with the same id)."""
        ...

    def summaries(self, session_id: str, *, include_invalidated: bool = False) -> list[Summary]:
        """The session's summaries by level, then by first covered turn."""
        ...

    def invalidate_summary(self, session_id: str, summary_id: str, by: str) -> None:
        """Mark a summary invalid (a later turn ``by`` corrected it); it is kept for provenance."""
        ...

    def cached_text(self, key: str) -> str | None:
        """A cached generated text (LLM summaries keyed by block hash, prompt version and model)."""
        ...

    def cache_text(self, key: str, text: str) -> None:
        """Cache a generated text under ``key`` (first write wins)."""
        ...

    def record_eviction(self, session_id: str, turn_ids: Sequence[str], reason: str) -> None:
        """Record that a compile evicted ``turn_ids``."""
        ...

    def evictions(self, session_id: str) -> list[EvictionEvent]:
        """Eviction events in the order recorded."""
        ...

    def request_rehydration(self, session_id: str, turn_ids: Sequence[str]) -> None:
        """Pin ``turn_ids`` for the next compile of the session (§6.10.5)."""
        ...

    def take_rehydration(self, session_id: str) -> list[str]:
        """The pending rehydrated turn ids, in turn order, removing the request (they return to the archive)."""
        ...

    def close(self) -> None:
        """Release resources."""
        ...


def missing_ids(session_id: str, asked: Sequence[str], found: Iterable[str]) -> UnknownTurnError:
    """The error for ids a session does not hold, naming them all."""
    have = set(found)
    missing = [i for i in asked if i not in have]
    return UnknownTurnError(
        f"session {session_id!r} holds no turn {', '.join(missing)}; ids look like 't_17' "
        f"(list them with store.turns({session_id!r}) or search with search_archive)"
    )


class MemorySessionStore:
    """A :class:`SessionStore` in process memory (tests, notebooks, short-lived agents); thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._turns: dict[str, list[Turn]] = {}
        self._tokens: dict[tuple[str, str], dict[str, int]] = {}
        self._summaries: dict[str, dict[str, Summary]] = {}
        self._cache: dict[str, str] = {}
        self._evictions: dict[str, list[EvictionEvent]] = {}
        self._pending: dict[str, set[str]] = {}
        self._usage: dict[str, dict[tuple[str, str, str], dict[str, Any]]] = {}

    def append(self, session_id: str, message: Mapping[str, Any]) -> str:
        return self.extend(session_id, [message])[0]

    def extend(self, session_id: str, messages: Iterable[Mapping[str, Any]]) -> list[str]:
        checked = [check_message(m, i) for i, m in enumerate(messages)]
        now = time.time()
        with self._lock:
            turns = self._turns.setdefault(session_id, [])
            ids = []
            for message in checked:
                seq = len(turns) + 1
                turns.append(Turn(session_id, turn_id_for(seq), seq, message, now))
                ids.append(turn_id_for(seq))
            return ids

    def turns(self, session_id: str, *, start: int = 0, stop: int | None = None) -> list[Turn]:
        with self._lock:
            return list(self._turns.get(session_id, [])[start:stop])

    def get_turns(self, session_id: str, turn_ids: Sequence[str]) -> list[Turn]:
        with self._lock:
            by_id = {t.turn_id: t for t in self._turns.get(session_id, [])}
        if any(i not in by_id for i in turn_ids):
            raise missing_ids(session_id, turn_ids, by_id)
        return [by_id[i] for i in turn_ids]

    def count(self, session_id: str) -> int:
        with self._lock:
            return len(self._turns.get(session_id, []))

    def sessions(self) -> list[str]:
        with self._lock:
            return sorted(self._turns)

    def clear(self, session_id: str) -> None:
        with self._lock:
            for table in (self._turns, self._summaries, self._evictions, self._pending, self._usage):
                table.pop(session_id, None)
            for key in [k for k in self._tokens if k[0] == session_id]:
                del self._tokens[key]

    def replace(self, session_id: str, messages: Iterable[Mapping[str, Any]]) -> list[str]:
        checked = [check_message(m, i) for i, m in enumerate(messages)]
        with self._lock:
            self.clear(session_id)
            return self.extend(session_id, checked) if checked else []

    def token_counts(self, session_id: str, counter: str) -> dict[str, int]:
        with self._lock:
            return dict(self._tokens.get((session_id, counter), {}))

    def record_tokens(self, session_id: str, counter: str, counts: Mapping[str, int]) -> None:
        with self._lock:
            self._tokens.setdefault((session_id, counter), {}).update(counts)

    def put_summary(self, summary: Summary) -> None:
        with self._lock:
            self._summaries.setdefault(summary.session_id, {})[summary.summary_id] = summary

    def summaries(self, session_id: str, *, include_invalidated: bool = False) -> list[Summary]:
        with self._lock:
            found = list(self._summaries.get(session_id, {}).values())
        return sort_summaries(s for s in found if include_invalidated or s.invalidated_by is None)

    def invalidate_summary(self, session_id: str, summary_id: str, by: str) -> None:
        with self._lock:
            table = self._summaries.get(session_id, {})
            if summary_id not in table:
                raise UnknownTurnError(f"session {session_id!r} holds no summary {summary_id!r}")
            old = table[summary_id]
            table[summary_id] = Summary(**{**old.__dict__, "invalidated_by": by})

    def cached_text(self, key: str) -> str | None:
        with self._lock:
            return self._cache.get(key)

    def cache_text(self, key: str, text: str) -> None:
        with self._lock:
            self._cache.setdefault(key, text)

    def record_usage(self, session_id: str, rows: Iterable[Mapping[str, Any]]) -> None:
        kept = [{k: r[k] for k in USAGE_FIELDS} for r in rows]
        with self._lock:
            table = self._usage.setdefault(session_id, {})
            for row in kept:
                table.setdefault((row["base"], row["model"], row["id"]), row)

    def usage(self, session_id: str) -> list[dict[str, Any]]:
        with self._lock:
            table = self._usage.get(session_id, {})
            return [dict(table[key]) for key in sorted(table)]

    def record_eviction(self, session_id: str, turn_ids: Sequence[str], reason: str) -> None:
        with self._lock:
            event = EvictionEvent(session_id, tuple(turn_ids), reason, time.time())
            self._evictions.setdefault(session_id, []).append(event)

    def evictions(self, session_id: str) -> list[EvictionEvent]:
        with self._lock:
            return list(self._evictions.get(session_id, []))

    def request_rehydration(self, session_id: str, turn_ids: Sequence[str]) -> None:
        self.get_turns(session_id, turn_ids)  # validates
        with self._lock:
            self._pending.setdefault(session_id, set()).update(turn_ids)

    def take_rehydration(self, session_id: str) -> list[str]:
        with self._lock:
            ids = self._pending.pop(session_id, set())
        return sorted(ids, key=turn_seq)

    def close(self) -> None:
        """Nothing to release."""


def turn_seq(turn_id: str) -> int:
    """The position encoded in a ``t_<n>`` id (ids from elsewhere sort last)."""
    head, _, tail = turn_id.partition("_")
    return int(tail) if head == "t" and tail.isdigit() else 1 << 62


def sort_summaries(summaries: Iterable[Summary]) -> list[Summary]:
    """Summaries by level, then by first covered turn, then id (a total, deterministic order)."""
    return sorted(
        summaries,
        key=lambda s: (s.level, turn_seq(s.source_turn_ids[0]) if s.source_turn_ids else 0, s.summary_id),
    )
