"""``read_messages``: the conversation engine's one pass equals its three former passes (``validate_messages``,
``tool_groups``, ``overrides``, kept in ``reference_passes.py``) on generated conversations — tool groups with
parallel calls, orphan results, results out of place, non-dict calls and mappings, invalid messages and invalid
overrides — and the engine raises the same first error as before."""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType
from typing import Any, overload

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from tokenbox_core.chat import conversation_problems, conversation_sections, fit_conversation, tool_groups
from tokenbox_core.chat.read import read_messages
from tokenbox_core.errors import SectionError

from . import reference_passes as reference

CALL_IDS = st.sampled_from(["c0", "c1", "c2", "", None, 7])


class _Call:
    """A tool call that is not a mapping (an SDK object): its id is an attribute."""

    def __init__(self, id: Any) -> None:
        self.id = id


@st.composite
def tool_call(draw: st.DrawFn) -> Any:
    call_id = draw(CALL_IDS)
    shape = draw(st.sampled_from(["dict", "no id", "object"]))
    if shape == "object":
        return _Call(call_id)
    call: dict[str, Any] = {"type": "function", "function": {"name": "f", "arguments": "{}"}}
    if shape == "dict":
        call["id"] = call_id
    return call


OVERRIDES = st.sampled_from(
    [
        {"priority": 2},
        {"critical": True},
        {"critical": False, "priority": -1},
        {},
        3,  # not a dict
        {"x": 1},  # unknown key
        {"priority": True},  # a bool is not a priority
        {"priority": 1.5},
        {"critical": 1},
    ]
)


@st.composite
def message(draw: st.DrawFn) -> Any:
    kind = draw(
        st.sampled_from(["user", "assistant", "system", "developer", "call", "tool", "tool", "invalid", "mapping"])
    )
    m: dict[str, Any]
    if kind == "invalid":
        return draw(
            st.sampled_from(
                [
                    "hello",
                    None,
                    {"content": "no role"},
                    {"role": "", "content": "x"},
                    {"role": 5, "content": "x"},
                    {"role": "assistant", "content": "", "tool_calls": "search"},
                    {"role": "assistant", "content": "", "tool_calls": {"id": "c0"}},
                ]
            )
        )
    if kind == "call":
        calls = draw(st.lists(tool_call(), min_size=0, max_size=3))
        m = {"role": "assistant", "content": "", "tool_calls": tuple(calls) if draw(st.booleans()) else calls}
    elif kind == "tool":
        m = {"role": "tool", "content": "result"}
        call_id = draw(st.one_of(st.just("missing"), CALL_IDS, st.just("c9")))  # c9 answers no call: an orphan
        if call_id != "missing":
            m["tool_call_id"] = call_id
        if draw(st.booleans()):
            m["tool_calls"] = [{"id": "c0"}]  # a tool message's own tool_calls are not calls
    else:
        m = {"role": kind, "content": "text"}
    if draw(st.integers(0, 3)) == 0:
        m["tokenbox"] = draw(OVERRIDES)
    return MappingProxyType(m) if kind == "mapping" or draw(st.integers(0, 9)) == 0 else m


conversations = st.lists(message(), max_size=14)


def _outcome(fn: Any) -> Any:
    try:
        return ("ok", fn())
    except Exception as exc:
        return ("error", type(exc), str(exc))


def _reference(messages: list[Any]) -> Any:
    out = reference.validate_messages(messages)
    groups = reference.tool_groups(out)
    return out, groups, _outcome(lambda: reference.overrides(out))


def _read(messages: list[Any]) -> Any:
    read = read_messages(messages)
    found = _outcome(lambda: (read.raise_deferred(), read.overrides)[1])
    return read.messages, read.groups, found


@given(conversations)
def test_one_pass_equals_the_three_passes(messages: list[Any]) -> None:
    expected = _outcome(lambda: _reference(messages))
    got = _outcome(lambda: _read(messages))
    assert got[0] == expected[0]
    if expected[0] == "error":
        assert got[1:] == expected[1:]
        return
    (out, groups, found), (ref_out, ref_groups, ref_found) = got[1], expected[1]
    assert all(a is b for a, b in zip(out, ref_out, strict=True))
    assert groups == ref_groups
    assert found == ref_found
    if found[0] == "ok":
        assert all(found[1][i] is ref_found[1][i] for i in ref_found[1])
    if not any(isinstance(m, MappingProxyType) for m in messages):
        assert tool_groups(out) == ref_groups  # the public tool_groups still groups the same


