"""TokenBoxSession: the Agents SDK Session contract on the archive, lossless; the adapter's errors."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

from agents.memory.session import Session

from tokenbox_core.errors import ConfigTypeError, SessionError
from tokenbox_core.session import MemorySessionStore
from tokenbox_openai_agents import TokenBoxInputFilter, TokenBoxSession

ITEMS: list[dict[str, Any]] = [
    {"role": "user", "content": "hello"},
    {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "opaque"},
    {"id": "fc_1", "type": "function_call", "call_id": "c1", "name": "lookup", "arguments": '{"n": 1}'},
    {"id": "fc_2", "type": "function_call", "call_id": "c2", "name": "lookup", "arguments": '{"n": 2}'},
    {"type": "function_call_output", "call_id": "c1", "output": "one"},
    {"type": "function_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": "two"}]},
    {"id": "cmp_1", "type": "compaction", "encrypted_content": "summary"},
    {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "done", "annotations": []}],
    },
    {"role": "user", "content": "hello"},
]


def test_is_a_session() -> None:
    """TokenBoxSession satisfies the SDK's Session protocol."""
    assert isinstance(TokenBoxSession("s"), Session)


def test_round_trip_is_lossless(tmp_path: Path) -> None:
    """get_items gives back exactly the items added (reasoning, compaction, parallel calls), after a reopen."""
    session = TokenBoxSession("s", store=tmp_path / "a.db")
    asyncio.run(session.add_items(ITEMS[:3]))
    asyncio.run(session.add_items(ITEMS[3:]))
    assert asyncio.run(session.get_items()) == ITEMS
    session.close()
    again = TokenBoxSession("s", store=str(tmp_path / "a.db"))
    assert asyncio.run(again.get_items()) == ITEMS
    assert asyncio.run(again.get_items(limit=2)) == ITEMS[-2:]
    assert asyncio.run(again.get_items(limit=0)) == []
    again.close()


def test_a_response_split_across_add_items_is_one_assistant_message() -> None:
    """Function calls of one response given in two add_items calls join one assistant message (their outputs
    directly after it), as one call would store them: the archive is a valid conversation."""
    whole, split = TokenBoxSession("a"), TokenBoxSession("b")
    asyncio.run(whole.add_items(ITEMS))
    asyncio.run(split.add_items(ITEMS[:3]))
    asyncio.run(split.add_items(ITEMS[3:]))
    assert split._messages() == whole._messages()
    assert [len(m.get("tool_calls") or ()) for m in split._messages()] == [0, 2, 0, 0, 0, 0, 0]
    assert asyncio.run(split.get_items()) == ITEMS


def test_repeated_items_are_kept() -> None:
    """An item added twice (the same text without an id) is stored twice."""
    session = TokenBoxSession("s", store=MemorySessionStore())
    asyncio.run(session.add_items([{"role": "user", "content": "ok"}]))
    asyncio.run(session.add_items([{"role": "user", "content": "ok"}]))
    assert asyncio.run(session.get_items()) == [{"role": "user", "content": "ok"}] * 2


def test_pop_and_clear() -> None:
    """pop_item removes the newest item (even one of a group), clear_session removes all; empty pops None."""
    session = TokenBoxSession("s")
    asyncio.run(session.add_items(ITEMS[:4]))
    assert asyncio.run(session.pop_item()) == ITEMS[3]
    assert asyncio.run(session.get_items()) == ITEMS[:3]
    asyncio.run(session.add_items(ITEMS[3:5]))
    assert asyncio.run(session.get_items()) == ITEMS[:5]
    asyncio.run(session.clear_session())
    assert asyncio.run(session.get_items()) == []
    assert asyncio.run(session.pop_item()) is None


def test_bad_limit() -> None:
    """A limit that is not an integer >= 0 names the value."""
    with pytest.raises(SessionError, match=r"limit must be an integer >= 0 or None, got -1"):
        asyncio.run(TokenBoxSession("s").get_items(limit=-1))


def test_bad_store() -> None:
    """A store of the wrong kind names what is accepted."""
    with pytest.raises(ConfigTypeError, match=r"store must be True or None \(in memory\), a path .* got int"):
        TokenBoxSession("s", store=3)


def test_bad_item() -> None:
    """An item that is not a dict names its index and the shape expected."""
    with pytest.raises(ConfigTypeError, match=r"item 1 must be a Responses input item .* got str"):
        asyncio.run(TokenBoxSession("s").add_items([{"role": "user", "content": "a"}, "b"]))


def test_filter_needs_a_session() -> None:
    """TokenBoxInputFilter names the session it needs."""
    with pytest.raises(ConfigTypeError, match=r"TokenBoxInputFilter needs a TokenBoxSession .* got str"):
        TokenBoxInputFilter("s")  # type: ignore[arg-type]


def test_postgresql_uri_opens_the_postgres_store() -> None:
    """A PostgreSQL URI is opened by PostgresSessionStore (an unreachable server is its clear error)."""
    pytest.importorskip("psycopg")
    from tokenbox_core.errors import SessionStoreError

    with pytest.raises(SessionStoreError, match=r"cannot open the session archive at 127\.0\.0\.1:1/postgres"):
        TokenBoxSession("s", store="postgresql://tokenbox@127.0.0.1:1/postgres")


@pytest.mark.skipif(not os.environ.get("TOKENBOX_TEST_POSTGRES_DSN"), reason="set TOKENBOX_TEST_POSTGRES_DSN")
def test_round_trip_on_postgres() -> None:
    """On PostgreSQL too, get_items gives back exactly the items added, after a reopen."""
    dsn = os.environ["TOKENBOX_TEST_POSTGRES_DSN"]
    session = TokenBoxSession("oai-round-trip", store=dsn)
    asyncio.run(session.clear_session())
    asyncio.run(session.add_items(ITEMS))
    session.close()
    again = TokenBoxSession("oai-round-trip", store=dsn)
    assert asyncio.run(again.get_items()) == ITEMS
    asyncio.run(again.clear_session())
    again.close()
