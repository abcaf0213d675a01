"""LlamaIndex on the session archive: chat store and FunctionTools (issue 13 §5); the agent memory is tested in
tests/llamaindex_adapter/test_session_memory.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from llama_index.core.llms import ChatMessage
from llama_index.core.memory import ChatMemoryBuffer

from tokenbox_core.session import MemorySessionStore, SQLiteSessionStore
from tokenbox_llamaindex._chat_store import SessionChatStore
from tokenbox_llamaindex._tools import session_tools


def _turns(n: int) -> list[ChatMessage]:
    out = []
    for i in range(n):
        out += [ChatMessage(role="user", content=f"question {i} about invoice {i}"),
                ChatMessage(role="assistant", content=f"answer {i} total {i * 10} EUR")]  # fmt: skip
    return out


def test_chat_store_operations_and_chat_memory_buffer(tmp_path: Path) -> None:
    """Every BaseChatStore operation works on SQLite; ChatMemoryBuffer runs on it."""
    store = SessionChatStore(path=str(tmp_path / "c.db"))
    store.set_messages("k", _turns(2))
    store.add_message("k", ChatMessage(role="user", content="inserted"), idx=1)
    assert [m.content for m in store.get_messages("k")][:3] == [
        "question 0 about invoice 0",
        "inserted",
        "answer 0 total 0 EUR",
    ]
    assert store.delete_message("k", 1).content == "inserted" and store.delete_message("k", 99) is None
    assert store.delete_last_message("k").content == "answer 1 total 10 EUR"
    assert store.get_keys() == ["k"] and len(store.delete_messages("k")) == 3 and store.get_keys() == []
    assert store.delete_last_message("k") is None
    buffer = ChatMemoryBuffer.from_defaults(chat_store=store, chat_store_key="u", token_limit=1000)
    buffer.put(ChatMessage(role="user", content="hi"))
    assert [m.content for m in SessionChatStore(path=str(tmp_path / "c.db")).get_messages("u")] == ["hi"]
    round_trip = SessionChatStore.from_dict(store.to_dict())
    assert round_trip.path == store.path and round_trip.get_keys() == ["u"]
    with pytest.raises(TypeError, match="SessionStore"):
        SessionChatStore(store=object())


def test_function_tools() -> None:
    """The FunctionTools rehydrate (pinning) and search; errors come back as text for the agent."""
    store = MemorySessionStore()
    store.extend("s", [{"role": "user", "content": "the invoice total was 912 EUR"}])
    rehydrate_tool, search = session_tools(store, "s")
    assert str(search.call(query="invoice")) == "t_1 user: the invoice total was 912 EUR"
    assert str(rehydrate_tool.call(query="invoice")) == "t_1 user: the invoice total was 912 EUR"
    assert store.take_rehydration("s") == ["t_1"]
    assert "t_5" in str(rehydrate_tool.call(ids=["t_5"])) and "exactly one" in str(rehydrate_tool.call())
    assert rehydrate_tool.metadata.name == "rehydrate" and search.metadata.name == "search_archive"
    SQLiteSessionStore  # noqa: B018 - the tools take any SessionStore
