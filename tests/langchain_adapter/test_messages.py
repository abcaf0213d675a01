"""TokenBoxMessages in real LCEL chains: paths, output kinds, tool groups, start_on, overrides, events, budgets."""

from __future__ import annotations

import asyncio
from typing import Any
from uuid import UUID

import pytest
from langchain_core.callbacks import AsyncCallbackHandler, BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import FakeListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages import trim_messages as lc_trim_messages
from langchain_core.prompt_values import ChatPromptValue
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import ConfigurableField, RunnableLambda

from tokenbox_core import BudgetError, ContextBudget, SectionError
from tokenbox_langchain import LAYOUT_EVENT, METADATA_KEY, CriticalMessagesOverflow, TokenBoxMessages
from tokenbox_langchain._counting import MessageCounter
from tokenbox_langchain.testing import agent_transcript, sequence_problems

W = "whitespace"


def words(n: int, tag: str = "w") -> str:
    return " ".join(f"{tag}{i}" for i in range(n))


def chat(turns: int, size: int = 5) -> list[BaseMessage]:
    out: list[BaseMessage] = [SystemMessage(words(3, "s"), id="sys")]
    for t in range(turns):
        out += [HumanMessage(words(size, f"h{t}."), id=f"h{t}"), AIMessage(words(size, f"a{t}."), id=f"a{t}")]
    out.append(HumanMessage("last question", id="last"))
    return out


def cost(messages: list[BaseMessage]) -> int:
    return MessageCounter(W).count(messages)


