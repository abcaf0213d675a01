"""The conversation engine's remembered message Items (tokenbox_core/chat/items.py)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core.chat import conversation_sections
from tokenbox_core.chat import items as memo
from tokenbox_core.errors import SectionError


def test_the_same_fields_give_the_same_item_and_any_other_field_another() -> None:
    memo.clear_caches()
    item = memo.message_item("m1", "hello", "user", "Message", None, None, 3)
    assert memo.message_item("m1", "hello", "user", "Message", None, None, 3) is item
    others = [
        ("m2", "hello", "user", "Message", None, None, 3),
        ("m1", "hello!", "user", "Message", None, None, 3),
        ("m1", "hello", "assistant", "Message", None, None, 3),
        ("m1", "hello", "user", "ToolOutput", None, None, 3),
        ("m1", "hello", "user", "Message", 2, None, 3),
        ("m1", "hello", "user", "Message", None, "g", 3),
        ("m1", "hello", "user", "Message", None, None, 4),
    ]
    for fields in others:
        other = memo.message_item(*fields)
        assert other is not item and other != item


def test_an_equal_priority_of_another_type_is_still_validated() -> None:
    memo.clear_caches()
    memo.message_item("m1", "x", "user", "Message", 1, None, 1)
    with pytest.raises(SectionError, match="priority must be an integer"):
        memo.message_item("m1", "x", "user", "Message", True, None, 1)  # True == 1, but not an integer priority


def test_the_memo_is_bounded_by_characters(monkeypatch: pytest.MonkeyPatch) -> None:
    memo.clear_caches()
    monkeypatch.setattr(memo, "_ITEMS_CHARS", 10)
    first = memo.message_item("m1", "123456", "user", "Message", None, None, 1)
    memo.message_item("m2", "123456", "user", "Message", None, None, 1)  # over the bound: the memo starts over
    assert len(memo._ITEMS) == 1
    assert memo.message_item("m1", "123456", "user", "Message", None, None, 1) is not first


_messages = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant", "system"]), "content": st.sampled_from(["a", "b c", "d e f"])},
        optional={"priority": st.integers(0, 3)},
    ),
    max_size=12,
)


def _shape(conv: Any) -> list[Any]:
    return [
        (s.id, s.shrink, s.priority, tuple((i.id, i.content, i.role, i.priority, i.tokens) for i in s.items))
        for s in conv.sections
    ]


@given(_messages, _messages)
def test_sections_with_remembered_items_equal_sections_made_from_nothing(first: list[Any], then: list[Any]) -> None:
    """A conversation translated after another (Items remembered) equals the same translated from nothing."""
    messages = [{**m, "tokenbox": {"priority": m.pop("priority")}} if "priority" in m else m for m in [*first, *then]]
    memo.clear_caches()
    conversation_sections(first, counter="o200k_base")
    warm = conversation_sections(messages, counter="o200k_base")
    memo.clear_caches()
    cold = conversation_sections(messages, counter="o200k_base")
    assert _shape(warm) == _shape(cold)
    assert [s.items for s in warm.sections] == [s.items for s in cold.sections]


_ids = st.one_of(st.sampled_from(["m1", "m12#3", "", "é", "a\ud800b", "id with spaces"]), st.text(max_size=6))
_contents = st.one_of(st.text(max_size=8), st.just(b"bytes"), st.none())
_priorities = st.one_of(st.none(), st.integers(-3, 3), st.booleans(), st.just(1.5), st.just("1"))
_tokens = st.one_of(st.integers(0, 99), st.booleans(), st.just(2.0), st.none(), st.just(-1))


def _outcome(make: Any) -> Any:
    try:
        item = make()
    except Exception as exc:
        return ("error", type(exc), str(exc))
    return ("ok", item, {k: (type(v), v) for k, v in item.__dict__.items()}, list(item.__dict__))


@given(
    _ids,
    _contents,
    st.sampled_from(["user", "tool", None]),
    st.sampled_from(["Message", "ToolOutput"]),
    _priorities,
    st.one_of(st.none(), st.sampled_from(["history/tools-3", "tools-0"]), st.just(4)),
    _tokens,
)
def test_a_new_item_is_the_constructors_item(
    item_id: Any, content: Any, role: Any, kind: str, priority: Any, group: Any, tokens: Any
) -> None:
    """The engine's unchecked construction gives the constructor's Item, field for field and type for type
    (or, for fields the constructor refuses, its error)."""
    expected = _outcome(
        lambda: memo.Item(
            id=item_id, content=content, role=role, kind=kind, priority=priority, group=group, tokens=tokens
        )
    )
    got = _outcome(lambda: memo._new_item(item_id, content, role, kind, priority, group, tokens))
    assert got[0] == expected[0]
    if got[0] == "error":
        assert got[1:] == expected[1:]
        return
    assert got[1] == expected[1] and hash(got[1]) == hash(expected[1])
    assert got[2:] == expected[2:]
    assert type(got[1].metadata) is type(expected[1].metadata)


def test_a_new_items_metadata_is_read_only() -> None:
    item = memo._new_item("m1", "x", "user", "Message", None, None, 1)
    with pytest.raises(TypeError):
        item.metadata["k"] = 1  # type: ignore[index]
    assert dict(item.metadata) == {}
