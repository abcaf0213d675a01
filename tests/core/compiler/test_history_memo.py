"""The kept conversations (compiler/history.py): the same conversation compiled again re-uses its Sections, and
nothing that changed — in place or not — is ever served from the memo."""

from __future__ import annotations

from typing import Any

import pytest

from tokenbox_core import CompilerConfig, ContextCompiler
from tokenbox_core.compiler import history as memo
from tokenbox_core.compiler.refs import clear_caches
from tokenbox_core.tokens import COUNT_CACHE, get_counter

from .conftest import NOW


def _conversation() -> list[dict[str, Any]]:
    call = {"id": "c1", "type": "function", "function": {"name": "lookup_order", "arguments": '{"id": "A1"}'}}
    return [
        {"role": "user", "content": "Where is my order A1?"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "A1 shipped on Monday."},
        {"role": "assistant", "content": "It shipped on Monday."},
    ]


def _compiler(budget: int = 2_000) -> ContextCompiler:
    return ContextCompiler(budget, config=CompilerConfig(clock=NOW, overflow="truncate_lowest"))


def _compile(history: list[dict[str, Any]], user: str = "And the invoice?", budget: int = 2_000) -> Any:
    return _compiler(budget).compile(policy="Be brief.", history=history, user=user)


def _from_nothing(history: list[dict[str, Any]], user: str = "And the invoice?", budget: int = 2_000) -> Any:
    clear_caches()
    COUNT_CACHE.clear()
    return _compile([_deep(m) for m in history], user, budget)


def _deep(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _deep(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_deep(v) for v in value]
    return value


def _history_sections(compiled: Any) -> list[Any]:
    return [s for s in compiled.layout.sections if s.id.startswith("history/")]


def test_the_same_conversation_again_reuses_its_sections() -> None:
    clear_caches()
    counter = get_counter("o200k_base")
    history = _conversation()
    first = memo.history_sections(history, user="Hi", counter=counter, priority=1)
    again = memo.history_sections(_deep(history), user="Hi", counter=counter, priority=1)
    assert first is not None and again is first  # equal messages as other objects: still the same conversation
    assert memo.history_sections(history, user="Hi!", counter=counter, priority=1) is not first
    assert memo.history_sections(history, user="Hi", counter=counter, priority=2) is not first
    other = get_counter("cl100k_base")
    assert memo.history_sections(history, user="Hi", counter=other, priority=1) is not first


def test_a_compile_served_from_the_memo_equals_one_from_nothing() -> None:
    clear_caches()
    history = _conversation()
    _compile(history)
    warm = _compile(history)
    cold = _from_nothing(history)
    assert warm.messages == cold.messages
    assert warm.trace.decisions() == cold.trace.decisions()


def test_a_message_changed_in_place_is_seen() -> None:
    clear_caches()
    history = _conversation()
    _compile(history)
    history[1]["tool_calls"][0]["function"]["arguments"] = '{"id": "B2"}'  # nested, in place
    history[3]["content"] = "It shipped on Tuesday."  # top level, in place
    warm = _compile(history)
    assert '{"id": "B2"}' in str(warm.messages) and "Tuesday" in str(warm.messages)
    assert warm.messages == _from_nothing(history).messages


def test_changing_a_returned_message_does_not_leak_into_the_next_compile() -> None:
    clear_caches()
    history = _conversation()
    first = _compile(history)
    calls = [m for m in first.messages if m.get("tool_calls")]
    assert calls
    calls[0]["tool_calls"][0]["function"]["name"] = "tampered"  # shared with the caller's input, as always
    fresh = _conversation()  # an untouched copy of the original conversation
    again = _compile(fresh)
    assert "tampered" not in str(again.messages)
    assert again.messages == _from_nothing(fresh).messages


def test_only_plain_messages_are_kept_and_the_memo_is_bounded() -> None:
    clear_caches()
    counter = get_counter("o200k_base")

    class Opaque:
        def __eq__(self, other: object) -> bool:
            return True  # would make any snapshot comparison pass: must never be kept

        __hash__ = object.__hash__

    odd = [{"role": "user", "content": "hello", "meta": Opaque()}]
    first = memo.history_sections(odd, user=None, counter=counter, priority=1)
    assert memo.history_sections(odd, user=None, counter=counter, priority=1) is not first
    kept = [
        memo.history_sections(
            [{"role": "user", "content": f"turn {i}"}], user=None, counter=counter, priority=1
        )
        for i in range(memo._KEPT + 1)
    ]
    oldest = memo.history_sections(
        [{"role": "user", "content": "turn 0"}], user=None, counter=counter, priority=1
    )
    newest = memo.history_sections(
        [{"role": "user", "content": f"turn {memo._KEPT}"}], user=None, counter=counter, priority=1
    )
    assert oldest is not kept[0]  # pushed out
    assert newest is kept[-1]
    assert len(memo._kept_entries) <= memo._KEPT


def test_too_much_text_is_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    clear_caches()
    monkeypatch.setattr(memo, "_KEPT_CHARS", 10)
    counter = get_counter("o200k_base")
    long = [{"role": "user", "content": "a sentence longer than ten characters"}]
    first = memo.history_sections(long, user=None, counter=counter, priority=1)
    assert memo.history_sections(long, user=None, counter=counter, priority=1) is not first
    assert not memo._kept_entries


def test_threads_compiling_the_same_conversation_get_what_one_thread_gets() -> None:
    from concurrent.futures import ThreadPoolExecutor

    clear_caches()
    histories = [_conversation() for _ in range(16)]
    budgets = [400, 2_000] * 8
    expected = [_from_nothing(h, budget=b).trace.decisions() for h, b in zip(histories, budgets, strict=True)]
    clear_caches()
    with ThreadPoolExecutor(4) as pool:
        got = list(
            pool.map(lambda hb: _compile(hb[0], budget=hb[1]).trace.decisions(), zip(histories, budgets, strict=True))
        )
    assert got == expected


def test_numbers_of_another_type_are_another_conversation() -> None:
    # ``==`` takes 1, 1.0 and True for one another (and 0.0 for -0.0); messages holding them render differently
    clear_caches()
    counter = get_counter("o200k_base")
    for a, b in ((1, True), (1, 1.0), (0.0, -0.0)):
        history = _conversation()
        history[0]["n"] = a
        first = memo.history_sections(history, user="Hi", counter=counter, priority=1)
        other = _deep(history)
        other[0]["n"] = b
        assert memo.history_sections(other, user="Hi", counter=counter, priority=1) is not first
        assert memo.history_sections(_deep(history), user="Hi", counter=counter, priority=1) is first


def test_keys_in_another_order_are_another_conversation() -> None:
    clear_caches()
    counter = get_counter("o200k_base")
    history = _conversation()
    first = memo.history_sections(history, user="Hi", counter=counter, priority=1)
    reordered = _deep(history)
    reordered[0] = {"content": reordered[0]["content"], "role": "user"}
    assert memo.history_sections(reordered, user="Hi", counter=counter, priority=1) is not first
    nested = _deep(history)
    function = nested[1]["tool_calls"][0]["function"]
    nested[1]["tool_calls"][0]["function"] = {"arguments": function["arguments"], "name": function["name"]}
    assert memo.history_sections(nested, user="Hi", counter=counter, priority=1) is not first
