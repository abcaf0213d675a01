"""The direct conversion of common messages (``fit.neutral``) and the lazy history (``fit._Neutral``) against
the converter-only, all-up-front reference they replaced.

``reference_neutral`` is the adapter's conversion before the speed-up (every message through
``convert_to_openai_messages``, dc6c5c6), ``ReferenceBridge`` the bridge before the lazy history (fb91a8a:
every message converted, the engine given the whole list).  The properties check that the new conversion
gives the very same dicts (keys in the same order), that the lazy history hands out those dicts, and that
``trim_messages`` and ``TokenBoxMessages`` decide exactly as with the references, on generated
conversations: tool groups, system and developer messages, names, refusals, content blocks, overrides, odd
message classes; start_on / end_on / include_system, both strategies, partial cuts and several token
counters.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_openai_messages,
)

import tokenbox_langchain.fit as fit_module
import tokenbox_langchain.trim as trim_module
from tokenbox_core.chat import read_messages
from tokenbox_core.tokens import content_text
from tokenbox_langchain import CriticalMessagesOverflow, TokenBoxMessages, trim_messages
from tokenbox_langchain.counting import message_key, openai_role
from tokenbox_langchain.fit import METADATA_KEY, neutral


def _reference_one(message: BaseMessage) -> dict[str, Any]:
    try:
        (d,) = convert_to_openai_messages([message])
        return d
    except Exception:
        return {"role": openai_role(message), "content": content_text(message.content)}


def reference_neutral(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """The conversion as it was at dc6c5c6: the converter on the whole list, then ids and overrides."""
    msgs = list(messages)
    try:
        out: list[dict[str, Any]] = convert_to_openai_messages(msgs)
    except Exception:
        out = [_reference_one(m) for m in msgs]
    if len(out) != len(msgs):
        out = [_reference_one(m) for m in msgs]
    for m, d in zip(msgs, out, strict=True):
        if isinstance(m.content, list):
            d["content"] = list(m.content)
        if m.id:
            d["id"] = m.id
        kwargs = m.additional_kwargs
        if kwargs and METADATA_KEY in kwargs:
            d[METADATA_KEY] = kwargs[METADATA_KEY]
    return out


words = st.sampled_from(["alpha", "beta gamma", "delta\nepsilon", "zeta eta theta", "", "iota\n\nkappa lambda"])
texts = st.lists(words, min_size=1, max_size=4).map(" ".join)
contents = st.one_of(
    texts,
    texts.map(lambda t: [{"type": "text", "text": t}]),
    texts.map(lambda t: [{"type": "text", "text": t}, {"type": "text", "text": "more words"}]),
    texts.map(lambda t: [t, {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]),
    st.just([{"type": "tool_result", "tool_use_id": "x", "content": "a result"}]),
)
names = st.one_of(st.none(), st.sampled_from(["alice", "bob"]))
ids = st.one_of(st.none(), st.sampled_from(["m1", "m2", "m3", ""]))
overrides = st.one_of(
    st.none(),
    st.sampled_from([{"priority": 2}, {"priority": -1}, {"critical": True}, {"critical": False}]),
)


@st.composite
def one_message(draw: st.DrawFn, call_ids: list[str]) -> list[BaseMessage]:
    """One message, or an assistant tool call followed by its results."""
    kind = draw(
        st.sampled_from(["human", "ai", "system", "developer", "tool-call", "chat", "function", "chunk", "tool"])
    )
    content, name, mid, override = draw(contents), draw(names), draw(ids), draw(overrides)
    kwargs: dict[str, Any] = {}
    if override is not None:
        kwargs[METADATA_KEY] = override
    if draw(st.booleans()):
        kwargs["refusal"] = draw(st.sampled_from([None, "", "I will not"]))
    common: dict[str, Any] = {"name": name, "id": mid, "additional_kwargs": kwargs}
    if kind == "human":
        return [HumanMessage(content, **common)]
    if kind == "ai":
        return [AIMessage(content, **common)]
    if kind == "system":
        return [SystemMessage(content, **common)]
    if kind == "developer":
        kwargs["__openai_role__"] = draw(st.sampled_from(["developer", "system", 3]))
        return [SystemMessage(content, **common)]
    if kind == "chat":
        return [ChatMessage(content, role=draw(st.sampled_from(["user", "assistant", "critic"])), **common)]
    if kind == "function":
        return [FunctionMessage(content, name=name or "fn", id=mid, additional_kwargs=kwargs)]
    if kind == "chunk":
        return [AIMessageChunk(content, **common)]
    if kind == "tool":  # a result whose call may be missing: an orphan or a stray id
        return [ToolMessage(content, tool_call_id=draw(st.sampled_from(["c0", "nope", ""])), **common)]
    n = draw(st.integers(1, 3))
    calls = []
    for _ in range(n):
        call_id = f"c{len(call_ids)}"
        call_ids.append(call_id)
        args = draw(st.sampled_from([{}, {"q": "weather"}, {"n": 3, "ü": "é"}, {"nested": [1, {"a": None}]}]))
        calls.append({"name": draw(st.sampled_from(["search", "lookup"])), "args": args, "id": call_id})
    out: list[BaseMessage] = [AIMessage(draw(st.sampled_from(["", "calling"])), tool_calls=calls, **common)]
    for call in draw(st.permutations(calls)):
        out.append(ToolMessage(draw(texts), tool_call_id=call["id"], id=draw(ids)))
    return out


@st.composite
def conversations(draw: st.DrawFn) -> list[BaseMessage]:
    call_ids: list[str] = []
    out: list[BaseMessage] = []
    if draw(st.booleans()):
        out.append(SystemMessage(draw(texts), id="sys"))
    for _ in range(draw(st.integers(0, 10))):
        out.extend(draw(one_message(call_ids)))
    return out


def _per_message(message: BaseMessage) -> int:
    return 1 + len(content_text(message.content).split())


def _list_counter(messages: list[BaseMessage]) -> int:
    return 3 + sum(4 + len(content_text(m.content)) // 3 for m in messages)


counters = st.sampled_from(["whitespace", "o200k_base", "approximate", len, _per_message, _list_counter])


class ReferenceBridge(fit_module._Bridge):
    """The bridge as it was at fb91a8a: every message converted by the reference, the engine given the list,
    a dict's position found by scanning."""

    def __init__(self, messages: Sequence[BaseMessage], marker_type: Any) -> None:
        self.messages = list(messages)
        self.dicts = _Scanned(reference_neutral(self.messages))  # type: ignore[assignment]
        self.marker_type = marker_type

    def conversation(self) -> Any:
        return list(self.dicts)

    def _position(self, d: Any) -> int | None:
        return self.dicts.position(d)


