"""A seeded corruption harness for the SQLite archive (issue 36 §2).

Every corrupted file is either refused — :class:`SessionStoreError` naming the path, at open or at the first read
that meets the damage, with the file's bytes unchanged — or read back with exactly the messages written (damage
in free space or in a column nothing reads).  Never a raw Python or sqlite3 error, never altered messages, never a
write into a file that could not be validated.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tokenbox_core import ContextSession
from tokenbox_core.errors import SessionStoreError
from tokenbox_core.session import SQLiteSessionStore
from tokenbox_core.session._schema import DIGEST_VERSION, MIGRATIONS, SCHEMA_VERSION

SEED = 36
SESSIONS = ("alpha", "beta")


def _messages(session: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(24):
        out.append({"role": "user", "content": f"{session} question {i} " + "word " * (5 + 40 * (i % 3))})
        out.append({"role": "assistant", "content": [{"type": "text", "text": f"{session} answer {i}"}]})
    return out


def _build(path: Path) -> None:
    with SQLiteSessionStore(path) as store:
        for s in SESSIONS:
            store.extend(s, _messages(s))
            store.record_tokens(s, "whitespace", {"t_1": 3, "t_2": 4})
            store.record_eviction(s, ["t_1", "t_2"], "window")
    assert not Path(f"{path}-wal").exists() or Path(f"{path}-wal").stat().st_size == 0


@dataclass(frozen=True)
class Case:
    """One corruption: a name and a function that damages the file at its path."""

    name: str
    damage: Callable[[Path], None]
    must_refuse: bool = True  # False: damage may fall where nothing reads (bytes in free space)


def _truncate(offset: int) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        data = path.read_bytes()
        path.write_bytes(data[: offset % len(data)])

    return damage


def _flip(offsets: list[int], mask: int) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        data = bytearray(path.read_bytes())
        for o in offsets:
            data[o % len(data)] ^= mask
        path.write_bytes(bytes(data))

    return damage


def _sql(*statements: str) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        conn = sqlite3.connect(path, isolation_level=None)
        for s in statements:
            conn.execute(s)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()

    return damage


def _foreign(path: Path, *, app: int, tables: bool) -> None:
    path.unlink()
    conn = sqlite3.connect(path, isolation_level=None)
    if tables:
        conn.execute("CREATE TABLE invoices (id INTEGER, total REAL)")
        conn.execute("INSERT INTO invoices VALUES (1, 9.5)")
    conn.execute(f"PRAGMA application_id = {app}")
    conn.execute("VACUUM")  # a valid database file even with no table
    conn.close()


def cases() -> list[Case]:
    """The corruptions, deterministic for the seed."""
    rng = random.Random(SEED)
    out: list[Case] = []
    for i in range(40):
        out.append(Case(f"truncate-{i}", _truncate(rng.randrange(1, 1 << 20)), must_refuse=False))
    for i in range(80):
        out.append(Case(f"flip-byte-{i}", _flip([rng.randrange(1 << 20)], 1 << rng.randrange(8)), must_refuse=False))
    for i in range(40):
        burst = [rng.randrange(1 << 20)]
        burst += [burst[0] + k for k in range(1, rng.randrange(2, 64))]
        out.append(Case(f"flip-burst-{i}", _flip(burst, 0xFF), must_refuse=False))
    for table in ("turns", "turn_tokens", "summaries", "text_cache", "evictions", "rehydrations", "usage"):
        out.append(Case(f"drop-{table}", _sql(f"DROP TABLE {table}")))
    out += [
        Case("alter-add-column", _sql("ALTER TABLE turns ADD COLUMN extra TEXT")),
        Case("alter-rename-table", _sql("ALTER TABLE summaries RENAME TO summaries_old")),
        Case("alter-drop-index", _sql("DROP INDEX evictions_session")),
        Case("foreign-table-added", _sql("CREATE TABLE invoices (id INTEGER)")),
        Case("gap-in-sequence", _sql("DELETE FROM turns WHERE session_id = 'alpha' AND seq = 7")),
        Case("first-turn-missing", _sql("DELETE FROM turns WHERE session_id = 'beta' AND seq = 1")),
        Case("seq-renumbered", _sql("UPDATE turns SET seq = 99 WHERE session_id = 'alpha' AND seq = 48")),
        Case("turn-id-swapped", _sql("UPDATE turns SET turn_id = 't_x' WHERE session_id = 'alpha' AND seq = 3")),
        Case(
            "message-altered",
            _sql("""UPDATE turns SET message = '{"content":"forged","role":"user"}' WHERE seq = 5"""),
        ),
        Case("message-role-altered", _sql("UPDATE turns SET message = replace(message, 'user', 'system')")),
        Case("message-not-json", _sql("UPDATE turns SET message = 'not json {' WHERE seq = 2")),
        Case("message-json-list", _sql("UPDATE turns SET message = '[1, 2]' WHERE seq = 2")),
        Case("message-null-bytes", _sql("UPDATE turns SET message = X'00FF00' WHERE seq = 2")),
        Case("seq-text", _sql("UPDATE turns SET seq = 'seven' WHERE session_id = 'beta' AND seq = 48")),
        Case(
            "summary-not-json",
            _sql("INSERT INTO summaries VALUES ('alpha','s1',1,'[x','[]',1,'t',1,1,'h','x',1,0,NULL,'{}')"),
        ),
        Case("eviction-not-json", _sql("UPDATE evictions SET turn_ids = '[t_1' WHERE session_id = 'alpha'")),
        Case("newer-schema", _sql(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")),
        Case("older-version-claimed", _sql("PRAGMA user_version = 1")),
        Case("version-zero-claimed", _sql("PRAGMA user_version = 0")),
        Case("application-id-changed", _sql("PRAGMA application_id = 1234")),
        Case("another-application", lambda p: _foreign(p, app=0, tables=True)),
        Case("empty-foreign-application", lambda p: _foreign(p, app=0x12345678, tables=False)),
        Case("header-zeroed", _flip(list(range(16)), 0xFF)),
        Case("page-size-garbled", _flip([16, 17], 0x5A)),
    ]
    return out


def _bytes(path: Path) -> bytes:
    return path.read_bytes() if path.exists() else b""


def _read_all(path: Path) -> dict[str, list[dict[str, Any]]]:
    with SQLiteSessionStore(path) as store:
        got = {s: [dict(t.message) for t in store.turns(s)] for s in store.sessions()}
        for s in SESSIONS:
            store.get_turns(s, [f"t_{n}" for n in range(1, 49)])
            store.summaries(s, include_invalidated=True)
            store.evictions(s)
            store.token_counts(s, "whitespace")
            store.count(s)
        return got


def outcome(case: Case, tmp_path: Path) -> str:
    """``"refused"`` or ``"intact"``; an assertion error for anything else."""
    path = tmp_path / f"{case.name}.db"
    _build(path)
    case.damage(path)
    before = _bytes(path)
    try:
        got = _read_all(path)
    except SessionStoreError as exc:
        assert str(path) in str(exc), f"{case.name}: the error does not name the file: {exc}"
        assert _bytes(path) == before, f"{case.name}: a refused file was written to"
        return "refused"
    assert got == {s: _messages(s) for s in SESSIONS}, f"{case.name}: messages read back differ from those written"
    with SQLiteSessionStore(path) as store:
        store.append("alpha", {"role": "user", "content": "after"})
        assert store.count("alpha") == 49
    return "intact"


CASES = cases()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_corrupt_archive_is_refused_untouched_or_read_intact(case: Case, tmp_path: Path) -> None:
    """A damaged archive is refused with SessionStoreError (file unchanged) or reads back exactly what was written."""
    result = outcome(case, tmp_path)
    if case.must_refuse:
        assert result == "refused", f"{case.name} was accepted"


def test_gap_in_sequence_never_duplicates_a_message(tmp_path: Path) -> None:
    """A turn deleted behind TokenBox's back is refused by name, not papered over by a duplicated message."""
    path = tmp_path / "gap.db"
    _build(path)
    _sql("DELETE FROM turns WHERE session_id = 'alpha' AND seq = 7")(path)
    with pytest.raises(SessionStoreError, match=r"session 'alpha'.*t_7 is missing"):
        ContextSession(path, "alpha", budget=10_000, counter="whitespace")


