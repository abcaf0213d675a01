"""The PostgreSQL archive with a real server: schema, scoping, full-text recall, ContextSession, and durability
with real processes (SIGKILL mid-append, four concurrent writers, a dropped connection) — issue 34.

Without ``TOKENBOX_TEST_POSTGRES_DSN`` the tests that need a server skip, saying how to run them; the tests of
the missing extra and of an unreachable server run everywhere.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tokenbox_core import ContextSession
from tokenbox_core.errors import SessionError, SessionStoreError
from tokenbox_core.session import PostgresSessionStore, RecallConfig, SQLiteSessionStore
from tokenbox_core.session._model import Summary
from tokenbox_core.session._postgres_schema import MIGRATIONS, SCHEMA_VERSION
from tokenbox_core.session._recall import RecallIndex

psycopg = pytest.importorskip("psycopg")

W = "whitespace"
_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
_WRITER = textwrap.dedent(
    """
    import sys
    from tokenbox_core.session import PostgresSessionStore
    store = PostgresSessionStore(sys.argv[1])
    tag, n = sys.argv[2], int(sys.argv[3])
    for i in range(n):
        turn_id = store.append("shared", {"role": "user", "content": f"{tag}:{i}"})
        print(turn_id, flush=True)
    store.close()
    """
)


def _writer(dsn: str, tag: str, n: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _WRITER, dsn, tag, str(n)], stdout=subprocess.PIPE, text=True, env=_ENV
    )


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


# -- without a server --------------------------------------------------------------------------------------------


def test_without_psycopg_the_error_names_the_extra() -> None:
    """Importing the session package never imports psycopg; constructing the store without it names the extra."""
    code = textwrap.dedent(
        """
        import sys
        sys.modules["psycopg"] = None
        import tokenbox_core.session as s
        assert "psycopg_pool" not in sys.modules
        try:
            s.PostgresSessionStore("postgresql://localhost/db")
        except ImportError as exc:
            print(exc)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_ENV, check=True).stdout
    assert 'pip install "tokenbox-context[postgres]"' in out


def test_an_unreachable_server_and_bad_arguments_are_clear_errors() -> None:
    """A server that refuses the connection, a bad tenant, bad sizes or a wrong type each get a clear error."""
    with pytest.raises(SessionStoreError, match=r"cannot open the session archive at 127\.0\.0\.1:1/postgres") as info:
        PostgresSessionStore("postgresql+psycopg://tokenbox:secret@127.0.0.1:1/postgres", timeout=1)
    assert "secret" not in str(info.value)  # the password never reaches an error message
    with pytest.raises(SessionError, match="tenant must be a non-empty string"):
        PostgresSessionStore("postgresql://127.0.0.1:1/postgres", tenant="")
    with pytest.raises(SessionError, match="max_connections must be >= 1"):
        PostgresSessionStore("postgresql://127.0.0.1:1/postgres", max_connections=0)
    with pytest.raises(TypeError, match="connection string .* or a psycopg_pool.ConnectionPool, got int"):
        PostgresSessionStore(5432)


# -- schema --------------------------------------------------------------------------------------------------------


@pytest.mark.postgres
def test_schema_is_versioned_and_a_newer_one_refused(postgres_dsn: str) -> None:
    """A new database gets the current schema version; one written by a newer TokenBox is refused, untouched."""
    with PostgresSessionStore(postgres_dsn) as store:
        assert store.schema_version == SCHEMA_VERSION
        store.append("s", _user("kept"))
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("UPDATE tokenbox_schema SET version = 99")
    with pytest.raises(SessionStoreError, match=rf"schema version 99 but this TokenBox reads up to {SCHEMA_VERSION}"):
        PostgresSessionStore(postgres_dsn)
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM tokenbox_turns").fetchone() == (1,)


