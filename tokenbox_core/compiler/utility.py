"""Section utility functions for the ``utility`` allocator (chapter §6.2.3).

A utility function maps a token allocation ``t`` to the section's task
utility: concave and non-decreasing (diminishing returns).  Any callable
``f(t: int) -> float`` with that shape may be used; the allocator only
evaluates it at quantum boundaries.

The default is the chapter's **bounded logarithmic utility**
``U(t) = alpha * ln(1 + min(t, t_max) / beta)``: ``alpha`` scales the
absolute utility, ``beta`` (tokens) sets the saturation rate, and beyond
``t_max`` the utility is flat (information saturation), so the marginal
utility there is zero.

>>> u = BoundedLogUtility(alpha=1.0, beta=100.0)
>>> round(u(100), 4), u(0)
(0.6931, 0.0)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from tokenbox_core.errors import CompilerInputError

__all__ = ["BoundedLogUtility", "UtilityFunction", "marginal_utility"]

UtilityFunction = Callable[[int], float]
"""A section's utility of ``t`` tokens: concave, non-decreasing, ``U(0) == 0`` by convention."""


@dataclass(frozen=True)
class BoundedLogUtility:
    """``alpha * ln(1 + min(t, t_max) / beta)`` — chapter §6.2.3's bounded logarithmic utility.

    ``t_max=None`` leaves it unbounded (the allocator still caps a section at
    its content size and its configured ``t_max``).
    """

    alpha: float = 1.0
    beta: float = 512.0
    t_max: int | None = None

    def __post_init__(self) -> None:
        for name in ("alpha", "beta"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
                raise CompilerInputError(f"BoundedLogUtility: {name} must be a finite number > 0, got {value!r}")
        if self.t_max is not None and (
            isinstance(self.t_max, bool) or not isinstance(self.t_max, int) or self.t_max < 0
        ):
            raise CompilerInputError(f"BoundedLogUtility: t_max must be an integer >= 0 or None, got {self.t_max!r}")

    def __call__(self, t: int) -> float:
        if self.t_max is not None:
            t = min(t, self.t_max)
        return self.alpha * math.log1p(max(0, t) / self.beta)


def marginal_utility(utility: UtilityFunction, t: int, step: int) -> float:
    """The average utility per token of the ``step`` tokens after ``t``: ``(U(t + step) - U(t)) / step``."""
    if step <= 0:
        return 0.0
    return (float(utility(t + step)) - float(utility(t))) / step