def test_altered_message_is_named(tmp_path: Path) -> None:
    """A message changed outside TokenBox fails its content hash: the error names the session and the turn."""
    path = tmp_path / "forged.db"
    _build(path)
    _sql("""UPDATE turns SET message = '{"content":"forged","role":"user"}' WHERE session_id = 'beta' AND seq = 5""")(
        path
    )
    with pytest.raises(SessionStoreError, match=r"turn t_5 of session 'beta'.*content hash"):
        SQLiteSessionStore(path)


def test_empty_files_are_initialised_foreign_ones_refused(tmp_path: Path) -> None:
    """A 0-byte file and a table-less SQLite file without an application id become archives; an application id
    of another program is refused even with no table."""
    empty = tmp_path / "empty.db"
    empty.touch()
    SQLiteSessionStore(empty).close()
    bare = tmp_path / "bare.db"
    _foreign(_touch(bare), app=0, tables=False)
    SQLiteSessionStore(bare).close()
    other = tmp_path / "other.db"
    _foreign(_touch(other), app=0x12345678, tables=False)
    before = other.read_bytes()
    with pytest.raises(SessionStoreError, match=r"another application \(application_id 0x12345678"):
        SQLiteSessionStore(other)
    assert other.read_bytes() == before


def _touch(path: Path) -> Path:
    path.touch()
    return path


