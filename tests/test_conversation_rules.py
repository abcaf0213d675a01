"""Conversations providers reject, on every path (issue 36 item 3): a tool result apart from its call, a result
after a later turn, a result twice.  Each entry point raises a ConversationError by default and, with
``on_invalid="repair"``, moves or drops what a provider rejects with a ConversationRepairWarning naming each change;
consecutive user messages are accepted as they are."""

from __future__ import annotations

import random
import warnings
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain.agents import create_agent

from tokenbox_core import CompilerConfig, ContextCompiler, ContextSession, fit_conversation
from tokenbox_core.chat import check_conversation, conversation_problems
from tokenbox_core.chat._transcripts import agent_transcript
from tokenbox_core.chat._validate import checked_conversation, sequence_problems
from tokenbox_core.errors import ConversationError, ConversationRepairWarning
from tokenbox_langchain import TokenBoxMessages, TokenBoxMiddleware, trim_messages
from tokenbox_langchain._fit import neutral
from tokenbox_langchain.testing import FakeToolModel, from_neutral, lookup_tool
from tokenbox_llamaindex import TokenBoxMemory
from tokenbox_llamaindex._messages import neutral as llama_neutral
from tokenbox_llamaindex._messages import plain_message
from tokenbox_llamaindex._session_memory import TokenBoxSessionMemory


def _call(call_id: str) -> dict[str, Any]:
    fn = {"name": "lookup", "arguments": '{"q": "x"}'}
    return {
        "role": "assistant",
        "content": "",
        "id": f"a-{call_id}",
        "tool_calls": [{"id": call_id, "type": "function", "function": fn}],
    }


def _result(call_id: str, text: str = "found it", rid: str | None = None) -> dict[str, Any]:
    return {"role": "tool", "content": text, "tool_call_id": call_id, "id": rid or f"t-{call_id}"}


def _say(role: str, text: str, mid: str) -> dict[str, Any]:
    return {"role": role, "content": text, "id": mid}


# name -> (conversation, the problem's kind, what the repair says)
CASES: dict[str, tuple[list[dict[str, Any]], str, str]] = {
    "separated": (
        [_say("user", "find x", "u0"), _call("c1"), _say("user", "also, hurry", "u1"), _result("c1")],
        "separated_result",
        "moved the tool result at 3",
    ),
    "after-a-later-turn": (
        [
            _say("user", "find x", "u0"),
            _call("c1"),
            _say("assistant", "still looking", "a0"),
            _say("user", "and y?", "u1"),
            _result("c1"),
            _say("assistant", "x is 1", "a1"),
            _say("user", "thanks", "u2"),
        ],
        "separated_result",
        "moved the tool result at 4",
    ),
    "duplicated": (
        [
            _say("user", "find x", "u0"),
            _call("c1"),
            _result("c1"),
            _result("c1", rid="t-again"),
            _say("user", "ok?", "u1"),
        ],
        "duplicate_result",
        "dropped the second result for tool call 'c1' at 3 (an exact copy of the one at 2",
    ),
}


def _paired(messages: list[dict[str, Any]]) -> None:
    """Every result directly follows its call's message or another result of it: what providers accept."""
    assert [p for p in sequence_problems(messages, start_on_user=False) if "system" not in p] == []


def _fit(messages: list[dict[str, Any]], **kw: Any) -> list[dict[str, Any]]:
    return list(fit_conversation(messages, 1_000, counter="whitespace", **kw).messages)


def _compile(messages: list[dict[str, Any]], **kw: Any) -> list[dict[str, Any]]:
    compiler = ContextCompiler(2_000, counter="whitespace", config=CompilerConfig(**kw))
    return [dict(m) for m in compiler.compile(policy="be brief", history=messages).messages if m["role"] != "system"]


def _session(messages: list[dict[str, Any]], **kw: Any) -> list[dict[str, Any]]:
    session = ContextSession(None, "s", budget=2_000, counter="whitespace", **kw)
    session.add(messages)
    return [dict(m) for m in session.compile().messages if m["role"] != "system"]


def _tokenbox_messages(messages: list[dict[str, Any]], **kw: Any) -> list[dict[str, Any]]:
    return neutral(TokenBoxMessages(budget=2_000, counter="whitespace", **kw).invoke(from_neutral(messages)))