class _Scanned(list[dict[str, Any]]):
    def position(self, d: Any) -> int | None:
        return next((j for j, x in enumerate(self) if x is d), None)


@given(conversations())
def test_neutral_is_the_converter(messages: list[BaseMessage]) -> None:
    """Same dicts, same key order, as the converter-only conversion; the lazy history hands out the same."""
    new, old = neutral(messages), reference_neutral(messages)
    assert new == old
    assert [list(d) for d in new] == [list(d) for d in old]
    lazy = fit_module._Neutral(messages)
    made = [lazy[i] for i in reversed(range(len(messages)))][::-1]  # read newest first, as the engine does
    assert made == old and [list(d) for d in made] == [list(d) for d in old]
    assert list(lazy) == made and all(lazy[i] is d for i, d in enumerate(made))
    assert all(lazy.position(d) == i for i, d in enumerate(made)) and lazy.position(dict(old[0] if old else {})) is None
    read = lazy.read()
    expected = read_messages(old)
    assert read.groups == expected.groups and read.overrides == expected.overrides


def _outcome(fn: Any) -> Any:
    try:
        return ("ok", fn())
    except CriticalMessagesOverflow as exc:
        return ("overflow", str(exc))
    except (ValueError, TypeError) as exc:
        return (type(exc).__name__, str(exc))


@given(
    messages=conversations(),
    budget=st.integers(0, 120),
    counter=counters,
    strategy=st.sampled_from(["first", "last"]),
    include_system=st.booleans(),
    start_on=st.sampled_from([None, "human", ["human", "ai"], HumanMessage]),
    end_on=st.sampled_from([None, "ai", ["human", "tool"], AIMessage]),
    partial=st.booleans(),
)
def test_trim_decides_as_with_the_reference(
    messages: list[BaseMessage],
    budget: int,
    counter: Any,
    strategy: str,
    include_system: bool,
    start_on: Any,
    end_on: Any,
    partial: bool,
) -> None:
    """trim_messages returns the same messages (or raises the same error) with the new and the old conversion."""
    if strategy == "first":
        include_system, start_on = False, None
    kwargs: dict[str, Any] = {
        "max_tokens": budget,
        "token_counter": counter,
        "strategy": strategy,
        "include_system": include_system,
        "start_on": start_on,
        "end_on": end_on,
        "allow_partial": partial,
    }
    new = _outcome(lambda: trim_messages(messages, **kwargs))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fit_module, "_Bridge", ReferenceBridge)
        patch.setattr(trim_module, "neutral", reference_neutral)
        old = _outcome(lambda: trim_messages(messages, **kwargs))
    event(f"trim: {new[0]}")
    assert new == old


@given(
    messages=conversations(),
    budget=st.integers(0, 120),
    marker=st.booleans(),
    marker_type=st.sampled_from(["system", "human", "ai"]),
)
def test_fit_decides_as_with_the_reference(
    messages: list[BaseMessage], budget: int, marker: bool, marker_type: str
) -> None:
    """TokenBoxMessages keeps the same messages and reports the same layout with either conversion."""
    fit = TokenBoxMessages(budget=budget, counter="whitespace", omission_marker=marker, marker_type=marker_type)  # type: ignore[arg-type]
    new = _outcome(lambda: fit.fit(messages).report())
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fit_module, "_Bridge", ReferenceBridge)
        old = _outcome(lambda: fit.fit(messages).report())
    event(f"fit: {new[0]}")
    assert new == old


def reference_message_key(message: BaseMessage) -> Any:
    """``counting.message_key`` as it was at dc6c5c6 (every message through the general path)."""
    content = message.content
    text = content if isinstance(content, str) else repr(content)
    extra: Any = None
    kind = message.type
    if kind == "ai":
        calls = getattr(message, "tool_calls", None)
        extra = repr(calls) if calls else None
    elif kind == "tool":
        extra = getattr(message, "tool_call_id", None)
    elif kind == "chat":
        extra = getattr(message, "role", None)
    kwargs = message.additional_kwargs
    more = repr(kwargs) if kwargs else ""
    return (
        type(message).__qualname__,
        hash(text),
        len(text),
        message.name,
        message.id,
        None if extra is None else (hash(extra), len(extra)),
        (hash(more), len(more)),
    )


@given(conversations())
def test_message_key_is_the_reference(messages: list[BaseMessage]) -> None:
    """The size-cache key of the common messages, built from their fields, is the key the general path builds."""
    assert [message_key(m) for m in messages] == [reference_message_key(m) for m in messages]