def test_version_3_archive_migrates_to_content_hashes(tmp_path: Path) -> None:
    """A schema-3 archive (no content hash) is migrated in place: hashes filled, turns kept, later forgeries caught."""
    path = tmp_path / "v3.db"
    conn = sqlite3.connect(path, isolation_level=None)
    for script in MIGRATIONS[:3]:
        conn.executescript(script)
    conn.execute(
        "INSERT INTO turns VALUES ('s', 1, 't_1', 'user', 'hi', NULL, NULL, NULL, ?, 1.0)",
        ('{"content":"hi","role":"user"}',),
    )
    conn.execute("PRAGMA application_id = 0x54424F58")
    conn.execute("PRAGMA user_version = 3")
    conn.close()
    with SQLiteSessionStore(path) as store:
        assert store.schema_version == SCHEMA_VERSION == DIGEST_VERSION
        assert [t.message for t in store.turns("s")] == [{"role": "user", "content": "hi"}]
        store.append("s", {"role": "assistant", "content": "hello"})
    _sql("""UPDATE turns SET message = '{"content":"bye","role":"user"}' WHERE seq = 1""")(path)
    with pytest.raises(SessionStoreError, match="turn t_1 of session 's' does not match its content hash"):
        SQLiteSessionStore(path)


def test_a_row_changed_after_open_is_refused_on_read(tmp_path: Path) -> None:
    """Reads check each turn again: a message another program changes while the store is open is not returned."""
    path = tmp_path / "live.db"
    _build(path)
    with SQLiteSessionStore(path) as store:
        _sql("UPDATE turns SET message = replace(message, 'question', 'answer') WHERE seq = 3")(path)
        with pytest.raises(SessionStoreError, match="turn t_3 of session 'alpha' does not match its content hash"):
            store.turns("alpha")
        with pytest.raises(SessionStoreError, match="content hash"):
            store.get_turns("beta", ["t_3"])


def test_read_only_store_refuses_writes_and_empty_files(tmp_path: Path) -> None:
    """read_only=True reads an archive as it is; writes, empty files and table-less files are refused by name."""
    path = tmp_path / "ro.db"
    _build(path)
    before = path.read_bytes()
    with SQLiteSessionStore(path, read_only=True) as store:
        assert [t.message for t in store.turns("alpha")] == _messages("alpha")
        with pytest.raises(SessionStoreError, match="was opened with read_only=True; open it without"):
            store.append("alpha", {"role": "user", "content": "x"})
    assert path.read_bytes() == before
    empty = _touch(tmp_path / "empty.db")
    with pytest.raises(SessionStoreError, match="is empty: not a session archive yet"):
        SQLiteSessionStore(empty, read_only=True)
    bare = _touch(tmp_path / "bare.db")
    _foreign(bare, app=0, tables=False)
    with pytest.raises(SessionStoreError, match="holds no session archive yet"):
        SQLiteSessionStore(bare, read_only=True)
