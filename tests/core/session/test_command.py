"""``tokenbox session``: list an archive's sessions, show a session's messages, search them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tokenbox_core import ContextSession
from tokenbox_core.cli import main


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
