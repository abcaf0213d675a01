"""ContextBudget (seed rules 1-7, effective budget) and TokenBudgetCalculator (seed acceptance criteria)."""

from __future__ import annotations

import dataclasses

import pytest

from tokenbox_core import (
    MODEL_CONTEXT_WINDOWS,
    BudgetError,
    ContextBudget,
    TokenBudget,
    TokenBudgetCalculator,
    register_model,
)
from tokenbox_core._budget import DEFAULT_CONTEXT_WINDOW
from tokenbox_core.errors import UnknownModelWarning


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_tokens": -1}, r"max_tokens must be >= 0, got -1"),
        ({"max_tokens": 10, "target_tokens": -1}, r"target_tokens must be >= 0, got -1"),
        ({"max_tokens": 10, "target_tokens": 11}, r"target_tokens \(11\) must be <= max_tokens \(10\)"),
        ({"max_tokens": 10, "output_reserve": -5}, r"output_reserve must be >= 0, got -5"),
        ({"max_tokens": 10, "output_reserve": 11}, r"output_reserve \(11\) must be <= max_tokens \(10\)"),
        ({"max_tokens": 10, "estimation_safety_margin_percent": -0.1}, r"between 0 and 100, got -0.1"),
        ({"max_tokens": 10, "estimation_safety_margin_percent": 100.5}, r"between 0 and 100, got 100.5"),
        ({"max_tokens": 10, "estimation_safety_margin_percent": float("nan")}, r"between 0 and 100, got nan"),
        ({"max_tokens": 10, "reserved_slots": {"Document": -1}}, r"reserved_slots\['Document'\] must be >= 0, got -1"),
        ({"max_tokens": 10.5}, r"max_tokens must be an integer, got 10.5"),
        ({"max_tokens": "10"}, r"max_tokens must be an integer, got '10'"),
        ({"max_tokens": 10, "estimation_safety_margin_percent": "5"}, r"must be a number, got '5'"),
        ({"max_tokens": 10, "reserved_slots": [1]}, r"reserved_slots must be a mapping"),
    ],
)
def test_validation_rules_name_field_and_value(kwargs: dict[str, object], message: str) -> None:
    """Each seed rule rejects an invalid budget at construction with the field and value in the message."""
    with pytest.raises(BudgetError, match=message):
        ContextBudget(**kwargs)  # type: ignore[arg-type]


def test_budget_error_is_a_value_error() -> None:
    """BudgetError is also a ValueError, so generic handlers catch it."""
    with pytest.raises(ValueError):
        ContextBudget(max_tokens=-1)


def test_target_defaults_to_max_and_budget_is_immutable() -> None:
    """target_tokens defaults to max_tokens; fields cannot be reassigned."""
    budget = ContextBudget(max_tokens=100)
    assert budget.target_tokens == 100
    with pytest.raises(dataclasses.FrozenInstanceError):
        budget.max_tokens = 5  # type: ignore[misc]
    with pytest.raises(TypeError):
        budget.reserved_slots["x"] = 1  # type: ignore[index]


@pytest.mark.parametrize(
    ("kwargs", "pinned", "expected"),
    [
        ({"max_tokens": 1000}, 0, (1000, 1000)),
        ({"max_tokens": 1000, "target_tokens": 800, "output_reserve": 100}, 0, (900, 800)),
        ({"max_tokens": 1000, "target_tokens": 950, "output_reserve": 100}, 0, (900, 900)),
        ({"max_tokens": 1000, "output_reserve": 100}, 300, (600, 600)),
        ({"max_tokens": 1000, "reserved_slots": {"a": 50, "b": 50}}, 0, (900, 900)),
        ({"max_tokens": 1000, "estimation_safety_margin_percent": 10.0}, 0, (900, 900)),
        ({"max_tokens": 1001, "target_tokens": 999, "estimation_safety_margin_percent": 10.0}, 0, (900, 899)),
        ({"max_tokens": 100, "output_reserve": 50}, 80, (0, 0)),
        ({"max_tokens": 0}, 0, (0, 0)),
    ],
)
def test_effective_budget_follows_the_seed_formula(
    kwargs: dict[str, object], pinned: int, expected: tuple[int, int]
) -> None:
    """effective() subtracts reserve, pins and slots, floors at 0, clamps target, applies the margin with floor."""
    effective = ContextBudget(**kwargs).effective(pinned_tokens=pinned)  # type: ignore[arg-type]
    assert (effective.max_tokens, effective.target_tokens) == expected


def test_negative_pinned_tokens_rejected() -> None:
    """effective() rejects negative pinned tokens."""
    with pytest.raises(BudgetError, match="pinned_tokens must be >= 0"):
        ContextBudget(max_tokens=10).effective(pinned_tokens=-1)


