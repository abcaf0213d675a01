"""Conversation validation in the core (issue 26 item 2): every problem named with its index and fix, repair."""

from __future__ import annotations

from typing import Any

import pytest

from tokenbox_core import ContextSession, Section, TokenBox, fit_conversation
from tokenbox_core.chat import check_conversation, conversation_problems
from tokenbox_core.chat._validate import sequence_problems
from tokenbox_core.errors import ConversationError, ConversationRepairWarning

W = "whitespace"


def call(call_id: str, name: str = "search") -> dict[str, Any]:
    fn = {"name": name, "arguments": "{}"}
    return {"role": "assistant", "content": None, "tool_calls": [{"id": call_id, "type": "function", "function": fn}]}


def result(call_id: str, text: str = "42") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


USER = {"role": "user", "content": "hi"}


@pytest.mark.parametrize(
    ("messages", "index", "kind", "message"),
    [
        (
            [USER, result("c9")],
            1,
            "orphan_result",
            r"tool message at 1 answers no earlier tool call \(tool_call_id 'c9'\); keep the assistant message "
            r"with that call before it, set 'tool_call_id' to the call's id, or pass on_invalid='repair'",
        ),
        (
            [USER, call("c1")],
            1,
            "unanswered_call",
            r"tool call c1 \('search'\) at 1 has no result; append its result \(\{'role': 'tool', "
            r"'tool_call_id': 'c1', 'content': \.\.\.\}\) before compiling, or pass on_invalid='repair'",
        ),
        (
            [USER, {"role": "robot", "content": "beep"}],
            1,
            "unknown_role",
            r"message 1 has role 'robot', which is not one of system, developer, user, assistant, tool; give it "
            r"one of those roles \(or drop it, or pass on_invalid='repair'\)",
        ),
        (
            [{"role": "sytem", "content": "be brief"}, USER],
            0,
            "unknown_role",
            r"message 0 has role 'sytem', .*did you mean 'system'\?",
        ),
        (
            [USER, {"role": "assistant"}],
            1,
            "no_content",
            r"message 1 \(assistant\) has no 'content'; give it a 'content' string or list of parts",
        ),
    ],
)
def test_each_problem_names_the_index_and_the_fix(messages: list[Any], index: int, kind: str, message: str) -> None:
    """check_conversation raises a ConversationError (a ValueError) with the message's index, kind and fix."""
    with pytest.raises(ConversationError, match=message) as caught:
        check_conversation(messages)
    assert caught.value.index == index and caught.value.kind == kind and isinstance(caught.value, ValueError)


def test_more_problems_are_counted_in_the_message() -> None:
    """The first problem is spelt out; the others are counted and kept on the error."""
    with pytest.raises(ConversationError, match=r"\(2 more problems after it\)") as caught:
        check_conversation([result("a"), result("b"), {"role": "robot", "content": "x"}])
    assert [p.kind for p in caught.value.problems] == ["orphan_result", "orphan_result", "unknown_role"]


