"""``SQLiteSessionStore``: the session archive in one SQLite file (standard library ``sqlite3``).

WAL journal, one connection per thread and process (closed when its thread has ended and
another thread opens one), every write in a ``BEGIN
IMMEDIATE`` transaction with a busy timeout, so several threads and processes
can append to the same file and nothing committed is lost when a writer is
killed.  ``synchronous=NORMAL`` (the WAL default recommendation) survives
process crashes; pass ``synchronous="FULL"`` to also survive power loss at the
price of an fsync per commit.

A file that is not a SQLite database, belongs to another application, is
corrupt, was changed outside TokenBox, or was written by a newer TokenBox raises
:class:`SessionStoreError` — the file is never reset and never written to.
Opening validates the whole file once, about 0.3 s for 170 MB
(:mod:`tokenbox_core.session._integrity`: SQLite's integrity check, the exact
schema, gap-free turn numbers, each turn's content hash); every read checks the
turns it returns again.  A 0-byte file, or a SQLite file with no table and no
application id, is initialised.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tokenbox_core.errors import SessionError, SessionStoreError, UnknownTurnError
from tokenbox_core.session._integrity import backfill_digests, check_header, check_turn, identity, turn_digest, validate
from tokenbox_core.session._model import EvictionEvent, Summary, Turn, check_message, message_text, turn_id_for
from tokenbox_core.session._schema import APPLICATION_ID, DIGEST_VERSION, MIGRATIONS, SCHEMA_VERSION
from tokenbox_core.session._store import USAGE_FIELDS, missing_ids, sort_summaries, turn_seq
from tokenbox_core.tokens import canonical_json

__all__ = ["SQLiteSessionStore"]

_SYNC = ("OFF", "NORMAL", "FULL", "EXTRA")
_SUMMARY_COLUMNS = (
    "session_id, summary_id, level, source_ids, source_turn_ids, text, tokens, source_tokens, block_hash, "
    "summarizer, summary_version, created_at, invalidated_by, extra"
)


class SQLiteSessionStore:
    """A :class:`~tokenbox_core.session.SessionStore` in a SQLite file (chapter §6.10; issue 13 §1).

    Args:
        path: the database file; created (with the current schema) when missing or empty.
        timeout: seconds a writer waits for another writer's lock before :class:`SessionStoreError`.
        synchronous: SQLite's ``synchronous`` level (``"NORMAL"`` or ``"FULL"``; see the module docstring).
        read_only: open an existing archive to read it as it is (any schema version, never migrated); every
            write raises :class:`SessionStoreError` (``tokenbox session`` opens archives this way).

    >>> import tempfile, os
    >>> store = SQLiteSessionStore(os.path.join(tempfile.mkdtemp(), "s.db"))
    >>> store.append("s1", {"role": "user", "content": "hi"}), store.count("s1")
    ('t_1', 1)
    >>> store.close()
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        timeout: float = 30.0,
        synchronous: str = "NORMAL",
        read_only: bool = False,
    ) -> None:
        if synchronous.upper() not in _SYNC:
            raise SessionError(f"synchronous={synchronous!r} is not one of {', '.join(_SYNC)}; use 'NORMAL' or 'FULL'")
        if timeout <= 0:
            raise SessionError(f"timeout must be > 0 seconds, got {timeout}")
        self.path = Path(path)
        self._timeout = timeout
        self._synchronous = synchronous.upper()
        self._local = threading.local()
        self._all: list[tuple[threading.Thread, sqlite3.Connection]] = []  # each connection and its thread
        self._all_lock = threading.Lock()
        self.read_only = bool(read_only)
        self._hashed = True  # whether turns carry their content hash (schema version >= DIGEST_VERSION)
        check_header(self.path, read_only=self.read_only)
        try:
            self._migrate(self._conn())
        except BaseException:
            self.close()
            raise

    # -- connections ------------------------------------------------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None and getattr(self._local, "pid", None) == os.getpid():
            return conn
        try:
            target, uri = (f"{self.path.resolve().as_uri()}?mode=ro", True) if self.read_only else (self.path, False)
            conn = sqlite3.connect(
                target, timeout=self._timeout, isolation_level=None, check_same_thread=False, uri=uri
            )
            conn.execute(f"PRAGMA busy_timeout = {int(self._timeout * 1000)}")
            conn.execute(f"PRAGMA synchronous = {self._synchronous}")
        except sqlite3.Error as exc:
            raise self._wrap(exc) from exc
        self._local.conn, self._local.pid = conn, os.getpid()
        with self._all_lock:  # a thread that ended (an event loop's worker, an async hook ran there) frees its own
            ended = [c for t, c in self._all if not t.is_alive()]
            self._all = [(t, c) for t, c in self._all if t.is_alive()] + [(threading.current_thread(), conn)]
        for old in ended:
            old.close()
        return conn

    def _wrap(self, exc: sqlite3.Error) -> SessionStoreError:
        text = str(exc)
        if "locked" in text or "busy" in text:
            hint = f"another writer held the lock for more than {self._timeout:g} s; raise timeout="
        elif "malformed" in text or "not a database" in text or "corrupt" in text:
            hint = "the file is corrupt; restore it from a backup (it was left untouched)"
        else:
            hint = "the file was left untouched"
        return SessionStoreError(f"session archive {self.path}: {text} — {hint}")

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        if self.read_only:
            raise SessionStoreError(f"session archive {self.path} was opened with read_only=True; open it without")
        conn = self._conn()
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise self._wrap(exc) from exc

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        try:
            return self._conn().execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise self._wrap(exc) from exc

    def _migrate(self, conn: sqlite3.Connection) -> None:
        try:
            app, version = identity(conn, self.path)
            if app == APPLICATION_ID or version:
                validate(conn, self.path, version)  # before anything is written, a migration included
            if self.read_only:
                if app != APPLICATION_ID:
                    raise SessionStoreError(f"{self.path} holds no session archive yet (a SQLite file with no table)")
                self._hashed = version >= DIGEST_VERSION
                return
            if version == SCHEMA_VERSION and app == APPLICATION_ID:
                return
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("BEGIN IMMEDIATE")
            try:
                app, version = identity(conn, self.path)  # another process may have migrated meanwhile
                for number in range(version, SCHEMA_VERSION):
                    for statement in MIGRATIONS[number].split(";\n"):
                        if statement.strip():
                            conn.execute(statement)
                    if number + 1 == DIGEST_VERSION:
                        backfill_digests(conn)
                if version < SCHEMA_VERSION:
                    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise self._wrap(exc) from exc

    @property
    def schema_version(self) -> int:
        """The file's schema version (``PRAGMA user_version``)."""
        return int(self._read("PRAGMA user_version")[0][0])

    def check(self) -> None:
        """Run SQLite's integrity check; :class:`SessionStoreError` when the file is damaged."""
        rows = self._read("PRAGMA integrity_check")
        if [r[0] for r in rows] != ["ok"]:
            raise SessionStoreError(f"session archive {self.path} failed its integrity check: {rows[:5]}")

    def close(self) -> None:
        """Close every connection this store opened (in any thread)."""
        with self._all_lock:
            conns, self._all = [c for _, c in self._all], []
        for conn in conns:
            conn.close()
        self._local = threading.local()

    def __enter__(self) -> SQLiteSessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SQLiteSessionStore({str(self.path)!r})"

    # -- turns ------------------------------------------------------------------------------------------------

    def append(self, session_id: str, message: Mapping[str, Any]) -> str:
        """Archive one message and commit; return its turn id."""
        return self.extend(session_id, [message])[0]

    def extend(self, session_id: str, messages: Iterable[Mapping[str, Any]]) -> list[str]:
        """Archive messages in one transaction; return their turn ids."""
        return self._extend(session_id, messages, replace=False)

    def replace(self, session_id: str, messages: Iterable[Mapping[str, Any]]) -> list[str]:
        """Clear the session and archive ``messages`` in one transaction (ids restart at ``t_1``)."""
        return self._extend(session_id, messages, replace=True)

    def _extend(self, session_id: str, messages: Iterable[Mapping[str, Any]], *, replace: bool) -> list[str]:
        checked = [check_message(m, i) for i, m in enumerate(messages)]
        now = time.time()
        with self._write() as conn:
            if replace:
                for table in ("turns", "turn_tokens", "summaries", "evictions", "rehydrations", "usage"):
                    conn.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))
            seq = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM turns WHERE session_id = ?", (session_id,))
            last = int(seq.fetchone()[0])
            rows = []
            for offset, m in enumerate(checked, start=1):
                calls = m.get("tool_calls")
                rows.append((
                    session_id, last + offset, turn_id_for(last + offset), m["role"], message_text(m),
                    m.get("name"), canonical_json(calls) if calls else None, m.get("tool_call_id"),
                    canonical_json(m), now,
                ))  # fmt: skip
            if rows:
                conn.executemany(
                    "INSERT INTO turns VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [(*r, turn_digest(r[0], r[1], r[2], r[8])) for r in rows],
                )
        return [r[2] for r in rows]

    @property
    def _columns(self) -> str:
        return f"session_id, turn_id, seq, message, created_at, {'digest' if self._hashed else 'NULL'}"

    def _turn(self, row: Sequence[Any], expected: int | None = None) -> Turn:
        """A stored turn, checked again (position, id, content hash, JSON) as it is read."""
        session_id, turn_id, seq, message, created_at, digest = row
        at = expected if expected is not None else seq if isinstance(seq, int) else -1
        check_turn(self.path, session_id, seq, turn_id, message, digest, expected=at, hashed=self._hashed)
        try:
            data = json.loads(message)
            stamp = float(created_at)
        except (TypeError, ValueError) as exc:
            raise self._corrupt(f"turn {turn_id} of session {session_id!r} is not a stored message ({exc})") from exc
        if not isinstance(data, dict):
            raise self._corrupt(f"turn {turn_id} of session {session_id!r} holds a JSON {type(data).__name__}")
        return Turn(session_id, turn_id, seq, data, stamp)

    def _corrupt(self, what: str) -> SessionStoreError:
        return SessionStoreError(f"session archive {self.path}: {what}; restore it from a backup")

    def turns(self, session_id: str, *, start: int = 0, stop: int | None = None) -> list[Turn]:
        """The session's turns in order; ``start``/``stop`` are 0-based positions like a slice."""
        if start < 0 or (stop is not None and stop < 0):
            return self.turns(session_id)[start:stop]
        limit = -1 if stop is None else max(0, stop - start)
        rows = self._read(
            f"SELECT {self._columns} FROM turns WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?",
            (session_id, start, limit),
        )
        return [self._turn(r, start + 1 + k) for k, r in enumerate(rows)]

    def get_turns(self, session_id: str, turn_ids: Sequence[str]) -> list[Turn]:
        """The given turns in the order asked; :class:`UnknownTurnError` names ids the session lacks."""
        found: dict[str, Turn] = {}
        ids = list(dict.fromkeys(turn_ids))
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            marks = ", ".join("?" * len(chunk))
            rows = self._read(
                f"SELECT {self._columns} FROM turns WHERE session_id = ? AND turn_id IN ({marks})",
                (session_id, *chunk),
            )
            found.update((r[1], self._turn(r)) for r in rows)
        if len(found) != len(ids):
            raise missing_ids(session_id, ids, found)
        return [found[i] for i in turn_ids]

    def count(self, session_id: str) -> int:
        """How many turns the session holds."""
        # seq runs 1..n without gaps, so the count is the largest seq: one primary-key probe, not a scan
        return int(self._read("SELECT COALESCE(MAX(seq), 0) FROM turns WHERE session_id = ?", (session_id,))[0][0])

    def sessions(self) -> list[str]:
        """Session ids, sorted."""
        return [r[0] for r in self._read("SELECT DISTINCT session_id FROM turns ORDER BY session_id")]

    def clear(self, session_id: str) -> None:
        """Delete everything the session holds, in one transaction."""
        with self._write() as conn:
            for table in ("turns", "turn_tokens", "summaries", "evictions", "rehydrations", "usage"):
                conn.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))

    # -- token counts -----------------------------------------------------------------------------------------

    def token_counts(self, session_id: str, counter: str) -> dict[str, int]:
        """Recorded token counts for ``counter`` (turn id → tokens)."""
        rows = self._read(
            "SELECT turn_id, tokens FROM turn_tokens WHERE session_id = ? AND counter = ?", (session_id, counter)
        )
        return {r[0]: int(r[1]) for r in rows}

    def record_tokens(self, session_id: str, counter: str, counts: Mapping[str, int]) -> None:
        """Record token counts for ``counter`` (replacing earlier ones)."""
        with self._write() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO turn_tokens VALUES (?, ?, ?, ?)",
                [(session_id, tid, counter, int(n)) for tid, n in sorted(counts.items())],
            )

    # -- summaries --------------------------------------------------------------------------------------------

    def put_summary(self, summary: Summary) -> None:
        """Persist a summary with its provenance (replacing one with the same id)."""
        first = turn_seq(summary.source_turn_ids[0]) if summary.source_turn_ids else 0
        with self._write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO summaries VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    summary.session_id, summary.summary_id, summary.level, canonical_json(list(summary.source_ids)),
                    canonical_json(list(summary.source_turn_ids)), first, summary.text, summary.tokens,
                    summary.source_tokens, summary.block_hash, summary.summarizer, summary.summary_version,
                    summary.created_at, summary.invalidated_by, canonical_json(dict(summary.extra)),
                ),
            )  # fmt: skip

    def summaries(self, session_id: str, *, include_invalidated: bool = False) -> list[Summary]:
        """The session's summaries by level, then by first covered turn."""
        where = "" if include_invalidated else " AND invalidated_by IS NULL"
        rows = self._read(f"SELECT {_SUMMARY_COLUMNS} FROM summaries WHERE session_id = ?{where}", (session_id,))
        try:
            found = [
                Summary(
                    r[0], r[1], int(r[2]), tuple(json.loads(r[3])), tuple(json.loads(r[4])), r[5], int(r[6]),
                    int(r[7]), r[8], r[9], int(r[10]), float(r[11]), r[12], json.loads(r[13]),
                )
                for r in rows
            ]  # fmt: skip
        except (TypeError, ValueError) as exc:
            raise self._corrupt(f"a summary of session {session_id!r} cannot be read ({exc})") from exc
        return sort_summaries(found)

    def invalidate_summary(self, session_id: str, summary_id: str, by: str) -> None:
        """Mark a summary invalidated by turn ``by`` (kept for provenance, no longer reused)."""
        with self._write() as conn:
            cur = conn.execute(
                "UPDATE summaries SET invalidated_by = ? WHERE session_id = ? AND summary_id = ?",
                (by, session_id, summary_id),
            )
            if cur.rowcount == 0:
                raise UnknownTurnError(f"session {session_id!r} holds no summary {summary_id!r}")

    def cached_text(self, key: str) -> str | None:
        """A cached generated text, or None."""
        rows = self._read("SELECT text FROM text_cache WHERE key = ?", (key,))
        return str(rows[0][0]) if rows else None

    def cache_text(self, key: str, text: str) -> None:
        """Cache ``text`` under ``key``; the first write wins so replays stay byte-identical."""
        with self._write() as conn:
            conn.execute("INSERT OR IGNORE INTO text_cache VALUES (?, ?, ?)", (key, text, time.time()))

    # -- usage observations ---------------------------------------------------------------------------------------

    def record_usage(self, session_id: str, rows: Iterable[Mapping[str, Any]]) -> None:
        """Keep usage observations with the session (see :class:`~tokenbox_core.models.UsageCalibrator`); one
        already kept (same base, model and id) is kept once."""
        now = time.time()
        with self._write() as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO usage VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(session_id, *(r[k] for k in USAGE_FIELDS), now) for r in rows],
            )

    def usage(self, session_id: str) -> list[dict[str, Any]]:
        """The session's usage observations, sorted by base, model and id."""
        rows = self._read(
            f"SELECT {', '.join(USAGE_FIELDS)} FROM usage WHERE session_id = ? ORDER BY base, model, id", (session_id,)
        )
        return [dict(zip(USAGE_FIELDS, r, strict=True)) for r in rows]

    # -- evictions and rehydration ----------------------------------------------------------------------------

    def record_eviction(self, session_id: str, turn_ids: Sequence[str], reason: str) -> None:
        """Record an eviction event."""
        with self._write() as conn:
            conn.execute(
                "INSERT INTO evictions (session_id, turn_ids, reason, created_at) VALUES (?, ?, ?, ?)",
                (session_id, canonical_json(list(turn_ids)), reason, time.time()),
            )

    def evictions(self, session_id: str) -> list[EvictionEvent]:
        """Eviction events in the order recorded."""
        rows = self._read(
            "SELECT turn_ids, reason, created_at FROM evictions WHERE session_id = ? ORDER BY id", (session_id,)
        )
        try:
            return [EvictionEvent(session_id, tuple(json.loads(r[0])), r[1], float(r[2])) for r in rows]
        except (TypeError, ValueError) as exc:
            raise self._corrupt(f"an eviction record of session {session_id!r} cannot be read ({exc})") from exc

    def request_rehydration(self, session_id: str, turn_ids: Sequence[str]) -> None:
        """Pin the turns for the session's next compile (validated first)."""
        self.get_turns(session_id, turn_ids)
        with self._write() as conn:
            conn.executemany("INSERT OR IGNORE INTO rehydrations VALUES (?, ?)", [(session_id, i) for i in turn_ids])

    def take_rehydration(self, session_id: str) -> list[str]:
        """Pending rehydrated ids in turn order; the request is removed in the same transaction."""
        if not self._read("SELECT 1 FROM rehydrations WHERE session_id = ? LIMIT 1", (session_id,)):
            return []  # the common case: no write transaction at all
        with self._write() as conn:
            rows = conn.execute("SELECT turn_id FROM rehydrations WHERE session_id = ?", (session_id,)).fetchall()
            conn.execute("DELETE FROM rehydrations WHERE session_id = ?", (session_id,))
        return sorted((r[0] for r in rows), key=turn_seq)
