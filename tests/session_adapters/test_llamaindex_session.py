"""LlamaIndex on the session archive: Memory-surface memory, chat store, FunctionTools (issue 13 §5)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.llms import ChatMessage
from llama_index.core.memory import ChatMemoryBuffer
from llama_index.core.memory.memory import BaseMemoryBlock

from tokenbox_core.session import MemorySessionStore, SQLiteSessionStore, rehydrate
from tokenbox_llamaindex.chat_store import SessionChatStore
from tokenbox_llamaindex.session_memory import TokenBoxSessionMemory
from tokenbox_llamaindex.tools import session_tools


class RecordingBlock(BaseMemoryBlock[str]):
    """A memory block that keeps the flushed messages' texts and returns how many it saw."""

    seen: list[str] = []  # noqa: RUF012 - a pydantic field (copied per instance)

    async def _aget(self, messages: list[ChatMessage] | None = None, **kwargs: Any) -> str:
        return f"{len(self.seen)} flushed messages seen"

    async def _aput(self, messages: list[ChatMessage]) -> None:
        self.seen.extend(str(m.content) for m in messages)


def _turns(n: int) -> list[ChatMessage]:
    out = []
    for i in range(n):
        out += [ChatMessage(role="user", content=f"question {i} about invoice {i}"),
                ChatMessage(role="assistant", content=f"answer {i} total {i * 10} EUR")]  # fmt: skip
    return out


def _memory(**kw: Any) -> TokenBoxSessionMemory:
    base: dict[str, Any] = dict(token_limit=100, token_flush_size=20, counter="whitespace", session_id="s",
                                checkpoint_interval=6)  # fmt: skip
    return TokenBoxSessionMemory(**{**base, **kw})


def test_memory_flushes_into_blocks_and_keeps_everything() -> None:
    """Over token_limit × ratio, the oldest messages are flushed in chunks to the blocks; the archive keeps all."""
    block = RecordingBlock(name="notes", priority=0)
    memory = _memory(memory_blocks=[block])
    for m in _turns(12):
        memory.put(m)
    assert len(memory.get_all()) == 24 and memory.flushed_count > 0
    assert block.seen == [str(m.content) for m in memory.get_all()[: memory.flushed_count]]
    chat = memory._chat()
    active = memory.session_store.turns("s", start=memory.flushed_count)
    assert sum(chat.size(t.as_message(), None) for t in active) <= 70
    assert active[0].role == "user"


def test_get_has_blocks_summaries_pointer_then_history_within_limit() -> None:
    """get(): block content, the summary section, a pointer for unsummarised flushed turns, the active history."""
    memory = _memory(
        memory_blocks=[RecordingBlock(name="notes", priority=1)],
        token_limit=800,
        token_flush_size=40,
        chat_history_token_ratio=0.4,
    )
    for m in _turns(40):
        memory.put(m)
    got = memory.get()
    texts = [str(m.content) for m in got]
    assert texts[0].startswith("<notes>")
    assert any(t.startswith("CONVERSATION_SUMMARY") for t in texts)
    assert texts[-1] == "answer 39 total 390 EUR"
    chat = memory._chat()
    from tokenbox_llamaindex.chat_store import to_neutral

    assert sum(chat.size(m, None) for m in to_neutral(got)) + 3 <= 800


def test_rehydrated_turns_come_back_for_one_get() -> None:
    """rehydrate() on the memory's store puts a flushed turn into the next get only."""
    memory = _memory()
    memory.put_messages(_turns(12))
    rehydrate(memory.session_store, "s", ["t_3"])
    first = [str(m.content) for m in memory.get()]
    assert first[0].startswith("REHYDRATED") and "t_3 user: question 1 about invoice 1" in first[0]
    assert not str(memory.get()[0].content).startswith("REHYDRATED")


def test_async_surface() -> None:
    """aput, aput_messages, aget, aget_all, aset and areset work in an event loop."""

    async def run() -> tuple[int, int, int]:
        memory = _memory()
        await memory.aput(ChatMessage(role="user", content="hello"))
        await memory.aput_messages(_turns(3))
        n = len(await memory.aget_all())
        await memory.aset(_turns(1))
        m = len(await memory.aget())
        await memory.areset()
        return n, m, len(await memory.aget_all())

    assert asyncio.run(run()) == (7, 2, 0)


def test_to_dict_and_to_string_round_trip_in_memory_and_sqlite(tmp_path: Path) -> None:
    """from_dict(to_dict()) and from_string(to_string()) give the same messages, flush state and get()."""
    memory = _memory()
    memory.put_messages(_turns(10))
    again = TokenBoxSessionMemory.from_dict(memory.to_dict())
    assert [m.content for m in again.get_all()] == [m.content for m in memory.get_all()]
    assert again.flushed_count == memory.flushed_count and again.get() == memory.get()
    twice = TokenBoxSessionMemory.from_string(memory.to_string())
    assert twice.get() == memory.get() and twice.token_limit == 100
    on_disk = _memory(path=str(tmp_path / "m.db"))
    on_disk.put_messages(_turns(10))
    data = on_disk.to_dict()
    assert "messages" not in data and data["path"] == str(tmp_path / "m.db")
    reopened = TokenBoxSessionMemory.from_dict(data)
    assert reopened.get() == on_disk.get() and reopened.flushed_count == on_disk.flushed_count


def test_bad_configuration_is_refused() -> None:
    """A flush size over the limit, duplicate block names and a non-store are ValueErrors/TypeErrors."""
    with pytest.raises(ValueError, match="token_flush_size"):
        _memory(token_flush_size=500)
    with pytest.raises(ValueError, match="unique; repeated: a"):
        _memory(memory_blocks=[RecordingBlock(name="a"), RecordingBlock(name="a")])
    with pytest.raises(ValueError, match="chat_history_token_ratio"):
        _memory(chat_history_token_ratio=1.5)
    with pytest.raises(TypeError, match="SessionStore"):
        _memory(store=object())


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
