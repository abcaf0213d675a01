"""Fixtures for the session archive tests: both store implementations behind one contract."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tokenbox_core.session import MemorySessionStore, SessionStore, SQLiteSessionStore


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SessionStore]:
    """Each store implementation, fresh."""
    s: SessionStore = MemorySessionStore() if request.param == "memory" else SQLiteSessionStore(tmp_path / "s.db")
    yield s
    s.close()
