"""TokenBoxMemory: the chat history laid out into token_limit, critical messages kept, tool groups atomic."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from llama_index.core.base.llms.types import ImageBlock, TextBlock, ToolCallBlock, VideoBlock
from llama_index.core.chat_engine import ContextChatEngine, SimpleChatEngine
from llama_index.core.llms import ChatMessage, MockLLM
from llama_index.core.memory import ChatMemoryBuffer, Memory, StaticMemoryBlock

from tokenbox_core import ContextCriticalOverflow
from tokenbox_core.layout import RemovedItem
from tokenbox_core.tokens import count_message_tokens
from tokenbox_llamaindex import TokenBoxMemory


def say(role: str, n: int, tag: str = "w") -> ChatMessage:
    """A message of ``n`` distinct words."""
    return ChatMessage(role=role, content=" ".join(f"{tag}{i}" for i in range(n)))


def call(call_id: str, arguments: str = "{}", *, block: bool = False, content: str = "") -> ChatMessage:
    """An assistant tool call, in additional_kwargs (OpenAI dicts) or as a ToolCallBlock."""
    if block:
        return ChatMessage(
            role="assistant",
            blocks=[
                TextBlock(text=content),
                ToolCallBlock(tool_call_id=call_id, tool_name="lookup", tool_kwargs=arguments),
            ],
        )
    tool_calls = [{"id": call_id, "type": "function", "function": {"name": "lookup", "arguments": arguments}}]
    return ChatMessage(role="assistant", content=content, additional_kwargs={"tool_calls": tool_calls})


def result(call_id: str, n: int) -> ChatMessage:
    """A tool result answering ``call_id``."""
    return ChatMessage(
        role="tool", content=" ".join(f"r{i}" for i in range(n)), additional_kwargs={"tool_call_id": call_id}
    )


def as_dict(message: ChatMessage) -> dict[str, Any]:
    """The message as an OpenAI-style dict, to count independently of the adapter."""
    calls = list(message.additional_kwargs.get("tool_calls") or [])
    calls += [
        {"id": b.tool_call_id, "function": {"name": b.tool_name, "arguments": b.tool_kwargs}}
        for b in message.blocks
        if isinstance(b, ToolCallBlock)
    ]
    return {
        "role": message.role.value,
        "content": message.content or "",
        "tool_calls": calls,
        "tool_call_id": message.additional_kwargs.get("tool_call_id"),
    }


def cost(messages: list[ChatMessage], counter: str = "whitespace") -> int:
    return count_message_tokens([as_dict(m) for m in messages], counter)


def memory_with(history: list[ChatMessage], limit: int, **kwargs: Any) -> TokenBoxMemory:
    return TokenBoxMemory.from_defaults(chat_history=history, token_limit=limit, counter="whitespace", **kwargs)


def words(text: str) -> list[str]:
    return text.split()


# ---------------------------------------------------------------------------- regressions of the defaults


def test_system_message_kept_where_chat_memory_buffer_drops_it() -> None:
    """ChatMemoryBuffer trims from the front and loses the system prompt; TokenBoxMemory keeps it."""
    history = [say("system", 20, "s"), say("user", 30, "a"), say("assistant", 30, "b"), say("user", 5, "c")]
    stock = ChatMemoryBuffer.from_defaults(chat_history=history, token_limit=40, tokenizer_fn=words).get()
    assert history[0] not in stock
    kept = memory_with(history, 40).get()
    assert kept == [history[0], history[3]] and cost(kept) <= 40


def test_never_returns_a_final_message_over_the_limit() -> None:
    """ChatMemoryBuffer returns an oversized last message anyway; TokenBoxMemory drops it and stays in budget."""
    history = [say("system", 5, "s"), say("user", 5, "q"), say("assistant", 500, "a")]
    stock = ChatMemoryBuffer.from_defaults(chat_history=history, token_limit=100, tokenizer_fn=words).get()
    assert stock == [history[-1]] and cost(stock) > 100
    kept = memory_with(history, 100).get()
    assert kept == history[:2] and cost(kept) <= 100


def test_critical_messages_over_the_limit_raise() -> None:
    """When the system prompt and latest user message alone exceed the limit, ContextCriticalOverflow says so."""
    history = [say("system", 5, "s"), say("assistant", 5, "a"), say("user", 500, "q")]
    assert ChatMemoryBuffer.from_defaults(chat_history=history, token_limit=100, tokenizer_fn=words).get() == [
        history[-1]
    ]
    with pytest.raises(ContextCriticalOverflow, match="need 518 tokens but token_limit is 100") as info:
        memory_with(history, 100).get()
    assert info.value.section_ids == ("system", "latest-user")
    assert isinstance(info.value, ValueError)  # as ChatMemoryBuffer's errors are (issue 10 item 12)


def test_tool_result_never_left_without_its_call() -> None:
    """ChatMemoryBuffer can return a tool result alone; TokenBoxMemory keeps or drops the call with its result."""
    history = [say("user", 30, "q"), call("c1", "x " * 30), result("c1", 40)]
    stock = ChatMemoryBuffer.from_defaults(chat_history=history, token_limit=60, tokenizer_fn=words).get()
    assert stock == [history[-1]]  # an orphaned tool result
    assert memory_with(history, 60).get() == [history[0]]
    assert memory_with(history, 200).get() == history


def test_tool_call_payloads_and_role_overhead_are_counted() -> None:
    """Tool-call arguments, ids and per-message overhead count; ChatMemoryBuffer sees only the text."""
    history = [
        say("user", 5, "q"),
        call("c1", " ".join(f"arg{i}" for i in range(80))),
        result("c1", 5),
        say("assistant", 5),
    ]
    stock = ChatMemoryBuffer.from_defaults(chat_history=history, token_limit=50, tokenizer_fn=words).get()
    assert stock == history and cost(stock) > 50
    kept = memory_with(history, 50).get()
    assert kept == [history[0], history[3]] and cost(kept) <= 50
    memory = memory_with(history, 500)
    memory.get()
    assert memory.last_layout.total_tokens == cost(history)


def test_higher_priority_block_survives_where_memory_drops_it() -> None:
    """LlamaIndex's Memory drops the priority-1 block first (llama_index#23090); here priority 2 goes first."""
    from sqlalchemy.ext.asyncio import create_async_engine

    def blocks() -> list[StaticMemoryBlock]:
        return [
            StaticMemoryBlock(name="facts", static_content="important fact " * 20, priority=1),
            StaticMemoryBlock(name="vector", static_content="retrieved chunk " * 20, priority=2),
        ]

    async def stock() -> list[ChatMessage]:
        engine = create_async_engine("sqlite+aiosqlite:///:memory:")
        try:
            memory = Memory.from_defaults(token_limit=60, memory_blocks=blocks(), async_engine=engine)
            return await memory.aget()
        finally:
            await engine.dispose()

    (stock_message,) = asyncio.run(stock())
    assert "retrieved chunk" in stock_message.content and "important fact" not in stock_message.content
    memory = TokenBoxMemory.from_defaults(token_limit=60, memory_blocks=blocks(), counter="whitespace")
    (kept,) = memory.get()
    assert "important fact" in kept.content and "retrieved chunk" not in kept.content
    assert [r.section for r in memory.last_layout.removed] == ["memory:vector"]


