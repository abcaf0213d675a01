"""The offline OpenAI chat validator (tokenbox_core.testing._openai_chat): the schema and the protocol rules."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from tokenbox_core.testing import assert_openai_chat, openai_chat_problems

CALL = {"id": "c1", "type": "function", "function": {"name": "logs", "arguments": '{"svc": "api"}'}}


def valid() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "Be brief."},
        {"role": "developer", "content": "Cite ids."},
        {"role": "user", "content": "Why is api slow?", "name": "ana"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "c1", "content": "p99 900 ms"},
        {"role": "assistant", "content": "It regressed after the deploy."},
        {"role": "user", "content": [{"type": "text", "text": "And now?"}]},
    ]


def test_a_valid_conversation_has_no_problem() -> None:
    """System, developer, user, a tool call answered by its result, content parts: no problem."""
    assert openai_chat_problems(valid()) == []
    assert_openai_chat(valid())


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        (lambda ms: ms.__setitem__(4, {"role": "tool", "content": "p99"}), "tool_call_id: Field required"),
        (lambda ms: ms[2].__setitem__("id", "u1"), "id: Extra inputs are not permitted"),
        (lambda ms: ms[2].__setitem__("role", "robot"), "role 'robot'"),
        (lambda ms: ms[2].pop("content"), "content: Field required"),
        (lambda ms: ms[2].__setitem__("content", 42), "content"),
        (
            lambda ms: ms[3].__setitem__(
                "tool_calls", [{"id": "c1", "type": "function", "function": {"name": "logs", "arguments": {}}}]
            ),
            "arguments: Input should be a valid string",
        ),
    ],
)
def test_the_schema_comes_from_the_openai_types(change: Any, fragment: str) -> None:
    """A missing tool_call_id, an unknown key or role, missing or mistyped content, dict arguments: rejected."""
    messages = valid()
    change(messages)
    problems = openai_chat_problems(messages)
    assert any(fragment in p for p in problems), problems


def _details(problems: list[str]) -> list[str]:
    """Each problem without its fix (what is wrong, the part these tests pin)."""
    return [p.split("; ")[0] for p in problems]


def test_system_messages_only_lead() -> None:
    """A system message after the conversation started is a problem (the portable rule)."""
    messages = [*valid(), {"role": "system", "content": "late"}]
    assert _details(openai_chat_problems(messages)) == [
        "message 7 (system) stands after the conversation started (message 2)"
    ]


def test_every_tool_message_answers_the_call_before_it() -> None:
    """A tool result without its call, apart from it or answering it twice is a problem (the core's rules)."""
    messages = valid()
    del messages[3]
    assert _details(openai_chat_problems(messages)) == [
        "tool message at 3 answers no earlier tool call (tool_call_id 'c1')"
    ]
    apart = valid()
    apart.insert(4, {"role": "assistant", "content": "one moment"})
    assert _details(openai_chat_problems(apart)) == [
        "tool message at 5 answers tool call 'c1' of message 3, but other messages stand between them"
    ]
    twice = valid()
    twice.insert(5, dict(twice[4]))
    assert _details(openai_chat_problems(twice)) == ["tool message at 5 answers tool call 'c1' a second time"]


def test_every_tool_call_is_answered() -> None:
    """A call whose result never comes is a problem, at the end or mid-conversation."""
    messages = valid()
    del messages[4]
    assert _details(openai_chat_problems(messages)) == ["tool call c1 ('logs') at 3 has no result"]
    assert _details(openai_chat_problems(valid()[:4])) == ["tool call c1 ('logs') at 3 has no result"]


def test_an_assistant_message_needs_content_or_tool_calls() -> None:
    """An assistant message with neither content nor tool calls is a problem; repeated call ids too."""
    assert _details(
        openai_chat_problems([{"role": "user", "content": "hi"}, {"role": "assistant", "content": None}])
    ) == ["message 1 (assistant) has no 'content'"]
    twice = [*valid()[:5], {"role": "assistant", "content": None, "tool_calls": [CALL]}]
    twice.append({"role": "tool", "tool_call_id": "c1", "content": "again"})
    assert _details(openai_chat_problems(twice)) == ["message 5 (assistant) repeats tool call id 'c1' (first at 3)"]


def test_the_conversation_starts_on_a_user_message() -> None:
    """An opening assistant reply is a problem unless start_on_user=False (OpenAI's own rules)."""
    messages = [valid()[0], {"role": "assistant", "content": "Earlier answer."}, {"role": "user", "content": "q"}]
    assert _details(openai_chat_problems(messages)) == [
        "the conversation starts on assistant (message 1), not on a user message"
    ]
    assert openai_chat_problems(messages, start_on_user=False) == []
    assert openai_chat_problems([]) == ["messages is empty; the API needs at least one message"]


def test_assert_lists_every_problem() -> None:
    """assert_openai_chat raises AssertionError naming each problem."""
    with pytest.raises(AssertionError, match=r"(?s)2 problem\(s\).*robot.*has no result"):
        assert_openai_chat([{"role": "robot", "content": "x"}, {"role": "assistant", "tool_calls": [CALL]}])


def test_importing_the_core_does_not_import_openai() -> None:
    """`import tokenbox_core` and `import tokenbox_core.testing` leave the openai package unloaded."""
    code = "import sys, tokenbox_core, tokenbox_core.testing; print('openai' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.stdout.strip() == "False", proc.stderr
