"""TokenBoxMiddleware inside deepagents' create_deep_agent: beside its summarisation, or in its place."""

from __future__ import annotations

import pytest

pytest.importorskip("deepagents")

from deepagents import create_deep_agent
from langchain_core.messages import HumanMessage, SystemMessage

from tokenbox_core import get_counter
from tokenbox_langchain import TokenBoxMiddleware
from tokenbox_langchain._agent_window import tool_tokens
from tokenbox_langchain._counting import MessageCounter
from tokenbox_langchain.testing import FakeToolModel, lookup_tool, sequence_problems

COUNT = MessageCounter("o200k_base")
TEXT = get_counter("o200k_base")
PROFILE = {"max_input_tokens": 12_000, "max_output_tokens": 1_000}
STEPS = 120


def run(middleware: TokenBoxMiddleware) -> tuple[FakeToolModel, list]:
    model = FakeToolModel(steps=STEPS, profile=PROFILE)
    agent = create_deep_agent(model, [lookup_tool(words=80)], system_prompt="Research.", middleware=[middleware])
    state = agent.invoke({"messages": [HumanMessage("Research everything.", id="task")]}, {"recursion_limit": 3_000})
    return model, state["messages"]


def agent_requests(model: FakeToolModel) -> list[int]:
    """The indices of the agent's own requests (tools bound), not deepagents' summarisation calls."""
    return [i for i, tools in enumerate(model.tool_schemas) if tools]


def test_beside_deepagents_summarisation() -> None:
    """Recommended: deepagents summarises, TokenBox guarantees the exact window; every request fits and is valid."""
    model, state = run(TokenBoxMiddleware())
    calls = agent_requests(model)
    assert len(calls) == STEPS + 1
    assert len(model.requests) > len(calls)  # deepagents' own summarisation ran too
    for i in calls:
        request = model.requests[i]
        assert COUNT.count(request) + tool_tokens(model.tool_schemas[i], TEXT) <= 11_000  # window less output
        assert isinstance(request[0], SystemMessage) and request[0].text.startswith("Research.")
        assert sequence_problems(request, start_on_human=False) == []
    assert state[0].id == "task"  # deepagents' summarisation does not rewrite the state either


def test_in_place_of_deepagents_summarisation() -> None:
    """name="SummarizationMiddleware" replaces deepagents' summarisation in place: TokenBox alone fits requests."""
    model, state = run(TokenBoxMiddleware(name="SummarizationMiddleware"))
    assert agent_requests(model) == list(range(len(model.requests)))  # no summarisation call any more
    for i, request in enumerate(model.requests):
        assert COUNT.count(request) + tool_tokens(model.tool_schemas[i], TEXT) <= 11_000
        assert request[1].id == "task"  # the task stays; the newest steps follow it
        assert sequence_problems(request) == []
    assert len(state) == 2 * STEPS + 2