# ---------------------------------------------------------------------------- behaviour


def test_oldest_turns_are_evicted_first() -> None:
    """History between the critical messages loses its oldest messages first."""
    history = [say("system", 3, "s")] + [say("user" if i % 2 else "assistant", 10, f"t{i}x") for i in range(8)]
    history.append(say("user", 3, "q"))
    as_laid_out = memory_with(history, 60, start_on_user=False).get()
    assert as_laid_out == [history[0], *history[-3:]]  # 19 critical tokens leave room for two 15-token messages
    kept = memory_with(history, 60).get()
    assert kept == [history[0], *history[-2:]]  # the reply whose question was evicted goes too
    assert cost(kept) <= 60


def test_tool_call_blocks_group_like_additional_kwargs() -> None:
    """ToolCallBlock calls are sized and grouped exactly like additional_kwargs calls."""
    for block in (False, True):
        history = [say("user", 3, "q"), call("c1", "a b c", block=block), result("c1", 8)]
        memory = memory_with(history, 1000)
        assert memory.get() == history
        assert memory.last_layout.total_tokens == cost(history)
        small = memory_with(history, 12)
        assert small.get() == [history[0]]
        assert {r.group for r in small.last_layout.removed} == {"tools-1"}


def test_results_without_ids_join_the_call_they_follow() -> None:
    """A tool result without a tool_call_id stays with the tool call it directly follows."""
    orphan_style = ChatMessage(role="tool", content="r0 r1 r2")
    history = [say("user", 3, "q"), call("c1", "a"), orphan_style, say("assistant", 2)]
    memory = memory_with(history, 20)
    assert memory.get() == [history[0], history[3]]
    assert [r.id for r in memory.last_layout.removed] == ["m1", "m2"]


