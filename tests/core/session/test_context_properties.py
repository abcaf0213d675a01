"""Invariants of ``ContextSession.compile`` on generated agent sessions (hypothesis).

Never over budget, never an orphan or an unanswered call, recalled messages never repeat the window, every
message named as a source is the archived one unchanged, the same archive compiles to the same bytes.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from tokenbox_core import CompilationError, CompilerConfig, ContextCompiler, ContextSession
from tokenbox_core.chat._transcripts import agent_transcript
from tokenbox_core.chat._validate import sequence_problems
from tokenbox_core.errors import ContextCriticalOverflow
from tokenbox_core.session import MaskingConfig, MemorySessionStore, OffloadConfig, RecallConfig
from tokenbox_core.session._recalled import block_message, pointer_line
from tokenbox_core.tokens import count_message_tokens

W = "whitespace"
CONFIG = CompilerConfig(required_sections=(), constraint_density_limit=None)

sessions = st.builds(
    agent_transcript,
    turns=st.integers(1, 14),
    seed=st.integers(0, 10_000),
    max_parallel=st.integers(1, 3),
    tool_rate=st.floats(0.0, 1.0),
    words=st.sampled_from([(2, 12), (5, 40), (1, 3)]),
)
options = st.fixed_dictionaries(
    {
        "recall": st.sampled_from([False, True, RecallConfig(share=0.3, neighbours=2, limit=3)]),
        "masking": st.sampled_from([False, True, MaskingConfig(keep_last=0), MaskingConfig(keep_last=1)]),
        "offload": st.sampled_from([False, OffloadConfig(threshold_tokens=20, head=5, tail=3)]),
        "cache_aware": st.booleans(),
    }
)


def _first_text(message: dict[str, Any]) -> str:
    """The message's text, or its first content part's (where the session block sits in the current message)."""
    content = message.get("content")
    return str(content[0].get("text", "")) if isinstance(content, list) and content else str(content or "")


def _strip(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in m.items() if k != "id"} for m in messages]


@given(
    messages=sessions,
    budget=st.integers(80, 900),
    opts=options,
    question=st.sampled_from(["alpha beta?", "what did the search tool return about gamma", "continue"]),
    policy=st.sampled_from([None, "Be brief."]),
)
def test_never_over_budget_never_an_orphan_recall_never_repeats_the_window(
    messages: list[dict[str, Any]], budget: int, opts: dict[str, Any], question: str, policy: str | None
) -> None:
    """Whatever the session, budget and options: the compile fits, is valid for a provider, recalls only what
    the window does not show, names unchanged archived messages as sources, and repeats itself exactly."""
    store = MemorySessionStore()
    session = ContextSession(store, "s", budget=budget, counter=W, config=CONFIG, **opts)
    session.add([*_strip(messages), {"role": "user", "content": question}])
    try:
        compiled = session.compile(policy=policy)
    except (ContextCriticalOverflow, CompilationError):
        fixed = [messages[0], {"role": "user", "content": question}]
        with pytest.raises((ContextCriticalOverflow, CompilationError)):  # the fixed part alone does not fit
            ContextCompiler(budget, counter=W, config=CONFIG).compile(policy=policy, history=fixed)
        event("fixed part does not fit")
        return
    event("omitted" if compiled.trace.session and compiled.trace.session["omitted"] else "whole")
    event("recalled" if compiled.recalled else "no recall")
    sent = list(compiled.messages)
    assert compiled.total_tokens == count_message_tokens(sent, W) <= budget
    assert sequence_problems(sent) == []
    shown = {m.get("id") for m in sent if m.get("id")}
    assert not set(compiled.recalled) & (shown - set(compiled.masked))  # a masked result's text may be recalled
    assert set(compiled.masked) | set(compiled.offloaded) <= shown
    archived = {f"t_{i + 1}": m for i, m in enumerate(session.messages())}
    for message, source in zip(sent, compiled.message_sources, strict=True):
        if source is not None:
            assert {k: v for k, v in message.items() if k != "id"} == archived[source]
    omitted = set(compiled.trace.session["omitted"]) if compiled.trace.session else set()
    assert not omitted & shown and set(compiled.recalled) <= omitted | set(compiled.masked)
    assert omitted | shown == set(archived)  # nothing silently lost: shown, or named by the pointer
    pointer = next((_first_text(m) for m in sent if _first_text(m).startswith("[OMITTED: ")), None)
    if pointer is not None:
        assert omitted and pointer.startswith(f"[OMITTED: {len(omitted)} earlier message")
    elif omitted:  # only when not even the pointer fits what the fixed part leaves
        ids = [f"t_{i}" for i in range(1, len(archived) + 1)]
        positions = list(range(len(ids)))
        note = block_message(
            pointer_line(
                [i for i in ids if i in omitted], [p for p, i in zip(positions, ids, strict=True) if i in omitted]
            ),
            None,
        )
        assert compiled.total_tokens + count_message_tokens([note], W) - 3 > budget
    again = ContextSession(store, "s", budget=budget, counter=W, config=CONFIG, **opts).compile(policy=policy)
    assert again.messages == compiled.messages and again.fingerprint == compiled.fingerprint


@given(
    messages=sessions,
    budget=st.integers(80, 900),
    opts=options,
    question=st.sampled_from(["alpha beta?", "what did the search tool return about gamma", "continue"]),
    current=st.sampled_from(["archived", "user=", "agent loop"]),
)
def test_no_two_consecutive_messages_share_a_role(
    messages: list[dict[str, Any]], budget: int, opts: dict[str, Any], question: str, current: str
) -> None:
    """Whatever the session, budget and options, a compiled request never has two user (or two assistant)
    messages in a row — the session block joins the current user message — as long as the archive alternates;
    only the leading system messages and the results of one call group may follow one another."""
    session = ContextSession(None, "s", budget=budget, counter=W, config=CONFIG, **opts)
    session.add(_strip(messages))  # agent transcripts alternate: user, then the assistant's steps
    if current == "archived":
        session.add({"role": "user", "content": question})
    elif current == "agent loop":
        session.add({"role": "user", "content": question})
        call = {"id": "c_last", "type": "function", "function": {"name": "search", "arguments": "{}"}}
        session.add([{"role": "assistant", "content": "", "tool_calls": [call]}])
        session.add([{"role": "tool", "tool_call_id": "c_last", "content": "alpha beta gamma"}])
    try:
        compiled = session.compile(policy="Be brief.", user=question if current == "user=" else None)
    except (ContextCriticalOverflow, CompilationError):
        event("fixed part does not fit")
        return
    event("block merged" if any(isinstance(m.get("content"), list) for m in compiled.messages) else "no block")
    roles = [m["role"] for m in compiled.messages if m["role"] not in ("system", "developer")]
    for before, after in pairwise(roles):
        assert before != after or before == "tool", roles


@given(messages=sessions, budget=st.integers(80, 900), opts=options)
def test_what_a_session_keeps_between_compiles_changes_nothing(
    messages: list[dict[str, Any]], budget: int, opts: dict[str, Any]
) -> None:
    """A session compiled after every message (keeping its rows and units between compiles) compiles the final
    archive to the same bytes as a new session over the same archive."""
    store = MemorySessionStore()
    session = ContextSession(store, "s", budget=budget, counter=W, config=CONFIG, **opts)
    chunks: list[list[dict[str, Any]]] = []
    for message in _strip(messages):  # a call comes with its results (a compile needs them)
        if message["role"] == "tool":
            chunks[-1].append(message)
        else:
            chunks.append([message])
    compiled = None
    for chunk in chunks:
        session.add(chunk)
        try:
            compiled = session.compile(policy="Be brief.")
        except (ContextCriticalOverflow, CompilationError):
            compiled = None
    fresh = ContextSession(store, "s", budget=budget, counter=W, config=CONFIG, **opts)
    try:
        again = fresh.compile(policy="Be brief.")
    except (ContextCriticalOverflow, CompilationError):
        assert compiled is None
        return
    assert compiled is not None and again.messages == compiled.messages
