"""``ContextSession`` over a SQLite archive, with real processes: SIGKILL mid-``add``, two appenders, bad files."""

from __future__ import annotations

import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tokenbox_core import ContextSession
from tokenbox_core.chat._validate import sequence_problems
from tokenbox_core.errors import SessionStoreError

_WRITER = textwrap.dedent(
    """
    import json, sys
    from tokenbox_core import ContextSession
    session = ContextSession(sys.argv[1], "shared", budget=4000, counter="whitespace")
    tag, n = sys.argv[2], int(sys.argv[3])
    for i in range(n):
        call = {"id": f"{tag}-{i}", "type": "function", "function": {"name": "run", "arguments": "{}"}}
        ids = session.add([
            {"role": "assistant", "content": f"{tag}:{i}:call", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"{tag}-{i}", "content": f"{tag}:{i}:result " + "x" * 200},
        ])
        print(json.dumps(ids), flush=True)
    """
)


def _writer(path: Path, tag: str, n: int) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path), tag, str(n)], stdout=subprocess.PIPE, text=True, env=env
    )


def _seed(path: Path) -> None:
    with ContextSession(path, "shared", budget=4000, counter="whitespace") as session:
        session.add({"role": "user", "content": "run the jobs"})


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_sigkill_in_the_middle_of_add_loses_no_committed_message(tmp_path: Path) -> None:
    """A process killed while adding: every add it reported is archived whole and in order, the file is readable,
    and no call is left without its result (each add is one transaction)."""
    import json

    path = tmp_path / "s.db"
    _seed(path)
    proc = _writer(path, "w", 1_000_000)
    assert proc.stdout is not None
    committed = [json.loads(proc.stdout.readline()) for _ in range(150)]
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    with ContextSession(path, "shared", budget=4000, counter="whitespace") as session:
        session.store.check()  # type: ignore[attr-defined]
        messages = session.messages()
        assert len(messages) >= 1 + 2 * len(committed) and len(messages) % 2 == 1
        for i in range(len(messages) // 2):
            assert messages[1 + 2 * i]["content"] == f"w:{i}:call"
            assert messages[2 + 2 * i]["tool_call_id"] == f"w-{i}"
        assert [m.get("id") for m in session.compile().messages][:1] == ["t_1"]
        assert sequence_problems(list(session.compile().messages)) == []
        assert session.add({"role": "user", "content": "after"}) == [f"t_{len(messages) + 1}"]


def test_two_processes_appending_to_one_session_keep_every_message_once_in_order(tmp_path: Path) -> None:
    """Two writers add to one session at once: every message stored once, each writer's adds in its order and
    each add's call and result adjacent."""
    import json

    path = tmp_path / "s.db"
    _seed(path)
    procs = [_writer(path, tag, 120) for tag in ("a", "b")]
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    with ContextSession(path, "shared", budget=4000, counter="whitespace") as session:
        messages = session.messages()
        assert len(messages) == 1 + 2 * 240
        for tag, out in zip(("a", "b"), outputs, strict=True):
            calls = [n for n, m in enumerate(messages) if str(m["content"]).startswith(f"{tag}:") and "tool_calls" in m]
            assert [messages[n]["content"] for n in calls] == [f"{tag}:{i}:call" for i in range(120)]
            assert all(messages[n + 1].get("tool_call_id") == messages[n]["tool_calls"][0]["id"] for n in calls)
            assert [[f"t_{n + 1}", f"t_{n + 2}"] for n in calls] == [json.loads(line) for line in out.splitlines()]
        assert sequence_problems(list(session.compile().messages)) == []


def test_a_session_sees_what_another_process_appended(tmp_path: Path) -> None:
    """An open session catches up with messages another process added since its last compile."""
    path = tmp_path / "s.db"
    _seed(path)
    with ContextSession(path, "shared", budget=4000, counter="whitespace") as session:
        assert len(session.compile().messages) == 1
        assert _writer(path, "w", 3).communicate(timeout=120)[0].count("t_") == 6
        assert len(session.compile().messages) == 7
        assert [t.turn_id for t in session.search("w:2:result")][:1] == ["t_7"]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_foreign_or_corrupt_file_is_refused_and_left_untouched(tmp_path: Path) -> None:
    """A session over another application's database, a text file or a corrupt archive raises and changes no byte."""
    foreign = tmp_path / "app.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER)")
    text = tmp_path / "notes.db"
    text.write_text("not a database\n")
    corrupt = tmp_path / "broken.db"
    with ContextSession(corrupt, "s", budget=100, counter="whitespace") as session:
        session.add([{"role": "user", "content": "x" * 3000} for _ in range(40)])
    with sqlite3.connect(corrupt) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(corrupt.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    data[page:] = b"\xa5" * (len(data) - page)
    corrupt.write_bytes(bytes(data))
    for path, message in (
        (foreign, "another application"),
        (text, "is not a SQLite database"),
        (corrupt, "malformed|corrupt|not a database"),
    ):
        before = _digest(path)
        with (
            pytest.raises(SessionStoreError, match=message),
            ContextSession(path, "s", budget=100, counter="whitespace") as session,
        ):
            session.messages()
        assert _digest(path) == before
