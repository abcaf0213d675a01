"""The ``utility`` allocator: Algorithm 6.2 water-filling over the elastic tiers (chapter §6.2.3–§6.2.5, §6.4.4).

Each elastic section ``i`` has a demand (its full size), bounds
``t_min``/``t_max``, a priority weight ``w_i``, a utility function ``U_i``
and a cost coefficient ``c_i``.  Minimums are granted first; then the
surplus goes out in quanta (default 64 tokens) to the section whose next
quantum has the highest marginal value per token::

    mu_i(x) = w_i * (U_i(x + s) - U_i(x)) / s  -  gamma * c_i,   s = min(quantum, t_max_i - x)

A heap holds one entry per uncapped section, so the cost is
``O((B / quantum) log n)``, not a token-by-token loop; ties go to the
earlier section (declaration order), so allocations are deterministic.
Allocation stops when the budget is spent, every section is at ``t_max``, or
no quantum is worth its cost (``mu <= 0``).

The **shadow price** ``λ`` (§6.2.4) is the marginal value of the next quantum
nobody received: the best remaining ``mu`` when the budget is spent, ``0``
when the budget is not binding.  With concave utilities every section below
its ``t_max`` then satisfies ``mu_i(x_i) <= λ <= mu_i(x_i - last quantum)``:
marginal utilities equalise to within one quantum (the KKT condition).

>>> from tokenbox_core.compiler.utility import BoundedLogUtility
>>> u = BoundedLogUtility(beta=100.0)
>>> result = water_fill([Demand("a", 1000, utility=u), Demand("b", 1000, weight=2.0, utility=u)], 640, quantum=64)
>>> result.allocations, result.shadow_price > 0
({'a': 192, 'b': 448}, True)
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field

from tokenbox_core.compiler.utility import BoundedLogUtility, UtilityFunction, marginal_utility
from tokenbox_core.errors import CompilerInputError

__all__ = ["Allocation", "Demand", "priority_fill", "water_fill"]


@dataclass(frozen=True)
class Demand:
    """One elastic section's claim: ``demand`` tokens of content, bounds, weight, utility and cost."""

    id: str
    demand: int
    t_min: int = 0
    t_max: int | None = None
    weight: float = 1.0
    utility: UtilityFunction = field(default_factory=BoundedLogUtility)
    cost: float = 0.0

    @property
    def low(self) -> int:
        """The effective minimum: ``min(t_min, demand)``."""
        return min(self.t_min, self.demand)

    @property
    def high(self) -> int:
        """The effective maximum: ``min(t_max, demand)``, never below :attr:`low`."""
        cap = self.demand if self.t_max is None else min(self.t_max, self.demand)
        return max(cap, self.low)


@dataclass(frozen=True)
class Allocation:
    """The allocator's result: tokens per section, the shadow price and the marginal utilities."""

    allocations: dict[str, int]
    shadow_price: float
    marginal_utilities: dict[str, float]
    unspent: int
    quantum: int

    def capped(self, demand: Demand) -> bool:
        """Whether the section is at its effective ``t_max``."""
        return self.allocations[demand.id] >= demand.high


def _mu(d: Demand, x: int, quantum: int, gamma: float) -> float:
    step = min(quantum, d.high - x)
    if step <= 0:
        return 0.0
    return d.weight * marginal_utility(d.utility, x, step) - gamma * d.cost


def water_fill(
    demands: Sequence[Demand], budget: int, *, quantum: int = 64, cost_sensitivity: float = 0.0
) -> Allocation:
    """Allocate ``budget`` tokens over ``demands`` (Algorithm 6.2); minimums must fit (the caller's overflow check)."""
    if quantum < 1:
        raise CompilerInputError(f"quantum must be >= 1, got {quantum}")
    minimum = sum(d.low for d in demands)
    if minimum > budget:
        raise CompilerInputError(
            f"minimum allocations need {minimum:,} tokens but the elastic budget is {budget:,}; "
            f"resolve the overflow first (CompilerConfig.overflow)"
        )
    alloc = [d.low for d in demands]
    surplus = budget - minimum
    heap: list[tuple[float, int]] = []
    for i, d in enumerate(demands):
        if alloc[i] < d.high:
            heap.append((-_mu(d, alloc[i], quantum, cost_sensitivity), i))
    heapq.heapify(heap)
    while surplus > 0 and heap:
        neg_mu, i = heap[0]
        if -neg_mu <= 0:
            break
        heapq.heappop(heap)
        d = demands[i]
        grant = min(quantum, d.high - alloc[i], surplus)
        alloc[i] += grant
        surplus -= grant
        if alloc[i] < d.high:
            heapq.heappush(heap, (-_mu(d, alloc[i], quantum, cost_sensitivity), i))
    shadow = max(0.0, -heap[0][0]) if heap and surplus == 0 else 0.0
    marginals = {d.id: _mu(d, alloc[i], quantum, cost_sensitivity) for i, d in enumerate(demands)}
    return Allocation(
        allocations={d.id: alloc[i] for i, d in enumerate(demands)},
        shadow_price=shadow,
        marginal_utilities=marginals,
        unspent=surplus,
        quantum=quantum,
    )


def priority_fill(demands: Sequence[Demand], budget: int, priorities: Sequence[int]) -> Allocation:
    """The ``priority`` allocator's caps: minimums first, then the rest in protection order (FACET's rule).

    Protection order is the reverse of the Token Box's loss order (priority ascending, then declaration
    order): the highest-priority section is filled to its ``t_max`` first, the next one from what is left,
    and so on.  With no minimums this is exactly what the Token Box does on its own; with minimums it
    guarantees every section its ``t_min`` (the box alone would drop a lower-priority section whole).
    """
    minimum = sum(d.low for d in demands)
    if minimum > budget:
        raise CompilerInputError(
            f"minimum allocations need {minimum:,} tokens but the elastic budget is {budget:,}; "
            f"resolve the overflow first (CompilerConfig.overflow)"
        )
    alloc = {d.id: d.low for d in demands}
    rest = budget - minimum
    order = sorted(range(len(demands)), key=lambda i: (-priorities[i], -i))
    for i in order:
        d = demands[i]
        give = min(d.high - d.low, rest)
        alloc[d.id] += give
        rest -= give
    return Allocation(allocations=alloc, shadow_price=0.0, marginal_utilities={}, unspent=rest, quantum=0)