class Recorder(BaseCallbackHandler):
    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def on_custom_event(self, name: str, data: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.events.append((name, data))


class AsyncRecorder(AsyncCallbackHandler):
    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    async def on_custom_event(self, name: str, data: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self.events.append((name, data))


def prompt() -> ChatPromptTemplate:
    return ChatPromptTemplate.from_messages([("system", "be brief"), MessagesPlaceholder("history"), ("human", "{q}")])


def seen_by_model() -> tuple[RunnableLambda[Any, Any], list[list[BaseMessage]]]:
    seen: list[list[BaseMessage]] = []

    def capture(value: Any) -> Any:
        seen.append(value.to_messages() if isinstance(value, ChatPromptValue) else list(value))
        return value

    return RunnableLambda(capture), seen


def test_chain_invoke_fits_the_prompt_for_the_model() -> None:
    """prompt | TokenBoxMessages | model: the model receives a fitted ChatPromptValue."""
    spy, seen = seen_by_model()
    chain = prompt() | TokenBoxMessages(budget=60, counter=W) | spy | FakeListChatModel(responses=["ok"])
    history = chat(10)[1:-1]
    assert chain.invoke({"history": history, "q": "final words"}).content == "ok"
    sent = seen[0]
    assert cost(sent) <= 60
    assert sent[0].content == "be brief" and sent[-1].content == "final words"
    assert sequence_problems(sent) == []


def test_sync_async_batch_and_stream_agree() -> None:
    """invoke, ainvoke, batch, abatch and stream give the same fitted messages."""
    fit = TokenBoxMessages(budget=50, counter=W)
    inputs = [chat(6), chat(9, size=3)]
    expected = [fit.invoke(x) for x in inputs]
    assert [asyncio.run(fit.ainvoke(x)) for x in inputs] == expected
    assert fit.batch(inputs) == expected
    assert asyncio.run(fit.abatch(inputs)) == expected
    assert [list(fit.stream(x)) for x in inputs] == [[e] for e in expected]


def test_stream_through_a_chain() -> None:
    """A chain with TokenBoxMessages streams the model's chunks."""
    model = GenericFakeChatModel(messages=iter([AIMessage("one two three")]))
    chain = TokenBoxMessages(budget=40, counter=W) | model
    chunks = [c.content for c in chain.stream(chat(8))]
    assert "".join(chunks) == "one two three" and len(chunks) > 1


def test_output_kind_follows_input_kind() -> None:
    """A PromptValue gives a ChatPromptValue, a list a list, a string a string, message-likes messages."""
    fit = TokenBoxMessages(budget=100, counter=W)
    value = prompt().invoke({"history": [], "q": "hello"})
    assert isinstance(fit.invoke(value), ChatPromptValue)
    assert fit.invoke("just text") == "just text"
    out = fit.invoke([("system", "be brief"), ("human", "hi there")])
    assert [type(m) for m in out] == [SystemMessage, HumanMessage]


def test_unsupported_input_is_rejected() -> None:
    """An input that is not a prompt value, string or message list raises TypeError with the fix."""
    with pytest.raises(TypeError, match="expected a PromptValue, a string or a list of messages, got int"):
        TokenBoxMessages(budget=10, counter=W).invoke(5)


def test_history_is_evicted_oldest_first_and_critical_messages_stay() -> None:
    """System and latest human are kept; the newest history that fits is kept, in order."""
    messages = chat(10)
    out = TokenBoxMessages(budget=60, counter=W).invoke(messages)
    assert out[0].id == "sys" and out[-1].id == "last"
    ids = [m.id for m in messages]
    kept = [ids.index(m.id) for m in out]
    assert kept == sorted(kept)
    assert kept[1:-1] == list(range(kept[1], kept[-2] + 1))  # a contiguous, newest suffix of the history
    assert cost(out) <= 60
    assert cost([*out[:-1], messages[kept[1] - 1], out[-1]]) > 60  # the next older message would not fit


def test_agent_transcript_with_parallel_tool_calls_is_valid_at_every_budget() -> None:
    """An agent transcript fits every budget with no orphan results, no unanswered calls, system first."""
    messages = agent_transcript(8, seed=3, max_parallel=3, tool_rate=0.9)
    assert any(len(getattr(m, "tool_calls", [])) > 1 for m in messages)
    floor = cost([messages[0], next(m for m in reversed(messages) if isinstance(m, HumanMessage))])
    for budget in range(floor, cost(messages) + 5, 7):
        out = TokenBoxMessages(budget=budget, counter=W).invoke(messages)
        assert cost(out) <= budget
        assert sequence_problems(out) == []


def size_sum(messages: list[BaseMessage]) -> int:
    """A list counter with no base, where LangChain's trim_messages is exact."""
    counter = MessageCounter(W)
    return sum(counter.size(m) for m in messages)


def agent_loop(steps: int) -> list[BaseMessage]:
    out: list[BaseMessage] = [SystemMessage("you are an agent", id="sys"), HumanMessage("do the task", id="task")]
    for s in range(steps):
        calls = [{"name": "tool", "args": {"n": s}, "id": f"c{s}", "type": "tool_call"}]
        out += [AIMessage(words(4), tool_calls=calls, id=f"a{s}"), ToolMessage(words(8), tool_call_id=f"c{s}")]
    return out


def test_regression_orphan_tool_message_after_trimming() -> None:
    """LangChain's trim_messages can keep a ToolMessage without its call; TokenBoxMessages never does."""
    messages: list[BaseMessage] = [
        SystemMessage("sys"),
        HumanMessage("find it"),
        AIMessage("", tool_calls=[{"name": "s", "args": {"q": words(20)}, "id": "c1", "type": "tool_call"}]),
        ToolMessage(words(6), tool_call_id="c1"),
        AIMessage("found"),
    ]
    budget = size_sum([messages[0], messages[3], messages[4]])
    trimmed = lc_trim_messages(messages, max_tokens=budget, token_counter=size_sum, include_system=True)
    assert any("answers no earlier tool call" in p for p in sequence_problems(trimmed, start_on_human=False))
    out = TokenBoxMessages(budget=budget, counter=size_sum, keep_last_human=False, start_on=None).invoke(messages)
    assert sequence_problems(out, start_on_human=False) == [] and size_sum(out) <= budget


def test_regression_start_on_empties_an_agent_loop() -> None:
    """trim_messages(start_on='human') empties an agent loop's history; TokenBoxMessages keeps the task."""
    messages = agent_loop(8)
    budget = size_sum(messages) // 2
    trimmed = lc_trim_messages(
        messages, max_tokens=budget, token_counter=size_sum, include_system=True, start_on="human"
    )
    assert [m.type for m in trimmed] == ["system"]
    out = TokenBoxMessages(budget=budget, counter=size_sum).invoke(messages)
    assert [m.id for m in out[:2]] == ["sys", "task"] and len(out) > 4
    assert out[-1] == messages[-1]
    assert sequence_problems(out) == [] and size_sum(out) <= budget


def test_regression_system_message_dropped_or_over_budget() -> None:
    """The system message is never dropped; if it alone is over budget the error says so."""
    messages = chat(6)
    out = TokenBoxMessages(budget=30, counter=W).invoke(messages)
    assert out[0].id == "sys"
    with pytest.raises(CriticalMessagesOverflow, match="need 18 tokens but max_tokens is 12") as info:
        TokenBoxMessages(budget=12, counter=W).invoke(messages)
    assert info.value.section_ids == ("system", "latest-user")  # the core names sections by chat role


def test_start_on_configurable_type() -> None:
    """start_on='ai' makes the history start on an AI message."""
    out = TokenBoxMessages(budget=45, counter=W, start_on="ai", keep_last_human=False).invoke(chat(6))
    assert out[1].type == "ai"


def test_per_message_priority_override() -> None:
    """A message with a higher priority outlives older and newer history of lower priority."""
    messages = chat(8)
    messages[3] = AIMessage(messages[3].content, id="keep-me", additional_kwargs={METADATA_KEY: {"priority": 5}})
    out = TokenBoxMessages(budget=45, counter=W, start_on=None).invoke(messages)
    assert "keep-me" in [m.id for m in out]
    assert "keep-me" not in [m.id for m in TokenBoxMessages(budget=45, counter=W, start_on=None).invoke(chat(8))]


def test_per_message_critical_override() -> None:
    """critical=True keeps an old message; critical=False lets the latest human go."""
    messages = chat(8)
    messages[1] = HumanMessage(messages[1].content, id="pinned", additional_kwargs={METADATA_KEY: {"critical": True}})
    out = TokenBoxMessages(budget=40, counter=W).invoke(messages)
    assert [m.id for m in out][:2] == ["sys", "pinned"]
    messages[-1] = HumanMessage(words(40), id="last", additional_kwargs={METADATA_KEY: {"critical": False}})
    assert "last" not in [m.id for m in TokenBoxMessages(budget=40, counter=W).invoke(messages)]


def test_bad_overrides_are_rejected() -> None:
    """Malformed per-message overrides in additional_kwargs raise SectionError naming the message and the fix
    (the cases are in tests/core/chat)."""
    messages = [HumanMessage("hi", additional_kwargs={METADATA_KEY: {"pin": True}})]
    with pytest.raises(SectionError, match="message 0: unknown 'tokenbox' override keys"):
        TokenBoxMessages(budget=50, counter=W).invoke(messages)


def test_omission_marker_counts_and_lists_removed_turns() -> None:
    """The marker says how many history messages went and their ids, and is counted in the budget."""
    out = TokenBoxMessages(budget=60, counter=W, omission_marker=True).invoke(chat(8))
    marker = out[1]
    assert isinstance(marker, SystemMessage) and marker.content.startswith("[")
    assert "h0, a0" in marker.content
    assert cost(out) <= 60
    custom = TokenBoxMessages(budget=60, counter=W, omission_marker="({count} gone)", marker_type="human")
    assert isinstance(custom.invoke(chat(8))[1], HumanMessage)


def test_system_marker_for_the_agent_loop_joins_the_leading_system_messages() -> None:
    """Regression (explore profile): a system marker for messages after the latest human one goes after the
    leading system messages, never after the conversation started, and is counted exactly."""
    messages = agent_transcript(turns=1, seed=0, max_parallel=1, tool_rate=1.0)
    result = TokenBoxMessages(budget=41, counter=W, omission_marker=True).fit(messages)
    out = result.messages
    assert [m.id for m in out] == ["sys", "tokenbox-omitted-history", "h0"]
    assert isinstance(out[1], SystemMessage) and "a0.0" in out[1].content
    assert sequence_problems(out) == []
    assert cost(out) == result.total_tokens <= 41


def _agent_step(i: int) -> list[BaseMessage]:
    call = {"name": "lookup", "args": {}, "id": f"c{i}", "type": "tool_call"}
    return [
        AIMessage("calling", tool_calls=[call], id=f"call{i}"),
        ToolMessage(words(6), tool_call_id=f"c{i}", id=f"t{i}"),
    ]


AGENT_LOOP = [*chat(2), *_agent_step(0), *_agent_step(1), AIMessage("done", id="done")]
LOOP = ["call0", "t0", "call1", "t1", "done"]


@pytest.mark.parametrize(
    ("budget", "marker_type", "expected"),
    [
        # the run before the latest human message lost h0 and a0
        (94, "system", ["sys", "tokenbox-omitted-history", "h1", "a1", "last", *LOOP]),
        (94, "human", ["sys", "tokenbox-omitted-history", "h1", "a1", "last", *LOOP]),
        (94, "ai", ["sys", "h1", "tokenbox-omitted-history", "a1", "last", *LOOP]),  # ai never opens the conversation
        # the agent loop after it lost its first tool step
        (54, "system", ["sys", "tokenbox-omitted-history-2", "last", *LOOP[2:]]),  # never after the human message
        (54, "human", ["sys", "last", "tokenbox-omitted-history-2", *LOOP[2:]]),
        (54, "ai", ["sys", "last", "tokenbox-omitted-history-2", *LOOP[2:]]),
    ],
)
def test_markers_are_placed_where_providers_accept_them(budget: int, marker_type: Any, expected: list[str]) -> None:
    """A system marker joins the leading system messages; a human or ai one stays with its run unless it would
    open the conversation without being of the start_on type; the sequence is valid and counted as sent."""
    fit = TokenBoxMessages(budget=budget, counter=W, omission_marker="[{count} gone: {ids}]", marker_type=marker_type)
    result = fit.fit(AGENT_LOOP)
    assert [m.id for m in result.messages] == expected
    assert sequence_problems(result.messages) == []
    assert cost(result.messages) == result.total_tokens <= budget


def test_layout_report_reaches_callbacks() -> None:
    """A custom 'tokenbox_layout' event carries what was kept and removed."""
    recorder = Recorder()
    messages = chat(8)
    out = TokenBoxMessages(budget=50, counter=W).invoke(messages, config={"callbacks": [recorder]})
    [(name, report)] = recorder.events
    assert name == LAYOUT_EVENT
    assert report["kept_ids"] == [m.id for m in out]
    assert report["kept"] + report["removed"] == len(messages)
    assert {r["id"] for r in report["removed_messages"]} == {m.id for m in messages} - {m.id for m in out}
    assert report["total_tokens"] == cost(out) and report["max_tokens"] == 50


def test_layout_report_reaches_async_callbacks_and_event_streams() -> None:
    """The event also reaches async handlers and astream_events."""
    recorder = AsyncRecorder()
    fit = TokenBoxMessages(budget=50, counter=W)
    asyncio.run(fit.ainvoke(chat(8), config={"callbacks": [recorder]}))
    assert [n for n, _ in recorder.events] == [LAYOUT_EVENT]

    async def events() -> list[str]:
        return [e["name"] async for e in fit.astream_events(chat(8), version="v2") if e["event"] == "on_custom_event"]

    assert asyncio.run(events()) == [LAYOUT_EVENT]


def test_max_tokens_is_configurable_per_call() -> None:
    """configurable_fields lets each call set max_tokens."""
    fit = TokenBoxMessages(budget=200, counter=W).configurable_fields(
        max_tokens=ConfigurableField(id="max_tokens", name="max tokens")
    )
    small = fit.invoke(chat(10), config={"configurable": {"max_tokens": 30}})
    large = fit.invoke(chat(10))
    assert cost(small) <= 30 < cost(large)


def test_budget_forms() -> None:
    """The budget is an int, a ContextBudget (reserves honoured), or the model profile's window."""
    messages = chat(10)
    reserved = TokenBoxMessages(budget=ContextBudget(max_tokens=80, output_reserve=30), counter=W).invoke(messages)
    assert cost(reserved) <= 50
    model = GenericFakeChatModel(
        messages=iter([]), custom_get_token_ids=lambda t: t.split(), profile={"max_input_tokens": 70}
    )
    fit = TokenBoxMessages(counter=model)
    assert fit.resolved_budget().max_tokens == 70
    assert MessageCounter(model).count(fit.invoke(messages)) <= 70
    assert TokenBoxMessages(budget=80, max_tokens=40, counter=W).resolved_budget().max_tokens == 40


def test_a_known_model_name_gives_its_window_less_its_output_reserve() -> None:
    """counter="gpt-4o" with no budget uses gpt-4o's 128,000-token window less its 16,384-token output reserve."""
    budget = TokenBoxMessages(counter="gpt-4o").resolved_budget()
    assert (budget.max_tokens, budget.output_reserve) == (128_000, 16_384)
    assert TokenBoxMessages(counter="gpt-4o").invoke(chat(2)) == chat(2)


def test_missing_budget_is_an_error() -> None:
    """Without budget, max_tokens or a model profile, the error names the three ways to give one."""
    with pytest.raises(BudgetError, match="no token budget"):
        TokenBoxMessages(counter=W).invoke(chat(2))


def test_fit_result_and_determinism() -> None:
    """fit() exposes the core layout; identical input gives an identical fingerprint."""
    fit = TokenBoxMessages(budget=50, counter=W)
    a, b = fit.fit(chat(8)), fit.fit(chat(8))
    assert a.layout.fingerprint == b.layout.fingerprint and a.messages == b.messages
    assert a.total_tokens == cost(a.messages) and a.layout.total_tokens >= a.total_tokens


def test_empty_conversation() -> None:
    """An empty message list stays empty."""
    assert TokenBoxMessages(budget=10, counter=W).invoke([]) == []
