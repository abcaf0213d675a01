"""Managed history (Algorithm 6.7's assembly): summary section, recent window fitted by the conversation engine,
rehydration pointers for what the budget evicted, rehydrated turns pinned for one compile (§6.10.5)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tokenbox_core import count_message_tokens
from tokenbox_core.errors import SessionError
from tokenbox_core.session import ManagedHistory, MemorySessionStore, SessionStore, rehydrate
from tokenbox_core.session._managed import SUMMARY_HEADER


def _session(store: SessionStore, n: int = 60, pad: int = 5) -> None:
    store.append("s", {"role": "system", "content": "be brief"})
    store.extend(
        "s",
        [
            {
                "role": "user" if i % 2 == 0 else "assistant",
                "content": f"message {i} about the plan " + "pad " * (i % pad),
            }
            for i in range(n)
        ],
    )


def _history(store: SessionStore, budget: int) -> ManagedHistory:
    return ManagedHistory(store, "s", budget=budget, counter="whitespace", window=10, interval=10)


def test_summary_section_then_recent_window(store: SessionStore) -> None:
    """Leading system turn, the summary section, then the recent window verbatim; within budget."""
    _session(store)
    ctx = _history(store, 400).compile()
    assert ctx.messages[0] == {"role": "system", "content": "be brief", "id": "t_1"}
    assert ctx.messages[1]["content"].startswith(f"{SUMMARY_HEADER} (turns t_2–t_51;")
    assert ctx.messages[1]["content"].endswith("RECENT_CONVERSATION follows.")
    assert [m["id"] for m in ctx.messages[2:]] == [f"t_{i}" for i in range(52, 62)]
    assert ctx.pointer is None and ctx.evicted == ()
    assert ctx.total_tokens == count_message_tokens(ctx.messages, "whitespace") <= 400
    assert [e.reason for e in store.evictions("s")] == ["summarized"]


def test_budget_evictions_become_a_rehydration_pointer(store: SessionStore) -> None:
    """Under a tight budget the oldest window turns go; the pointer names every one and is counted."""
    _session(store)
    ctx = _history(store, 200).compile()
    assert ctx.evicted and ctx.pointer is not None
    ids = list(ctx.evicted)
    assert ctx.pointer.startswith(f"[OMITTED: {len(ids)} turns ({', '.join(ids)})")
    assert ctx.pointer.endswith('rehydrate(["' + '","'.join(ids) + '"])]')
    at = next(i for i, m in enumerate(ctx.messages) if m["content"] == ctx.pointer)
    assert ctx.messages[at - 1]["content"].startswith(SUMMARY_HEADER) and ctx.messages[at + 1]["id"] not in ids
    assert ctx.total_tokens == count_message_tokens(ctx.messages, "whitespace") <= 200
    assert ("budget", tuple(ids)) in [(e.reason, e.turn_ids) for e in store.evictions("s")]


def test_context_budget_reserves_are_respected() -> None:
    """With a ContextBudget (output reserve), the managed history fits the effective maximum, pointer included."""
    from tokenbox_core import ContextBudget

    store = MemorySessionStore()
    _session(store)
    budget = ContextBudget(max_tokens=300, output_reserve=80)
    ctx = ManagedHistory(store, "s", budget=budget, counter="whitespace", window=10, interval=10).compile()
    assert ctx.pointer is not None and ctx.total_tokens <= 220


def test_rehydrated_turns_are_pinned_for_one_compile(store: SessionStore) -> None:
    """rehydrate() puts archived turns into the next compile only, displacing window turns."""
    _session(store)
    history = _history(store, 260)
    before = history.compile()
    rehydrate(store, "s", ["t_12", "t_13"])
    ctx = history.compile()
    restored = [m for m in ctx.messages if m["content"].startswith("REHYDRATED")]
    assert len(restored) == 1 and "t_12 user: message 10" in restored[0]["content"]
    assert ctx.rehydrated == ("t_12", "t_13") and len(ctx.evicted) > len(before.evicted)
    assert ctx.total_tokens <= 260
    assert history.compile().rehydrated == ()


def test_tool_groups_stay_whole_in_the_window() -> None:
    """A window that would start inside a tool group never sends an orphan tool result."""
    store = MemorySessionStore()
    for i in range(30):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "lookup", "arguments": f'{{"i": {i}}}'}}
        store.extend("s", [
            {"role": "user", "content": f"look up item {i}"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "content": f"item {i} costs {i * 3}", "tool_call_id": f"c{i}"},
        ])  # fmt: skip
    ctx = ManagedHistory(store, "s", budget=150, counter="whitespace", window=7, interval=10).compile()
    calls = {c["id"] for m in ctx.messages for c in m.get("tool_calls", ())}
    results = [m["tool_call_id"] for m in ctx.messages if m["role"] == "tool"]
    assert results and set(results) <= calls
    first = next(m for m in ctx.messages if m["role"] != "system")
    assert first["role"] == "user"


def test_bad_summary_role_is_refused() -> None:
    """summary_role must be a role providers accept for it."""
    import pytest

    with pytest.raises(SessionError, match="summary_role must be"):
        ManagedHistory(MemorySessionStore(), "s", budget=100, summary_role="tool")


@settings(max_examples=30, deadline=None)
@given(st.integers(5, 90), st.integers(120, 500), st.integers(1, 9), st.booleans())
def test_nothing_is_silently_lost(n: int, budget: int, pad: int, hygiene: bool) -> None:
    """Every turn is in the context, in a summary, or named by the pointer; the total stays within budget
    (evicting oldest first or in Algorithm 6.5's order)."""
    from tokenbox_core.session._hygiene import SigmoidDecay

    store = MemorySessionStore()
    _session(store, n, pad)
    decay = SigmoidDecay(5, 1) if hygiene else None
    ctx = ManagedHistory(
        store, "s", budget=budget, counter="whitespace", window=10, interval=10, hygiene=decay
    ).compile()
    assert ctx.total_tokens == count_message_tokens(ctx.messages, "whitespace") <= budget
    present = {m.get("id") for m in ctx.messages}
    summarised = set(ctx.checkpoints.archived_turn_ids)
    if ctx.checkpoints.summaries and "summary" not in present:
        assert ctx.pointer is not None and all(s.summary_id in ctx.pointer for s in ctx.checkpoints.summaries)
    named = set(ctx.evicted)
    for t in store.turns("s"):
        assert t.turn_id in present or t.turn_id in summarised or t.turn_id in named, t.turn_id


def test_hygiene_evicts_by_algorithm_6_5_instead_of_oldest_first() -> None:
    """With a decay model, a large superseded tool result goes before older small turns (tool group whole)."""
    from tokenbox_core.session._hygiene import ExponentialDecay

    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": '{"sku": 7}'}}
    again = {**call, "id": "c2"}
    store = MemorySessionStore()
    store.extend("s", [
        {"role": "user", "content": "check sku 7 please"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "content": "stock record " + "row " * 80, "tool_call_id": "c1"},
        {"role": "user", "content": "and again now"},
        {"role": "assistant", "content": "", "tool_calls": [again]},
        {"role": "tool", "content": "stock 12", "tool_call_id": "c2"},
        {"role": "assistant", "content": "sku 7 has 12 in stock"},
        {"role": "user", "content": "thanks, anything else?"},
    ])  # fmt: skip
    plain = ManagedHistory(store, "s", budget=90, counter="whitespace", window=20).compile()
    clean = ManagedHistory(store, "s", budget=90, counter="whitespace", window=20,
                           hygiene=ExponentialDecay(0.3)).compile()  # fmt: skip
    assert "t_1" in plain.evicted and "t_3" in plain.evicted
    assert set(clean.evicted) == {"t_2", "t_3"}
    assert any(m.get("id") == "t_1" for m in clean.messages)
    assert clean.total_tokens <= 90


def test_the_default_window_grows_with_the_budget() -> None:
    """window="budget" (the default): the verbatim window fills what the summaries leave of the budget, so a
    larger budget keeps more turns verbatim and the whole budget is used (issue 23: a fixed window kept the same
    few turns at every budget; then a window of three quarters of the budget left up to a quarter unused)."""
    store = MemorySessionStore()
    _session(store, n=120)
    kept = []
    for budget in (300, 600, 1200):
        ctx = ManagedHistory(store, "s", budget=budget, counter="whitespace", interval=10).compile()
        kept.append(len(ctx.checkpoints.window))
        assert 0.9 * budget <= ctx.total_tokens <= budget
    assert kept[0] < kept[1] < kept[2]


def test_a_bad_window_is_refused() -> None:
    """window is 'budget' or a number of turns."""
    import pytest

    with pytest.raises(SessionError, match="window must be 'budget' or a number of turns >= 0, got 'all'"):
        ManagedHistory(MemorySessionStore(), "s", budget=100, window="all")
