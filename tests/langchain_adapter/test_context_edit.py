"""TokenBoxMaskingEdit inside LangChain's ContextEditingMiddleware: old tool results masked, the newest kept."""

from __future__ import annotations

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import ClearToolUsesEdit, ContextEditingMiddleware
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from tokenbox_core.session import MaskingConfig
from tokenbox_langchain._context_edit import CLEARED_PLACEHOLDER, TokenBoxMaskingEdit
from tokenbox_langchain._counting import MessageCounter
from tokenbox_langchain.testing import FakeToolModel, lookup_tool

COUNT = MessageCounter("o200k_base")
PNG_1PX = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


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


def _steps(*contents: object) -> list[BaseMessage]:
    """A task then one tool call and its result per content, ids c0, c1, ..."""
    messages: list[BaseMessage] = [HumanMessage("go", id="task")]
    for i, content in enumerate(contents):
        messages.append(AIMessage("", tool_calls=[{"id": f"c{i}", "name": "lookup", "args": {"q": str(i)}}]))
        messages.append(ToolMessage(content, tool_call_id=f"c{i}", id=f"r{i}"))  # type: ignore[arg-type]
    return messages


def test_text_part_results_are_masked() -> None:
    """A result made of text parts is masked like a string result (it used to be skipped as non-string)."""
    parts = [{"type": "text", "text": "first line of a long result\n" + "word " * 200}]
    messages = _steps(parts, "b " * 50, "c " * 50, "d " * 50)
    TokenBoxMaskingEdit(trigger=0).apply(messages, count_tokens=COUNT.count)
    assert isinstance(messages[2].content, str) and "cleared to save room" in messages[2].content
    assert "first line of a long result" in messages[2].content
    assert [m.content for m in messages[4::2]] == ["b " * 50, "c " * 50, "d " * 50]


def test_media_results_are_left_whole() -> None:
    """A result carrying an image part is not masked, as the core's session view shows media verbatim."""
    url = "data:image/png;base64," + PNG_1PX
    image = [{"type": "text", "text": "chart"}, {"type": "image_url", "image_url": {"url": url}}]
    messages = _steps(image, "b", "c", "d")
    TokenBoxMaskingEdit(trigger=0).apply(messages, count_tokens=COUNT.count)
    assert messages[2].content == image


def test_cleared_results_carry_langchains_mark_and_are_not_cleared_twice() -> None:
    """Masked results are marked as ClearToolUsesEdit marks its own, and each edit leaves the other's alone."""
    messages = _steps("a " * 80, "b " * 80, "c " * 80, "d " * 80, "e " * 80)
    ClearToolUsesEdit(trigger=0, keep=4, placeholder="[cleared by langchain]").apply(messages, count_tokens=COUNT.count)
    assert messages[2].content == "[cleared by langchain]"
    TokenBoxMaskingEdit(trigger=0).apply(messages, count_tokens=COUNT.count)
    assert messages[2].content == "[cleared by langchain]"  # not masked again
    assert "cleared to save room" in messages[4].content
    assert messages[4].response_metadata["context_editing"]["cleared"] is True
    masked = messages[4].content
    ClearToolUsesEdit(trigger=0, keep=0, placeholder="[cleared by langchain]").apply(messages, count_tokens=COUNT.count)
    assert messages[4].content == masked  # LangChain's edit skips what TokenBox masked
    assert messages[10].content == "[cleared by langchain]"