@pytest.mark.postgres
def test_an_older_schema_is_migrated_in_place(postgres_dsn: str) -> None:
    """A version-1 database is migrated to the current version keeping its turns."""
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE tokenbox_schema (component TEXT PRIMARY KEY, version INTEGER NOT NULL)")
        for statement in MIGRATIONS[0]:
            conn.execute(statement)
        conn.execute("INSERT INTO tokenbox_schema VALUES ('session_archive', 1)")
        conn.execute("INSERT INTO tokenbox_sessions VALUES ('default', 's', 1)")
        conn.execute(
            "INSERT INTO tokenbox_turns (tenant, session_id, seq, turn_id, role, content, message, created_at) "
            """VALUES ('default', 's', 1, 't_1', 'user', 'old', '{"content":"old","role":"user"}', 1.0)"""
        )
    with PostgresSessionStore(postgres_dsn) as store:
        assert store.schema_version == SCHEMA_VERSION
        assert [t.message for t in store.turns("s")] == [{"role": "user", "content": "old"}]
        store.put_summary(Summary("s", "s1_1", 1, ("t_1",), ("t_1",), "old", 1, 1, "h" * 64, "extractive/1", 1, 1.0))
        assert [s.summary_id for s in store.summaries("s")] == ["s1_1"]
        assert store.append("s", _user("new")) == "t_2"


@pytest.mark.postgres
def test_concurrent_openers_migrate_once(postgres_dsn: str) -> None:
    """Six stores opened at once on a new database all succeed on one schema."""
    errors: list[BaseException] = []
    stores: list[PostgresSessionStore] = []

    def open_one() -> None:
        try:
            stores.append(PostgresSessionStore(postgres_dsn, max_connections=1))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and [s.schema_version for s in stores] == [SCHEMA_VERSION] * 6
    for s in stores:
        s.close()


@pytest.mark.postgres
def test_tenants_share_a_database_and_never_see_each_other(postgres_dsn: str) -> None:
    """Two tenants use the same session ids; neither lists, reads, counts or searches the other's turns."""
    with (
        PostgresSessionStore(postgres_dsn, tenant="acme") as a,
        PostgresSessionStore(postgres_dsn, tenant="umbrella") as b,
    ):
        a.append("s", _user("acme secret: the vault code is 1234"))
        b.extend("s", [_user("umbrella note"), _user("another")])
        assert (a.count("s"), b.count("s")) == (1, 2) and a.sessions() == b.sessions() == ["s"]
        assert [t.message["content"] for t in b.turns("s")] == ["umbrella note", "another"]
        assert b.search("s", "vault code") == [] and [h.id for h in a.search("s", "vault code")] == ["t_1"]
        a.cache_text("k", "acme")
        assert b.cached_text("k") is None


@pytest.mark.postgres
def test_a_pool_the_caller_owns_is_used_and_left_open(postgres_dsn: str) -> None:
    """A psycopg_pool.ConnectionPool (not autocommit) serves the store; closing the store leaves it open."""
    from psycopg_pool import ConnectionPool

    with ConnectionPool(postgres_dsn, min_size=1, max_size=2, open=True) as pool:
        store = PostgresSessionStore(pool)
        assert store.extend("s", [_user("one"), _user("two")]) == ["t_1", "t_2"]
        assert store.take_rehydration("s") == [] and store.count("s") == 2
        store.close()
        with pool.connection() as conn:
            assert conn.execute("SELECT count(*) FROM tokenbox_turns").fetchone() == (2,)


# -- full-text recall ----------------------------------------------------------------------------------------------


@pytest.mark.postgres
def test_database_search_applies_recall_gate_and_prefix(postgres_dsn: str) -> None:
    """The database ranks by the session's own statistics; allowed ids, the distinctive-term gate and a prefix
    (upto) restrict it as RecallIndex's do; identifiers match whole."""
    with PostgresSessionStore(postgres_dsn) as store:
        store.append("s", _user("the export went to data.csv yesterday"))
        store.extend("s", [_user(f"the worker service restarted, run {i}") for i in range(30)])
        store.append("s", _user("data.csv is corrupt, the worker service says"))
        assert [h.id for h in store.search("s", "what happened to data.csv?")] == [
            "t_1",
            "t_32",
        ]  # shorter first, as FTS5
        assert [h.id for h in store.search("s", "data.csv", allowed={"t_1", "t_5"})] == ["t_1"]
        assert [h.id for h in store.search("s", "data.csv", upto=10)] == ["t_1"]
        assert store.search("s", "worker service", min_terms=1, max_term_share=0.05) == []
        assert len(store.search("s", "worker service", limit=50)) == 31
        with pytest.raises(SessionError, match="limit must be >= 1"):
            store.search("s", "x", limit=0)


