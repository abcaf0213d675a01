"""The fit path through create_agent, TokenBoxMessages and trim_messages (issue 32 defects 3-5): every request
within its budget counted as LangChain sends it, the newest step kept or previewed, the loop never emptied."""

from __future__ import annotations

from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_openai_messages,
)

from tokenbox_core import count_message_tokens, get_counter
from tokenbox_langchain import TokenBoxMessages, TokenBoxMiddleware, trim_messages
from tokenbox_langchain._agent_window import tool_tokens
from tokenbox_langchain.testing import FakeToolModel, lookup_tool, sequence_problems

TEXT = get_counter("o200k_base")
SYSTEM = "Research."


def sent_tokens(messages: list[BaseMessage]) -> int:
    """What ``messages`` cost as LangChain sends them: its OpenAI conversion, counted by the core's rule."""
    return count_message_tokens(convert_to_openai_messages(messages), TEXT)


def request_tokens(model: FakeToolModel, i: int) -> int:
    return sent_tokens(model.requests[i]) + tool_tokens(model.tool_schemas[i], TEXT)


def run(middleware: TokenBoxMiddleware, *, steps: int, words: int = 30, args: Any = None) -> tuple[FakeToolModel, Any]:
    kwargs = {} if args is None else {"args": args}
    model = FakeToolModel(steps=steps, **kwargs)
    agent = create_agent(model, [lookup_tool(words=words)], system_prompt=SYSTEM, middleware=[middleware])
    state = agent.invoke(
        {"messages": [HumanMessage("find everything", id="task")]}, {"recursion_limit": 4 * steps + 20}
    )
    return model, state["messages"]


def newest_step_present(request: list[BaseMessage]) -> bool:
    """The request ends on the newest step of the loop: an AIMessage with tool calls and all its results."""
    tail = [m for m in request if isinstance(m, ToolMessage)]
    calls = next((m for m in reversed(request) if isinstance(m, AIMessage) and m.tool_calls), None)
    if calls is None:
        return False
    ids = {c["id"] for c in calls.tool_calls}
    return ids <= {m.tool_call_id for m in tail} and isinstance(request[-1], ToolMessage)


def test_marker_with_cache_aware_keeps_the_loop() -> None:
    """omission_marker=True with cache_aware=True: no request ends on the task after the first, none is over the
    budget, the run finishes (it used to hit the recursion limit with 126 of 150 requests on the task)."""
    model, state = run(TokenBoxMiddleware(800, omission_marker=True, cache_aware=True), steps=60)
    assert len(model.requests) == 61
    assert isinstance(state[-1], AIMessage) and state[-1].content == "Done."
    for i in range(1, len(model.requests)):
        assert request_tokens(model, i) <= 800, i
        assert newest_step_present(model.requests[i]), i
        assert sequence_problems(model.requests[i]) == [], i


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"persistent": True},
        {"keep": ("fraction", 0.5)},
        {"omission_marker": True, "cache_aware": True},
        {"persistent": True, "keep": ("fraction", 0.5)},
    ],
    ids=["plain", "persistent", "keep", "marker-cache", "persistent-keep"],
)
def test_a_result_larger_than_the_window_is_previewed(options: dict[str, Any]) -> None:
    """A tool result larger than the window reaches the model as a head/tail preview, never dropped: the
    model is not made to call the tool again (each call runs once) and the request fits."""
    model, state = run(TokenBoxMiddleware(1_500, **options), steps=4, words=3_000)
    assert len(model.requests) == 5
    for i in range(1, 5):
        request = model.requests[i]
        assert request_tokens(model, i) <= 1_500, i
        assert newest_step_present(request), i
        result = request[-1]
        assert result.tool_call_id == f"call_{i}_0"
        assert "cut" in result.text and result.id in result.text
    results = [m for m in state if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in results][-1] == "call_4_0"  # the state keeps the newest result
    assert all(len(m.text) > 10_000 for m in results[-1:])  # whole, not its preview


def test_persistent_compaction_keeps_the_newest_result_in_the_state() -> None:
    """persistent=True never deletes the newest tool result from the graph state."""
    model, state = run(TokenBoxMiddleware(1_000, persistent=True), steps=20, words=200)
    calls = [m.tool_call_id for m in state if isinstance(m, ToolMessage)]
    assert calls[-1] == "call_20_0"
    assert len(model.requests) == 21


def many_args(n: int, k: int) -> dict[str, Any]:
    return {f"k{j}": j for j in range(10)} | {"query": f"item {n}.{k}", "nested": {"a": [1, 2], "b": "c"}}


@pytest.mark.parametrize("options", [{}, {"persistent": True}, {"omission_marker": True, "cache_aware": True}])
def test_requests_fit_counted_as_langchain_sends_them(options: dict[str, Any]) -> None:
    """With tool-call arguments of many keys, every request is within the budget counted as LangChain's
    ``convert_to_openai_messages`` serialises it (spaces after ``:`` and ``,``), not as compact JSON."""
    model, _ = run(TokenBoxMiddleware(2_000, **options), steps=80, words=4, args=many_args)
    assert max(request_tokens(model, i) for i in range(len(model.requests))) <= 2_000
    assert max(request_tokens(model, i) for i in range(len(model.requests))) > 1_800  # the window was used


def agent_messages(steps: int, words: int = 8) -> list[BaseMessage]:
    out: list[BaseMessage] = [SystemMessage("sys", id="sys"), HumanMessage("find everything", id="task")]
    for n in range(steps):
        call = {"name": "lookup", "args": many_args(n, 0), "id": f"c{n}", "type": "tool_call"}
        out += [
            AIMessage("", tool_calls=[call], id=f"a{n}"),
            ToolMessage(" ".join(["fact"] * words), tool_call_id=f"c{n}", id=f"t{n}"),
        ]
    return out


def test_trim_messages_and_tokenbox_messages_count_as_sent() -> None:
    """trim_messages and TokenBoxMessages fit tool-call arguments as LangChain sends them."""
    messages = agent_messages(60)
    trimmed = trim_messages(
        messages, max_tokens=2_000, token_counter="o200k_base", include_system=True, start_on="human"
    )
    assert sent_tokens(trimmed) <= 2_000 < sent_tokens(messages)
    fitted = TokenBoxMessages(budget=2_000, counter="o200k_base").invoke(messages)
    assert sent_tokens(fitted) <= 2_000


def test_trim_messages_previews_a_newest_result_larger_than_the_budget() -> None:
    """A documented difference from LangChain's: the newest result larger than max_tokens is previewed."""
    messages = agent_messages(3)
    messages[-1] = ToolMessage(" ".join(f"fact{i}" for i in range(3_000)), tool_call_id="c2", id="t2")
    trimmed = trim_messages(messages, max_tokens=600, token_counter="o200k_base", include_system=True, start_on="human")
    assert [m.id for m in trimmed][-2:] == ["a2", "t2"]
    assert sent_tokens(trimmed) <= 600 and "cut" in trimmed[-1].text
    fitted = TokenBoxMessages(budget=600, counter="o200k_base").invoke(messages)
    assert [m.id for m in fitted][-2:] == ["a2", "t2"] and sent_tokens(fitted) <= 600
