"""``ChatCounter.sizes``: the plain messages' texts counted in one batch give exactly the one-by-one sizes (and
the same first error), for core counters and callables, on generated conversations."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core.chat._messages import ChatCounter
from tokenbox_core.tokens import COUNT_CACHE

_texts = st.one_of(
    st.sampled_from(["", "hello world", "x" * 40, "naïve café", "a\ud800b", "line\n\nline"]), st.text(max_size=20)
)


@st.composite
def _message(draw: st.DrawFn) -> dict[str, Any]:
    m: dict[str, Any] = {"role": draw(st.sampled_from(["user", "assistant", "system", "tool", ""]))}
    if draw(st.integers(0, 5)):
        m["content"] = draw(_texts)
    else:
        m["content"] = draw(st.sampled_from([None, [{"type": "text", "text": "part"}], [{"type": "video"}]]))
    if draw(st.integers(0, 4)) == 0:
        m["name"] = draw(st.sampled_from(["", "bob"]))
    if draw(st.integers(0, 5)) == 0:
        m["tool_calls"] = [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
    if draw(st.integers(0, 5)) == 0:
        m["tool_call_id"] = draw(st.sampled_from(["", "c1"]))
    return m


def _outcome(fn: Any) -> Any:
    try:
        return ("ok", fn())
    except Exception as exc:
        return ("error", type(exc), str(exc))


@given(
    st.lists(_message(), max_size=10),
    st.sampled_from(["o200k_base", "cl100k_base", "whitespace", "approximate", "callable"]),
    st.sampled_from([None, 7]),
    st.data(),
)
def test_batched_sizes_are_the_one_by_one_sizes(
    messages: list[dict[str, Any]], spec: str, media_tokens: int | None, data: st.DataObject
) -> None:
    def by_words(m: Any) -> int:
        if "\ud800" in str(m.get("content")):
            raise ValueError("a lone surrogate")
        return len(str(m.get("content")).split()) + 3

    chat = ChatCounter.of(by_words if spec == "callable" else spec, media_tokens=media_tokens)
    indices = data.draw(st.permutations(range(len(messages))))
    COUNT_CACHE.clear()
    one_by_one = _outcome(lambda: {i: chat.size(messages[i], i) for i in indices})
    COUNT_CACHE.clear()
    batched = _outcome(lambda: chat.sizes(messages, indices))
    assert batched == one_by_one
    if batched[0] == "ok":
        assert list(batched[1]) == list(indices)
        assert chat.sizes(messages, indices) == one_by_one[1]  # now from the count cache


def test_sizing_an_input_message_by_its_index_is_sizing_the_message() -> None:
    """``size_at``: the engine sizes input messages by index; same numbers, same errors as ``size``."""
    from tokenbox_core.chat import fit_conversation
    from tokenbox_core.errors import CounterError

    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": "w " * (i + 1)} for i in range(9)]
    read: list[int] = []

    def by_index(i: int) -> int:
        read.append(i)
        return len(messages[i]["content"].split()) + 3

    plain = ChatCounter(lambda m, i: len(m["content"].split()) + 3)
    indexed = ChatCounter(lambda m, i: len(m["content"].split()) + 3, size_at=by_index)
    assert [indexed.size_of(messages, i) for i in range(9)] == [plain.size(m, i) for i, m in enumerate(messages)]
    assert (
        fit_conversation(messages, 30, counter=indexed).report()
        == fit_conversation(messages, 30, counter=plain).report()
    )
    assert read  # the engine asked by index

    def broken(i: int) -> int:
        raise KeyError(i)

    with pytest.raises(CounterError, match=r"raised KeyError: 3 \(on message 3\)"):
        ChatCounter(lambda m, i: 1, size_at=broken).size_of(messages, 3)
    with pytest.raises(CounterError, match=r"returned -1 for message 2; it must return an int >= 0"):
        ChatCounter(lambda m, i: 1, size_at=lambda i: -1).size_of(messages, 2)
