"""Fixtures for the session archive tests: every store implementation behind one contract."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tokenbox_core.session import MemorySessionStore, PostgresSessionStore, SessionStore, SQLiteSessionStore

STORES = ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SessionStore]:
    """Each store implementation, fresh (PostgreSQL in a schema of its own; skipped without a server)."""
    s: SessionStore
    if request.param == "memory":
        s = MemorySessionStore()
    elif request.param == "sqlite":
        s = SQLiteSessionStore(tmp_path / "s.db")
    else:
        s = PostgresSessionStore(request.getfixturevalue("postgres_dsn"))
    yield s
    s.close()
