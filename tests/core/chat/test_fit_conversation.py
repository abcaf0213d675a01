"""fit_conversation: the one conversation engine (issue 9 §1) — critical messages, tool groups, start_on,
markers, overrides, the horizon, partial cuts, counters."""

from __future__ import annotations

from typing import Any

import pytest

from tokenbox_core import ContextBudget, CounterError, SectionError, count_message_tokens
from tokenbox_core.box import TokenBox
from tokenbox_core.chat import (
    ConversationOverflow,
    conversation_sections,
    fit_conversation,
    tool_groups,
)
from tokenbox_core.chat._transcripts import agent_transcript, sequence_problems
from tokenbox_core.errors import ConversationError, ConversationRepairWarning

W = "whitespace"


def words(n: int, tag: str = "w") -> str:
    return " ".join(f"{tag}{i}" for i in range(n))


def msg(role: str, content: str, id: str | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"role": role, "content": content, **extra}
    if id is not None:
        out["id"] = id
    return out


def chat(turns: int, size: int = 5) -> list[dict[str, Any]]:
    out = [msg("system", words(3, "s"), "sys")]
    for t in range(turns):
        out += [msg("user", words(size, f"h{t}."), f"h{t}"), msg("assistant", words(size, f"a{t}."), f"a{t}")]
    out.append(msg("user", "last question", "last"))
    return out


def cost(messages: list[Any]) -> int:
    return count_message_tokens(messages, W)


def ids(messages: list[Any]) -> list[Any]:
    return [m.get("id") for m in messages]


def call(call_id: str, *, id: str, args: str = "{}") -> dict[str, Any]:
    fn = {"name": "lookup", "arguments": args}
    return msg("assistant", "", id, tool_calls=[{"id": call_id, "type": "function", "function": fn}])


def result(call_id: str, n: int, id: str) -> dict[str, Any]:
    return msg("tool", words(n, "r"), id, tool_call_id=call_id)


def test_history_is_evicted_oldest_first_and_critical_messages_stay() -> None:
    messages = chat(10)
    fit = fit_conversation(messages, 60, counter=W)
    out = fit.messages
    assert out[0]["id"] == "sys" and out[-1]["id"] == "last"
    kept = fit.kept
    assert kept == sorted(kept) and kept[1:-1] == list(range(kept[1], kept[-2] + 1))
    assert cost(out) == fit.total_tokens <= 60
    assert cost([*out[:-1], messages[kept[1] - 1], out[-1]]) > 60
    assert {r.index for r in fit.removed} == set(range(len(messages))) - set(kept)


def test_agent_transcripts_with_parallel_tool_calls_are_valid_at_every_budget() -> None:
    messages = agent_transcript(8, seed=3, max_parallel=3, tool_rate=0.9)
    assert any(len(m.get("tool_calls") or ()) > 1 for m in messages)
    floor = cost([messages[0], next(m for m in reversed(messages) if m["role"] == "user")])
    for budget in range(floor, cost(messages) + 5, 7):
        fit = fit_conversation(messages, budget, counter=W)
        assert cost(fit.messages) == fit.total_tokens <= budget
        assert sequence_problems(fit.messages) == []


