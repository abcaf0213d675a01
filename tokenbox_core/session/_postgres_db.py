"""The PostgreSQL archive's connections: a pool, one transaction per write, retries, migrations.

:class:`PostgresDatabase` is what :class:`~tokenbox_core.session.PostgresSessionStore` talks to: it owns (or
borrows) a ``psycopg_pool.ConnectionPool``, runs each write as one transaction and each read as one statement,
retries what a lost connection interrupted before ``COMMIT``, resolves a lost ``COMMIT`` with
``pg_xact_status`` (PostgreSQL 13+) so nothing runs twice, and migrates the schema on open.  psycopg is
imported here, on first use: its absence is an :class:`ImportError` naming the ``postgres`` extra.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from typing import TYPE_CHECKING, Any, TypeVar

from tokenbox_core.errors import SessionError, SessionStoreError
from tokenbox_core.session._postgres_schema import COMPONENT, MIGRATION_LOCK, MIGRATIONS, SCHEMA_VERSION, VERSION_TABLE

if TYPE_CHECKING:
    from psycopg import Connection, Cursor
    from psycopg_pool import ConnectionPool

__all__ = ["EXTRA", "PostgresDatabase", "conninfo_of"]

EXTRA = 'pip install "tokenbox-context[postgres]"'
_T = TypeVar("_T")
_DRIVERS = ("postgresql+psycopg://", "postgresql+psycopg2://", "postgresql+asyncpg://", "postgres+psycopg://")


def _psycopg() -> Any:
    try:
        import psycopg
        import psycopg_pool  # noqa: F401  # the pool is part of the extra
    except ImportError as exc:
        raise ImportError(
            f"PostgresSessionStore needs psycopg 3 and its pool, which the 'postgres' extra installs: {EXTRA}"
        ) from exc
    return psycopg


def conninfo_of(uri: str) -> str:
    """A libpq connection string for ``uri``: SQLAlchemy's ``postgresql+psycopg://`` spelling is accepted."""
    for prefix in _DRIVERS:
        if uri.startswith(prefix):
            return "postgresql://" + uri[len(prefix) :]
    return uri


