"""message_token_count's plain-dict fast path counts exactly what the field-by-field definition counts."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core.errors import InvalidTextError
from tokenbox_core.tokens import content_text, get_counter
from tokenbox_core.tokens._messages import TOKENS_PER_MESSAGE, TOKENS_PER_NAME, _tool_calls_text, message_token_count


def reference_field(message: Any, key: str) -> Any:
    if isinstance(message, Mapping):
        return message.get(key)
    return getattr(message, key, None)


def reference(message: Any, counter: Any) -> int:
    """The definition before the fast path (72d9508), for text content (media parts have their own tests)."""
    content = reference_field(message, "content")
    total = TOKENS_PER_MESSAGE
    texts = [str(reference_field(message, "role") or ""), content_text(content)]
    name = reference_field(message, "name")
    if name:
        texts.append(str(name))
        total += TOKENS_PER_NAME
    calls = _tool_calls_text(reference_field(message, "tool_calls"))
    if calls:
        texts.append(calls)
    call_id = reference_field(message, "tool_call_id")
    if call_id:
        texts.append(str(call_id))
    return total + sum(counter.count(t) for t in texts if t)


class Frozen(Mapping[str, Any]):
    """A mapping that is not a dict."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


class Sub(dict):  # type: ignore[type-arg]
    pass


_text = st.sampled_from(["", "hi", "Refunds take two weeks.", "日本語 🙂", "x\ny", "  "])
_call = st.fixed_dictionaries(
    {"function": st.fixed_dictionaries({"name": _text, "arguments": st.one_of(_text, st.just({"a": [1, "b"]}))})},
    optional={"id": _text},
)
_fields = st.fixed_dictionaries(
    {},
    optional={
        "role": st.sampled_from(["user", "assistant", "tool", "system", "", None]),
        "content": st.one_of(st.none(), _text, st.integers(0, 99)),
        "name": st.one_of(st.none(), _text),
        "tool_calls": st.one_of(st.none(), st.just([]), st.lists(_call, min_size=1, max_size=3)),
        "tool_call_id": st.one_of(st.none(), _text),
    },
)
_shapes = st.sampled_from(["dict", "mapping", "subclass", "object"])


def shaped(fields: dict[str, Any], shape: str) -> Any:
    if shape == "dict":
        return dict(fields)
    if shape == "mapping":
        return Frozen(dict(fields))
    if shape == "subclass":
        return Sub(fields)
    return SimpleNamespace(**fields)


@pytest.mark.parametrize("spec", ["o200k_base", "whitespace"])
@given(fields=_fields, shape=_shapes)
def test_message_count_equals_the_field_by_field_definition(spec: str, fields: dict[str, Any], shape: str) -> None:
    counter = get_counter(spec)
    message = shaped(fields, shape)
    assert message_token_count(message, counter) == reference(message, counter)


def test_bad_tool_calls_still_raise_and_empty_ones_do_not() -> None:
    counter = get_counter("whitespace")
    with pytest.raises(InvalidTextError, match="tool_calls must be a list"):
        message_token_count({"role": "assistant", "tool_calls": "call()"}, counter)
    assert message_token_count({"role": "assistant", "tool_calls": ""}, counter) == TOKENS_PER_MESSAGE + 1