def test_start_on_never_empties_an_agent_loop() -> None:
    messages = [msg("system", "you are an agent", "sys"), msg("user", "do the task", "task")]
    for s in range(8):
        messages += [call(f"c{s}", id=f"a{s}", args=words(4)), result(f"c{s}", 8, f"t{s}")]
    fit = fit_conversation(messages, cost(messages) // 2, counter=W)
    assert ids(fit.messages)[:2] == ["sys", "task"] and len(fit.messages) > 4
    assert fit.messages[-1] is messages[-1]
    assert sequence_problems(fit.messages) == []


def test_critical_overflow_names_the_messages_and_the_fix() -> None:
    with pytest.raises(ConversationOverflow, match="need 18 tokens but the budget is 12") as info:
        fit_conversation(chat(6), 12, counter=W)
    assert info.value.section_ids == ("system", "latest-user")
    assert "keep_last=None" in str(info.value)


def test_overrides_priority_and_critical() -> None:
    messages = chat(8)
    messages[3] = {**messages[3], "id": "keep-me", "tokenbox": {"priority": 5}}
    fit = fit_conversation(messages, 45, counter=W, start_on=None)
    assert "keep-me" in ids(fit.messages)
    assert all("tokenbox" not in m for m in fit.messages)  # the reserved key is never sent
    pinned = chat(8)
    pinned[1] = {**pinned[1], "id": "pinned", "tokenbox": {"critical": True}}
    assert ids(fit_conversation(pinned, 40, counter=W).messages)[:2] == ["sys", "pinned"]
    pinned[-1] = msg("user", words(40), "last", tokenbox={"critical": False})
    assert "last" not in ids(fit_conversation(pinned, 40, counter=W).messages)


def test_the_id_override_names_a_message_without_sending_an_id() -> None:
    """{"tokenbox": {"id": ...}} names the item (and its marker entry); the output carries no id key."""
    messages = [msg("user", words(20), tokenbox={"id": f"turn-{i}"}) for i in range(6)]
    fit = fit_conversation(messages, 60, counter=W, omission_marker=True)
    assert fit.removed and all(r.id.startswith("turn-") for r in fit.removed)
    assert fit.kept_ids()[-1] == "turn-5" and all(i.startswith("turn-") for i in fit.kept_ids())
    assert all("id" not in m and "tokenbox" not in m for m in fit.messages)
    assert "turn-0" in fit.messages[0]["content"]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("high", "must be a dict"),
        ({"pin": True}, "unknown 'tokenbox' override keys"),
        ({"priority": "high"}, "'priority' must be an int"),
        ({"critical": "yes"}, "'critical' must be True or False"),
        ({"id": ""}, "override 'id' must be a non-empty string, got ''"),
    ],
)
def test_bad_overrides_are_rejected(value: Any, message: str) -> None:
    """Each malformed "tokenbox" option is a SectionError naming it."""
    with pytest.raises(SectionError, match=message):
        fit_conversation([msg("user", "hi", tokenbox=value)], 50, counter=W)


@pytest.mark.parametrize(
    ("messages", "message"),
    [
        ([("user", "hi")], "message 0 is a tuple"),
        ([{"content": "hi"}], "message 0 has role None"),
        ([{"role": "assistant", "content": "", "tool_calls": "f()"}], "tool_calls of type str"),
    ],
)
def test_malformed_messages_are_rejected(messages: list[Any], message: str) -> None:
    with pytest.raises(SectionError, match=message):
        fit_conversation(messages, 50, counter=W)


def test_omission_marker_counts_and_is_placed_after_the_system_messages() -> None:
    fit = fit_conversation(chat(8), 60, counter=W, omission_marker=True)
    marker = fit.messages[1]
    assert marker["role"] == "system" and "h0, a0" in marker["content"]
    assert cost(fit.messages) == fit.total_tokens <= 60
    user = fit_conversation(chat(8), 60, counter=W, omission_marker="({count} gone)", marker_role="user")
    assert user.messages[1]["role"] == "user" and user.messages[1]["content"].endswith("gone)")


def test_assistant_marker_never_opens_the_conversation() -> None:
    fit = fit_conversation(chat(8), 60, counter=W, omission_marker=True, marker_role="assistant")
    assert fit.messages[1]["role"] == "user" and fit.messages[2]["role"] == "assistant"
    assert sequence_problems(fit.messages) == [] and cost(fit.messages) == fit.total_tokens <= 60


def test_tool_results_stay_with_their_call_across_a_user_message() -> None:
    """Issue 10 item 3: [system, user(long), call c1, user('also, hurry'), tool c1] is rejected (issue 36 item 3:
    the result stands apart from its call); repaired, the result moves next to its call and never travels alone."""
    messages = [
        msg("system", "sys", "s"),
        msg("user", words(30), "long"),
        call("c1", id="call", args=words(3)),
        msg("user", "also, hurry", "hurry"),
        result("c1", 4, "res"),
    ]
    with pytest.raises(ConversationError, match="other messages stand between them"):
        fit_conversation(messages, 1000, counter=W)
    for budget in range(10, cost(messages) + 2):
        try:
            with pytest.warns(ConversationRepairWarning, match="moved the tool result at 4"):
                fit = fit_conversation(messages, budget, counter=W, on_invalid="repair")
        except ConversationOverflow:
            continue
        kept = ids(fit.messages)
        assert ("call" in kept) == ("res" in kept), (budget, kept)
        if "call" in kept:
            assert kept.index("res") == kept.index("call") + 1
        assert cost(fit.messages) == fit.total_tokens <= budget


def test_tool_groups_match_ids_and_adjacency() -> None:
    messages = [
        msg("user", "q"),
        call("c1", id="a"),
        msg("tool", "r", tool_call_id="c1"),
        msg("tool", "no id"),  # joins the call it directly follows
        msg("user", "again"),
        msg("tool", "late", tool_call_id="c1"),  # answers c1 across a user message
        msg("tool", "orphan"),
    ]
    groups = tool_groups(messages)
    assert groups.members == {1: [1, 2, 3, 5]} and not groups.contiguous
    assert groups.unit(6) == [6]


