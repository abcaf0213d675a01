"""Message counting: every counter shape, reliable per-message detection, one count per message."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.utils import count_tokens_approximately

from tokenbox_core import CounterError, count_message_tokens, get_counter
from tokenbox_langchain._counting import MessageCounter, openai_role, takes_one_message


def per_message_annotated(message: BaseMessage) -> int:
    return len(message.text.split())


def per_message_string_annotation(message: "BaseMessage") -> int:  # noqa: UP037 - the point of the test
    return len(message.text.split())


def per_message_bare(message):  # type: ignore[no-untyped-def]
    return len(message.text.split())


def list_annotated(messages: list[BaseMessage]) -> int:
    return sum(len(m.text.split()) for m in messages)


MESSAGES: list[BaseMessage] = [
    SystemMessage("be brief"),
    HumanMessage("one two three", name="bob"),
    AIMessage("", tool_calls=[{"name": "search", "args": {"q": "x"}, "id": "c1", "type": "tool_call"}]),
    ToolMessage("result text", tool_call_id="c1"),
]


@pytest.mark.parametrize(
    ("fn", "one"),
    [
        (per_message_annotated, True),
        (per_message_string_annotation, True),
        (per_message_bare, True),
        (lambda m: len(m.content), True),
        (list_annotated, False),
        (lambda ms: sum(len(m.content) for m in ms), False),
        (len, False),
        (count_tokens_approximately, False),
    ],
)
def test_takes_one_message(fn: Any, one: bool) -> None:
    """Per-message and list counters are told apart from hints, string hints and, for lambdas, a probe."""
    assert takes_one_message(fn) is one


def test_chat_counts_match_the_core() -> None:
    """A counter name sizes messages exactly as count_message_tokens does, names and tool calls included."""
    counter = MessageCounter("o200k_base")
    dicts = [
        {
            "role": openai_role(m),
            "content": m.content,
            "name": m.name,
            "tool_calls": getattr(m, "tool_calls", None),
            "tool_call_id": getattr(m, "tool_call_id", None),
        }
        for m in MESSAGES
    ]
    assert counter.count(MESSAGES) == count_message_tokens(dicts, get_counter("o200k_base"))
    assert counter.size(MESSAGES[2]) > 4  # the tool-call payload is counted


def test_list_counter_base_is_counted_once() -> None:
    """A list counter's empty-list cost is its base; per-message sizes exclude it."""
    counter = MessageCounter(lambda ms: 3 + sum(len(m.text.split()) for m in ms))
    assert counter.base == 3
    assert counter.count(MESSAGES[:2]) == 3 + 2 + 3


def test_model_counter_uses_get_num_tokens_from_messages() -> None:
    """A LangChain model counts with get_num_tokens_from_messages."""
    model = GenericFakeChatModel(messages=iter([]), custom_get_token_ids=lambda t: t.split())
    counter = MessageCounter(model)
    assert counter.count(MESSAGES[:2]) == model.get_num_tokens_from_messages(MESSAGES[:2])


def test_approximate_is_langchains_shortcut() -> None:
    """'approximate' means LangChain's count_tokens_approximately, message by message."""
    counter = MessageCounter("approximate")
    assert counter.count(MESSAGES) == count_tokens_approximately(MESSAGES)


def test_each_message_is_counted_once_per_fit() -> None:
    """One trim calls a per-message counter at most once per message (the engine sizes each message once)."""
    from tokenbox_langchain import trim_messages

    calls: list[str] = []

    def counting(message: BaseMessage) -> int:
        calls.append(str(message.id))
        return 1

    messages = [HumanMessage(f"q{i}", id=f"h{i}") if i % 2 == 0 else AIMessage(f"a{i}", id=f"a{i}") for i in range(40)]
    kept = trim_messages(messages, max_tokens=10, token_counter=counting, start_on="human")
    assert len(kept) == 10 and len(calls) == len(set(calls)) <= len(messages)


def test_bad_counter_results_raise() -> None:
    """A counter returning a non-int or a negative number raises CounterError naming it."""
    with pytest.raises(CounterError, match="must return an int"):
        MessageCounter(lambda m: "three").size(HumanMessage("x"))
    with pytest.raises(CounterError, match="negative count"):
        MessageCounter(lambda m: -1).size(HumanMessage("x"))


def test_unusable_counter_raises() -> None:
    """An object that is neither a name, a counter, a model nor a callable is rejected with the options."""
    with pytest.raises(
        CounterError, match="'token_counter' expected to be a model .* Received object of type <class 'int'>"
    ):
        MessageCounter(42)


def test_an_unhashable_callable_counter_works() -> None:
    """A callable object that cannot be hashed is still told apart (per message) and used."""

    class Unhashable:
        __hash__ = None  # type: ignore[assignment]

        def __call__(self, message: Any) -> int:
            if isinstance(message, list):
                raise TypeError("one message")
            return 7

    assert MessageCounter(Unhashable()).count([HumanMessage("hello there")]) == 7


def test_lone_surrogate_is_blamed_on_the_text_not_the_counter() -> None:
    """A lone surrogate in a message is the core's InvalidTextError ('remove the surrogate'), not 'fix the counter'."""
    from langchain_core.messages import HumanMessage

    from tokenbox_core.errors import InvalidTextError
    from tokenbox_langchain import trim_messages

    with pytest.raises(InvalidTextError, match="surrogate") as info:
        trim_messages([HumanMessage("bad \ud800 text")], max_tokens=50, token_counter="gpt-4o")
    assert "fix the counter" not in str(info.value)
