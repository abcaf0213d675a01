"""TokenBoxSessionMemory: LlamaIndex Memory's arguments and methods, memory blocks, round-trips, budgets."""

from __future__ import annotations

import asyncio
import inspect
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llama_index.core.base.llms.types import (
    ChatMessage,
    ImageBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
)
from llama_index.core.memory import Memory
from llama_index.core.memory.memory import BaseMemoryBlock, InsertMethod
from llama_index.core.memory.memory_blocks import StaticMemoryBlock
from llama_index.core.storage.chat_store.base_db import MessageStatus

from tokenbox_core._arguments import UnknownArgumentError
from tokenbox_core.errors import BudgetError, ConfigTypeError, TokenBoxWarning
from tokenbox_core.media import image_tokens
from tokenbox_llamaindex import MemoryOverflow, TokenBoxSessionMemory
from tokenbox_llamaindex._messages import archived


def turns(n: int, start: int = 0) -> list[ChatMessage]:
    out = []
    for i in range(start, start + n):
        out += [ChatMessage(role="user", content=f"question {i} about invoice {i}"),
                ChatMessage(role="assistant", content=f"answer {i}: total {i * 10} EUR")]  # fmt: skip
    return out


def png(width: int, height: int, noise: bool = False) -> bytes:
    """A real PNG of the given size (noisy pixels make its base64 text long)."""
    row = bytes((x * 7 + y * 13) % 256 if noise else 0 for x in range(width * 3) for y in (0,))
    raw = b"".join(b"\x00" + (bytes((b + r) % 256 for b in row) if noise else row) for r in range(height))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 0)) + chunk(b"IEND", b"")


class CountingBlock(BaseMemoryBlock[str]):
    """A block that remembers the flushed messages it was given and returns how many."""

    seen: list[str] = []  # noqa: RUF012 - a pydantic field, copied per instance

    async def _aget(self, messages: list[ChatMessage] | None = None, **kwargs: Any) -> str:
        return f"{len(self.seen)} flushed messages seen"

    async def _aput(self, messages: list[ChatMessage]) -> None:
        self.seen.extend(str(m.content) for m in messages)


