"""The window arithmetic adapters share (tokenbox_core.request.resolve_window): reserves, triggers, keep targets."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenbox_core import ContextBudget
from tokenbox_core.errors import BudgetError
from tokenbox_core.request import (
    RequestWindow,
    check_size,
    check_trigger,
    keep_tokens,
    reached,
    resolve_window,
    thresholds,
)


@pytest.mark.parametrize(
    ("name", "value", "match"),
    [
        ("trigger", ("token", 5), r"trigger=\('token', 5\) is not a context size: use \('tokens', n\)"),
        ("keep", 5, r"keep=5 is not a context size: .* e\.g\. keep=\('fraction', 0\.8\)"),
        ("keep", ("fraction", 1.5), r"keep=\('fraction', 1\.5\): a fraction must be a number in \(0, 1\]"),
        ("keep", ("fraction", 0), r"a fraction must be a number in \(0, 1\], e\.g\. \('fraction', 0\.8\)"),
        ("keep", ("tokens", 0), r"keep=\(.tokens., 0\): a token count must be an integer >= 1, e\.g\. \(.tokens"),
        ("keep", ("tokens", 2.5), r"a token count must be an integer >= 1"),
        ("keep", ("messages", True), r"a message count must be an integer >= 1, e\.g\. \('messages', 20\)"),
    ],
)
def test_a_bad_size_names_the_option_the_value_and_an_example(name: str, value: Any, match: str) -> None:
    """Each malformed size is refused with the option's name, the value given and a size that works."""
    with pytest.raises(BudgetError, match=match):
        check_size(name, value)


@pytest.mark.parametrize(
    ("value", "match"),
    [
        (5, r"trigger=5 is not a trigger: use a size \('tokens', n\) .* or a list of which any one suffices"),
        ({"tokens": 10, "turns": 3}, r"trigger clause \{'tokens': 10, 'turns': 3\}: its keys must be 'tokens', 'frac"),
        ([{}], r"trigger clause \{\}: its keys must be .* \(at least one\), e\.g\. \{'tokens': 4000, 'messages': 10\}"),
        ([("messages", 0)], r"trigger=\('messages', 0\): a message count must be an integer >= 1"),
    ],
)
def test_a_bad_trigger_says_what_a_trigger_is(value: Any, match: str) -> None:
    """A trigger that is neither a size, a dict of sizes nor a list of those is refused with the accepted shapes."""
    with pytest.raises(BudgetError, match=match):
        check_trigger(value)


def test_triggers_are_or_of_and_clauses() -> None:
    """A size is one clause; a dict is one clause of all its sizes (in kind order); a list any of its members."""
    assert check_trigger(("tokens", 100)) == ((("tokens", 100),),)
    assert check_trigger({"messages": 3, "tokens": 100}) == ((("tokens", 100), ("messages", 3)),)
    assert check_trigger([("messages", 5), {"fraction": 1}]) == ((("messages", 5),), (("fraction", 1.0),))
    assert check_trigger([]) == ()


def test_thresholds_take_fractions_of_the_limit_and_at_least_one_token() -> None:
    """A fraction is floor(f * limit), never below 1; a clause's largest token and message thresholds are kept."""
    assert thresholds(check_trigger(("fraction", 0.5)), 999) == ((499, None),)
    assert thresholds(check_trigger(("fraction", 0.001)), 10) == ((1, None),)
    assert thresholds(check_trigger({"tokens": 300, "fraction": 0.5, "messages": 4}), 1000) == ((500, 4),)


def test_reached_counts_only_when_a_clause_needs_the_size() -> None:
    """Message-count clauses decide without counting; token thresholds are reached at >=."""
    counted: list[int] = []

    def size() -> int:
        counted.append(1)
        return 100

    assert reached([(None, 3)], 3, size) and not counted
    assert not reached([(None, 4)], 3, size) and not counted
    assert reached([(100, None)], 1, size) and counted
    assert not reached([(101, 2)], 5, lambda: 100)
    assert not reached([], 99, lambda: 10**6)