def test_group_straddling_a_critical_message_is_kept_or_removed_whole() -> None:
    """A tool call whose result comes after a system message is rejected (issue 36 item 3: the result stands
    apart from its call); on_invalid='repair' moves the result next to its call, kept or removed with it."""
    from tokenbox_core.errors import ConversationError, ConversationRepairWarning

    history = [say("user", 3, "q"), call("c1", "a"), say("system", 3, "s"), result("c1", 3), say("assistant", 20)]
    with pytest.raises(ConversationError, match="other messages stand between them"):
        memory_with(history, cost(history)).get()
    for limit in range(cost([history[0], history[2]]), cost(history) + 1):
        with pytest.warns(ConversationRepairWarning, match="moved the tool result at 3"):
            kept = memory_with(history, limit, on_invalid="repair").get()
        assert (history[1] in kept) == (history[3] in kept) and cost(kept) <= limit
        if history[1] in kept:
            assert kept.index(history[3]) == kept.index(history[1]) + 1
    with pytest.warns(ConversationRepairWarning):
        whole = memory_with(history, cost(history), on_invalid="repair").get()
    assert whole == [history[0], history[1], history[3], history[2], history[4]]


def test_media_blocks_are_charged() -> None:
    """An image block is costed by the model's rule (a remote URL at its detail's maximum, never fetched), so it
    cannot slip past the limit; a block no rule can cost (video) is charged media_tokens (issue 14)."""
    image = ChatMessage(role="assistant", blocks=[TextBlock(text="see"), ImageBlock(url="https://example.com/a.png")])
    history = [image, say("user", 3, "q")]
    memory = memory_with(history, 100, media_tokens=200)
    assert memory.get() == [history[1]]
    assert memory.last_layout.removed[0].tokens > 4 + 1 + 1 + 256  # not the old flat 256
    video = ChatMessage(role="assistant", blocks=[TextBlock(text="see"), VideoBlock(url="https://example.com/a.mp4")])
    memory = memory_with([video, say("user", 3, "q")], 150, media_tokens=200)
    assert len(memory.get()) == 1
    assert memory.last_layout.removed[0].tokens == 4 + 1 + 1 + 200


def test_initial_token_count_is_reserved() -> None:
    """initial_token_count (the caller's prefix) comes out of the limit."""
    history = [say("assistant", 10, "a"), say("user", 5, "q")]
    memory = memory_with(history, 40)
    assert memory.get() == history
    assert memory.get(initial_token_count=15) == [history[1]]
    assert memory.last_layout.budget.reserved_slots == {"initial": 15}


