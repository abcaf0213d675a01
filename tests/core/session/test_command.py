"""``tokenbox session``: list an archive's sessions, show a session's messages, search them."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tokenbox_core import ContextSession
from tokenbox_core.cli import main
from tokenbox_core.session._schema import MIGRATIONS


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    path = tmp_path / "a.db"
    with ContextSession(path, "alpha", budget=500, counter="whitespace") as session:
        session.add(
            [
                {"role": "user", "content": "the helm chart lives in deploy/chart"},
                {"role": "assistant", "content": "ok"},
            ]
        )
    with ContextSession(path, "beta", budget=500, counter="whitespace") as session:
        session.add({"role": "user", "content": "hello"})
    return path


def test_lists_sessions_shows_messages_and_searches(archive: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Without a session: ids and counts; with one: its messages; --search ranks them; --json for scripts."""
    assert main(["session", str(archive)]) == 0
    assert capsys.readouterr().out == "alpha\t2\nbeta\t1\n"
    assert main(["session", str(archive), "alpha", "--last", "1"]) == 0
    assert capsys.readouterr().out == "t_2 assistant: ok\n"
    assert main(["session", str(archive), "alpha", "--search", "where is the helm chart"]) == 0
    assert capsys.readouterr().out == "t_1 user: the helm chart lives in deploy/chart\n"
    assert main(["session", str(archive), "beta", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"id": "t_1", "message": {"role": "user", "content": "hello"}}]


def test_a_missing_archive_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A path that is not a file exits 2 with the reason (no file is created)."""
    assert main(["session", str(tmp_path / "none.db")]) == 2
    assert "is not a file; give the path of a session archive" in capsys.readouterr().err
    assert not (tmp_path / "none.db").exists()


def test_an_empty_file_is_not_turned_into_an_archive(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A 0-byte file exits 2 naming it, and stays 0 bytes (the command only reads)."""
    path = tmp_path / "empty.db"
    path.touch()
    assert main(["session", str(path)]) == 2
    assert "is empty: not a session archive yet" in capsys.readouterr().err
    assert path.stat().st_size == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.db"]


@pytest.mark.parametrize("last", ["0", "-1", "-3"])
def test_last_must_be_positive(archive: Path, last: str, capsys: pytest.CaptureFixture[str]) -> None:
    """--last N with N <= 0 is refused with the fix, not read as 'everything' or 'all but the first N'."""
    assert main(["session", str(archive), "alpha", "--last", last]) == 2
    assert f"--last must be a whole number >= 1, got {last}" in capsys.readouterr().err


def test_an_older_archive_is_read_without_migrating_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The command reads an archive of an older schema as it is: no migration, the file's bytes unchanged."""
    path = tmp_path / "v1.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript(MIGRATIONS[0])
    conn.execute(
        "INSERT INTO turns VALUES ('s', 1, 't_1', 'user', 'hi', NULL, NULL, NULL, ?, 1.0)",
        ('{"content":"hi","role":"user"}',),
    )
    conn.execute("PRAGMA application_id = 0x54424F58")
    conn.execute("PRAGMA user_version = 1")
    conn.close()
    before = path.read_bytes()
    assert main(["session", str(path), "s"]) == 0
    assert capsys.readouterr().out == "t_1 user: hi\n"
    assert path.read_bytes() == before
