"""Every public path that returns chat messages returns what OpenAI's chat API accepts (issue 26 item 1).

Each path's messages go through :func:`tokenbox_core.testing.openai_chat_problems` (the ``openai`` package's
types, strict, plus the protocol rules): ``Layout.messages`` of the README's examples laid out as messages,
``tokenbox demo --messages``, ``fit_conversation``, ``ContextCompiler.compile(...).messages``, the LangChain
``TokenBoxMessages``, ``trim_messages`` and ``TokenBoxCompiler`` (converted with LangChain's own
``convert_to_openai_messages``), and the LlamaIndex memory's ``get()`` (converted the way LlamaIndex's OpenAI
integration converts a ``ChatMessage``).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import pytest

from tokenbox_core import ContextBudget, ContextCompiler, Evidence, Item, Section, TokenBox, fit_conversation
from tokenbox_core.testing import openai_chat_problems

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def agent_conversation(turns: int = 30) -> list[dict[str, Any]]:
    """The README's agent conversation: a system message, then turns with a tool call and its result."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are an on-call assistant."}]
    for i in range(turns):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "logs", "arguments": f'{{"svc": "api-{i}"}}'}}
        messages += [
            {"role": "user", "content": f"Why is api-{i} slow?"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": f"api-{i}: p99 latency 900 ms since the deploy. " * 4},
            {"role": "assistant", "content": f"api-{i} regressed after the deploy; roll it back."},
        ]
    return messages


def readme_sections() -> list[Section]:
    """The README's "Sections, priorities and the budget" example."""
    docs = [Item(f"doc-{i}", f"Document {i} explains step {i} of the deployment.", score=1 - i / 10) for i in range(8)]
    turns = [Item(f"t{i}", f"turn {i}: let's look at the logs again", role="user") for i in range(30)]
    return [
        Section("policy", "You are an on-call assistant. Never run destructive commands.", role="system"),
        Section("evidence", docs, priority=2, shrink=1, eviction="lowest_score", omission_marker=True),
        Section("history", turns, priority=1, shrink=1, omission_marker=True),
        Section("question", "Why did the deploy fail?", role="user"),
    ]


# --------------------------------------------------------------------------- the core


@pytest.mark.parametrize("budget", [300, 600, 4000])
def test_layout_messages_of_the_readme_examples(budget: int) -> None:
    """The README's sections, laid out as chat messages, give valid messages at every budget."""
    box = TokenBox(ContextBudget(budget, output_reserve=100), counter="gpt-4o", mode="messages")
    assert openai_chat_problems(box.layout(readme_sections()).messages) == []
    first = [Section("system", "You are terse."), Section("docs", "long text " * 9000, shrink=1)]
    assert openai_chat_problems(TokenBox(8000, counter="gpt-4o", mode="messages").layout(first).messages) == []


@pytest.mark.parametrize("budget", [2400, 8192, 32768])
def test_tokenbox_demo_messages(budget: int, capsys: pytest.CaptureFixture[str]) -> None:
    """`tokenbox demo --messages` prints valid messages: tool calls structured, results answering them by id."""
    from tokenbox_core.cli import main

    assert main(["demo", "--messages", "--budget", str(budget)]) == 0
    messages = json.loads(capsys.readouterr().out)
    assert openai_chat_problems(messages) == []
    if budget >= 8192:
        assert any(m.get("tool_calls") for m in messages) and any(m["role"] == "tool" for m in messages)


@pytest.mark.parametrize("budget", [120, 600, 3000])
def test_fit_conversation(budget: int) -> None:
    """fit_conversation of the README's agent conversation is valid at every budget."""
    assert openai_chat_problems(fit_conversation(agent_conversation(), budget, counter="gpt-4o").messages) == []


def compile_messages(config: Any = None) -> list[Any]:
    evidence = [
        Evidence("kb-1", "Refunds are issued within 14 days.", source="kb://refunds", retrieved_at=NOW, authority=0.9,
                 relevance=0.9),
    ]
    tools = [{"type": "function", "function": {"name": "logs", "description": "Read logs.", "parameters": {}}}]
    compiler = ContextCompiler(ContextBudget(2000, output_reserve=200), counter="gpt-4o", config=config)
    compiled = compiler.compile(
        policy="You are Acme's support agent.",
        developer="Cite evidence ids.",
        task={"objective": "answer"},
        tools=tools,
        evidence=evidence,
        memory=[{"id": "m1", "text": "The user prefers short answers."}],
        history=agent_conversation(12)[1:],
        user="Can I get a refund?",
    )
    return list(compiled.messages)


def test_context_compiler_messages() -> None:
    """ContextCompiler.compile(...).messages with every tier and a trimmed agent history is valid, tools as text or
    as schemas."""
    from tokenbox_core import CompilerConfig

    assert openai_chat_problems(compile_messages()) == []
    assert openai_chat_problems(compile_messages(config=CompilerConfig(tools_as="schemas"))) == []


# --------------------------------------------------------------------------- LangChain


def test_langchain_paths() -> None:
    """TokenBoxMessages, trim_messages and TokenBoxCompiler give messages LangChain converts to valid OpenAI ones."""
    pytest.importorskip("langchain_core")
    from langchain_core.messages import convert_to_messages, convert_to_openai_messages

    from tokenbox_langchain import TokenBoxCompiler, TokenBoxMessages, trim_messages

    history = convert_to_messages(agent_conversation())
    for budget in (150, 700, 3000):
        fitted = TokenBoxMessages(budget=budget, counter="gpt-4o").invoke(history)
        assert openai_chat_problems(convert_to_openai_messages(fitted)) == [], budget
        trimmed = trim_messages(history, max_tokens=budget, token_counter="gpt-4o", strategy="last", start_on="human")
        assert openai_chat_problems(convert_to_openai_messages(trimmed)) == [], budget
    tools = [{"type": "function", "function": {"name": "logs", "description": "Read logs.", "parameters": {}}}]
    sources = {"policy": "You are Acme's support agent.", "history": history[1:30], "user": "Can I get a refund?"}
    for tools_as in ("schemas", "text"):
        runnable = TokenBoxCompiler(budget=2000, counter="gpt-4o", clock=lambda: NOW, tools_as=tools_as)
        prompt = runnable.invoke({**sources, "tools": tools})
        assert openai_chat_problems(convert_to_openai_messages(prompt.to_messages())) == [], tools_as
        assert tool_param_problems(runnable.compile({**sources, "tools": tools}).tools) == []


def tool_param_problems(tools: Any) -> list[str]:
    """What OpenAI's types reject in a ``tools`` parameter (strict, no unknown key)."""
    from openai.types.chat import ChatCompletionToolParam
    from pydantic import ConfigDict, TypeAdapter, ValidationError

    try:
        TypeAdapter(list[ChatCompletionToolParam], config=ConfigDict(extra="forbid", strict=True)).validate_python(
            list(tools)
        )
    except ValidationError as exc:
        return [str(e) for e in exc.errors()]
    return []


# --------------------------------------------------------------------------- LlamaIndex


def llamaindex_to_openai(message: Any) -> dict[str, Any]:
    """A LlamaIndex ChatMessage as an OpenAI message dict (role, content, and the tool fields LlamaIndex keeps
    in additional_kwargs), as LlamaIndex's OpenAI integration sends it."""
    role = message.role.value
    out: dict[str, Any] = {"role": role, "content": message.content}
    kwargs = message.additional_kwargs
    if role == "assistant" and kwargs.get("tool_calls"):
        out["tool_calls"] = kwargs["tool_calls"]
        out["content"] = message.content or None
    if role == "tool":
        out["tool_call_id"] = kwargs["tool_call_id"]
    return out


def test_llamaindex_memory() -> None:
    """TokenBoxMemory.get() of an agent conversation converts to valid OpenAI messages at every budget."""
    pytest.importorskip("llama_index.core")
    from llama_index.core.llms import ChatMessage

    from tokenbox_llamaindex import TokenBoxMemory

    for limit in (150, 700, 3000):
        memory = TokenBoxMemory.from_defaults(token_limit=limit)
        for m in agent_conversation():
            extra = {k: m[k] for k in ("tool_calls", "tool_call_id") if k in m}
            memory.put(ChatMessage(role=m["role"], content=m["content"] or "", additional_kwargs=extra))
        assert openai_chat_problems([llamaindex_to_openai(m) for m in memory.get()]) == [], limit