def test_priority_zero_block_is_critical_and_history_priority_is_tunable() -> None:
    """A priority-0 block is never dropped; a low history_priority gives history up before blocks."""
    rules = StaticMemoryBlock(name="rules", static_content="never lie " * 10, priority=0)
    notes = StaticMemoryBlock(name="notes", static_content="user likes tea " * 5, priority=1)
    history = [say("system", 3, "s"), say("assistant", 5, "a"), say("user", 3, "q")]
    # 78 tokens in all: system 8, rules 27, notes 22, assistant 10, user 8, priming 3; 70 forces one loss
    memory = memory_with(history, 70, memory_blocks=[rules, notes])
    kept = memory.get()
    assert [m.content.split("\n")[0] if m.role.value == "system" else m.role.value for m in kept] == [
        "s0 s1 s2",
        "<rules>",
        "assistant",
        "user",
    ]
    history_first = memory_with(history, 70, memory_blocks=[rules, notes], history_priority=-5)
    assert [m.content.split("\n")[0] for m in history_first.get()][:3] == ["s0 s1 s2", "<rules>", "<notes>"]
    with pytest.raises(ContextCriticalOverflow, match="'memory:rules'"):
        memory_with(history, 20, memory_blocks=[rules, notes]).get()


def test_block_content_shapes_and_errors() -> None:
    """Blocks may return text, content blocks or messages; anything else is a TypeError naming the block."""

    class Texts(StaticMemoryBlock):
        async def _aget(self, messages: Any = None, **kwargs: Any) -> Any:
            return "plain text"

    class Messages(StaticMemoryBlock):
        async def _aget(self, messages: Any = None, **kwargs: Any) -> Any:
            return [ChatMessage(role="user", content="remembered question")]

    class Broken(StaticMemoryBlock):
        async def _aget(self, messages: Any = None, **kwargs: Any) -> Any:
            return 42

    blocks = [Texts(name="t", static_content="x"), Messages(name="m", static_content="x")]
    kept = memory_with([say("user", 2)], 100, memory_blocks=blocks).get()
    assert [m.content for m in kept] == ["<t>\nplain text\n</t>", "remembered question", "w0 w1"]
    with pytest.raises(TypeError, match="memory block 'b' returned int"):
        memory_with([say("user", 2)], 100, memory_blocks=[Broken(name="b", static_content="x")]).get()


def test_construction_errors() -> None:
    """Duplicate block names and unknown from_defaults arguments are rejected with the names."""
    block = StaticMemoryBlock(name="same", static_content="x")
    with pytest.raises(ValueError, match="memory block names must be unique; repeated: same"):
        TokenBoxMemory.from_defaults(memory_blocks=[block, block.model_copy()])
    with pytest.raises(ValueError, match=r"unknown argument 'tokenizer' \(did you mean 'tokenizer_fn'\?\)"):
        TokenBoxMemory.from_defaults(tokenizer="whitespace")


def test_from_defaults_mirrors_chat_memory_buffer() -> None:
    """token_limit defaults to 75% of the LLM's window (else 3,000); tokenizer_fn is accepted as the counter."""
    assert TokenBoxMemory.from_defaults(llm=MockLLM()).token_limit == int(3900 * 0.75)
    assert TokenBoxMemory.from_defaults().token_limit == 3000
    memory = TokenBoxMemory.from_defaults(tokenizer_fn=words, chat_history=[say("user", 4)])
    assert memory.resolve_counter().count("a b c") == 3
    assert len(memory.tokenizer_fn("a b c")) == 3
    assert memory.get_all() == memory.get()


