"""The middleware's per-call caches: each message converted and counted once per content, the conversation
checked and grouped from where the last call stopped — with the same results as doing it all again."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from tokenbox_core import ContextBudget
from tokenbox_core.errors import ConversationError
from tokenbox_langchain._converted import ConvertedMessages
from tokenbox_langchain._counting import MessageCounter
from tokenbox_langchain._fit import FitOptions, fit_messages
from tokenbox_langchain.testing import agent_transcript

COUNT = MessageCounter("o200k_base")
OPTIONS = FitOptions(system="leading", anchor="human", start_on="human")


def loop(steps: int) -> list[BaseMessage]:
    """A system message, a task and ``steps`` tool steps (a call and its result)."""
    out: list[BaseMessage] = [SystemMessage("Research."), HumanMessage("find everything", id="task")]
    for n in range(steps):
        call = {"name": "lookup", "args": {"query": f"item {n}"}, "id": f"c{n}", "type": "tool_call"}
        out += [
            AIMessage("", tool_calls=[call], id=f"ai-{n}"),
            ToolMessage(f"item {n}: " + "fact " * 20, tool_call_id=f"c{n}", id=f"t-{n}"),
        ]
    return out


def ids(messages: list[BaseMessage]) -> list[str | None]:
    return [m.id for m in messages]


def test_growing_loop_fits_as_without_the_cache() -> None:
    """Call after call over a growing loop, the cached fit keeps exactly what an uncached fit keeps."""
    cache = ConvertedMessages(COUNT)
    messages = loop(120)
    for n in range(2, len(messages) + 1, 2):
        cached = fit_messages(messages[:n], COUNT, ContextBudget(max_tokens=1_500), OPTIONS, cache)
        plain = fit_messages(messages[:n], COUNT, ContextBudget(max_tokens=1_500), OPTIONS)
        assert cached.messages == plain.messages and cached.total_tokens == plain.total_tokens
    assert len(cache.reads) == 1  # one conversation, extended call after call


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), budget=st.integers(80, 900), cut=st.integers(1, 30))
def test_cached_fit_equals_the_plain_fit(seed: int, budget: int, cut: int) -> None:
    """Any transcript, fitted once as a prefix and then whole with one cache, gives what uncached fits give."""
    messages = agent_transcript(8, seed=seed)
    cache = ConvertedMessages(COUNT)
    for part in (messages[: max(2, len(messages) - cut)], messages):
        try:
            plain = fit_messages(part, COUNT, ContextBudget(max_tokens=budget), OPTIONS)
        except Exception as exc:  # the same error, raised the same way
            with pytest.raises(type(exc), match="."):
                fit_messages(part, COUNT, ContextBudget(max_tokens=budget), OPTIONS, cache)
            continue
        cached = fit_messages(part, COUNT, ContextBudget(max_tokens=budget), OPTIONS, cache)
        assert cached.messages == plain.messages and cached.kept == plain.kept


def test_edited_message_is_converted_again() -> None:
    """A message changed under the same id (new content, tool calls reassigned) is not served stale."""
    cache = ConvertedMessages(COUNT)
    messages = loop(3)
    first = cache.entries(messages)
    edited = messages[4].model_copy(update={"content": "masked"})
    second = cache.entries([*messages[:4], edited, *messages[5:]])
    assert second[4] is not first[4] and second[4].neutral["content"] == "masked"
    assert all(a is b for i, (a, b) in enumerate(zip(first, second, strict=True)) if i != 4)
    ai = messages[2]
    ai.tool_calls = [{**ai.tool_calls[0], "args": {"query": "edited"}}]  # as HumanInTheLoopMiddleware edits
    third = cache.entries(messages)
    assert third[2] is not first[2] and "edited" in third[2].neutral["tool_calls"][0]["function"]["arguments"]


def test_messages_are_not_written_to() -> None:
    """Converting and fitting leave the caller's messages exactly as they were (no attribute added)."""
    messages = loop(30)
    before = [copy.deepcopy(m.__dict__) for m in messages]
    cache = ConvertedMessages(COUNT)
    for _ in range(2):
        fit_messages(messages, COUNT, ContextBudget(max_tokens=800), OPTIONS, cache)
    assert [m.__dict__ for m in messages] == before


def test_cache_stays_within_its_bound() -> None:
    """A small max_bytes keeps the estimate under it, dropping the least recently used entries."""
    cache = ConvertedMessages(COUNT, max_bytes=6_000)
    messages = loop(60)
    cache.entries(messages)
    assert 0 < cache.nbytes <= 6_000 and 0 < len(cache) < len(messages)
    with pytest.raises(ValueError, match=r"max_bytes must be an integer >= 0, got -1"):
        ConvertedMessages(COUNT, max_bytes=-1)


def test_invalid_step_raises_the_core_error() -> None:
    """A tool result answering no call, appended after a valid prefix, raises the core's own error."""
    cache = ConvertedMessages(COUNT)
    messages = loop(10)
    fit_messages(messages, COUNT, ContextBudget(max_tokens=2_000), OPTIONS, cache)
    bad = [*messages, HumanMessage("next", id="next"), ToolMessage("stray", tool_call_id="nobody", id="stray")]
    with pytest.raises(ConversationError, match=r"answers no earlier tool call \(tool_call_id 'nobody'\)"):
        fit_messages(bad, COUNT, ContextBudget(max_tokens=2_000), OPTIONS, cache)


class _Uncopyable:
    def __deepcopy__(self, memo: dict) -> _Uncopyable:
        raise TypeError("cannot copy")


def test_message_that_cannot_be_copied_is_converted_every_time() -> None:
    """A message whose fields cannot be copied (a provider object in additional_kwargs) is not kept, still fitted."""
    cache = ConvertedMessages(COUNT)
    odd = AIMessage("hello", id="odd", additional_kwargs={"provider": _Uncopyable()})
    first, second = cache.entries([odd]), cache.entries([odd])
    assert first[0] is not second[0] and first[0].neutral["content"] == "hello" and len(cache) == 0


def test_count_is_the_counters_count() -> None:
    """ConvertedMessages.count gives what the counter gives for the list, from sizes counted once."""
    cache = ConvertedMessages(COUNT)
    messages = loop(20)
    assert cache.count(messages) == COUNT.count(messages) == cache.count(messages)
    assert cache.count([]) == COUNT.count([])
