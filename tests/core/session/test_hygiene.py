"""Active window hygiene (chapter §6.8): decay models, Algorithm 6.5 eviction, staleness signals."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core.errors import SessionError
from tokenbox_core.session import MemorySessionStore
from tokenbox_core.session._hygiene import (
    ExponentialDecay,
    HygieneItem,
    SigmoidDecay,
    StepDecay,
    evict,
    staleness_signals,
)


def test_exponential_decay_by_turn_and_by_time() -> None:
    """e^(−λ·age), with age in turns or in seconds."""
    item = HygieneItem("a", 10, inserted_turn=2, inserted_at=100.0)
    assert item.relevance(ExponentialDecay(0.5), turn=6) == pytest.approx(math.exp(-2))
    assert item.relevance(ExponentialDecay(0.1, unit="seconds"), turn=0, now=110.0) == pytest.approx(math.exp(-1))
    with pytest.raises(SessionError, match="needs now="):
        item.relevance(ExponentialDecay(0.1, unit="seconds"), turn=0)


def test_step_decay_reactivates_on_reference() -> None:
    """Full relevance within the window of the last reference, the floor after it; a reference restores it."""
    decay = StepDecay(window=5, floor=0.1)
    old = HygieneItem("a", 10, inserted_turn=0)
    assert old.relevance(decay, turn=5) == 1.0 and old.relevance(decay, turn=6) == 0.1
    referenced = HygieneItem("a", 10, inserted_turn=0, last_referenced_turn=4)
    assert referenced.relevance(decay, turn=9) == 1.0


def test_sigmoid_decay_half_life_and_steepness() -> None:
    """Relevance is 1/2 at the half-life; steeper means a sharper drop; huge ages do not overflow."""
    assert SigmoidDecay(10, 1).relevance(10) == 0.5
    assert SigmoidDecay(10, 2).relevance(12) < SigmoidDecay(10, 0.5).relevance(12) < 0.5
    assert SigmoidDecay(10, 1).relevance(1e9) == 0.0


def test_eviction_order_is_one_minus_relevance_times_cost_and_pins_are_immune() -> None:
    """Algorithm 6.5: highest (1 − r)·cost first, pinned and tier 0/1 items never, stop once under target."""
    items = [
        HygieneItem("policy", 50, tier=0, inserted_turn=0),
        HygieneItem("old-big", 100, inserted_turn=0),
        HygieneItem("old-pinned", 200, inserted_turn=0, pinned=True),
        HygieneItem("new-big", 100, inserted_turn=9),
        HygieneItem("old-small", 10, inserted_turn=0),
    ]
    store = MemorySessionStore()
    store.append("s", {"role": "user", "content": "x"})
    result = evict(items, 300, turn=10, decay=ExponentialDecay(0.5), store=store, session_id="s")
    assert [i.id for i in result.evicted] == ["old-big", "new-big"]
    assert result.total_tokens == 260 and "policy" not in result.scores
    assert result.scores["old-big"] == pytest.approx(100 * (1 - math.exp(-5)))
    assert [(e.turn_ids, e.reason) for e in store.evictions("s")] == [(("old-big", "new-big"), "hygiene")]


def test_decay_per_kind() -> None:
    """Tool outputs can decay faster than corrections (a decay model per kind)."""
    items = [HygieneItem("tool", 10, inserted_turn=0, kind="tool"), HygieneItem("fix", 10, inserted_turn=0, kind="fix")]
    decays = {"tool": ExponentialDecay(1.0), "fix": ExponentialDecay(0.01)}
    assert [i.id for i in evict(items, 10, turn=5, decay=decays).evicted] == ["tool"]
    with pytest.raises(SessionError, match="no decay model for kind 'fix'"):
        evict(items, 0, turn=5, decay={"tool": ExponentialDecay()})


def test_bad_decay_parameters_are_refused() -> None:
    """Negative rates, bad floors, non-positive steepness and unknown units fail at construction."""
    for make, match in [
        (lambda: ExponentialDecay(-1), "rate must be"),
        (lambda: StepDecay(5, floor=2), "floor in"),
        (lambda: SigmoidDecay(5, 0), "steepness > 0"),
        (lambda: ExponentialDecay(unit="days"), "unit must be"),  # type: ignore[arg-type]
        (lambda: evict([], -1, turn=0), "target_tokens must be >= 0"),
    ]:
        with pytest.raises(SessionError, match=match):
            make()


@given(st.lists(st.tuples(st.integers(0, 300), st.integers(0, 20), st.booleans(), st.integers(0, 5)), max_size=15),
       st.integers(0, 2000))  # fmt: skip
def test_eviction_never_touches_pinned_or_fixed_and_stops_at_target(spec: list[tuple[int, int, bool, int]],
                                                                   target: int) -> None:  # fmt: skip
    """Pinned and tier 0/1/5 items survive; nothing is evicted once the total fits; eviction is deterministic."""
    items = [
        HygieneItem(f"i{n}", tok, tier=tier, inserted_turn=t, pinned=p) for n, (tok, t, p, tier) in enumerate(spec)
    ]
    result = evict(items, target, turn=20)
    assert all(not i.pinned and i.tier in (2, 3, 4) for i in result.evicted)
    if result.evicted:
        assert result.total_tokens + result.evicted[-1].tokens > target
    assert result == evict(items, target, turn=20)


def test_staleness_signals() -> None:
    """Age, references, supersession by key and by repeated tool call, phase change and error invalidation."""
    store = MemorySessionStore()
    call = {"id": "c1", "type": "function", "function": {"name": "price", "arguments": '{"sku": 1}'}}
    call2 = {**call, "id": "c2"}
    store.extend("s", [
        {"role": "user", "content": "plan", "tokenbox": {"key": "plan", "phase": "design"}},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "content": "9.99", "tool_call_id": "c1"},
        {"role": "user", "content": "see t_1 and the result of c1"},
        {"role": "user", "content": "new plan", "tokenbox": {"key": "plan", "phase": "build"}},
        {"role": "assistant", "content": "", "tool_calls": [call2]},
        {"role": "tool", "content": "timeout", "tool_call_id": "c2", "tokenbox": {"error": True}},
    ])  # fmt: skip
    sig = staleness_signals(store.turns("s"), phase="build")
    assert sig["t_1"].age == 6 and sig["t_1"].references == 1 and sig["t_1"].last_referenced_turn == 4
    assert sig["t_3"].references == 1
    assert sig["t_1"].superseded_by == "t_5" and sig["t_1"].phase_changed and not sig["t_5"].phase_changed
    assert sig["t_3"].superseded_by == "t_7" and sig["t_3"].invalidated_by == "t_7"
    assert sig["t_1"].signals == ("superseded", "phase_changed")
    assert "unreferenced" in sig["t_2"].signals