def test_store_methods_sync_and_async() -> None:
    """put/set/reset/get_all and their async variants work on the chat store; get and aget agree."""
    memory = TokenBoxMemory.from_defaults(token_limit=30, counter="whitespace")
    assert memory.get() == [] and memory.last_layout is None
    memory.put(say("system", 3, "s"))
    memory.put_messages([say("assistant", 12, "a"), say("user", 3, "q")])

    async def run() -> tuple[list[ChatMessage], list[ChatMessage], str]:
        got = await memory.aget()
        fingerprint = memory.last_layout.fingerprint
        await memory.aput(say("assistant", 2, "b"))
        return got, await memory.aget_all(), fingerprint

    got, everything, fingerprint = asyncio.run(run())
    assert got == memory_with(everything[:3], 30).get()
    assert len(everything) == 4
    memory.set(everything[:3])
    assert memory.get() == got and memory.last_layout.fingerprint == fingerprint
    asyncio.run(memory.aset([say("user", 1)]))
    assert len(memory.get_all()) == 1
    memory.reset()
    assert memory.get_all() == []
    memory.put(say("user", 1))
    asyncio.run(memory.areset())
    assert memory.get_all() == []


def test_sync_get_with_blocks_inside_a_running_loop() -> None:
    """Sync get with memory blocks works when called from code already inside an event loop."""
    memory = memory_with([say("user", 2)], 100, memory_blocks=[StaticMemoryBlock(name="n", static_content="note")])

    async def inside() -> list[ChatMessage]:
        return memory.get()

    assert [m.content for m in asyncio.run(inside())] == ["<n>\nnote\n</n>", "w0 w1"]


def test_simple_chat_engine_sync_and_async() -> None:
    """As SimpleChatEngine's memory it stays within token_limit minus the engine's prefix."""
    llm = MockLLM(max_tokens=12)
    memory = TokenBoxMemory.from_defaults(token_limit=120, llm=llm, counter="whitespace")
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory, system_prompt="Answer in one line please.")
    for turn in range(6):
        assert engine.chat(" ".join(f"q{turn}w{i}" for i in range(20))).response
    layout = memory.last_layout
    assert layout.budget.reserved_slots == {"initial": 5}
    assert layout.total_tokens <= 120 - 5 and layout.removed
    asyncio.run(engine.achat("and finally?"))
    assert memory.last_layout.total_tokens <= 120 - 5
    assert len(memory.get_all()) == 14


def test_context_chat_engine(index: Any) -> None:
    """As ContextChatEngine's memory, sync and async, the history stays within the limit."""
    llm = MockLLM(max_tokens=12)
    memory = TokenBoxMemory.from_defaults(token_limit=80, counter="whitespace")
    engine = ContextChatEngine.from_defaults(retriever=index.as_retriever(similarity_top_k=2), llm=llm, memory=memory)
    for turn in range(4):
        engine.chat(" ".join(f"q{turn}w{i}" for i in range(15)))
    asyncio.run(engine.achat("last question"))
    assert memory.last_layout.total_tokens <= 80 and memory.last_layout.removed


# ---------------------------------------------------------------------------- properties


turn = st.one_of(
    st.tuples(st.sampled_from(["user", "assistant", "system"]), st.integers(0, 25)),
    st.tuples(st.just("tools"), st.lists(st.integers(0, 25), min_size=1, max_size=3), st.booleans()),
)


def build(turns: list[Any]) -> list[ChatMessage]:
    history: list[ChatMessage] = []
    for k, spec in enumerate(turns):
        if spec[0] == "tools":
            _, sizes, block = spec
            ids = [f"c{k}-{j}" for j in range(len(sizes))]
            calls = [{"id": i, "function": {"name": "f", "arguments": "a b"}} for i in ids]
            if block:
                history.append(
                    ChatMessage(
                        role="assistant",
                        blocks=[ToolCallBlock(tool_call_id=i, tool_name="f", tool_kwargs="a b") for i in ids],
                    )
                )
            else:
                history.append(ChatMessage(role="assistant", content="", additional_kwargs={"tool_calls": calls}))
            history.extend(result(i, n) for i, n in zip(ids, sizes, strict=True))
        else:
            history.append(say(spec[0], spec[1], f"m{k}x"))
    return history


