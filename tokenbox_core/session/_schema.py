"""The SQLite archive's schema and its migrations (versioned by ``PRAGMA user_version``).

A file is ours when its ``application_id`` is :data:`APPLICATION_ID`.  Each
migration moves the schema one version up inside one ``BEGIN IMMEDIATE``
transaction, so concurrent openers never migrate twice and a crash mid-migration
leaves the previous version intact.  Before anything is migrated or written, the file is validated
(:mod:`tokenbox_core.session._integrity`): a file that is not exactly the schema it claims is refused.
"""

from __future__ import annotations

__all__ = ["APPLICATION_ID", "DIGEST_VERSION", "MIGRATIONS", "SCHEMA_VERSION"]

APPLICATION_ID = 0x54424F58
"""``PRAGMA application_id`` of a TokenBox session archive ("TBOX")."""

MIGRATIONS: tuple[str, ...] = (
    # version 1: turns and their token counts
    """
    CREATE TABLE turns (
        session_id   TEXT    NOT NULL,
        seq          INTEGER NOT NULL,
        turn_id      TEXT    NOT NULL,
        role         TEXT    NOT NULL,
        content      TEXT    NOT NULL,          -- the message's text (content parts joined)
        name         TEXT,
        tool_calls   TEXT,                      -- JSON list or NULL
        tool_call_id TEXT,
        message      TEXT    NOT NULL,          -- the whole neutral message, canonical JSON
        created_at   REAL    NOT NULL,
        PRIMARY KEY (session_id, seq),
        UNIQUE (session_id, turn_id)
    ) WITHOUT ROWID;
    CREATE TABLE turn_tokens (
        session_id TEXT    NOT NULL,
        turn_id    TEXT    NOT NULL,
        counter    TEXT    NOT NULL,
        tokens     INTEGER NOT NULL,
        PRIMARY KEY (session_id, counter, turn_id)
    ) WITHOUT ROWID;
    """,
    # version 2: summaries with provenance, the generated-text cache, evictions, rehydration requests
    """
    CREATE TABLE summaries (
        session_id      TEXT    NOT NULL,
        summary_id      TEXT    NOT NULL,
        level           INTEGER NOT NULL,
        source_ids      TEXT    NOT NULL,       -- JSON list
        source_turn_ids TEXT    NOT NULL,       -- JSON list
        first_seq       INTEGER NOT NULL,
        text            TEXT    NOT NULL,
        tokens          INTEGER NOT NULL,
        source_tokens   INTEGER NOT NULL,
        block_hash      TEXT    NOT NULL,
        summarizer      TEXT    NOT NULL,
        summary_version INTEGER NOT NULL,
        created_at      REAL    NOT NULL,
        invalidated_by  TEXT,
        extra           TEXT    NOT NULL DEFAULT '{}',
        PRIMARY KEY (session_id, summary_id)
    ) WITHOUT ROWID;
    CREATE TABLE text_cache (
        key        TEXT PRIMARY KEY,
        text       TEXT NOT NULL,
        created_at REAL NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE evictions (
        id         INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id TEXT NOT NULL,
        turn_ids   TEXT NOT NULL,               -- JSON list
        reason     TEXT NOT NULL,
        created_at REAL NOT NULL
    );
    CREATE INDEX evictions_session ON evictions (session_id, id);
    CREATE TABLE rehydrations (
        session_id TEXT NOT NULL,
        turn_id    TEXT NOT NULL,
        PRIMARY KEY (session_id, turn_id)
    ) WITHOUT ROWID;
    """,
    # version 3: provider-reported usage observations (the usage calibrator's, kept with the session)
    """
    CREATE TABLE usage (
        session_id TEXT    NOT NULL,
        base       TEXT    NOT NULL,           -- the counter the units were measured with
        model      TEXT    NOT NULL,
        id         TEXT    NOT NULL,           -- SHA-256 prefix of (model, content, reported)
        content    TEXT    NOT NULL,           -- SHA-256 prefix of what was sent (never the text itself)
        units      INTEGER NOT NULL,
        fixed      INTEGER NOT NULL,
        reported   INTEGER NOT NULL,
        created_at REAL    NOT NULL,
        PRIMARY KEY (session_id, base, model, id)
    ) WITHOUT ROWID;
    """,
    # version 4: each turn's content hash (``_integrity.turn_digest``; the migration fills it for existing turns)
    """
    ALTER TABLE turns ADD COLUMN digest TEXT NOT NULL DEFAULT '';
    """,
)

DIGEST_VERSION = 4
"""The schema version from which every turn carries its content hash, checked at open and on every read."""

SCHEMA_VERSION = len(MIGRATIONS)
"""The schema version this code writes; a file with a higher ``user_version`` is refused."""