@pytest.mark.postgres
def test_database_search_ranks_by_neighbours_like_recall_index(postgres_dsn: str) -> None:
    """A hit whose neighbour holds the question's other words outranks a lone one, a hit next to a distinctive
    match passes the term gate and one far from it does not, and a neighbour outside ``allowed`` still lifts a
    hit's score: the same ids in the same order as RecallIndex."""
    texts = [
        "Melanie: look at the sunrise over the lake this morning",
        "Caroline: did you paint it?",
        *[f"filler {i} about the weather, Caroline said" for i in range(3, 20)],
        "Caroline: I want to paint the kitchen",
    ]
    index = RecallIndex()
    index.extend([(f"t_{i}", t) for i, t in enumerate(texts, start=1)])
    with PostgresSessionStore(postgres_dsn) as store:
        store.extend("s", [_user(t) for t in texts])
        cases: list[tuple[str, dict[str, Any]]] = [
            ("when did Melanie paint a sunrise?", {}),
            ("did Caroline see the sunrise?", {"min_terms": 1, "max_term_share": 0.05}),
            ("when did Melanie paint a sunrise?", {"allowed": {"t_2", "t_20"}}),
        ]
        ranked = [[h.id for h in store.search("s", q, limit=30, **kw)] for q, kw in cases]
        assert ranked == [[h.id for h in index.search(q, limit=30, **kw)] for q, kw in cases]
    first, gated, allowed = ranked
    assert first[:2] == ["t_1", "t_2"] and first.index("t_2") < first.index("t_20") and "t_4" not in first
    assert gated == ["t_1", "t_2", "t_3"]  # t_2 and t_3 hold only "Caroline", next to t_1's "sunrise"
    assert allowed == ["t_2", "t_20"]


def _conversation(session: ContextSession) -> None:
    session.add([_user("The staging database listens on port 5433."), {"role": "assistant", "content": "Noted."}])
    for i in range(30):
        session.add([
            _user(f"the worker service restarted again, run {i}"),
            {"role": "assistant", "content": f"worker service log {i} looks fine"},
        ])  # fmt: skip


@pytest.mark.postgres
def test_context_session_on_postgres_recalls_an_early_fact_like_sqlite(postgres_dsn: str, tmp_path: Path) -> None:
    """ContextSession on PostgreSQL recalls the early turn the question needs — and the turn next to it holding
    the question's common words (a neighbour of a distinctive match passes the gate, as in process) — gates out
    common words elsewhere, and compiles the same messages as on SQLite."""
    results = []
    for store in (PostgresSessionStore(postgres_dsn), SQLiteSessionStore(tmp_path / "s.db")):
        session = ContextSession(store, "s", budget=300, counter=W, recall=RecallConfig(share=0.4, neighbours=0))
        _conversation(session)
        session.add(_user("which port does the staging database of the worker service use?"))
        compiled = session.compile()
        assert compiled.recalled == ("t_1", "t_3") and compiled.total_tokens <= 300
        assert "t_1 user: The staging database listens on port 5433." in str(compiled.messages)
        assert session.compile(query="is the worker service healthy?").recalled == ()
        assert [t.turn_id for t in session.search("staging port")][:1] == ["t_1"]
        results.append(([m.get("id") for m in compiled.messages], str(compiled.messages)))
        session.close()
        store.close()
    assert results[0] == results[1]


# -- durability with real processes ----------------------------------------------------------------------------


@pytest.mark.postgres
@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_sigkill_mid_append_keeps_every_committed_turn(postgres_dsn: str) -> None:
    """A writer killed with SIGKILL mid-append: every turn it reported committed is there, in order, nothing
    half-written, and the session takes the next id."""
    PostgresSessionStore(postgres_dsn).close()
    proc = _writer(postgres_dsn, "w", 1_000_000)
    assert proc.stdout is not None
    committed = [proc.stdout.readline().strip() for _ in range(300)]
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    with PostgresSessionStore(postgres_dsn) as store:
        turns = store.turns("shared")
        assert len(turns) >= len(committed) and store.count("shared") == len(turns)
        assert [t.turn_id for t in turns[: len(committed)]] == committed
        assert [t.message["content"] for t in turns] == [f"w:{i}" for i in range(len(turns))]
        assert store.append("shared", _user("after")) == f"t_{len(turns) + 1}"


