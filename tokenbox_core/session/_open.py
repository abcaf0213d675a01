"""Which store a session archives in, from what a user passes: one rule for the core and every adapter.

>>> type(open_store(None)).__name__, type(open_store(True)).__name__
('MemorySessionStore', 'MemorySessionStore')
>>> open_store(42, argument="session")
Traceback (most recent call last):
...
tokenbox_core.errors.ConfigTypeError: session must be True or None (in memory), a path (a SQLite file), a PostgreSQL \
URI ('postgresql://…') or a SessionStore, got int
"""

from __future__ import annotations

import os

from tokenbox_core.errors import ConfigTypeError
from tokenbox_core.session._postgres import PostgresSessionStore
from tokenbox_core.session._sqlite import SQLiteSessionStore
from tokenbox_core.session._store import MemorySessionStore, SessionStore

__all__ = ["open_store"]


def open_store(store: object, *, argument: str = "store") -> SessionStore:
    """``None`` or ``True``: a new in-memory store; a PostgreSQL URI: :class:`PostgresSessionStore`; a path: a
    SQLite file (created when missing); a :class:`SessionStore`: itself.  Anything else raises
    :class:`~tokenbox_core.errors.ConfigTypeError` naming ``argument``."""
    if store is None or store is True:
        return MemorySessionStore()
    if isinstance(store, SessionStore):
        return store
    if PostgresSessionStore.accepts(store):
        return PostgresSessionStore(store)
    if isinstance(store, str | os.PathLike):
        return SQLiteSessionStore(store)
    raise ConfigTypeError(
        f"{argument} must be True or None (in memory), a path (a SQLite file), a PostgreSQL URI ('postgresql://…') "
        f"or a SessionStore, got {type(store).__name__}"
    )
