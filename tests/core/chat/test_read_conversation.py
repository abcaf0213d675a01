"""``read_conversation``: a conversation checked and grouped, an agent loop's request read only past the previous
one — the same read as the whole list, whatever the split (issue 32: the adapters' incremental read, in the core)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core.chat import conversation_problems, fit_conversation, read_conversation, read_messages, tool_groups
from tokenbox_core.errors import ConversationError
from tokenbox_core.testing import agent_transcript


@given(st.integers(0, 2**16), st.lists(st.booleans(), min_size=40, max_size=40))
def test_reading_in_steps_is_reading_the_whole_conversation(seed: int, stops: list[bool]) -> None:
    """Read step by step (``after=`` the previous read) at any complete prefixes, an agent transcript has the
    groups ``tool_groups`` gives the whole list, and its messages as given (a tuple)."""
    messages = agent_transcript(5, seed=seed)
    complete = [e for e in range(1, len(messages) + 1) if not conversation_problems(messages[:e])]
    ends = [e for e, stop in zip(complete, stops, strict=False) if stop] + [len(messages)]
    read = None
    for end in ends:
        read = read_conversation(messages[:end], after=read)
        assert read is not None
        whole = tool_groups(messages[:end])
        assert (read.groups.group_of, read.groups.members, read.groups.contiguous) == (
            whole.group_of,
            whole.members,
            whole.contiguous,
        )
        assert read.messages == tuple(messages[:end]) and read.overrides == {}


def test_a_prefix_ending_on_an_unanswered_call_is_not_read() -> None:
    """A request ending on a tool call without its results is incomplete: ``None``, the engine decides."""
    messages = agent_transcript(5, seed=1)
    open_call = next(i for i, m in enumerate(messages) if m.get("tool_calls"))
    assert read_conversation(messages[: open_call + 1]) is None


def test_the_engine_fits_a_read_as_it_fits_the_list() -> None:
    """``fit_conversation`` on a ``read_conversation`` read keeps what it keeps of the plain list."""
    messages = agent_transcript(8, seed=3)
    read = read_conversation(messages)
    assert read is not None
    on_read = fit_conversation(read, budget=120, counter="whitespace")
    on_list = fit_conversation(messages, budget=120, counter="whitespace")
    assert on_read.messages == on_list.messages


def _result(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": "r"}


@pytest.mark.parametrize(
    "added",
    [
        [_result("nobody")],  # a result without its call
        [{"role": "user", "content": "x", "tokenbox": {"critical": True}}],  # overrides: the engine reads them
        [{"role": "", "content": "x"}],  # not a message
        [{"role": "assistant", "content": "", "tool_calls": ({"id": "c9"},)}],  # tool_calls not a list
    ],
)
def test_a_step_the_engine_must_check_itself_is_not_read(added: list[dict[str, Any]]) -> None:
    """Added messages with a problem, overrides or an odd shape give ``None`` (the caller sends the whole list to
    the engine, which raises its own error); the read of the prefix is unchanged."""
    messages = agent_transcript(3, seed=1)
    first = read_conversation(messages)
    assert first is not None
    before = dict(first.groups.group_of)
    assert read_conversation([*messages, *added], after=first) is None
    assert read_conversation([*messages, *added]) is None
    assert first.groups.group_of == before


def test_after_must_be_a_read_of_a_prefix() -> None:
    """``after=`` a ``read_messages`` read or a read of a longer list is a ConversationError saying what to pass."""
    messages = agent_transcript(2, seed=0)
    with pytest.raises(ConversationError, match=r"got a read_messages read .*pass after=None"):
        read_conversation(messages, after=read_messages(messages))
    longer = read_conversation(messages)
    with pytest.raises(ConversationError, match=rf"read of a longer list \({len(messages)} messages, 1 given\)"):
        read_conversation(messages[:1], after=longer)