def test_coerce_accepts_int_and_rejects_nan() -> None:
    """An int budget becomes ContextBudget(max_tokens=n); NaN and negatives are clear errors."""
    assert ContextBudget.coerce(50).max_tokens == 50
    with pytest.raises(BudgetError, match="finite number"):
        ContextBudget.coerce(float("nan"))  # type: ignore[arg-type]
    with pytest.raises(BudgetError, match="max_tokens must be >= 0, got -3"):
        ContextBudget.coerce(-3)


# --------------------------------------------------------------------------- calculator


def test_calculator_count_tokens_hello_world() -> None:
    """Acceptance: count_tokens('Hello world', 'gpt-4o') returns 2."""
    assert TokenBudgetCalculator().count_tokens("Hello world", "gpt-4o") == 2


def test_calculator_memory_zero_when_messages_fill_the_window() -> None:
    """Acceptance: memory_tokens == 0 when messages already fill the context window."""
    messages = [{"role": "user", "content": "word " * 20_000}]
    budget = TokenBudgetCalculator().calculate("gpt-4", messages)
    assert budget.memory_tokens == 0
    assert budget.is_constrained


def test_calculator_unknown_model_falls_back_without_raising() -> None:
    """Acceptance: an unknown model uses cl100k_base and the fallback window, without raising."""
    with pytest.warns(UnknownModelWarning, match="mystery-model"):
        budget = TokenBudgetCalculator().calculate("mystery-model", [{"role": "user", "content": "Hello world"}])
    assert budget.context_window == DEFAULT_CONTEXT_WINDOW
    assert budget.messages_tokens == 3 + 4 + 1 + 2


def test_calculator_is_constrained_below_1000() -> None:
    """Acceptance: is_constrained is True exactly when memory_tokens < 1000."""
    calc = TokenBudgetCalculator()
    roomy = calc.calculate("gpt-4o", [])
    assert not roomy.is_constrained
    # gpt-4: 8192 window, reserve max(500, min(4096, 1228)) = 1228, buffer 409 → 6555 free before messages
    tight = calc.calculate("gpt-4", [{"role": "user", "content": "hello " * 5_700}])
    assert tight.memory_tokens < 1000 and tight.is_constrained


def test_calculator_reserves_follow_adr_0039() -> None:
    """Response reserve is 15% clamped to [500, 4096]; the safety buffer is 5%; the directive counts in full."""
    calc = TokenBudgetCalculator()
    big = calc.calculate("gpt-4o", [], directive="Be brief.")
    assert big.response_reserve == 4096
    assert big.safety_buffer == 6400
    assert big.directive_tokens == 3
    assert big.memory_tokens == 128_000 - 3 - 3 - 4096 - 6400
    small = calc.calculate("gpt-3.5-turbo", [])
    assert small.response_reserve == 2457
    register_model("tiny-model", 2000)
    assert calc.calculate("tiny-model", []).response_reserve == 500


def test_calculator_accepts_objects_and_dicts() -> None:
    """Messages may be objects with .role/.content or dicts, with the same count."""

    class Message:
        def __init__(self, role: str, content: str) -> None:
            self.role, self.content = role, content

    calc = TokenBudgetCalculator()
    a = calc.calculate("gpt-4o", [Message("user", "hi there")]).messages_tokens
    b = calc.calculate("gpt-4o", [{"role": "user", "content": "hi there"}]).messages_tokens
    assert a == b


def test_register_model_window_and_encoding() -> None:
    """Users register a model's window and encoding without editing the library."""
    register_model("acme-70b", 32_768, encoding="o200k_base")
    assert MODEL_CONTEXT_WINDOWS["acme-70b"] == 32_768
    budget = TokenBudgetCalculator().calculate("acme-70b", [])
    assert budget.context_window == 32_768
    with pytest.raises(BudgetError, match="context_window must be > 0"):
        register_model("broken", 0)


def test_token_budget_converts_to_context_budget() -> None:
    """A TokenBudget's reserves carry over to a ContextBudget for a layout."""
    tb = TokenBudget("m", 10_000, 0, 0, 1500, 500, 8000, False)
    cb = tb.to_context_budget()
    assert (cb.max_tokens, cb.output_reserve) == (10_000, 2000)


def test_integral_floats_are_accepted() -> None:
    """A float with an integral value (e.g. from JSON) is accepted as an int."""
    assert ContextBudget(max_tokens=100.0).max_tokens == 100  # type: ignore[arg-type]


def test_room_is_the_window_less_its_reserves_before_the_margin() -> None:
    """room = max(0, max - output_reserve - slots); capacity is room after the margin; effective() subtracts pins."""
    budget = ContextBudget(1000, output_reserve=100, reserved_slots={"tools": 50, "memo": 25},
                           estimation_safety_margin_percent=20)  # fmt: skip
    assert budget.room == 825
    assert budget.capacity == 660 == budget.effective().max_tokens
    assert budget.effective(pinned_tokens=25).max_tokens == 640
    assert ContextBudget(100, output_reserve=60, reserved_slots={"tools": 70}).room == 0
