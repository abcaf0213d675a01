"""The utility allocator (Algorithm 6.2): small examples and the KKT properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core.compiler._allocate import Demand, water_fill
from tokenbox_core.compiler._utility import BoundedLogUtility, marginal_utility
from tokenbox_core.errors import CompilerInputError

EPS = 1e-9


def test_minimums_first_then_highest_marginal_utility() -> None:
    """Minimums are granted first; the heavier section then receives more of the surplus."""
    u = BoundedLogUtility(beta=100.0)
    result = water_fill(
        [Demand("evidence", 5000, t_min=100, weight=2.0, utility=u), Demand("history", 5000, t_min=300, utility=u)],
        1000,
        quantum=50,
    )
    assert sum(result.allocations.values()) == 1000
    assert result.allocations["evidence"] > result.allocations["history"] >= 300
    assert result.shadow_price > 0


def test_caps_pass_the_rest_on_and_slack_budget_has_zero_price() -> None:
    """A section capped by its content or t_max stops; when every section is capped λ is 0."""
    result = water_fill([Demand("a", 100), Demand("b", 5000, t_max=200)], 10_000, quantum=64)
    assert result.allocations == {"a": 100, "b": 200}
    assert result.shadow_price == 0.0 and result.unspent == 10_000 - 300
    assert result.marginal_utilities == {"a": 0.0, "b": 0.0}


def test_cost_aware_term_withholds_tokens_not_worth_their_cost() -> None:
    """With γ·c above every marginal utility, no surplus is spent (λ = 0)."""
    result = water_fill([Demand("a", 5000, cost=1.0)], 1000, quantum=64, cost_sensitivity=1.0)
    assert result.allocations == {"a": 0} and result.shadow_price == 0.0


def test_ties_go_to_the_earlier_section() -> None:
    """Identical sections: the first one receives the odd quantum (deterministic)."""
    result = water_fill([Demand("a", 1000), Demand("b", 1000)], 192, quantum=64)
    assert result.allocations == {"a": 128, "b": 64}


def test_infeasible_minimums_are_an_error() -> None:
    """water_fill refuses minimums above the budget (overflow is the caller's policy)."""
    with pytest.raises(CompilerInputError, match="minimum allocations need 600 tokens but the elastic budget is 500"):
        water_fill([Demand("a", 1000, t_min=300), Demand("b", 1000, t_min=300)], 500)


def test_a_custom_utility_callable() -> None:
    """Any concave callable is a utility function; a linear one with a higher slope wins everything."""
    result = water_fill([Demand("a", 1000, utility=lambda t: 2.0 * t), Demand("b", 1000, utility=lambda t: t)], 500)
    assert result.allocations == {"a": 500, "b": 0}


demand_st = st.builds(
    lambda i, demand, t_min, t_max, weight, alpha, beta, cost: Demand(
        f"s{i}", demand, t_min=t_min, t_max=t_max, weight=weight, utility=BoundedLogUtility(alpha, beta), cost=cost
    ),
    st.integers(0, 10**6),
    st.integers(0, 6000),
    st.integers(0, 800),
    st.none() | st.integers(0, 4000),
    st.floats(0.1, 3.0),
    st.floats(0.5, 2.0),
    st.floats(10.0, 2000.0),
    st.floats(0.0, 0.002),
)


@given(
    demands=st.lists(demand_st, min_size=1, max_size=5),
    budget=st.integers(0, 12_000),
    quantum=st.integers(1, 256),
    gamma=st.floats(0.0, 1.0),
)
def test_water_fill_properties(demands: list[Demand], budget: int, quantum: int, gamma: float) -> None:
    """Never over budget; minimums honoured when feasible; each section at t_max or within one quantum of λ."""
    demands = [Demand(f"s{i}", d.demand, d.t_min, d.t_max, d.weight, d.utility, d.cost) for i, d in enumerate(demands)]
    if sum(d.low for d in demands) > budget:
        with pytest.raises(CompilerInputError):
            water_fill(demands, budget, quantum=quantum, cost_sensitivity=gamma)
        return
    result = water_fill(demands, budget, quantum=quantum, cost_sensitivity=gamma)
    alloc = result.allocations
    assert sum(alloc.values()) <= budget
    assert sum(alloc.values()) + result.unspent == budget
    lam = result.shadow_price
    assert lam >= 0
    for d in demands:
        x = alloc[d.id]
        assert d.low <= x <= d.high
        if x >= d.high:
            continue  # at its t_max
        step = min(quantum, d.high - x)
        next_mu = d.weight * marginal_utility(d.utility, x, step) - gamma * d.cost
        assert next_mu <= lam + EPS  # the next quantum is not worth more than the price
        if x > d.low:
            last = (x - d.low - 1) % quantum + 1
            last_mu = d.weight * marginal_utility(d.utility, x - last, last) - gamma * d.cost
            assert last_mu >= lam - EPS  # the last quantum granted was worth at least the price


@given(demands=st.lists(demand_st, min_size=1, max_size=4), budget=st.integers(0, 8000))
def test_water_fill_is_deterministic(demands: list[Demand], budget: int) -> None:
    """The same inputs give the same allocation."""
    demands = [Demand(f"s{i}", d.demand, 0, d.t_max, d.weight, d.utility, d.cost) for i, d in enumerate(demands)]
    assert water_fill(demands, budget) == water_fill(list(demands), budget)
