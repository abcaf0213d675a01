"""The neutral model request and ContextSession.prepare: one entry point per model call (issue 32)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenbox_core import ContextBudget, ContextSession, count_message_tokens
from tokenbox_core.errors import BudgetError, ConversationError, SessionError
from tokenbox_core.request import ModelRequest, PreparedRequest, schema_tokens
from tokenbox_core.tokens import canonical_json, get_counter

TOOL = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}}}


def _step(i: int, words: int) -> list[dict[str, Any]]:
    call = {"id": f"c{i}", "type": "function", "function": {"name": "lookup", "arguments": json.dumps({"q": i})}}
    return [
        {"role": "assistant", "content": "", "tool_calls": [call], "id": f"a{i}"},
        {
            "role": "tool",
            "tool_call_id": f"c{i}",
            "content": " ".join(f"r{i}w{j}" for j in range(words)),
            "id": f"r{i}",
        },
    ]


def test_the_budget_reserves_what_is_sent_whatever_happens() -> None:
    """The window less the output reserve, the system text and the schemas: ``capacity`` is what messages get."""
    request = ModelRequest([{"role": "user", "content": "hi"}], system="Be terse.", tools=[TOOL], window=4000,
                           output_reserve=500)  # fmt: skip
    budget = request.budget("o200k_base")
    counter = get_counter("o200k_base")
    assert budget.reserved_slots["tools"] == counter.count(canonical_json(TOOL)) == schema_tokens([TOOL], counter)
    assert budget.capacity == 4000 - 500 - budget.reserved_tokens
    inner = ModelRequest([], window=ContextBudget(4000, output_reserve=100), output_reserve=400)
    assert inner.budget("o200k_base").output_reserve == 400  # the larger of a budget's own reserve and the request's
    outer = ModelRequest([], window=ContextBudget(4000, output_reserve=700), output_reserve=400)
    assert outer.budget("o200k_base").output_reserve == 700


def test_the_request_is_counted_as_sent() -> None:
    """System text and messages as chat messages, plus the schemas (tools, then the response format)."""
    messages = [{"role": "user", "content": "find the key"}, *_step(0, 20)]
    fmt = {"type": "json_schema", "json_schema": {"name": "answer", "schema": {"type": "object"}}}
    request = ModelRequest(messages, system="Be terse.", tools=[TOOL], response_format=fmt, window=1000)
    expected = count_message_tokens([{"role": "system", "content": "Be terse."}, *messages], "o200k_base")
    assert request.tokens("o200k_base") == expected + schema_tokens([TOOL, fmt], "o200k_base")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"window": 0}, "window must be a positive integer"),
        ({"window": -5}, "window must be a positive integer"),
        ({"window": True}, "window must be a positive integer"),
        ({"window": math.nan}, "window must be a finite number"),
        ({"window": 100, "output_reserve": -1}, "output_reserve must be an integer >= 0"),
    ],
)
def test_a_bad_window_is_refused_at_construction(kwargs: dict[str, Any], match: str) -> None:
    """Windows and reserves are checked where the request is built, with what was given."""
    with pytest.raises(BudgetError, match=match):
        ModelRequest([], **kwargs)


def test_malformed_requests_are_refused_at_construction() -> None:
    """A message without a role, a tool that is not a schema, a system that is not text: ConversationError."""
    with pytest.raises(ConversationError, match="message 0 is str without a role"):
        ModelRequest(["hi"], window=100)  # type: ignore[list-item]
    with pytest.raises(ConversationError, match="tool 0 is a str; pass OpenAI tool schemas"):
        ModelRequest([], tools=["lookup"], window=100)  # type: ignore[list-item]
    with pytest.raises(ConversationError, match="system must be a string or None, got list"):
        ModelRequest([], system=["a"], window=100)  # type: ignore[arg-type]
    with pytest.raises(SessionError, match="prepare\\(\\) takes a tokenbox_core.request.ModelRequest, got list"):
        ContextSession(None, "s", budget=100).prepare([])  # type: ignore[arg-type]


def test_prepare_archives_what_is_new_and_fits_the_window() -> None:
    """Each call archives only the messages it has not seen (by id) and returns messages within the window,
    mapped to their archived ids."""
    session = ContextSession(None, "s", budget=100_000, counter="o200k_base")
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Find the root cause.", "id": "task"}]
    for i in range(30):
        messages += _step(i, 80)
        request = ModelRequest(messages, system="You are an agent.", tools=[TOOL], window=1500, output_reserve=200)
        prepared = session.prepare(request)
        assert isinstance(prepared, PreparedRequest)
        assert prepared.tokens <= 1500 - 200
        assert prepared.messages[-1]["tool_call_id"] == f"c{i}"  # the newest step
        assert len(prepared.sources) == len(prepared.messages)
    assert len(session.messages()) == len(messages)  # each message archived once


@settings(deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=900), min_size=1, max_size=10), st.sampled_from([600, 1200]))
def test_prepared_requests_never_exceed_the_window(words: list[int], window: int) -> None:
    """Random agent loops through prepare(): within the window as sent, the newest step present, no result twice."""
    session = ContextSession(None, "p", budget=window, counter="o200k_base")
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Find the cause.", "id": "task"}]
    for i, n in enumerate(words):
        messages += _step(i, n)
        prepared = session.prepare(ModelRequest(messages, system="Agent.", tools=[TOOL], window=window))
        assert prepared.tokens <= window
        results = [m["tool_call_id"] for m in prepared.messages if m["role"] == "tool"]
        assert results[-1] == f"c{i}" and len(results) == len(set(results))


def test_a_session_defense_must_be_a_policy() -> None:
    """ContextSession(defense=...) takes a DefensePolicy, and says so."""
    with pytest.raises(SessionError, match="defense must be a tokenbox_core.defense.DefensePolicy, got 'strict'"):
        ContextSession(None, "s", budget=100, defense="strict")


def test_the_request_query_steers_recall_and_must_be_text() -> None:
    """ModelRequest(query=...) is what recall searches for (a LlamaIndex Memory.get(input=...)); not text: an error."""
    session = ContextSession(None, "q", budget=10_000, counter="whitespace")
    session.add([{"role": "user", "content": "my locker code is 4471"}, {"role": "assistant", "content": "noted"}])
    for i in range(40):
        session.add([{"role": "user", "content": f"question {i} about trains"}, {"role": "assistant", "content": "ok"}])
    request = ModelRequest((), window=120, query="what is my locker code")
    prepared = session.prepare(request)
    assert "t_1" in prepared.compiled.recalled and "4471" in json.dumps(prepared.messages)
    assert "t_1" not in session.prepare(ModelRequest((), window=120)).compiled.recalled
    with pytest.raises(ConversationError, match="query must be a string or None, got int"):
        ModelRequest((), window=60, query=3)  # type: ignore[arg-type]