def test_horizon_skips_counting_what_can_never_fit() -> None:
    counted: list[int] = []

    def counter(m: dict[str, Any]) -> int:
        counted.append(id(m))
        return 4 + len(str(m["content"]).split())

    messages = chat(200)
    fit = fit_conversation(messages, 80, counter=counter)
    assert len(counted) < 60  # not 402
    slow = fit_conversation(messages, 80, counter=counter, horizon=False)
    assert fit.messages == slow.messages and fit.total_tokens == slow.total_tokens
    assert [r.id for r in fit.removed] == [r.id for r in slow.removed]
    assert "beyond_horizon" in {r.reason for r in fit.removed}


def test_partial_cut_fills_the_room_left() -> None:
    messages = [msg("user", "one\ntwo\nthree\nfour\nfive\nsix", "u"), msg("assistant", "ok", "a")]
    budget = cost(messages) - 2
    fit = fit_conversation(
        messages, budget, counter=W, include_system=False, keep_last=None, start_on=None, allow_partial=True
    )
    assert fit.partial == 0 and fit.messages[0]["content"].startswith("three")
    assert cost(fit.messages) == fit.total_tokens <= budget
    with pytest.raises(SectionError, match="cannot be combined"):
        fit_conversation(messages, 10, counter=W, allow_partial=True, omission_marker=True)


def test_per_message_counter_that_raises_is_a_counter_error_naming_it() -> None:
    def broken(m: dict[str, Any]) -> int:
        raise KeyError("tokens")

    with pytest.raises(CounterError, match="token counter .*broken raised KeyError"):
        fit_conversation(chat(2), 50, counter=broken)
    with pytest.raises(CounterError, match="must return an int >= 0"):
        fit_conversation(chat(2), 50, counter=lambda m: -1)


def test_budget_forms_and_reserves() -> None:
    out = fit_conversation(chat(10), ContextBudget(max_tokens=80, output_reserve=30), counter=W)
    assert out.total_tokens <= 50 and out.effective_max_tokens == 50
    with pytest.raises(SectionError, match="budget must be an int"):
        fit_conversation(chat(1), True, counter=W)  # type: ignore[arg-type]


def test_strategy_first_keeps_the_oldest() -> None:
    fit = fit_conversation(
        chat(10), 40, counter=W, include_system=False, keep_last=None, start_on=None, strategy="first"
    )
    assert fit.kept == list(range(len(fit.kept)))


def test_conversation_sections_share_a_layout_with_other_sections() -> None:
    """The compiler's path: the conversation's sections laid out with others, mapped back by messages_from."""
    from tokenbox_core import Section

    conv = conversation_sections(chat(10), counter=W, prefix="chat:")
    assert all(s.id.startswith("chat:") for s in conv.sections)
    layout = TokenBox(120, counter=W, mode="messages").layout(
        [Section("policy", "rules " * 10), *conv.sections, Section("notes", "note " * 30, shrink=1)]
    )
    out = conv.messages_from(layout)
    assert out[0]["id"] == "sys" and out[-1]["id"] == "last"
    assert sequence_problems(out) == []


def test_empty_conversation() -> None:
    fit = fit_conversation([], 10, counter=W)
    assert fit.messages == [] and fit.removed == [] and fit.total_tokens == 3


def test_start_on_if_trimmed_returns_a_fitting_conversation_as_given() -> None:
    messages = [msg("assistant", "hello there"), msg("user", "q")]
    assert fit_conversation(messages, 100, counter=W).messages == messages[1:]
    assert fit_conversation(messages, 100, counter=W, start_on_if_trimmed=True).messages == messages


def test_media_placeholders_cost_media_tokens() -> None:
    """A media part without data (no rule can cost it) is charged media_tokens; parts with data are costed by the
    model's rule (tokenbox_core.media)."""
    parts = [{"type": "text", "text": "see"}, {"type": "video"}]
    video = {"role": "user", "content": parts}
    fit = fit_conversation([video], 1000, counter=W, media_tokens=200)
    assert fit.total_tokens == 3 + 4 + 1 + 1 + 200


def test_sizes_are_count_message_tokens() -> None:
    """The engine's sizes with a core counter are count_message_tokens' (plain, named, tool-call messages)."""
    from tokenbox_core.chat import ChatCounter

    chat = ChatCounter.of("o200k_base")
    for m in [*agent_transcript(3, seed=5, tool_rate=1.0), msg("user", "hi", name="bob"), msg("assistant", "")]:
        assert chat.size(m) + chat.base == count_message_tokens([m], "o200k_base")
