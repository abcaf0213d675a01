"""``PostgresSessionStore``: the session archive in PostgreSQL, shared by a fleet of agents (issue 34).

Needs the ``postgres`` extra (``pip install "tokenbox-context[postgres]"``: psycopg 3, its binary wheel and its
pool) and PostgreSQL 13 or newer.  The same contract as :class:`~tokenbox_core.session.SQLiteSessionStore`
(append-only, ordered per session, every message once; summaries, evictions, rehydration requests, token counts,
usage observations, the generated-text cache), plus full-text search served by the database
(:meth:`PostgresSessionStore.search`, see ``_postgres_search``), which a
:class:`~tokenbox_core.ContextSession` on this store uses for recall.

**Ordering.** A session's sequence lives in its ``tokenbox_sessions`` row: an append runs
``INSERT … ON CONFLICT DO UPDATE SET last_seq = last_seq + n RETURNING last_seq``, which takes that row's lock
and reserves ``n`` positions in one statement, then inserts its turns, in one transaction.  Appenders to one
session queue on that row until the holder commits, so ids are dense and in commit order; appenders to other
sessions never wait.  A row lock rather than an advisory lock because the row *is* the counter (``count`` is
one primary-key read), it is released with the transaction whatever happens to the client, it works through
transaction-pooling proxies (PgBouncer), and it cannot collide: advisory keys are 64-bit hashes of
(tenant, session), shared with every other user of the database.  Readers take no lock (MVCC): reads never
block writers and see only committed turns.

**Failures.** Each write is one transaction: a killed writer loses nothing it committed and leaves nothing
half-written.  A connection lost before ``COMMIT`` was sent is retried on a fresh connection (``retries``
times); one lost *during* ``COMMIT`` is resolved by asking the server whether that transaction committed
(``pg_xact_status``), so a retry never duplicates a message.  What cannot be resolved raises
:class:`~tokenbox_core.errors.SessionStoreError`.

**Scoping.** ``tenant`` (default ``"default"``) is part of every key and every query: two tenants may use the
same session ids, and neither reads the other's turns, summaries, cache or usage.
"""

from __future__ import annotations

import json
import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tokenbox_core.errors import SessionError, UnknownTurnError
from tokenbox_core.session._model import EvictionEvent, Summary, Turn, check_message, message_text, turn_id_for
from tokenbox_core.session._postgres_db import PostgresDatabase
from tokenbox_core.session._postgres_schema import SESSION_TABLES
from tokenbox_core.session._postgres_search import search_turns
from tokenbox_core.session._recall import Hit
from tokenbox_core.session._store import USAGE_FIELDS, missing_ids, sort_summaries, turn_seq
from tokenbox_core.tokens import canonical_json

if TYPE_CHECKING:
    from psycopg import Connection, Cursor

__all__ = ["PostgresSessionStore"]

_TURN_COLUMNS = "session_id, turn_id, seq, message, created_at"
_SUMMARY_COLUMNS = (
    "session_id, summary_id, level, source_ids, source_turn_ids, text, tokens, source_tokens, block_hash, "
    "summarizer, summary_version, created_at, invalidated_by, extra"
)


