"""The session archive: every turn kept, summarised in checkpoints, recoverable by rehydration.

Chapter §6.7.1–6.7.2 (extractive summaries, omission with provenance), §6.8
(hygiene), §6.10 (sliding window, checkpoints, hierarchical summaries,
rehydration).  Context management never loses information irrecoverably: what
a compile evicts stays in the store, and the omission marker says how to get it
back.
"""

from tokenbox_core.session.errors import SessionError, SessionStoreError, UnknownTurnError
from tokenbox_core.session.model import EvictionEvent, Summary, Turn
from tokenbox_core.session.sqlite import SQLiteSessionStore
from tokenbox_core.session.store import MemorySessionStore, SessionStore

__all__ = [
    "EvictionEvent",
    "MemorySessionStore",
    "SQLiteSessionStore",
    "SessionError",
    "SessionStore",
    "SessionStoreError",
    "Summary",
    "Turn",
    "UnknownTurnError",
]