def test_keep_in_tokens_or_a_fraction_of_the_limit() -> None:
    """("tokens", n) is n, ("fraction", f) floor(f * limit); a message count is the caller's to count."""
    assert keep_tokens(("tokens", 7), 100) == 7
    assert keep_tokens(("fraction", 0.5), 101) == 50
    with pytest.raises(BudgetError, match=r"keep=\('messages', 3\) counts messages: count the newest 3 messages"):
        keep_tokens(("messages", 3), 100)


def test_the_window_reserves_the_answer_and_the_schemas() -> None:
    """The larger of the window's own output reserve and the caller's is kept (a provider checks the input against the
    window less the answer's maximum); the schemas are a reserved slot beside the user's."""
    window = resolve_window(ContextBudget(4000, output_reserve=300, reserved_slots={"memo": 50}), output_reserve=900,
                            tools=200)  # fmt: skip
    assert window.budget.output_reserve == 900 and window.limit == 3100
    assert dict(window.budget.reserved_slots) == {"memo": 50, "tools": 200}
    assert window.budget.capacity == 4000 - 900 - 50 - 200
    own = resolve_window(ContextBudget(4000, output_reserve=300), output_reserve=100)
    assert own.budget.output_reserve == 300
    plain = resolve_window(4000, output_reserve=900)
    assert plain.budget.output_reserve == 900 and dict(plain.budget.reserved_slots) == {} and plain.trigger is None


def test_keep_is_the_target_beside_the_schemas_never_above_the_windows_own() -> None:
    """keep's tokens plus the schemas are the budget's target, capped by the window's target and max."""
    assert resolve_window(4000, output_reserve=1000, tools=100, keep=("fraction", 0.5)).budget.target_tokens == 1600
    capped = resolve_window(ContextBudget(4000, target_tokens=1000), tools=100, keep=("tokens", 3000))
    assert capped.budget.target_tokens == 1000
    assert resolve_window(4000, keep=("tokens", 10**6)).budget.target_tokens == 4000
    assert resolve_window(ContextBudget(4000, target_tokens=4000)).budget.target_tokens == 4000


def test_a_window_the_reserves_fill_is_refused_with_the_numbers() -> None:
    """No room left for messages: the window, the reserve and the schemas' tokens, and the three fixes."""
    with pytest.raises(
        BudgetError,
        match=r"the window of 1,000 tokens leaves no room for messages: the output reserve takes 200 and the tool "
        r"schemas 800; raise the budget, lower the output reserve \(output_reserve=\.\.\.\) or bind fewer tools",
    ):
        resolve_window(1000, output_reserve=200, tools=800)
    with pytest.raises(BudgetError, match=r"keep=\('messages', 2\) counts messages"):
        resolve_window(1000, keep=("messages", 2))


def test_due_without_a_trigger_at_the_trigger_or_over_the_window() -> None:
    """No trigger: always due; with one: due when reached or when the messages and slots exceed the limit."""
    assert RequestWindow(ContextBudget(100)).due(0, lambda: 0)
    window = resolve_window(1000, output_reserve=100, tools=50, trigger=check_trigger(("messages", 10)))
    assert not window.due(9, lambda: 850)
    assert window.due(9, lambda: 851)  # 851 + 50 schemas > 900
    assert window.due(10, lambda: 0)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 200_000),
    st.integers(0, 50_000),
    st.integers(0, 50_000),
    st.one_of(st.none(), st.floats(0.01, 1.0), st.integers(1, 100_000)),
)
def test_the_window_formula(window: int, reserve: int, tools: int, keep: float | int | None) -> None:
    """capacity = window - reserve - schemas, limit = window - reserve, target = schemas + keep (clamped)."""
    if window - reserve - tools <= 0:
        with pytest.raises(BudgetError, match="leaves no room for messages"):
            resolve_window(window, output_reserve=reserve, tools=tools)
        return
    size = None if keep is None else ("fraction", keep) if isinstance(keep, float) else ("tokens", keep)
    got = resolve_window(window, output_reserve=reserve, tools=tools, keep=size)  # type: ignore[arg-type]
    assert got.limit == window - reserve
    assert got.budget.capacity == window - reserve - tools
    if keep is None:
        assert got.budget.target_tokens == window
    else:
        kept = math.floor(keep * (window - reserve)) if isinstance(keep, float) else keep
        assert got.budget.target_tokens == min(window, tools + kept)
