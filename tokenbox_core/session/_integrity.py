"""What an archive file must be before :class:`SQLiteSessionStore` reads or writes it (issue 36 §2).

:func:`validate` runs at open, before any write (a migration included), and reads the whole file once:

1. SQLite's own ``PRAGMA integrity_check`` (pages, b-trees, records, indexes against their tables);
2. the schema objects are exactly those of the version the file claims — no table missing, renamed, altered or
   added (the expected schema is built by running the migrations in memory);
3. each session's turns are numbered ``1..n`` without a gap, and each turn id is ``t_<seq>``;
4. each turn's content hash (schema version 4 on) matches its stored message, so a message changed outside
   TokenBox is refused rather than read back altered.

Any failure is a :class:`SessionStoreError` naming the file and what is wrong, and the file is left untouched.
:func:`turn_digest` is the content hash the store writes with every turn and checks again on every read.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import Any

from tokenbox_core.errors import SessionStoreError
from tokenbox_core.session._schema import APPLICATION_ID, DIGEST_VERSION, MIGRATIONS, SCHEMA_VERSION

__all__ = ["backfill_digests", "check_header", "check_turn", "identity", "turn_digest", "validate"]

_HEADER = b"SQLite format 3\x00"

_SchemaShape = dict[tuple[str, str], tuple[Any, ...]]


def turn_digest(session_id: str, seq: int, turn_id: str, message: str) -> str:
    """The content hash of a stored turn: SHA-256 (first 32 hex digits) of its session, position, id and JSON."""
    data = "\x00".join((session_id, str(seq), turn_id, message)).encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()[:32]


def check_header(path: Path, *, read_only: bool = False) -> None:
    """Refuse a directory, a file that is not SQLite, and (``read_only``) a missing or empty file, unread."""
    if path.is_dir():
        raise SessionStoreError(f"{path} is a directory; give SQLiteSessionStore a file path")
    size = path.stat().st_size if path.exists() else 0
    if size == 0:
        if read_only:
            raise SessionStoreError(
                f"{path} is empty: not a session archive yet; a ContextSession or SQLiteSessionStore creates one"
            )
        return
    with path.open("rb") as fh:
        head = fh.read(len(_HEADER))
    if head != _HEADER:
        raise SessionStoreError(
            f"{path} is not a SQLite database (header {head[:16]!r}); it was left untouched — "
            f"point SQLiteSessionStore at a new file or at an existing TokenBox session archive"
        )


def identity(conn: sqlite3.Connection, path: Path) -> tuple[int, int]:
    """The file's application id and schema version; refuse another application's file and a newer schema.

    A SQLite file with no schema object, no application id and version 0 holds nothing: it may become an archive.
    """
    app = int(conn.execute("PRAGMA application_id").fetchone()[0])
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
    if app != APPLICATION_ID and (tables or version or app):
        raise SessionStoreError(
            f"{path} is a SQLite database of another application (application_id {app:#x}, "
            f"{tables} schema objects); it was left untouched — use a new file for the session archive"
        )
    if version > SCHEMA_VERSION:
        raise SessionStoreError(
            f"{path} has session schema version {version} but this TokenBox reads up to "
            f"{SCHEMA_VERSION}; upgrade tokenbox-context to open it"
        )
    return app, version


def validate(conn: sqlite3.Connection, path: Path, version: int) -> None:
    """Refuse ``path`` (:class:`SessionStoreError`) unless it is a sound archive of schema ``version``."""
    problems = [r[0] for r in conn.execute("PRAGMA integrity_check(5)").fetchall()]
    if problems != ["ok"]:
        raise _refuse(path, f"SQLite's integrity check failed ({'; '.join(map(str, problems))})")
    _check_schema(conn, path, version)
    if version >= 1:
        _check_turns(conn, path, version)


def backfill_digests(conn: sqlite3.Connection) -> None:
    """Write the content hash of every turn (the migration to :data:`DIGEST_VERSION`, inside its transaction)."""
    rows = conn.execute("SELECT session_id, seq, turn_id, message FROM turns").fetchall()
    conn.executemany(
        "UPDATE turns SET digest = ? WHERE session_id = ? AND seq = ?",
        [(turn_digest(s, int(q), t, m), s, q) for s, q, t, m in rows],
    )


def _refuse(path: Path, what: str) -> SessionStoreError:
    return SessionStoreError(
        f"session archive {path}: {what}; it was left untouched — restore it from a backup, or point the store "
        f"at a new file"
    )


def _shape(conn: sqlite3.Connection) -> _SchemaShape:
    """Every schema object TokenBox creates (SQLite's internal ones aside) with its columns."""
    shape: _SchemaShape = {}
    objects = conn.execute(
        "SELECT type, name, tbl_name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name"
    ).fetchall()
    for kind, name, table in objects:
        if kind == "table":
            columns = conn.execute(f'PRAGMA table_info("{name}")').fetchall()
            shape[(kind, name)] = tuple((c[1], str(c[2]).upper(), c[3], c[5]) for c in columns)
        else:
            shape[(kind, name)] = (table,)
    return shape


def _expected(version: int) -> _SchemaShape:
    """The schema version ``version`` has, built by running its migrations in memory (about a millisecond, once
    per open: not worth a process-wide memo)."""
    conn = sqlite3.connect(":memory:")
    try:
        for number in range(version):
            conn.executescript(MIGRATIONS[number])
        return _shape(conn)
    finally:
        conn.close()


def _check_schema(conn: sqlite3.Connection, path: Path, version: int) -> None:
    have, want = _shape(conn), _expected(version)
    if have == want:
        return
    missing = [f"{k} {n!r}" for k, n in want if (k, n) not in have]
    extra = [f"{k} {n!r}" for k, n in have if (k, n) not in want]
    altered = [f"{k} {n!r}" for k, n in want if (k, n) in have and have[(k, n)] != want[(k, n)]]
    found = "; ".join(
        part
        for part in (
            f"missing {', '.join(missing)}" if missing else "",
            f"not TokenBox's {', '.join(extra)}" if extra else "",
            f"altered {', '.join(altered)}" if altered else "",
        )
        if part
    )
    raise _refuse(path, f"its schema is not TokenBox's schema version {version} ({found})")


def _check_turns(conn: sqlite3.Connection, path: Path, version: int) -> None:
    digest = "digest" if version >= DIGEST_VERSION else "NULL"
    rows = conn.execute(f"SELECT session_id, seq, turn_id, message, {digest} FROM turns ORDER BY session_id, seq")
    session, expected = None, 1
    for session_id, seq, turn_id, message, stored in rows:
        if session_id != session:
            session, expected = session_id, 1
        check_turn(path, session_id, seq, turn_id, message, stored, expected=expected, hashed=digest != "NULL")
        expected += 1


def check_turn(
    path: Path, session_id: Any, seq: Any, turn_id: Any, message: Any, stored: Any, *, expected: int, hashed: bool
) -> None:
    """Refuse a turn row that is not the ``expected``-th turn of its session as TokenBox wrote it."""
    if not isinstance(seq, int) or not isinstance(session_id, str):
        raise _refuse(path, f"a turn of session {session_id!r} has position {seq!r}, which TokenBox never writes")
    if seq != expected:
        raise _refuse(
            path,
            f"session {session_id!r} has a gap in its turn sequence: turn t_{expected} is missing (the next "
            f"stored turn is t_{seq})",
        )
    if turn_id != f"t_{seq}":
        raise _refuse(path, f"turn {seq} of session {session_id!r} has id {turn_id!r} instead of 't_{seq}'")
    if not isinstance(message, str):
        raise _refuse(path, f"turn {turn_id} of session {session_id!r} holds a {type(message).__name__}, not JSON")
    if hashed and stored != turn_digest(session_id, seq, turn_id, message):
        raise _refuse(
            path,
            f"turn {turn_id} of session {session_id!r} does not match its content hash (it was changed outside "
            f"TokenBox)",
        )