class PostgresSessionStore:
    """A :class:`~tokenbox_core.session.SessionStore` in PostgreSQL (see the module docstring).

    Args:
        dsn_or_pool: a connection string (``postgresql://user@host/db``; ``postgresql+psycopg://`` too), whose
            pool the store owns and closes, or a ``psycopg_pool.ConnectionPool`` the caller owns.
        tenant: the scope of every row this store reads and writes.
        max_connections: the size of the pool the store makes from a connection string.
        timeout: seconds to wait for a connection (and to connect) before :class:`SessionStoreError`.
        retries: how many times a write or read is tried again on a fresh connection after the connection was
            lost (never after it committed).
    """

    def __init__(
        self,
        dsn_or_pool: Any,
        *,
        tenant: str = "default",
        max_connections: int = 4,
        timeout: float = 30.0,
        retries: int = 2,
    ) -> None:
        if not isinstance(tenant, str) or not tenant:
            raise SessionError(f"tenant must be a non-empty string, got {tenant!r}")
        self.tenant = tenant
        self._db = PostgresDatabase(dsn_or_pool, max_connections=max_connections, timeout=timeout, retries=retries)
        self._run, self._read = self._db.run, self._db.read

    @staticmethod
    def accepts(uri: object) -> bool:
        """Whether ``uri`` is a PostgreSQL connection URI (``postgresql://``, ``postgres://``, SQLAlchemy's
        ``postgresql+psycopg://``): what adapters taking "a path or a URI" open with this store."""
        return isinstance(uri, str) and uri.startswith(("postgresql://", "postgres://", "postgresql+", "postgres+"))

    @property
    def schema_version(self) -> int:
        """The database's schema version (the ``tokenbox_schema`` row)."""
        return self._db.schema_version

    def close(self) -> None:
        """Close the pool the store made (a pool passed in is the caller's to close)."""
        self._db.close()

    def __enter__(self) -> PostgresSessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PostgresSessionStore({self._db.where!r}, tenant={self.tenant!r})"

    # -- turns ------------------------------------------------------------------------------------------------

    def append(self, session_id: str, message: Mapping[str, Any]) -> str:
        """Archive one message and commit; return its turn id."""
        return self.extend(session_id, [message])[0]

    def extend(self, session_id: str, messages: Iterable[Mapping[str, Any]]) -> list[str]:
        """Archive messages in one transaction, in order; return their turn ids."""
        return self._extend(session_id, [check_message(m) for m in messages], replace=False)

    def replace(self, session_id: str, messages: Iterable[Mapping[str, Any]]) -> list[str]:
        """Clear the session and archive ``messages`` in one transaction (ids restart at ``t_1``)."""
        return self._extend(session_id, [check_message(m) for m in messages], replace=True)

    def _extend(self, session_id: str, checked: list[dict[str, Any]], *, replace: bool) -> list[str]:
        if not checked and not replace:
            return []
        now = time.time()
        key = (self.tenant, session_id)

        def work(conn: Connection[Any]) -> list[str]:
            cur = conn.cursor()
            if replace:
                self._lock_session(cur, session_id)
                self._delete_session(cur, session_id)
                if not checked:
                    return []
            row = cur.execute(
                "INSERT INTO tokenbox_sessions AS s VALUES (%s, %s, %s) ON CONFLICT (tenant, session_id) "
                "DO UPDATE SET last_seq = s.last_seq + EXCLUDED.last_seq RETURNING last_seq",
                (*key, len(checked)),
            ).fetchone()
            first = int(row[0]) - len(checked) + 1 if row else 1
            rows = []
            for seq, m in enumerate(checked, start=first):
                calls = m.get("tool_calls")
                rows.append((
                    *key, seq, turn_id_for(seq), m["role"], message_text(m), m.get("name"),
                    canonical_json(calls) if calls else None, m.get("tool_call_id"), canonical_json(m), now,
                ))  # fmt: skip
            cur.executemany(
                "INSERT INTO tokenbox_turns (tenant, session_id, seq, turn_id, role, content, name, tool_calls, "
                "tool_call_id, message, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                rows,
            )
            return [str(r[3]) for r in rows]

        return self._run(work)

    def _lock_session(self, cur: Cursor[Any], session_id: str) -> None:
        cur.execute(
            "SELECT last_seq FROM tokenbox_sessions WHERE tenant = %s AND session_id = %s FOR UPDATE",
            (self.tenant, session_id),
        )

    def _delete_session(self, cur: Cursor[Any], session_id: str) -> None:
        for table in (*SESSION_TABLES, "tokenbox_sessions"):
            cur.execute(f"DELETE FROM {table} WHERE tenant = %s AND session_id = %s", (self.tenant, session_id))

    @staticmethod
    def _turn(row: Sequence[Any]) -> Turn:
        return Turn(row[0], row[1], int(row[2]), json.loads(row[3]), float(row[4]))

    def turns(self, session_id: str, *, start: int = 0, stop: int | None = None) -> list[Turn]:
        """The session's turns in order; ``start``/``stop`` are 0-based positions like a slice."""
        if start < 0 or (stop is not None and stop < 0):
            return self.turns(session_id)[start:stop]
        limit = None if stop is None else max(0, stop - start)
        rows = self._read(
            f"SELECT {_TURN_COLUMNS} FROM tokenbox_turns WHERE tenant = %s AND session_id = %s AND seq > %s "
            f"ORDER BY seq LIMIT %s",
            (self.tenant, session_id, start, limit),
        )
        return [self._turn(r) for r in rows]

    def get_turns(self, session_id: str, turn_ids: Sequence[str]) -> list[Turn]:
        """The given turns in the order asked; :class:`UnknownTurnError` names ids the session lacks."""
        ids = list(dict.fromkeys(turn_ids))
        rows = self._read(
            f"SELECT {_TURN_COLUMNS} FROM tokenbox_turns WHERE tenant = %s AND session_id = %s AND turn_id = ANY(%s)",
            (self.tenant, session_id, ids),
        )
        found = {r[1]: self._turn(r) for r in rows}
        if len(found) != len(ids):
            raise missing_ids(session_id, ids, found)
        return [found[i] for i in turn_ids]

    def count(self, session_id: str) -> int:
        """How many turns the session holds (its sequence row: one primary-key read)."""
        rows = self._read(
            "SELECT last_seq FROM tokenbox_sessions WHERE tenant = %s AND session_id = %s", (self.tenant, session_id)
        )
        return int(rows[0][0]) if rows else 0

    def sessions(self) -> list[str]:
        """The tenant's session ids, sorted."""
        rows = self._read(
            "SELECT session_id FROM tokenbox_sessions WHERE tenant = %s AND last_seq > 0 "
            'ORDER BY session_id COLLATE "C"',
            (self.tenant,),
        )
        return [r[0] for r in rows]

    def clear(self, session_id: str) -> None:
        """Delete everything the session holds, in one transaction."""

        def work(conn: Connection[Any]) -> None:
            cur = conn.cursor()
            self._lock_session(cur, session_id)
            self._delete_session(cur, session_id)

        self._run(work)

    def search(
        self,
        session_id: str,
        query: str,
        *,
        limit: int = 8,
        allowed: Collection[str] | None = None,
        min_relevance: float = 0.0,
        min_terms: int = 0,
        max_term_share: float = 1.0,
        upto: int | None = None,
    ) -> list[Hit]:
        """The session's turns for ``query``, ranked by the database's full-text index (best first, ties newer
        first): :class:`~tokenbox_core.session._recall.RecallIndex.search`'s arguments and relevance gate, over
        the first ``upto`` turns when given; see ``_postgres_search`` for where the ranking differs from FTS5's."""
        if limit < 1:
            raise SessionError(f"limit must be >= 1, got {limit}")
        size = self.count(session_id) if upto is None else min(upto, self.count(session_id))
        return search_turns(
            self._read, self.tenant, session_id, query, size=size, limit=limit, allowed=allowed,
            min_relevance=min_relevance, min_terms=min_terms, max_term_share=max_term_share,
        )  # fmt: skip

    # -- token counts, summaries, cache, usage ----------------------------------------------------------------

    def _write_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            self._run(lambda conn: conn.cursor().executemany(sql, rows))

    def token_counts(self, session_id: str, counter: str) -> dict[str, int]:
        """Recorded token counts for ``counter`` (turn id → tokens)."""
        rows = self._read(
            "SELECT turn_id, tokens FROM tokenbox_turn_tokens WHERE tenant = %s AND session_id = %s AND counter = %s",
            (self.tenant, session_id, counter),
        )
        return {r[0]: int(r[1]) for r in rows}

    def record_tokens(self, session_id: str, counter: str, counts: Mapping[str, int]) -> None:
        """Record token counts for ``counter`` (replacing earlier ones)."""
        self._write_many(
            "INSERT INTO tokenbox_turn_tokens VALUES (%s, %s, %s, %s, %s) "
            "ON CONFLICT (tenant, session_id, counter, turn_id) DO UPDATE SET tokens = EXCLUDED.tokens",
            [(self.tenant, session_id, tid, counter, int(n)) for tid, n in sorted(counts.items())],
        )

    def put_summary(self, summary: Summary) -> None:
        """Persist a summary with its provenance (replacing one with the same id)."""
        first = turn_seq(summary.source_turn_ids[0]) if summary.source_turn_ids else 0
        self._write_many(
            "INSERT INTO tokenbox_summaries VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
            "ON CONFLICT (tenant, session_id, summary_id) DO UPDATE SET level = EXCLUDED.level, "
            "source_ids = EXCLUDED.source_ids, source_turn_ids = EXCLUDED.source_turn_ids, "
            "first_seq = EXCLUDED.first_seq, text = EXCLUDED.text, tokens = EXCLUDED.tokens, "
            "source_tokens = EXCLUDED.source_tokens, block_hash = EXCLUDED.block_hash, "
            "summarizer = EXCLUDED.summarizer, summary_version = EXCLUDED.summary_version, "
            "created_at = EXCLUDED.created_at, invalidated_by = EXCLUDED.invalidated_by, extra = EXCLUDED.extra",
            [(
                self.tenant, summary.session_id, summary.summary_id, summary.level,
                canonical_json(list(summary.source_ids)), canonical_json(list(summary.source_turn_ids)), first,
                summary.text, summary.tokens, summary.source_tokens, summary.block_hash, summary.summarizer,
                summary.summary_version, summary.created_at, summary.invalidated_by,
                canonical_json(dict(summary.extra)),
            )],
        )  # fmt: skip

    def summaries(self, session_id: str, *, include_invalidated: bool = False) -> list[Summary]:
        """The session's summaries by level, then by first covered turn."""
        where = "" if include_invalidated else " AND invalidated_by IS NULL"
        rows = self._read(
            f"SELECT {_SUMMARY_COLUMNS} FROM tokenbox_summaries WHERE tenant = %s AND session_id = %s{where}",
            (self.tenant, session_id),
        )
        return sort_summaries(
            Summary(
                r[0], r[1], int(r[2]), tuple(json.loads(r[3])), tuple(json.loads(r[4])), r[5], int(r[6]),
                int(r[7]), r[8], r[9], int(r[10]), float(r[11]), r[12], json.loads(r[13]),
            )
            for r in rows
        )  # fmt: skip

    def invalidate_summary(self, session_id: str, summary_id: str, by: str) -> None:
        """Mark a summary invalidated by turn ``by`` (kept for provenance, no longer reused)."""

        def work(conn: Connection[Any]) -> int:
            cur = conn.execute(
                "UPDATE tokenbox_summaries SET invalidated_by = %s WHERE tenant = %s AND session_id = %s "
                "AND summary_id = %s",
                (by, self.tenant, session_id, summary_id),
            )
            return cur.rowcount

        if self._run(work) == 0:
            raise UnknownTurnError(f"session {session_id!r} holds no summary {summary_id!r}")

    def cached_text(self, key: str) -> str | None:
        """A cached generated text, or None."""
        rows = self._read("SELECT text FROM tokenbox_text_cache WHERE tenant = %s AND key = %s", (self.tenant, key))
        return str(rows[0][0]) if rows else None

    def cache_text(self, key: str, text: str) -> None:
        """Cache ``text`` under ``key``; the first write wins so replays stay byte-identical."""
        self._write_many(
            "INSERT INTO tokenbox_text_cache VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
            [(self.tenant, key, text, time.time())],
        )

    def record_usage(self, session_id: str, rows: Iterable[Mapping[str, Any]]) -> None:
        """Keep usage observations with the session; one already kept (same base, model and id) is kept once."""
        now = time.time()
        self._write_many(
            "INSERT INTO tokenbox_usage VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
            [(self.tenant, session_id, *(r[k] for k in USAGE_FIELDS), now) for r in rows],
        )

    def usage(self, session_id: str) -> list[dict[str, Any]]:
        """The session's usage observations, sorted by base, model and id."""
        rows = self._read(
            f"SELECT {', '.join(USAGE_FIELDS)} FROM tokenbox_usage WHERE tenant = %s AND session_id = %s "
            f'ORDER BY base COLLATE "C", model COLLATE "C", id COLLATE "C"',
            (self.tenant, session_id),
        )
        return [dict(zip(USAGE_FIELDS, r, strict=True)) for r in rows]

    # -- evictions and rehydration ----------------------------------------------------------------------------

    def record_eviction(self, session_id: str, turn_ids: Sequence[str], reason: str) -> None:
        """Record an eviction event."""
        self._write_many(
            "INSERT INTO tokenbox_evictions (tenant, session_id, turn_ids, reason, created_at) "
            "VALUES (%s, %s, %s, %s, %s)",
            [(self.tenant, session_id, canonical_json(list(turn_ids)), reason, time.time())],
        )

    def evictions(self, session_id: str) -> list[EvictionEvent]:
        """Eviction events in the order recorded."""
        rows = self._read(
            "SELECT turn_ids, reason, created_at FROM tokenbox_evictions WHERE tenant = %s AND session_id = %s "
            "ORDER BY id",
            (self.tenant, session_id),
        )
        return [EvictionEvent(session_id, tuple(json.loads(r[0])), r[1], float(r[2])) for r in rows]

    def request_rehydration(self, session_id: str, turn_ids: Sequence[str]) -> None:
        """Pin the turns for the session's next compile (validated first)."""
        self.get_turns(session_id, turn_ids)
        self._write_many(
            "INSERT INTO tokenbox_rehydrations VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
            [(self.tenant, session_id, i) for i in dict.fromkeys(turn_ids)],
        )

    def take_rehydration(self, session_id: str) -> list[str]:
        """Pending rehydrated ids in turn order; the request is removed in the same transaction."""
        probe = "SELECT 1 FROM tokenbox_rehydrations WHERE tenant = %s AND session_id = %s LIMIT 1"
        if not self._read(probe, (self.tenant, session_id)):
            return []  # the common case (every compile asks): no write transaction, no commit to wait for

        def work(conn: Connection[Any]) -> list[str]:
            rows = conn.execute(
                "DELETE FROM tokenbox_rehydrations WHERE tenant = %s AND session_id = %s RETURNING turn_id",
                (self.tenant, session_id),
            ).fetchall()
            return [str(r[0]) for r in rows]

        return sorted(self._run(work), key=turn_seq)