class PostgresDatabase:
    """The pool of one store, its transactions and its schema (see the module docstring)."""

    def __init__(self, dsn_or_pool: Any, *, max_connections: int, timeout: float, retries: int) -> None:
        psycopg = _psycopg()
        from psycopg_pool import ConnectionPool

        if max_connections < 1 or timeout <= 0 or retries < 0:
            raise SessionError(
                f"max_connections must be >= 1, timeout > 0 and retries >= 0; got {max_connections}, {timeout}, "
                f"{retries}"
            )
        self._retries = retries
        self._psycopg = psycopg
        self._closed = threading.Event()
        if isinstance(dsn_or_pool, str):
            conninfo = conninfo_of(dsn_or_pool)
            self.where = _describe(conninfo)
            try:  # a direct connection first: a bad address fails now, with libpq's own reason
                with psycopg.connect(conninfo, connect_timeout=max(1, int(timeout)), autocommit=True) as conn:
                    self._migrate(conn)
            except psycopg.Error as exc:
                raise SessionStoreError(f"cannot open the session archive at {self.where}: {exc}".strip()) from exc
            self._pool: ConnectionPool[Any] = ConnectionPool(
                conninfo,
                min_size=1,
                max_size=max_connections,
                kwargs={"autocommit": True},
                timeout=timeout,
                open=True,
                name="tokenbox-session-archive",
            )
            self._owns_pool = True
        elif isinstance(dsn_or_pool, ConnectionPool):
            self._pool, self._owns_pool = dsn_or_pool, False
            self.where = _describe(str(dsn_or_pool.conninfo))
            self.run(self._migrate)
        else:
            raise TypeError(
                f"PostgresSessionStore needs a connection string ('postgresql://user@host/db') or a "
                f"psycopg_pool.ConnectionPool, got {type(dsn_or_pool).__name__}"
            )

    def run(self, work: Callable[[Connection[Any]], _T], *, write: bool = True) -> _T:
        """``work(conn)`` in one transaction, retried on a fresh connection when the connection was lost before
        ``COMMIT``; a commit whose answer was lost is resolved with ``pg_xact_status`` (never run twice).  A read
        (``write=False``) runs as one statement outside an explicit transaction and takes no transaction id."""
        psycopg = self._psycopg
        for attempt in range(self._retries + 1):
            xid: str | None = None
            committing = False
            try:
                with self._pool.connection() as conn:
                    if not write:
                        return work(conn)
                    try:
                        if conn.autocommit:
                            conn.execute("BEGIN")
                        row = conn.execute("SELECT pg_current_xact_id()::text").fetchone()
                        xid = str(row[0]) if row else None
                        result = work(conn)
                        committing = True
                        conn.commit()
                        return result
                    except BaseException:
                        if not committing and not conn.closed:
                            with suppress(psycopg.Error):
                                conn.rollback()
                        raise
            except psycopg.OperationalError as exc:
                if committing:
                    status = self._commit_status(xid)
                    if status == "committed":
                        return result
                    if status != "aborted":
                        raise SessionStoreError(
                            f"session archive at {self.where}: the connection was lost while committing and the "
                            f"server reports the transaction as {status or 'unknown'}; check store.count(...) "
                            f"before writing again ({exc})"
                        ) from exc
                if attempt == self._retries or self._closed.is_set():
                    raise SessionStoreError(
                        f"session archive at {self.where}: the connection failed {attempt + 1} time(s) and nothing "
                        f"of this write was stored: {exc}; check the server, or raise retries= (now {self._retries})"
                    ) from exc
                time.sleep(0.05 * (attempt + 1))
            except psycopg.Error as exc:
                raise SessionStoreError(f"session archive at {self.where}: {exc}") from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _commit_status(self, xid: str | None) -> str | None:
        """Whether transaction ``xid`` committed, asked on a fresh connection ('in progress' is waited out)."""
        if xid is None:
            return None
        for _ in range(50):
            try:
                with self._pool.connection() as conn:
                    row = conn.execute("SELECT pg_xact_status(%s::xid8)", (xid,)).fetchone()
            except self._psycopg.Error:
                return None
            status = row[0] if row else None
            if status != "in progress":
                return str(status) if status is not None else None
            time.sleep(0.02)
        return "in progress"

    def read(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[Any]:
        """The rows of one read (no lock taken; retried like a write)."""
        return self.run(lambda conn: conn.execute(sql, params).fetchall(), write=False)

    def _migrate(self, conn: Connection[Any]) -> None:
        if not conn.autocommit:  # a caller's pool: run in its transaction
            self._migrate_in(conn.cursor())
            return
        with conn.transaction():
            self._migrate_in(conn.cursor())

    def _migrate_in(self, cur: Cursor[Any]) -> None:
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        cur.execute(VERSION_TABLE)
        row = cur.execute("SELECT version FROM tokenbox_schema WHERE component = %s", (COMPONENT,)).fetchone()
        version = int(row[0]) if row else 0
        if version > SCHEMA_VERSION:
            raise SessionStoreError(
                f"the session archive at {self.where} has schema version {version} but this TokenBox reads up "
                f"to {SCHEMA_VERSION}; upgrade tokenbox-context to open it (the database was left untouched)"
            )
        for number in range(version, SCHEMA_VERSION):
            for statement in MIGRATIONS[number]:
                cur.execute(statement)
        if version < SCHEMA_VERSION:
            cur.execute(
                "INSERT INTO tokenbox_schema VALUES (%s, %s) ON CONFLICT (component) DO UPDATE SET version = %s",
                (COMPONENT, SCHEMA_VERSION, SCHEMA_VERSION),
            )

    @property
    def schema_version(self) -> int:
        """The database's schema version (the ``tokenbox_schema`` row)."""
        rows = self.read("SELECT version FROM tokenbox_schema WHERE component = %s", (COMPONENT,))
        return int(rows[0][0])

    def close(self) -> None:
        """Close the pool this object made (a pool passed in is the caller's to close)."""
        self._closed.set()
        if self._owns_pool:
            self._pool.close()


def _describe(conninfo: str) -> str:
    """``host:port/dbname`` of a connection string (never its password)."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        parts = conninfo_to_dict(conninfo)
    except Exception:  # a malformed string: psycopg's own error follows when connecting
        return "the given connection string"
    host = parts.get("host") or "localhost"
    return f"{host}:{parts.get('port') or 5432}/{parts.get('dbname') or parts.get('user') or ''}"