def _trim(messages: list[dict[str, Any]], **kw: Any) -> list[dict[str, Any]]:
    return neutral(trim_messages(from_neutral(messages), max_tokens=2_000, token_counter="whitespace", **kw))


def _middleware(messages: list[dict[str, Any]], **kw: Any) -> list[dict[str, Any]]:
    model = FakeToolModel(steps=0)
    agent = create_agent(
        model, [lookup_tool()], middleware=[TokenBoxMiddleware(2_000, token_counter="whitespace", **kw)]
    )
    agent.invoke({"messages": from_neutral(messages)})
    return neutral(model.requests[0])


def _llama_memory(messages: list[dict[str, Any]], **kw: Any) -> list[dict[str, Any]]:
    chat = [plain_message(m) for m in messages]
    return llama_neutral(
        TokenBoxMemory.from_defaults(chat_history=chat, token_limit=2_000, counter="whitespace", **kw).get()
    )


def _llama_session(messages: list[dict[str, Any]], **kw: Any) -> list[dict[str, Any]]:
    memory = TokenBoxSessionMemory(tokenizer_fn="whitespace", **kw)
    memory.put_messages([plain_message(m) for m in messages])
    return llama_neutral(memory.get())


ENTRY_POINTS: dict[str, Callable[..., list[dict[str, Any]]]] = {
    "fit_conversation": _fit,
    "ContextCompiler.compile": _compile,
    "ContextSession": _session,
    "TokenBoxMessages": _tokenbox_messages,
    "trim_messages": _trim,
    "TokenBoxMiddleware": _middleware,
    "TokenBoxMemory": _llama_memory,
    "TokenBoxSessionMemory": _llama_session,
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
def test_every_entry_point_rejects_what_providers_reject(entry: str, case: str) -> None:
    """By default the entry point raises a ConversationError of the problem's kind naming the fix."""
    messages, kind, _ = CASES[case]
    with pytest.raises(ConversationError, match="on_invalid='repair'") as caught:
        ENTRY_POINTS[entry]([dict(m) for m in messages])
    assert caught.value.kind == kind


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
def test_every_entry_point_repairs_visibly(entry: str, case: str) -> None:
    """on_invalid='repair' sends a conversation providers accept, every result next to its call, and a
    ConversationRepairWarning says what changed."""
    messages, _, change = CASES[case]
    with pytest.warns(ConversationRepairWarning, match=change.replace("(", r"\(").replace("'", "'")):
        out = ENTRY_POINTS[entry]([dict(m) for m in messages], on_invalid="repair")
    _paired(out)
    contents = [m.get("content") for m in out]
    assert contents.count("found it") == 1 and "find x" in contents


def test_a_result_arriving_in_a_later_add_is_moved_in_the_view_only() -> None:
    """A session archives a result that arrives after a later turn as given (the archive keeps the order things
    happened); compile raises, or with repair shows it next to its call without rewriting the archive."""
    first, call, later = _say("user", "find x", "u0"), _call("c1"), _say("user", "and y?", "u1")
    session = ContextSession(None, "s", budget=2_000, counter="whitespace")
    for batch in ([first, call], [later], [_result("c1")]):
        session.add(batch)
    with pytest.raises(ConversationError, match="other messages stand between them"):
        session.compile()
    repaired = ContextSession(None, "r", budget=2_000, counter="whitespace", on_invalid="repair")
    for batch in ([first, call], [later], [_result("c1")]):
        repaired.add(batch)
    with pytest.warns(ConversationRepairWarning, match="moved the tool result at 3"):
        shown = [m["role"] for m in repaired.compile().messages]
    assert shown == ["user", "assistant", "tool", "user"]
    assert [m["role"] for m in repaired.messages()] == ["user", "assistant", "user", "tool"]


def test_consecutive_user_messages_are_kept_as_they_are() -> None:
    """Two user messages in a row are no problem: OpenAI accepts them, Anthropic combines them; nothing merges."""
    messages = [_say("user", "find x", "u0"), _say("user", "quickly", "u1")]
    assert conversation_problems(messages) == []
    assert _fit(messages) == messages


def test_a_system_message_inside_the_conversation_is_kept_in_place() -> None:
    """OpenAI accepts a system message mid-conversation: the validator accepts it and it stays where it is; the
    portable rules (sequence_problems, openai_chat_problems) report it for Anthropic and Gemini."""
    messages = [_say("user", "find x", "u0"), _say("system", "answer in French", "s1"), _say("user", "vite", "u1")]
    assert conversation_problems(messages) == []
    assert _fit(messages) == messages
    assert [p.kind for p in conversation_problems(messages, portable=True)] == ["late_system"]


# ------------------------------------------------------------------ the property: repair always ends valid


def _malformed(seed: int, edits: list[int]) -> list[dict[str, Any]]:
    """A random agent transcript broken by ``edits``: results moved later or repeated, calls or results deleted,
    unknown roles, empty or unsendable content, consecutive user messages."""
    rng = random.Random(seed)
    messages = [dict(m) for m in agent_transcript(5, seed=seed, tool_rate=0.8, max_parallel=3)]
    for edit in edits:
        results = [i for i, m in enumerate(messages) if m["role"] == "tool"]
        at = rng.randrange(len(messages))
        kind = edit % 7
        if kind == 0 and results:  # a result moved later (apart from its call, maybe after a later turn)
            i = rng.choice(results)
            messages.insert(rng.randrange(i, len(messages)) + 1, messages.pop(i))
        elif kind == 1 and results:  # a result twice (an exact copy or a different text)
            copy = dict(messages[rng.choice(results)])
            copy["content"] = copy["content"] if rng.random() < 0.5 else "other"
            messages.insert(rng.randrange(len(messages) + 1), copy)
        elif kind == 2 and results:  # a call's message deleted: its results are orphans
            calls = [i for i, m in enumerate(messages) if m.get("tool_calls")]
            if calls:
                del messages[rng.choice(calls)]
        elif kind == 3 and results:  # a result deleted: its call is unanswered
            del messages[rng.choice(results)]
        elif kind == 4:
            messages.insert(at, {"role": "robot", "content": "beep"})
        elif kind == 5:
            messages.insert(at, {"role": "user", "content": rng.choice([None, 5, [["nested"]], [{"txt": "x"}]])})
        else:
            messages.insert(at, {"role": "user", "content": "one more thing"})
    return messages


@given(seed=st.integers(0, 10_000), edits=st.lists(st.integers(0, 100), min_size=1, max_size=6))
def test_repair_ends_valid_and_names_everything_it_changes(seed: int, edits: list[int]) -> None:
    """After repair the validator finds no problem; every message left out or changed is named in the warning;
    repair is deterministic and a repaired conversation needs no further repair."""
    messages = _malformed(seed, edits)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConversationRepairWarning)
        fixed = checked_conversation(messages, on_invalid="repair")
        again = checked_conversation(messages, on_invalid="repair")
    assert conversation_problems(fixed.messages) == []
    assert again == fixed
    said = " ".join(fixed.changes)
    for i, m in enumerate(messages):
        if i not in fixed.sources:
            assert f"at {i}" in said or f"message {i}" in said, (i, m, fixed.changes)
    for m, at in zip(fixed.messages, fixed.sources, strict=True):
        if m is not messages[at]:
            assert f"from message {at}" in said and m.get("content") == messages[at].get("content")
    moved = [at for n, at in enumerate(fixed.sources) if n and at < fixed.sources[n - 1]]
    for at in moved:
        assert f"moved the tool result at {at}" in said or any(
            f"moved the tool result at {j}" in said for j in fixed.sources
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_conversation(fixed.messages, on_invalid="repair") == fixed.messages


def test_a_result_naming_another_call_does_not_join_its_neighbour() -> None:
    """A result whose tool_call_id names a later call, placed after another call's results, answers no earlier
    call (it used to join its neighbour by adjacency and pass)."""
    messages = [_say("user", "q", "u0"), _call("c1"), _result("c1"), _result("c2"), _call("c2"), _result("c2", rid="r")]
    assert [(p.kind, p.index) for p in conversation_problems(messages)] == [("orphan_result", 3)]
