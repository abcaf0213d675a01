"""TokenBoxMaskingEdit inside LangChain's ContextEditingMiddleware: old tool results masked, the newest kept."""

from __future__ import annotations

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import ContextEditingMiddleware
from langchain_core.messages import HumanMessage, ToolMessage

from tokenbox_core.session import MaskingConfig
from tokenbox_langchain.context_edit import CLEARED_PLACEHOLDER, TokenBoxMaskingEdit
from tokenbox_langchain.counting import MessageCounter
from tokenbox_langchain.testing import FakeToolModel, lookup_tool

COUNT = MessageCounter("o200k_base")


def test_masks_old_results_in_the_request_only() -> None:
    """Past the trigger, results older than the newest 3 groups are placeholders; the state keeps them whole."""
    model = FakeToolModel(steps=30)
    edit = TokenBoxMaskingEdit(trigger=1_000)
    agent = create_agent(model, [lookup_tool(words=80)], middleware=[ContextEditingMiddleware(edits=[edit])])
    state = agent.invoke({"messages": [HumanMessage("go", id="task")]}, {"recursion_limit": 100})["messages"]
    last = model.requests[-1]
    results = [m for m in last if isinstance(m, ToolMessage)]
    assert all("cleared to save room" in m.content for m in results[:-3])
    assert not any("cleared" in m.content for m in results[-3:])
    originals = {m.id: m for m in state}
    assert all(m.tool_call_id == originals[m.id].tool_call_id for m in results)  # ids and call ids kept
    assert not any("cleared" in str(m.content) for m in state)  # the graph state is untouched


def test_below_the_trigger_nothing_changes() -> None:
    """Under the trigger the messages are left as they are."""
    messages = [HumanMessage("hi"), ToolMessage("x " * 50, tool_call_id="c1")]
    TokenBoxMaskingEdit(trigger=10_000).apply(messages, count_tokens=COUNT.count)
    assert messages[1].content == "x " * 50


def test_invalid_settings() -> None:
    """A negative trigger or a wrong masking object fails at construction."""
    with pytest.raises(ValueError, match=r"trigger must be an integer >= 0"):
        TokenBoxMaskingEdit(trigger=-1)
    with pytest.raises(TypeError, match=r"masking must be a tokenbox_core.session.MaskingConfig"):
        TokenBoxMaskingEdit(masking={"keep_last": 2})
    assert MaskingConfig(placeholder=CLEARED_PLACEHOLDER).keep_last == 3
