"""Random agent sessions through TokenBoxMiddleware's fit modes (plain, marker, cache_aware, persistent, keep and
their combinations): every request within the budget counted as LangChain sends it, the newest step present
(whole or previewed), no tool result twice, no orphan, the task kept (issue 32)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, convert_to_openai_messages

from tokenbox_core import count_message_tokens, get_counter
from tokenbox_langchain import TokenBoxMiddleware
from tokenbox_langchain._agent_window import tool_tokens
from tokenbox_langchain.testing import FakeToolModel, lookup_tool, sequence_problems

TEXT = get_counter("o200k_base")
MODES: list[dict[str, Any]] = [
    {},
    {"omission_marker": True},
    {"cache_aware": True},
    {"omission_marker": True, "cache_aware": True},
    {"persistent": True},
    {"keep": ("fraction", 0.5)},
    {"persistent": True, "keep": ("fraction", 0.5)},
    {"persistent": True, "omission_marker": True, "cache_aware": True},
    {"keep": ("fraction", 0.5), "omission_marker": True},
    {"trigger": ("fraction", 0.8), "keep": ("fraction", 0.5), "cache_aware": True},
]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    mode=st.sampled_from(MODES),
    budget=st.integers(700, 3_000),
    steps=st.integers(1, 20),
    parallel=st.integers(1, 3),
    words=st.sampled_from([8, 40, 200, 2_500]),
    keys=st.integers(0, 12),
)
def test_every_request_fits_as_sent_and_keeps_the_loop(
    mode: dict[str, Any], budget: int, steps: int, parallel: int, words: int, keys: int
) -> None:
    """Each request: within budget as LangChain serialises it, task kept, newest step present, valid."""
    model = FakeToolModel(
        steps=steps, parallel=parallel, args=lambda n, k: {f"k{j}": j for j in range(keys)} | {"query": f"item {n}"}
    )
    agent = create_agent(
        model, [lookup_tool(words=words)], system_prompt="Research.", middleware=[TokenBoxMiddleware(budget, **mode)]
    )
    state = agent.invoke(
        {"messages": [HumanMessage("find everything", id="task")]}, {"recursion_limit": 4 * steps + 20}
    )
    assert len(model.requests) == steps + 1  # the model never had to call a tool again
    assert isinstance(state["messages"][-1], AIMessage) and state["messages"][-1].content == "Done."
    for i, request in enumerate(model.requests):
        sent = count_message_tokens(convert_to_openai_messages(request), TEXT) + tool_tokens(
            model.tool_schemas[i], TEXT
        )
        assert sent <= budget, i
        assert sequence_problems(request) == [], i
        assert any(m.id == "task" for m in request), i
        results = [m.tool_call_id for m in request if isinstance(m, ToolMessage)]
        assert len(results) == len(set(results)), i
        if i:
            assert results[-parallel:] == [f"call_{i}_{k}" for k in range(parallel)], i