@pytest.mark.postgres
def test_four_concurrent_writer_processes_lose_and_duplicate_nothing(postgres_dsn: str) -> None:
    """Four processes appending to one session at once: every turn stored once, ids dense, each writer's order
    kept and each writer told the ids it got."""
    PostgresSessionStore(postgres_dsn).close()
    procs = [_writer(postgres_dsn, f"p{k}", 150) for k in range(4)]
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0]
    with PostgresSessionStore(postgres_dsn) as store:
        turns = store.turns("shared")
    assert [t.seq for t in turns] == list(range(1, 601))
    for k, out in enumerate(outputs):
        mine = [t for t in turns if t.message["content"].startswith(f"p{k}:")]
        assert [t.message["content"] for t in mine] == [f"p{k}:{i}" for i in range(150)]
        assert [t.turn_id for t in mine] == out.split()


def _terminate_blocked_append(dsn: str, store: PostgresSessionStore) -> Any:
    """Start an append that blocks on the session's row lock (held by another connection), kill its backend
    with pg_terminate_backend mid-transaction, release the lock; the append's outcome (id or exception)."""
    outcome: dict[str, Any] = {}

    def append() -> None:
        try:
            outcome["id"] = store.append("s", _user("the one message"))
        except SessionStoreError as exc:
            outcome["error"] = exc

    with psycopg.connect(dsn) as holder, psycopg.connect(dsn, autocommit=True) as admin:
        holder.execute("SELECT last_seq FROM tokenbox_sessions WHERE session_id = 's' FOR UPDATE")
        thread = threading.Thread(target=append)
        thread.start()
        blocked: list[Any] = []
        while not blocked and thread.is_alive():  # the append reaches the lock whatever the machine's speed
            blocked = admin.execute(
                "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND query LIKE 'INSERT INTO tokenbox_sessions%'"
            ).fetchall()
            time.sleep(0.005)
        assert blocked, "the append never waited on the session's lock"
        assert admin.execute("SELECT pg_terminate_backend(%s)", (blocked[0][0],)).fetchone() == (True,)
        holder.rollback()
        thread.join()
    return outcome


@pytest.mark.postgres
def test_a_connection_dropped_mid_append_is_retried_once_never_duplicated(postgres_dsn: str) -> None:
    """pg_terminate_backend on the appending connection mid-transaction: the append is retried on a new
    connection and stored exactly once; with no retries left it raises and stores nothing."""
    with PostgresSessionStore(postgres_dsn, retries=2) as store:
        store.append("s", _user("first"))
        assert _terminate_blocked_append(postgres_dsn, store) == {"id": "t_2"}
        assert [t.message["content"] for t in store.turns("s")] == ["first", "the one message"]
    with PostgresSessionStore(postgres_dsn, retries=0) as store:
        outcome = _terminate_blocked_append(postgres_dsn, store)
        assert "nothing of this write was stored" in str(outcome["error"]) and "retries=" in str(outcome["error"])
        assert store.count("s") == 2 and len(store.turns("s")) == 2
        assert store.append("s", _user("next")) == "t_3"


@pytest.mark.postgres
@pytest.mark.parametrize("committed", [True, False])
def test_a_commit_whose_answer_is_lost_is_resolved_never_repeated(
    postgres_dsn: str, monkeypatch: pytest.MonkeyPatch, committed: bool
) -> None:
    """The connection fails while COMMIT is under way: the store asks the server whether that transaction
    committed (pg_xact_status) — committed: the ids are returned, not written again; aborted: retried once."""
    original = psycopg.Connection.commit
    failures = []

    def commit(self: Any) -> None:
        if failures:
            return original(self)
        failures.append(self)
        if committed:
            original(self)  # the server committed; the answer never arrived
        else:
            self.rollback()  # the server never saw the COMMIT
        raise psycopg.OperationalError("server closed the connection unexpectedly")

    with PostgresSessionStore(postgres_dsn) as store:
        store.append("s", _user("first"))
        monkeypatch.setattr(psycopg.Connection, "commit", commit)
        assert store.append("s", _user("second")) == "t_2"
        monkeypatch.undo()
        assert len(failures) == 1 and [t.message["content"] for t in store.turns("s")] == ["first", "second"]