def test_repair_drops_what_cannot_be_sent_and_closes_unanswered_calls() -> None:
    """Repair drops unknown roles, empty messages and orphan results, and removes unanswered calls."""
    answered = {"id": "c2", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    pending = {"id": "c3", "type": "function", "function": {"name": "g", "arguments": "{}"}}
    messages = [
        USER,
        {"role": "robot", "content": "beep"},
        {"role": "user"},
        result("zz"),
        {"role": "assistant", "content": "calling", "tool_calls": [answered, pending]},
        result("c2"),
        call("c4"),
    ]
    with pytest.warns(ConversationRepairWarning) as caught:
        repaired = check_conversation(messages, on_invalid="repair")
    assert str(caught[0].message).endswith(
        "(5 changes): dropped message 1 (role 'robot'); dropped message 2 (user, no content); dropped the tool "
        "result at 3 (it answers no call, tool_call_id 'zz'); removed unanswered tool call c3 from message 4; "
        "removed unanswered tool call c4 from message 6"
    )
    assert repaired == [
        USER,
        {"role": "assistant", "content": "calling", "tool_calls": [answered]},
        result("c2"),
    ]
    assert conversation_problems(repaired) == []


def test_results_without_an_id_join_the_call_they_follow() -> None:
    """As the engine groups them: a result without a tool_call_id directly after a call answers it."""
    assert conversation_problems([USER, call("c1"), {"role": "tool", "content": "r"}]) == []


def test_an_incomplete_conversation_may_end_on_a_call() -> None:
    """complete=False (an agent between its call and the results) accepts a pending call."""
    assert conversation_problems([USER, call("c1")], complete=False) == []
    assert conversation_problems([result("c1")], known_calls=["c1"]) == []


def test_on_invalid_is_checked_with_a_did_you_mean() -> None:
    """A misspelt mode fails where it is typed."""
    with pytest.raises(ConversationError, match="on_invalid must be 'raise' or 'repair', got 'repiar'; did you mean"):
        check_conversation([USER], on_invalid="repiar")


def test_fit_conversation_validates_and_repairs() -> None:
    """fit_conversation raises for an orphan result and, with repair, fits the conversation without it."""
    messages = [USER, result("c7"), {"role": "assistant", "content": "ok"}, {"role": "user", "content": "and?"}]
    with pytest.raises(ConversationError, match="tool message at 1 answers no earlier tool call"):
        fit_conversation(messages, 100, counter=W)
    with pytest.warns(ConversationRepairWarning, match="dropped the tool result at 1"):
        fit = fit_conversation(messages, 100, counter=W, on_invalid="repair")
    assert [m["content"] for m in fit.messages] == ["hi", "ok", "and?"]


def test_fit_conversation_accepts_the_framework_role_aliases() -> None:
    """LlamaIndex's chatbot/model and OpenAI's legacy function role pass; robot does not."""
    fit_conversation([USER, {"role": "chatbot", "content": "hello"}], 100, counter=W)
    with pytest.raises(ConversationError, match="role 'robot'"):
        fit_conversation([USER, {"role": "robot", "content": "hello"}], 100, counter=W)


def test_a_misspelt_section_role_fails_a_messages_layout() -> None:
    """Section(role="sytem") in messages mode raises with a did-you-mean; text mode does not care about roles."""
    box = TokenBox(100, counter=W, mode="messages")
    with pytest.raises(ConversationError, match=r"section 's' has role 'sytem', .*did you mean 'system'\?"):
        box.layout([Section("s", "be brief", role="sytem")])
    assert TokenBox(100, counter=W).layout([Section("s", "be brief", role="sytem")]).total_tokens == 2


def test_sequence_problems_adds_the_ordering_rules() -> None:
    """The test helper also reports a system message after the start and a history not opening on a user."""
    problems = sequence_problems([{"role": "assistant", "content": "hi"}, USER, {"role": "system", "content": "s"}])
    assert [p.split(";")[0] for p in problems] == [
        "the conversation starts on assistant (message 0), not on a user message",
        "message 2 (system) stands after the conversation started (message 0)",
    ]


def test_the_session_validates_what_it_archives() -> None:
    """add() refuses an orphan result or unknown role; a pending call is fine until compile()."""
    session = ContextSession(None, "s", budget=200, counter=W)
    with pytest.raises(ConversationError, match="tool message at 0 answers no earlier tool call"):
        session.add([result("c1")])
    with pytest.raises(ConversationError, match="message 0 has role 'robot'"):
        session.add([{"role": "robot", "content": "x"}])
    session.add([USER, call("c1")])
    with pytest.raises(ConversationError, match="tool call c1 \\('search'\\) at 1 has no result"):
        session.compile()
    session.add([result("c1")])  # the result of an archived call
    assert [m.get("id") for m in session.compile().messages] == ["t_1", "t_2", "t_3"]
    assert session.messages() == [USER, call("c1"), result("c1")]


def test_the_session_repairs_in_the_view_only() -> None:
    """on_invalid='repair': add() drops what cannot be archived; compile() leaves a pending call out of the view."""
    session = ContextSession(None, "s", budget=200, counter=W, on_invalid="repair")
    with pytest.warns(ConversationRepairWarning, match="dropped message 1"):
        assert session.add([USER, {"role": "robot", "content": "x"}, result("zz"), call("c1")]) == ["t_1", "t_2"]
    with pytest.warns(ConversationRepairWarning, match="removed unanswered tool call c1"):
        compiled = session.compile()
    assert [m.get("id") for m in compiled.messages] == ["t_1"]
    assert session.messages() == [USER, call("c1")]
