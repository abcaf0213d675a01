"""The SQLite archive with the real database: crash safety, concurrent processes, refusing bad files (issue 13 §1)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from tokenbox_core.errors import SessionStoreError
from tokenbox_core.session import SQLiteSessionStore
from tokenbox_core.session._schema import MIGRATIONS, SCHEMA_VERSION

_WRITER = textwrap.dedent(
    """
    import sys
    from tokenbox_core.session import SQLiteSessionStore
    store = SQLiteSessionStore(sys.argv[1])
    tag, n = sys.argv[2], int(sys.argv[3])
    for i in range(n):
        turn_id = store.append("shared", {"role": "user", "content": f"{tag}:{i}"})
        print(turn_id, flush=True)
    """
)


def _writer(path: Path, tag: str, n: int) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path), tag, str(n)], stdout=subprocess.PIPE, text=True, env=env
    )


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_sigkill_mid_session_keeps_every_committed_turn(tmp_path: Path) -> None:
    """A writer killed with SIGKILL mid-session: reopening finds every turn it reported committed, in order."""
    path = tmp_path / "s.db"
    proc = _writer(path, "w", 1_000_000)
    assert proc.stdout is not None
    committed = [proc.stdout.readline().strip() for _ in range(300)]
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    with SQLiteSessionStore(path) as store:
        store.check()
        turns = store.turns("shared")
        assert len(turns) >= len(committed)
        assert [t.turn_id for t in turns[: len(committed)]] == committed
        assert [t.message["content"] for t in turns] == [f"w:{i}" for i in range(len(turns))]
        assert store.append("shared", {"role": "user", "content": "after"}) == f"t_{len(turns) + 1}"


def test_the_connection_of_an_ended_thread_is_closed_when_another_thread_opens_one(tmp_path: Path) -> None:
    """Worker threads come and go (an event loop's executor, the async hooks run there): each one's connection is
    closed once it has ended and another thread connects, so they do not pile up; nothing written is lost."""
    store = SQLiteSessionStore(tmp_path / "s.db")
    conns: list[sqlite3.Connection] = []

    def work(i: int) -> None:
        store.append("s", {"role": "user", "content": f"m{i}"})
        conns.append(store._conn())

    for i in range(3):
        thread = threading.Thread(target=work, args=(i,))
        thread.start()
        thread.join()
    for ended in conns[:2]:
        with pytest.raises(sqlite3.ProgrammingError):
            ended.execute("SELECT 1")
    assert conns[2].execute("SELECT count(*) FROM turns").fetchone() == (3,)
    assert [t.message["content"] for t in store.turns("s")] == ["m0", "m1", "m2"]
    store.close()


def test_four_concurrent_writer_processes_lose_nothing(tmp_path: Path) -> None:
    """Four processes appending to one session at once: every turn stored once, each writer's order kept."""
    path = tmp_path / "s.db"
    SQLiteSessionStore(path).close()  # create the schema once; the writers then race on appends only
    procs = [_writer(path, f"p{k}", 150) for k in range(4)]
    outputs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0]
    with SQLiteSessionStore(path) as store:
        turns = store.turns("shared")
    assert [t.seq for t in turns] == list(range(1, 601))
    for k, out in enumerate(outputs):
        mine = [t for t in turns if t.message["content"].startswith(f"p{k}:")]
        assert [t.message["content"] for t in mine] == [f"p{k}:{i}" for i in range(150)]
        assert [t.turn_id for t in mine] == out.split()


def test_concurrent_creation_migrates_once(tmp_path: Path) -> None:
    """Four processes opening a brand-new file at once all succeed (one of them creates the schema)."""
    path = tmp_path / "new.db"
    procs = [_writer(path, f"p{k}", 5) for k in range(4)]
    assert [p.communicate(timeout=120)[0].count("t_") for p in procs] == [5, 5, 5, 5]
    with SQLiteSessionStore(path) as store:
        assert store.count("shared") == 20 and store.schema_version == SCHEMA_VERSION


def test_file_is_wal_and_marked_as_ours(tmp_path: Path) -> None:
    """A new archive is in WAL mode, carries TokenBox's application_id and the current schema version."""
    path = tmp_path / "s.db"
    SQLiteSessionStore(path).close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA application_id").fetchone()[0] == 0x54424F58
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_older_schema_is_migrated_in_place(tmp_path: Path) -> None:
    """A version-1 archive is migrated to the current version and keeps its turns."""
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.executescript(MIGRATIONS[0])
    conn.execute("INSERT INTO turns VALUES ('s', 1, 't_1', 'user', 'hi', NULL, NULL, NULL, ?, 1.0)",
                 ('{"content":"hi","role":"user"}',))  # fmt: skip
    conn.execute("PRAGMA application_id = 0x54424F58")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    with SQLiteSessionStore(path) as store:
        assert store.schema_version == SCHEMA_VERSION
        assert [t.message["content"] for t in store.turns("s")] == ["hi"]
        store.record_eviction("s", ["t_1"], "window")  # a version-2 table exists now


def test_not_a_database_is_refused_and_left_untouched(tmp_path: Path) -> None:
    """A text file is refused with a clear error and its bytes are not changed."""
    path = tmp_path / "notes.db"
    path.write_text("these are my notes, not a database\n")
    with pytest.raises(SessionStoreError, match="is not a SQLite database.*left untouched"):
        SQLiteSessionStore(path)
    assert path.read_text() == "these are my notes, not a database\n"


def test_foreign_sqlite_file_is_refused(tmp_path: Path) -> None:
    """Another application's SQLite database is refused, never reset."""
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER, total REAL)")
        conn.execute("INSERT INTO invoices VALUES (1, 9.5)")
    with pytest.raises(SessionStoreError, match="another application"):
        SQLiteSessionStore(path)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT * FROM invoices").fetchall() == [(1, 9.5)]


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    """A file written by a newer TokenBox (higher schema version) is refused with the upgrade hint."""
    path = tmp_path / "new.db"
    SQLiteSessionStore(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(SessionStoreError, match=f"version {SCHEMA_VERSION + 1}.*upgrade tokenbox-context"):
        SQLiteSessionStore(path)


def test_corrupt_file_gives_a_clear_error(tmp_path: Path) -> None:
    """Pages overwritten with garbage: a SessionStoreError that says the file is corrupt, never a reset."""
    path = tmp_path / "s.db"
    with SQLiteSessionStore(path) as store:
        store.extend("s", [{"role": "user", "content": "x" * 2000} for _ in range(50)])
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(path.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    data[page : len(data)] = b"\xa5" * (len(data) - page)  # every page after the first
    path.write_bytes(bytes(data))
    size = path.stat().st_size
    with (
        pytest.raises(SessionStoreError, match="malformed|corrupt|not a database"),
        SQLiteSessionStore(path) as store,
    ):
        store.turns("s")
    assert path.stat().st_size == size


def test_bad_options_are_refused(tmp_path: Path) -> None:
    """Unknown synchronous levels, non-positive timeouts and directories are refused at construction."""
    with pytest.raises(ValueError, match="synchronous='SOMETIMES'"):
        SQLiteSessionStore(tmp_path / "a.db", synchronous="SOMETIMES")
    with pytest.raises(ValueError, match="timeout must be > 0"):
        SQLiteSessionStore(tmp_path / "a.db", timeout=0)
    with pytest.raises(SessionStoreError, match="is a directory"):
        SQLiteSessionStore(tmp_path)