class HalvingBlock(BaseMemoryBlock[str]):
    """A block of many words that halves itself when asked to truncate, recording each request."""

    words: int = 200
    asked: list[int] = []  # noqa: RUF012

    async def _aget(self, messages: list[ChatMessage] | None = None, **kwargs: Any) -> str:
        return " ".join(f"w{i}" for i in range(self.words))

    async def _aput(self, messages: list[ChatMessage]) -> None:
        return None

    async def atruncate(self, content: str, tokens_to_truncate: int) -> str | None:
        self.asked.append(tokens_to_truncate)
        words = content.split()
        return " ".join(words[: len(words) // 2]) or None


# ---------------------------------------------------------------------------- Memory's arguments and defaults


def test_from_defaults_takes_memory_from_defaults_arguments_with_its_defaults() -> None:
    """Every Memory.from_defaults argument is accepted with the same default; token_flush_size is 10 % of the
    limit, so from_defaults(token_limit=2000) works (it raised with a 3,000 default)."""
    ours = inspect.signature(TokenBoxSessionMemory.from_defaults).parameters
    for name, param in inspect.signature(Memory.from_defaults).parameters.items():
        assert name in ours, name
        if name not in ("token_flush_size", "chat_store"):
            assert ours[name].default == param.default, name
    memory = TokenBoxSessionMemory.from_defaults()
    assert (memory.token_limit, memory.token_flush_size, memory.chat_history_token_ratio) == (30_000, 3_000, 0.7)
    assert memory.insert_method == InsertMethod.SYSTEM and len(memory.session_id) == 36
    assert TokenBoxSessionMemory.from_defaults(token_limit=2000).token_flush_size == 200
    assert TokenBoxSessionMemory(token_limit=1000, token_flush_size=700).token_flush_size == 700


def test_misspelt_and_invalid_arguments_fail_at_construction() -> None:
    """Misspelt keywords get a did-you-mean; an explicit flush size over the limit and a limit the agent's part
    fills say the numbers and the fix; databases other than SQLite and PostgreSQL are refused with the supported
    spelling."""
    with pytest.raises(UnknownArgumentError, match=r"'token_flush' \(did you mean 'token_flush_size'\?\)"):
        TokenBoxSessionMemory.from_defaults(token_flush=10)
    with pytest.raises(UnknownArgumentError, match="the token budget of TokenBoxSessionMemory is 'token_limit'"):
        TokenBoxSessionMemory(max_tokens=100)
    with pytest.raises(BudgetError, match=r"token_flush_size \(1,500\) must not exceed token_limit \(1,000\)"):
        TokenBoxSessionMemory(token_limit=1000, token_flush_size=1500)
    with pytest.raises(BudgetError, match=r"token_limit \(100\) leaves no room .* raise token_limit"):
        TokenBoxSessionMemory(token_limit=100, reserve_tokens=100)
    with pytest.raises(ValueError, match="is neither SQLite nor PostgreSQL"):
        TokenBoxSessionMemory.from_defaults(async_database_uri="mysql+aiomysql://u:p@h/db")
    with pytest.raises(ValueError, match="db_schema and table_name do not apply"):
        TokenBoxSessionMemory.from_defaults(db_schema="s")
    with pytest.raises(TypeError, match="AsyncDBChatStore is not supported"):
        TokenBoxSessionMemory(chat_store=object())
    with pytest.raises(ValueError, match="unique"):
        TokenBoxSessionMemory(memory_blocks=[CountingBlock(name="a"), CountingBlock(name="a")])


def test_reserve_is_what_the_agent_adds() -> None:
    """The memory's share is token_limit minus agent_tokens, in_flight_tokens (10 % by default) and priming;
    reserve_tokens replaces the measurement."""
    memory = TokenBoxSessionMemory(token_limit=3000, agent_tokens=250)
    assert memory.in_flight_tokens == 300 and memory.reserve == 250 + 300 + 3
    assert memory.memory_budget == 3000 - 553
    assert TokenBoxSessionMemory(token_limit=3000, reserve_tokens=400).memory_budget == 2600


# ---------------------------------------------------------------------------- round trips and costs


def test_content_blocks_come_back_as_they_went_in(tmp_path: Path) -> None:
    """Text, image, thinking and ToolCallBlock blocks, tool results and additional_kwargs come back equal from
    get_all and get, in memory and after reopening the SQLite archive."""
    messages = [
        ChatMessage(role="system", content="Be brief."),
        ChatMessage(role="user", blocks=[TextBlock(text="what is this?"), ImageBlock(image=png(32, 16))]),
        ChatMessage(
            role="assistant",
            blocks=[ThinkingBlock(content="look"), ToolCallBlock(tool_call_id="c1", tool_name="f", tool_kwargs={})],
        ),
        ChatMessage(role="tool", content="a black square", additional_kwargs={"tool_call_id": "c1", "x": [1, 2]}),
        ChatMessage(role="assistant", content="A black square."),
    ]
    path = tmp_path / "m.db"
    memory = TokenBoxSessionMemory.from_defaults(session_id="s", chat_store=str(path), token_limit=20_000)
    memory.put_messages(messages)
    assert memory.get_all() == messages and memory.get() == messages
    reopened = TokenBoxSessionMemory.from_defaults(session_id="s", async_database_uri=f"sqlite+aiosqlite:///{path}")
    assert reopened.get_all() == messages


@pytest.mark.postgres
def test_a_postgres_uri_archives_in_postgres_and_async_reads_it_back(postgres_dsn: str) -> None:
    """async_database_uri='postgresql+psycopg://...' archives in PostgreSQL; a new memory on the same URI (another
    worker) reads the session back, through the async API too."""
    from tokenbox_core.session import PostgresSessionStore

    uri = postgres_dsn.replace("postgresql://", "postgresql+psycopg://", 1)
    memory = TokenBoxSessionMemory.from_defaults(session_id="s", async_database_uri=uri, token_limit=20_000)
    assert isinstance(memory.session_store, PostgresSessionStore)
    messages = [ChatMessage(role="user", content="the vault code is 1234"), ChatMessage(role="assistant", content="ok")]
    asyncio.run(memory.aput_messages(messages))
    other = TokenBoxSessionMemory.from_defaults(session_id="s", async_database_uri=uri, token_limit=20_000)
    assert other.get_all() == messages and asyncio.run(other.aget()) == messages
    memory.session_store.close()
    other.session_store.close()


def test_images_are_costed_by_their_dimensions_not_their_base64() -> None:
    """A noisy 512x512 PNG's base64 is hundreds of thousands of characters; it costs what gpt-4o's rule says for
    512x512, and the same as a flat 512x512 PNG."""
    counts = []
    for noise in (True, False):
        image = ImageBlock(image=png(512, 512, noise=noise), detail="high")
        (neutral,) = archived([ChatMessage(role="user", blocks=[image])])
        memory = TokenBoxSessionMemory(token_limit=5000)
        memory.put(ChatMessage(role="user", blocks=[image]))
        memory.get()
        counts.append(memory.last_total_tokens)
        assert len(neutral["content"][0]["image_url"]["url"]) > (200_000 if noise else 0)
    assert counts[0] == counts[1] and counts[0] < 1000
    assert image_tokens(512, 512, model="gpt-4o", detail="high") < counts[0]


# ---------------------------------------------------------------------------- flushing


def test_flush_hands_the_oldest_to_the_blocks_and_keeps_everything() -> None:
    """Past chat_history_token_ratio of the memory's share, the oldest messages are flushed in chunks of at
    least token_flush_size to the blocks that accept them; the archive keeps every message, the active part
    starts on a user message."""
    taker = CountingBlock(name="taker", priority=1)
    refuser = CountingBlock(name="refuser", priority=2, accept_short_term_memory=False)
    memory = TokenBoxSessionMemory(token_limit=300, token_flush_size=40, tokenizer_fn=str.split,
                                   memory_blocks=[taker, refuser])  # fmt: skip
    memory.put_messages(turns(12))
    assert memory.flushed_count > 0 and len(memory.get_all()) == 24
    assert taker.seen == [m.content for m in memory.get_all()[: memory.flushed_count]] and refuser.seen == []
    active = memory.get_all(MessageStatus.ACTIVE)
    assert active[0].role.value == "user" and len(active) == 24 - memory.flushed_count
    assert memory.get_all(MessageStatus.ARCHIVED) == memory.get_all()[: memory.flushed_count]


def test_reset_and_set_by_status() -> None:
    """reset(ACTIVE) keeps the flushed messages, reset(ARCHIVED) the active ones, reset() nothing; set replaces."""
    memory = TokenBoxSessionMemory(token_limit=300, token_flush_size=40, tokenizer_fn=str.split)
    memory.put_messages(turns(12))
    flushed = memory.flushed_count
    archived_part, active_part = memory.get_all()[:flushed], memory.get_all()[flushed:]

    async def reset(status: MessageStatus | None) -> list[ChatMessage]:
        copy = TokenBoxSessionMemory.from_string(memory.to_string())
        await copy.areset(status)
        return await copy.aget_all()

    assert asyncio.run(reset(MessageStatus.ACTIVE)) == archived_part
    assert asyncio.run(reset(MessageStatus.ARCHIVED)) == active_part
    assert asyncio.run(reset(None)) == []
    memory.set(turns(1))
    assert memory.get_all() == turns(1) and memory.flushed_count == 0


def test_to_string_round_trip_in_memory_and_on_disk(tmp_path: Path) -> None:
    """from_string(to_string()) restores the settings, messages and flush mark; an archive on disk is named by
    its path; memory blocks are asked for again."""
    memory = TokenBoxSessionMemory(token_limit=300, token_flush_size=40, tokenizer_fn="whitespace", session_id="s")
    memory.put_messages(turns(10))
    again = TokenBoxSessionMemory.from_string(memory.to_string())
    assert again.get_all() == memory.get_all() and again.flushed_count == memory.flushed_count
    assert again.get() == memory.get() and again.token_flush_size == 40
    disk = TokenBoxSessionMemory(token_limit=300, chat_store=str(tmp_path / "m.db"), session_id="s")
    disk.put_messages(turns(3))
    data = disk.to_dict()
    assert "messages" not in data and TokenBoxSessionMemory.from_dict(data).get_all() == turns(3)
    blocked = TokenBoxSessionMemory(memory_blocks=[CountingBlock(name="b")]).to_dict()
    with pytest.raises(ValueError, match=r"memory blocks \['b'\]; pass them again"):
        TokenBoxSessionMemory.from_dict(blocked)


# ---------------------------------------------------------------------------- memory blocks


def _static(priority: int, words: int = 12) -> StaticMemoryBlock:
    return StaticMemoryBlock(name=f"p{priority}", priority=priority,
                             static_content=" ".join(f"p{priority}w{i}" for i in range(words)))  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(limit=st.integers(min_value=20, max_value=400))
def test_blocks_at_every_priority_under_a_tight_limit(limit: int) -> None:
    """Priority 0 is never cut (MemoryOverflow when it cannot fit), larger priority numbers go first, the kept
    blocks are 0 and 1..k, and what get returns never exceeds the memory's share."""
    blocks = [_static(p) for p in (3, 0, 2, 1)]
    memory = TokenBoxSessionMemory(token_limit=limit, tokenizer_fn="whitespace", memory_blocks=blocks,
                                   in_flight_tokens=0)  # fmt: skip
    memory.put(ChatMessage(role="user", content="hello there"))
    try:
        got = memory.get()
    except MemoryOverflow as exc:  # priority 0 or the latest user message cannot fit
        assert ("'p0'" in str(exc) or "'latest-user'" in str(exc)) and exc.budget < exc.required
        return
    text = "\n".join(str(b.text) for m in got for b in m.blocks if isinstance(b, TextBlock))
    kept = [p for p in (0, 1, 2, 3) if f"p{p}w11" in text]
    assert kept[0] == 0 and kept == list(range(len(kept)))
    assert memory.last_total_tokens is not None and memory.last_total_tokens <= memory.memory_budget
    assert got[-1].content == "hello there"


def test_a_block_that_must_shrink_is_asked_to_truncate() -> None:
    """A flexible block over its share gets atruncate(content, tokens_to_truncate) and its shorter answer is
    used; priority 0 is untouched."""
    halving = HalvingBlock(name="notes", priority=1, words=300)
    memory = TokenBoxSessionMemory(token_limit=250, tokenizer_fn="whitespace", in_flight_tokens=0,
                                   memory_blocks=[halving, _static(0)])  # fmt: skip
    memory.put(ChatMessage(role="user", content="hi"))
    system = memory.get()[0]
    text = system.blocks[0].text
    assert halving.asked and halving.asked[0] > 0 and "p0w11" in text and "w0 w1" in text and "w299" not in text
    assert memory.last_total_tokens <= memory.memory_budget


def test_insert_method_user_and_chat_message_blocks() -> None:
    """insert_method='user' puts the rendered blocks into the latest user message; blocks returning chat
    messages follow the leading system messages."""

    class Recent(BaseMemoryBlock[list[ChatMessage]]):
        async def _aget(self, messages: list[ChatMessage] | None = None, **kwargs: Any) -> list[ChatMessage]:
            return [ChatMessage(role="user", content="earlier"), ChatMessage(role="assistant", content="noted")]

        async def _aput(self, messages: list[ChatMessage]) -> None:
            return None

    memory = TokenBoxSessionMemory(insert_method="user", memory_blocks=[_static(1), Recent(name="recent")])
    memory.put_messages([ChatMessage(role="system", content="Be brief."), ChatMessage(role="user", content="now?")])
    got = memory.get()
    assert [m.role.value for m in got] == ["system", "user", "assistant", "user"]
    assert [got[0].content, got[1].content] == ["Be brief.", "earlier"]
    assert got[-1].blocks[0].text.startswith("<memory>") and got[-1].blocks[-1].text == "now?"
    assert memory.get_all()[-1].content == "now?"  # the archive is untouched


def test_async_surface_and_sync_calls_inside_a_running_loop() -> None:
    """aput, aput_messages, aget, aget_all, aset and areset work in an event loop, and the sync methods work
    from inside one (a notebook cell, an agent step)."""

    async def run() -> tuple[int, int, int, int]:
        memory = TokenBoxSessionMemory(token_limit=2000)
        await memory.aput(ChatMessage(role="user", content="hello"))
        await memory.aput_messages(turns(3))
        memory.put(ChatMessage(role="user", content="sync inside a loop"))
        n, synced = len(await memory.aget_all()), len(memory.get_all())
        await memory.aset(turns(1))
        m = len(await memory.aget())
        await memory.areset()
        return n, synced, m, len(await memory.aget_all())

    assert asyncio.run(run()) == (8, 8, 2, 0)


def test_a_latest_user_message_over_the_share_is_an_overflow_naming_it() -> None:
    """When the latest user message alone exceeds the memory's share, get raises MemoryOverflow with the numbers
    and the fix instead of returning a request over token_limit."""
    memory = TokenBoxSessionMemory(token_limit=100, tokenizer_fn="whitespace")
    memory.put(ChatMessage(role="user", content="x " * 200))
    with pytest.raises(MemoryOverflow, match=r"need 20\d tokens but the memory's share of token_limit .* is 87"):
        memory.get()


def test_messages_a_provider_would_reject_raise_or_are_repaired() -> None:
    """A tool result answering no call raises ConversationError with the fix (on_invalid='raise', the default);
    on_invalid='repair' leaves it out of the archive."""
    from tokenbox_core.errors import ConversationError

    stray = [ChatMessage(role="user", content="hi"), ChatMessage(role="tool", content="result")]
    with pytest.raises(ConversationError, match="answers no earlier tool call"):
        TokenBoxSessionMemory().put_messages(stray)
    from tokenbox_core.errors import ConversationRepairWarning

    repaired = TokenBoxSessionMemory(on_invalid="repair")
    with pytest.warns(ConversationRepairWarning, match="dropped the tool result at 1"):
        repaired.put_messages(stray)
    assert repaired.get_all() == stray[:1]


def test_fact_extraction_and_vector_blocks_work_unchanged() -> None:
    """LlamaIndex's FactExtractionMemoryBlock and VectorMemoryBlock receive the flushed messages and their
    content reaches the system message, within the memory's share."""
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.memory.memory_blocks import FactExtractionMemoryBlock, VectorMemoryBlock
    from llama_index.core.vector_stores.types import BasePydanticVectorStore, VectorStoreQueryResult

    from tokenbox_llamaindex.testing import RecordingFunctionLLM

    class ListStore(BasePydanticVectorStore):
        """A vector store that keeps its nodes in a list and returns the newest first."""

        stores_text: bool = True
        nodes: list[Any] = []  # noqa: RUF012

        @property
        def client(self) -> Any:
            return None

        def add(self, nodes: Any, **kwargs: Any) -> list[str]:
            self.nodes.extend(nodes)
            return [n.node_id for n in nodes]

        def delete(self, ref_doc_id: str, **kwargs: Any) -> None:
            return None

        def query(self, query: Any, **kwargs: Any) -> VectorStoreQueryResult:
            found = self.nodes[::-1][: query.similarity_top_k]
            return VectorStoreQueryResult(nodes=found, similarities=[1.0] * len(found), ids=[n.node_id for n in found])

    extractor = RecordingFunctionLLM(lambda messages, tools, n: ChatMessage(
        role="assistant", content="<facts><fact>The user's invoices are in EUR.</fact></facts>"))  # fmt: skip
    facts = FactExtractionMemoryBlock(llm=extractor, priority=0)
    vectors = VectorMemoryBlock(vector_store=ListStore(), embed_model=MockEmbedding(embed_dim=4), priority=1)
    memory = TokenBoxSessionMemory(token_limit=300, token_flush_size=40, tokenizer_fn="whitespace",
                                   memory_blocks=[facts, vectors])  # fmt: skip
    memory.put_messages(turns(12))
    assert memory.flushed_count > 0 and facts.facts == ["The user's invoices are in EUR."]
    system = memory.get()[0]
    text = system.blocks[0].text
    assert system.role.value == "system" and "<ExtractedFacts>" in text and "invoices are in EUR" in text
    assert "<RetrievedMessages>" in text and "question 0 about invoice 0" in text
    assert memory.last_total_tokens is not None and memory.last_total_tokens <= memory.memory_budget


def test_remaining_errors_say_what_to_pass() -> None:
    """Both chat_store and async_database_uri, an agent= that is not an agent, a defense= that is no DefensePolicy,
    and a memory block returning something else than text, content blocks or messages are refused with the fix."""

    class Odd(BaseMemoryBlock[str]):
        async def _aget(self, messages: list[ChatMessage] | None = None, **kwargs: Any) -> Any:
            return {"not": "content"}

        async def _aput(self, messages: list[ChatMessage]) -> None:
            return None

    with pytest.raises(ValueError, match="give chat_store or async_database_uri, not both"):
        TokenBoxSessionMemory.from_defaults(chat_store="a.db", async_database_uri="sqlite+aiosqlite:///b.db")
    with pytest.raises(TypeError, match="agent= must be a LlamaIndex agent .* or give reserve_tokens= yourself"):
        TokenBoxSessionMemory.from_defaults(agent=object())
    with pytest.raises(ConfigTypeError, match=r"defense=...\) must be a tokenbox_core.defense.DefensePolicy, got dict"):
        TokenBoxSessionMemory(defense={})
    memory = TokenBoxSessionMemory(memory_blocks=[Odd(name="odd")])
    memory.put(ChatMessage(role="user", content="hi"))
    with pytest.raises(ValueError, match="memory block 'odd' returned dict; a memory block returns text"):
        memory.get()


def test_an_agent_run_over_the_limit_warns_and_later_runs_reserve_what_it_added() -> None:
    """A run whose tool calls and results (put at once, as a FunctionAgent does) push its last request over
    token_limit gives a TokenBoxWarning with the numbers; the memory then reserves what the run added, so the same
    run again stays within the limit and warns nothing."""
    call = ChatMessage(role="assistant", blocks=[ToolCallBlock(tool_call_id="c1", tool_name="f", tool_kwargs={})])
    steps = [call, ChatMessage(role="tool", content="word " * 300, additional_kwargs={"tool_call_id": "c1"}),
             ChatMessage(role="assistant", content="done")]  # fmt: skip
    memory = TokenBoxSessionMemory(token_limit=1000, in_flight_tokens=50, tokenizer_fn="whitespace")
    memory.put_messages(turns(60))
    assert memory.in_flight_reserve == 50
    memory.get()
    sent = memory.agent_tokens + memory._chat().base + (memory.last_total_tokens or 0)
    with pytest.warns(TokenBoxWarning, match=r"took \d+ tokens: its last request was about \d[\d,]* tokens, over "
                      r"token_limit \(1,000\) by \d+; later requests reserve \d+"):  # fmt: skip
        memory.put_messages(steps)
    seen = memory.in_flight_seen
    assert seen > 300 and sent + seen > 1000 and memory.in_flight_reserve == seen
    memory.put(ChatMessage(role="user", content="again"))
    memory.get()
    assert memory.agent_tokens + memory._chat().base + (memory.last_total_tokens or 0) + seen <= 1000
    memory.put_messages([m.model_copy(update={}) for m in steps])  # the same run again: within the limit, no warning


def test_the_adapted_in_flight_reserve_is_bounded() -> None:
    """The in-flight reserve never drops below in_flight_tokens and adapts to at most what leaves the memory
    token_flush_size."""
    memory = TokenBoxSessionMemory(token_limit=1000, in_flight_tokens=50, tokenizer_fn="whitespace")
    memory._in_flight_seen = 10
    assert memory.in_flight_reserve == 50
    memory._in_flight_seen = 2000
    assert memory.memory_budget == memory.token_flush_size == 100


def test_a_run_larger_than_the_reserve_may_keep_lowers_what_get_returns() -> None:
    """When the largest run seen needs more than the in-flight reserve may keep (it leaves the memory
    token_flush_size), get compiles into what that run leaves of token_limit, so its request stays within the
    limit; when the memory's messages cannot fit there, get returns them within memory_budget instead."""
    memory = TokenBoxSessionMemory(token_limit=1000, in_flight_tokens=50, tokenizer_fn="whitespace")
    memory.put_messages(turns(60))
    memory._in_flight_seen = 950  # more than the reserve may keep: the memory's budget stays token_flush_size
    assert memory.memory_budget == memory.token_flush_size == 100
    memory.get()
    assert 0 < (memory.last_total_tokens or 0) <= 1000 - memory.agent_tokens - memory._chat().base - 950 < 100
    memory._in_flight_seen = 2000  # nothing is left: the newest messages still come back, within memory_budget
    assert memory.get()[-1].content == "answer 59: total 590 EUR"
    assert 1 < (memory.last_total_tokens or 0) <= memory.memory_budget


def test_reserve_tokens_below_the_priming_still_keeps_the_request_within_the_limit() -> None:
    """reserve_tokens=0 leaves the memory token_limit less the chat format's priming (every request pays it), so
    what get returns plus the priming stays within token_limit (the share was token_limit, the priming on top)."""
    memory = TokenBoxSessionMemory(token_limit=60, reserve_tokens=0, tokenizer_fn="whitespace")
    memory.put_messages(turns(30))
    memory.get()
    base = memory._chat().base
    assert memory.reserve == base and memory.memory_budget == 60 - base
    assert (memory.last_total_tokens or 0) + base <= 60
