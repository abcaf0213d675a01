"""Bad input to the LangChain adapter: clear errors at construction or on the first call (issue 10 items 3, 6, 9,
15, 17)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from tokenbox_core import CounterError
from tokenbox_core.errors import ConversationError, ConversationRepairWarning
from tokenbox_langchain import TokenBoxCompressor, TokenBoxLayout, TokenBoxMessages, trim_messages
from tokenbox_langchain._counting import MessageCounter
from tokenbox_langchain.testing import agent_transcript, sequence_problems


@pytest.mark.parametrize(
    ("cls", "kwargs", "message"),
    [
        (
            TokenBoxMessages,
            {"token_budgt": 100},
            "'token_budgt' \\(the token budget of TokenBoxMessages is 'budget'\\)",
        ),
        (TokenBoxMessages, {"budget": 9, "conter": "gpt-4o"}, "'conter' \\(did you mean 'counter'\\?\\)"),
        (TokenBoxMessages, {"budget": 9, "keep_sytem": False}, "'keep_sytem' \\(did you mean 'keep_system'\\?\\)"),
        (TokenBoxMessages, {"token_limit": 9}, "the token budget of TokenBoxMessages is 'budget'"),
        (TokenBoxLayout, {"budgt": 9}, "'budgt' \\(did you mean 'budget'\\?\\)"),
        (TokenBoxCompressor, {"budget": 9, "conter": "x"}, "'conter' \\(did you mean 'counter'\\?\\)"),
    ],
)
def test_misspelt_keyword_arguments_are_rejected_with_did_you_mean(
    cls: Any, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        cls(**kwargs)


@pytest.mark.parametrize("cls", [TokenBoxMessages, TokenBoxLayout, TokenBoxCompressor])
def test_budget_true_is_rejected(cls: Any) -> None:
    with pytest.raises(ValueError, match="budget must be a number of tokens or a ContextBudget, got True"):
        cls(budget=True)


def test_invoke_with_non_messages_is_a_clear_type_error() -> None:
    with pytest.raises(TypeError, match="item 0 of the input is 1 \\(int\\); expected messages or message-likes"):
        TokenBoxMessages(budget=50, counter="whitespace").invoke([1, 2])


def test_per_message_counter_that_raises_is_a_counter_error_naming_it() -> None:
    def fragile(message: BaseMessage) -> int:
        raise KeyError("usage")

    with pytest.raises(CounterError, match="token counter .*fragile raised KeyError"):
        TokenBoxMessages(budget=50, counter=fragile).invoke([HumanMessage("hi")])
    with pytest.raises(CounterError, match="fragile raised KeyError"):
        trim_messages([HumanMessage("hi")], max_tokens=5, token_counter=fragile)


def test_tool_results_never_orphaned_across_a_human_message() -> None:
    """Issue 10 item 3: the reported case returned [system, human, tool c1]; issue 36 item 3: a result apart from
    its call is rejected, and repaired it moves next to its call, kept or removed with it — trim_messages on random
    interleavings too."""
    call = {"name": "search", "args": {"q": "x"}, "id": "c1", "type": "tool_call"}
    messages: list[BaseMessage] = [
        SystemMessage("be brief"),
        HumanMessage("long " * 30),
        AIMessage("", tool_calls=[call]),
        HumanMessage("also, hurry"),
        ToolMessage("found it", tool_call_id="c1"),
    ]
    with pytest.raises(ConversationError, match="other messages stand between them"):
        TokenBoxMessages(budget=40, counter="gpt-4o").invoke(messages)
    with pytest.warns(ConversationRepairWarning, match="moved the tool result at 4"):
        out = TokenBoxMessages(budget=40, counter="gpt-4o", on_invalid="repair").invoke(messages)
    assert (messages[2] in out) == (messages[4] in out)
    assert not [p for p in sequence_problems(out, start_on_human=False) if "tool" in p]
    rng = random.Random(7)
    for seed in range(60):
        base = agent_transcript(4, seed=seed, tool_rate=0.9, max_parallel=3)
        calls = [i for i, m in enumerate(base) if getattr(m, "tool_calls", None)]
        if not calls:
            continue
        at = rng.choice(calls) + 1
        mixed = [*base[:at], HumanMessage("also, hurry", id=f"x{seed}"), *base[at:]]
        size = MessageCounter("whitespace").count(mixed)
        for budget in (size // 4, size // 2, size - 5):
            for strategy in ("first", "last"):
                with pytest.warns(ConversationRepairWarning, match="moved the tool result"):
                    kept = trim_messages(
                        mixed, max_tokens=budget, token_counter="whitespace", strategy=strategy, on_invalid="repair"
                    )
                assert sequence_problems(kept, start_on_human=False) == [], (seed, budget, strategy)
                ids = {m.id for m in kept}
                for i in calls:
                    group = {base[i].id} | {f"t{c['id']}" for c in base[i].tool_calls}
                    assert group <= ids or not group & ids, (seed, budget, strategy)
