"""Bad input never poisons a session: every message is validated before anything is stored (issue 36 §1)."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tokenbox_core import ContextSession
from tokenbox_core.errors import SessionError
from tokenbox_core.session import MemorySessionStore, SessionStore, SQLiteSessionStore

GOOD = {"role": "user", "content": "hello"}

# (message, the field the error names, a word of the fix it names)
BAD: list[tuple[dict[Any, Any], str, str]] = [
    ({"role": "user", "content": "a\ud800b"}, "'content'", "errors='replace'"),
    ({"role": "user", "content": [{"type": "text", "text": "x\udc00"}]}, "'content[0].text'", "errors='replace'"),
    ({"role": "user", "content": "hi", "name": "n\ud800"}, "'name'", "errors='replace'"),
    ({"role": "user", "content": "hi", "k\ud800": 1}, "key", "errors='replace'"),
    ({"role": "user", "content": "hi", "meta": b"\x00raw"}, "'meta'", "decode"),
    ({"role": "user", "content": "hi", "meta": bytearray(b"x")}, "'meta'", "decode"),
    ({"role": "user", "content": "hi", "meta": datetime.datetime(2020, 1, 1)}, "'meta'", "isoformat"),
    ({"role": "user", "content": "hi", "meta": datetime.date(2020, 1, 1)}, "'meta'", "isoformat"),
    ({"role": "user", "content": "hi", "meta": {1, 2}}, "'meta'", "sorted list"),
    ({"role": "user", "content": "hi", "meta": frozenset({1})}, "'meta'", "sorted list"),
    ({"role": "user", "content": "hi", "meta": float("nan")}, "'meta'", "finite"),
    ({"role": "user", "content": "hi", "meta": {"x": float("inf")}}, "'meta.x'", "finite"),
    ({"role": "user", "content": "hi", 3: "k"}, "key 3", "string keys"),
    ({"role": "user", "content": "hi", "meta": object()}, "'meta'", "JSON"),
]
IDS = [
    "surrogate-content",
    "surrogate-part",
    "surrogate-name",
    "surrogate-key",
    "bytes",
    "bytearray",
    "datetime",
    "date",
    "set",
    "frozenset",
    "nan",
    "inf-nested",
    "int-key",
    "object",
]


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SessionStore]:
    """Each store implementation, fresh."""
    s: SessionStore = MemorySessionStore() if request.param == "memory" else SQLiteSessionStore(tmp_path / "s.db")
    yield s
    s.close()


@pytest.mark.parametrize(("bad", "field", "fix"), BAD, ids=IDS)
def test_add_refuses_bad_values_and_stores_nothing(
    store: SessionStore, bad: dict[Any, Any], field: str, fix: str
) -> None:
    """A bad value anywhere in a batch raises SessionError naming message index and field; nothing is stored."""
    session = ContextSession(store, "s", budget=400, counter="whitespace")
    session.add(GOOD)
    with pytest.raises(SessionError) as info:
        session.add([GOOD, bad])
    text = str(info.value)
    assert "message 1" in text and field in text and fix in text, text
    assert session.messages() == [GOOD]
    assert store.count("s") == 1
    session.add({"role": "user", "content": "still works"})
    assert session.compile().total_tokens > 0


@pytest.mark.parametrize(("bad", "field", "fix"), BAD, ids=IDS)
def test_store_append_refuses_bad_values(store: SessionStore, bad: dict[Any, Any], field: str, fix: str) -> None:
    """The store's own append/extend/replace validate the same way: nothing stored, the field named."""
    store.append("s", GOOD)
    for call in (lambda: store.extend("s", [GOOD, bad]), lambda: store.replace("s", [GOOD, bad])):
        with pytest.raises(SessionError, match="message 1") as info:
            call()
        assert field in str(info.value)
    assert [t.message for t in store.turns("s")] == [GOOD]


def test_sync_refuses_bad_values_atomically(store: SessionStore) -> None:
    """sync() validates the whole conversation it is given (the index is its position there); nothing is kept."""
    session = ContextSession(store, "s", budget=400, counter="whitespace")
    session.sync([GOOD])
    with pytest.raises(SessionError, match=r"message 2: field 'content'"):
        session.sync([GOOD, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "\ud800"}])
    assert session.messages() == [GOOD]


def test_tuples_are_stored_as_lists(store: SessionStore) -> None:
    """The documented conversion: a tuple is stored as the JSON list it means (content parts, tool calls)."""
    store.append("s", {"role": "user", "content": ({"type": "text", "text": "hi"},)})
    assert store.turns("s")[0].message == {"role": "user", "content": [{"type": "text", "text": "hi"}]}