@given(turns=st.lists(turn, max_size=14), limit=st.integers(10, 300))
def test_never_over_budget_never_orphaned_critical_kept_deterministic(turns: list[Any], limit: int) -> None:
    """Within the limit, critical messages kept, tool groups whole, oldest evicted first, same output twice."""
    history = build(turns)
    memory = memory_with(history, limit)
    critical = [m for m in history if m.role.value == "system"]
    users = [m for m in history if m.role.value == "user"]
    if users:
        critical.append(users[-1])
    try:
        kept = memory.get()
    except ContextCriticalOverflow:
        assert cost(critical) > limit
        return
    assert cost(kept) <= limit
    positions = [next(i for i, m in enumerate(history) if m is k) for k in kept]
    assert positions == sorted(positions)
    assert all(any(m is c for m in kept) for c in critical)
    kept_results = {m.additional_kwargs.get("tool_call_id") for m in kept if m.role.value == "tool"}
    for message in history:
        ids = {c["id"] for c in as_dict(message)["tool_calls"]}
        if ids:
            results = {r.additional_kwargs["tool_call_id"] for r in history if r.role.value == "tool"} & ids
            assert (results <= kept_results) if any(m is message for m in kept) else not (results & kept_results)
    flexible = [i for i, m in enumerate(history) if not any(m is c for c in critical)]
    kept_flexible = [i for i in flexible if i in positions]
    assert kept_flexible == flexible[len(flexible) - len(kept_flexible) :]
    fingerprint = memory.last_layout.fingerprint if history else None
    again = memory.get()
    assert all(a is b for a, b in zip(again, kept, strict=True))
    assert (memory.last_layout.fingerprint if history else None) == fingerprint


# ---------------------------------------------------------------------------- start_on_user


def test_trimmed_history_starts_on_a_user_message_regression() -> None:
    """Like ChatMemoryBuffer, a trimmed history resumes at a user message (the system message is still kept)."""
    history = [
        say("system", 5, "s"),
        say("user", 20, "a"),
        say("assistant", 20, "b"),
        say("user", 5, "c"),
        say("assistant", 5, "d"),
        say("user", 3, "q"),
    ]
    stock = ChatMemoryBuffer.from_defaults(chat_history=history, token_limit=40, tokenizer_fn=words).get()
    assert stock == history[3:]  # it skipped the assistant reply whose question it trimmed
    memory = memory_with(history, 70)
    kept = memory.get()
    assert kept == [history[0], *history[3:]]  # was [system, assistant, user, ...]
    assert [r.id for r in memory.last_layout.removed] == ["m1"]  # the layout evicted the question only
    assert memory.last_start_on_removed == (
        RemovedItem(id="m2", section="history", reason="start_on", tokens=cost([history[2]]) - 3),
    )
    assert memory.last_total_tokens == cost(kept) == memory.last_layout.total_tokens - 25 <= 70
    plain = memory_with(history, 70, start_on_user=False)
    assert plain.get() == [history[0], *history[2:]] and plain.last_start_on_removed == ()
    assert plain.last_layout.fingerprint == memory.last_layout.fingerprint  # one layout, then the fix-up


def test_history_that_fits_is_returned_as_stored() -> None:
    """An untrimmed history starting on an assistant message is returned whole, as ChatMemoryBuffer returns it."""
    history = [say("assistant", 5, "hello"), say("user", 3, "q")]
    assert ChatMemoryBuffer.from_defaults(chat_history=history, token_limit=100, tokenizer_fn=words).get() == history
    memory = memory_with(history, 100)
    assert memory.get() == history and memory.last_start_on_removed == ()


def test_start_on_user_removes_a_leading_tool_step_whole() -> None:
    """A tool call left first by the trim goes with all its results, so no result is orphaned."""
    history = [
        say("system", 3, "s"),
        say("user", 20, "a"),
        call("c1", "x y"),
        result("c1", 3),
        say("user", 3, "b"),
        say("assistant", 3, "c"),
        say("user", 3, "q"),
    ]
    memory = memory_with(history, cost(history) - 1)
    kept = memory.get()
    assert kept == [history[0], *history[4:]]
    assert [(r.id, r.group) for r in memory.last_start_on_removed] == [("m2", "tools-2"), ("m3", "tools-2")]
    assert memory.last_total_tokens == cost(kept)