@given(
    conversations,
    st.sampled_from(["last", "first", "middle"]),
    st.sampled_from([True, False, "first", "bogus"]),
)
def test_the_engine_raises_the_first_error_it_always_raised(
    messages: list[Any], strategy: Any, include_system: Any
) -> None:
    """Messages, then strategy, then include_system, then groups and overrides: the old order of the passes."""

    def old_order() -> None:
        out = reference.validate_messages(messages)
        if strategy not in ("last", "first"):
            raise SectionError(f"strategy must be 'last' or 'first', got {strategy!r}")
        rule = ("leading" if include_system else "none") if isinstance(include_system, bool) else include_system
        if rule not in ("leading", "first", "all", "none"):
            raise SectionError(f"include_system must be True, False, 'leading', 'first', 'all' or 'none', got {rule!r}")
        reference.tool_groups(out)
        reference.overrides(out)

    expected = _outcome(old_order)
    got = _outcome(
        lambda: conversation_sections(messages, counter="whitespace", strategy=strategy, include_system=include_system)
    )
    if expected[0] == "error":
        assert got == expected
    else:
        assert got[0] == "ok", got


def test_a_call_whose_id_raises_is_raised_after_every_message_is_checked() -> None:
    class Broken:
        @property
        def id(self) -> str:
            raise RuntimeError("no id")

    messages: list[Any] = [{"role": "assistant", "content": "", "tool_calls": [Broken()]}, {"role": ""}]
    with pytest.raises(SectionError, match="message 1 has role ''"):
        read_messages(messages)
    read = read_messages(messages[:1])
    with pytest.raises(RuntimeError, match="no id"):
        read.raise_deferred()


def test_a_group_error_comes_before_an_earlier_override_error() -> None:
    """The old engine grouped every message before reading any override."""

    class Broken:
        @property
        def id(self) -> str:
            raise RuntimeError("no id")

    messages: list[Any] = [
        {"role": "user", "content": "x", "tokenbox": 3},
        {"role": "assistant", "content": "", "tool_calls": [Broken()]},
    ]
    with pytest.raises(RuntimeError, match="no id"):
        conversation_sections(messages, counter="whitespace")
    with pytest.raises(SectionError, match="message 0 has 'tokenbox' = 3"):
        conversation_sections(messages[:1], counter="whitespace")


class _Lazy(Sequence[Any]):
    """A sequence that records which messages were read (an adapter's lazily converted history)."""

    def __init__(self, messages: list[Any]) -> None:
        self._messages = messages
        self.read: set[int] = set()

    def __len__(self) -> int:
        return len(self._messages)

    @overload
    def __getitem__(self, i: int) -> Any: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[Any]: ...

    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            raise TypeError("not sliced by the engine")
        self.read.add(i)
        return self._messages[i]


def _plain(m: Any) -> bool:
    return (
        type(m) is dict
        and type(m.get("role")) is str
        and m["role"] not in ("", "tool")
        and "tool_calls" not in m
        and "tokenbox" not in m
    )


@given(conversations)
def test_reading_only_the_irregular_messages_reads_the_same(messages: list[Any]) -> None:
    """``only``: the plain messages are not read, and groups, overrides and errors are those of a full read."""
    only = [i for i, m in enumerate(messages) if not _plain(m)]
    lazy = _Lazy(messages)
    got = _outcome(lambda: read_messages(lazy, only=only))
    expected = _outcome(lambda: read_messages(messages))
    assert got[0] == expected[0]
    if got[0] == "error":
        assert got[1:] == expected[1:]
        return
    assert lazy.read <= set(only)
    assert got[1].messages is lazy
    assert got[1].groups == expected[1].groups
    assert got[1].overrides == expected[1].overrides
    assert _outcome(got[1].raise_deferred) == _outcome(expected[1].raise_deferred)


@given(conversations.filter(lambda ms: all(isinstance(m, dict) and m.get("role") for m in ms)), st.booleans())
def test_the_engine_on_a_lazy_read_decides_as_on_the_list(messages: list[Any], marker: bool) -> None:
    """On a valid conversation, the engine decides the same on a lazy read as on the list (a lazy read is the
    adapter's, which checks its conversation itself)."""
    assume(not conversation_problems(messages))
    only = [i for i, m in enumerate(messages) if not _plain(m)]
    lazy = _Lazy(messages)
    expected = _outcome(lambda: fit_conversation(messages, 40, counter="whitespace", omission_marker=marker).report())
    got = _outcome(
        lambda: fit_conversation(
            read_messages(lazy, only=only), 40, counter="whitespace", omission_marker=marker
        ).report()
    )
    assert got == expected


def test_only_needs_a_sequence() -> None:
    with pytest.raises(SectionError, match="needs a sequence"):
        read_messages(iter([{"role": "user", "content": "x"}]), only=[])
