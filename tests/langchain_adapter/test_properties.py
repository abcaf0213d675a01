"""Invariants over random agent transcripts: never over budget, always a valid sequence, deterministic."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from tokenbox_langchain import CriticalMessagesOverflow, TokenBoxMessages, trim_messages
from tokenbox_langchain._counting import MessageCounter
from tokenbox_langchain.testing import agent_transcript, sequence_problems

W = MessageCounter("whitespace")

transcripts = st.builds(
    agent_transcript,
    turns=st.integers(1, 8),
    seed=st.integers(0, 10_000),
    max_parallel=st.integers(1, 4),
    tool_rate=st.floats(0.0, 1.0),
)


@given(
    messages=transcripts,
    budget=st.integers(0, 400),
    marker=st.booleans(),
    marker_type=st.sampled_from(["system", "human", "ai"]),
)
@example(  # found by the explore profile: a system marker for the agent loop was sent after the human message
    messages=agent_transcript(turns=1, seed=0, max_parallel=1, tool_rate=1.0),
    budget=41,
    marker=True,
    marker_type="system",
)
def test_messages_never_over_budget_and_always_valid(
    messages: list, budget: int, marker: bool, marker_type: str
) -> None:
    """Every fit is within budget, counted as sent, and a sequence a provider accepts, or the critical messages
    overflow."""
    fit = TokenBoxMessages(budget=budget, counter="whitespace", omission_marker=marker, marker_type=marker_type)  # type: ignore[arg-type]
    try:
        result = fit.fit(messages)
    except CriticalMessagesOverflow as exc:
        assert exc.required > budget
        return
    out = result.messages
    assert W.count(out) == result.total_tokens <= budget
    assert sequence_problems(out) == []
    assert fit.invoke(messages) == out


@given(messages=transcripts, budget=st.integers(0, 400), strategy=st.sampled_from(["first", "last"]))
def test_trim_never_over_budget_and_never_orphans(messages: list, budget: int, strategy: str) -> None:
    """trim_messages stays within max_tokens and never splits a tool-call group."""
    try:
        out = trim_messages(messages, max_tokens=budget, token_counter="whitespace", strategy=strategy)  # type: ignore[arg-type]
    except CriticalMessagesOverflow:
        raise AssertionError("nothing is critical without include_system or start_on") from None
    assert not out or W.count(out) <= budget
    assert [p for p in sequence_problems(out, start_on_human=False) if "system" not in p] == []