def test_start_on_user_never_empties_an_agent_loop() -> None:
    """The agent's steps after the latest user message stay, and a history with no user message is not cut."""
    agent = [say("system", 3, "s"), say("user", 3, "task"), call("c1", "a " * 20), result("c1", 20)]
    agent += [call("c2", "b"), result("c2", 3)]
    memory = memory_with(agent, cost(agent) - 1)
    assert memory.get() == [*agent[:2], *agent[4:]] and memory.last_start_on_removed == ()
    replies = [say("system", 3, "s"), say("assistant", 20, "a"), call("c1", "b"), result("c1", 3), say("assistant", 3)]
    memory = memory_with(replies, cost(replies) - 1)
    assert memory.get() == [replies[0], *replies[2:]] and memory.last_start_on_removed == ()


def test_start_on_user_passes_over_system_messages() -> None:
    """Replies on both sides of a system message stored mid-history go; system and developer messages stay."""
    history = [
        say("system", 3, "s"),
        say("user", 20, "a"),
        say("assistant", 3, "b"),
        say("system", 3, "t"),
        say("developer", 3, "v"),
        say("chatbot", 3, "c"),
        say("user", 3, "d"),
        say("user", 3, "q"),
    ]
    memory = memory_with(history, cost(history) - 1)
    assert memory.get() == [history[0], history[3], history[4], history[6], history[7]]
    assert [r.id for r in memory.last_start_on_removed] == ["m2", "m5"]


def test_start_on_user_keeps_a_critical_first_reply() -> None:
    """When the first kept reply is critical (an override), nothing is removed: the history could not start on
    a user message whatever went."""
    pinned = ChatMessage(role="assistant", content="b0 b1 b2", additional_kwargs={"tokenbox": {"critical": True}})
    history = [say("user", 20, "a"), pinned, say("assistant", 3, "c"), say("user", 3, "q")]
    memory = memory_with(history, cost(history) - 1)
    assert memory.get() == history[1:] and memory.last_start_on_removed == ()


@given(turns=st.lists(turn, max_size=14), limit=st.integers(10, 300))
def test_start_on_user_only_removes_leading_replies_and_accounts_them(turns: list[Any], limit: int) -> None:
    """start_on_user only removes leading replies after the same layout; last_total_tokens is what is returned."""
    history = build(turns)
    memory = memory_with(history, limit)
    plain = memory_with(history, limit, start_on_user=False)
    try:
        kept = memory.get()
    except ContextCriticalOverflow:
        return
    laid = plain.get()
    if not history:
        assert kept == laid == [] and memory.last_total_tokens is None
        return
    assert memory.last_layout.fingerprint == plain.last_layout.fingerprint
    gone = {r.id for r in memory.last_start_on_removed}
    key = {id(m): f"m{i}" for i, m in enumerate(history)}
    assert all(a is b for a, b in zip(kept, [m for m in laid if key[id(m)] not in gone], strict=True))
    assert memory.last_total_tokens == cost(kept) <= limit
    assert all(history[int(k[1:])].role.value in ("assistant", "tool") for k in gone)
    trimmed = any(r.id.startswith("m") for r in memory.last_layout.removed)
    if not trimmed:
        assert not gone
    elif any(m.role.value == "user" for m in kept):
        assert next(m for m in kept if m.role.value != "system").role.value == "user"


# ---------------------------------------------------------------------------- construction, errors, serialisation


def test_memory_round_trips_through_to_dict_and_from_dict() -> None:
    """Issue 13's bug: TokenBoxMemory.from_dict(m.to_dict()) restores the settings, a named counter and the stored
    messages (it raised "Can't instantiate abstract class BaseChatStore"); JSON too."""
    history = [say("system", 3, "s"), call("c1", "a b"), result("c1", 3), say("user", 3, "q")]
    memory = memory_with(history, 30, history_priority=-2)
    for again in (TokenBoxMemory.from_dict(memory.to_dict()), TokenBoxMemory.from_json(memory.to_json())):
        assert again.get_all() == history and again.counter == "whitespace"
        assert (again.token_limit, again.history_priority) == (30, -2)
        assert again.get() == memory.get()
    assert TokenBoxMemory.from_dict(TokenBoxMemory.from_defaults().to_dict()).get_all() == []


def test_memory_round_trips_through_to_string_like_chat_memory_buffer() -> None:
    """to_string/from_string (ChatMemoryBuffer's persistence surface) restore the settings and messages, and
    from_string reads ChatMemoryBuffer's older string format (a "chat_history" list) too."""
    import json

    history = [say("system", 3, "s"), call("c1", "a b"), result("c1", 3), say("user", 3, "q")]
    memory = memory_with(history, 30)
    again = TokenBoxMemory.from_string(memory.to_string())
    assert again.get_all() == history and again.get() == memory.get() and again.token_limit == 30
    old = {"token_limit": 500, "chat_history": [history[0].model_dump(mode="json")], "class_name": "ChatMemoryBuffer"}
    assert TokenBoxMemory.from_string(json.dumps(old)).get_all() == history[:1]


def test_serialisation_says_what_it_cannot_keep() -> None:
    """An unnamed counter makes to_dict raise ValueError with the fix; memory blocks must be passed again."""
    unnamed = TokenBoxMemory.from_defaults(counter=words)
    with pytest.raises(ValueError, match=r"cannot serialise the counter .*from_dict\(data, counter=\.\.\.\)"):
        unnamed.to_dict()
    block = StaticMemoryBlock(name="rules", static_content="be kind", priority=0)
    data = TokenBoxMemory.from_defaults(memory_blocks=[block], counter="whitespace").to_dict()
    with pytest.raises(ValueError, match=r"memory blocks \['rules'\]; pass them again"):
        TokenBoxMemory.from_dict(data)
    assert TokenBoxMemory.from_dict(data, memory_blocks=[block]).memory_blocks == [block]


def test_initial_token_count_over_the_limit_is_a_value_error() -> None:
    """Issue 10 item 12: as ChatMemoryBuffer, initial_token_count > token_limit raises ValueError, empty or not."""
    for history in ([], [say("user", 3)]):
        memory = memory_with(history, 49)
        with pytest.raises(ValueError, match="Initial token count exceeds token limit: .* 50 but token_limit is 49"):
            memory.get(initial_token_count=50)
    stock = ChatMemoryBuffer.from_defaults(chat_history=[say("user", 3)], token_limit=49)
    with pytest.raises(ValueError, match="Initial token count exceeds token limit"):
        stock.get(initial_token_count=50)


def test_misspelt_arguments_are_rejected_with_a_hint() -> None:
    """Issue 10 items 6 and 17: from_defaults(token_limt=...) and other budget names are rejected, naming the
    memory's budget argument (token_limit, as ChatMemoryBuffer) or the closest argument."""
    with pytest.raises(ValueError, match="'token_limt' \\(did you mean 'token_limit'\\?\\)"):
        TokenBoxMemory.from_defaults(token_limt=100)
    with pytest.raises(
        ValueError, match="'max_tokens' \\(the token budget of TokenBoxMemory.from_defaults is 'token_limit'\\)"
    ):
        TokenBoxMemory.from_defaults(max_tokens=100)
    with pytest.raises(ValueError, match="'budget' \\(the token budget of TokenBoxMemory is 'token_limit'\\)"):
        TokenBoxMemory(budget=100)
    with pytest.raises(TypeError, match="'start_on_usr' \\(did you mean 'start_on_user'\\?\\)"):
        TokenBoxMemory(start_on_usr=False)
