"""Budgets: ``ContextBudget`` (Cupel's budget, ``docs/concepts.md#budgets``) and the model-aware
``TokenBudgetCalculator`` (``docs/adr/0039-token-budget-allocation.md``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tokenbox_core._arguments import suggest_keywords
from tokenbox_core._frozen import FrozenDict
from tokenbox_core.errors import BudgetError
from tokenbox_core.models._calculator import (  # the model-aware calculator, re-exported from its documented home
    DEFAULT_CONTEXT_WINDOW,
    MODEL_CONTEXT_WINDOWS,
    TokenBudget,
    TokenBudgetCalculator,
    register_model,
)

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "MODEL_CONTEXT_WINDOWS",
    "ContextBudget",
    "EffectiveBudget",
    "TokenBudget",
    "TokenBudgetCalculator",
    "register_model",
]


def _int_field(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise BudgetError(f"{name} must be an integer, got {value!r}")
    return value


@dataclass(frozen=True)
class EffectiveBudget:
    """What remains for selectable content after reserves, pins and the safety margin."""

    max_tokens: int
    target_tokens: int


@suggest_keywords
@dataclass(frozen=True)
class ContextBudget:
    """Token budget constraints, validated at construction by Cupel's seven rules (``docs/concepts.md#budgets``).

    ``target_tokens`` defaults to ``max_tokens``.  Instances are immutable.

    >>> ContextBudget(max_tokens=8000, output_reserve=1000).effective().max_tokens
    7000
    >>> ContextBudget(max_tokens=100, target_tokens=200)
    Traceback (most recent call last):
    ...
    tokenbox_core.errors.BudgetError: target_tokens (200) must be <= max_tokens (100)
    """

    max_tokens: int
    target_tokens: int | None = None
    output_reserve: int = 0
    reserved_slots: Mapping[str, int] = field(default_factory=dict)
    estimation_safety_margin_percent: float = 0.0

    def __post_init__(self) -> None:
        max_tokens = _int_field("max_tokens", self.max_tokens)
        target = max_tokens if self.target_tokens is None else _int_field("target_tokens", self.target_tokens)
        reserve = _int_field("output_reserve", self.output_reserve)
        if max_tokens < 0:
            raise BudgetError(f"max_tokens must be >= 0, got {max_tokens}")
        if target < 0:
            raise BudgetError(f"target_tokens must be >= 0, got {target}")
        if target > max_tokens:
            raise BudgetError(f"target_tokens ({target}) must be <= max_tokens ({max_tokens})")
        if reserve < 0:
            raise BudgetError(f"output_reserve must be >= 0, got {reserve}")
        if reserve > max_tokens:
            raise BudgetError(f"output_reserve ({reserve}) must be <= max_tokens ({max_tokens})")
        margin = self.estimation_safety_margin_percent
        if isinstance(margin, bool) or not isinstance(margin, int | float):
            raise BudgetError(f"estimation_safety_margin_percent must be a number, got {margin!r}")
        if not (math.isfinite(margin) and 0.0 <= margin <= 100.0):
            raise BudgetError(f"estimation_safety_margin_percent must be between 0 and 100, got {margin}")
        if not isinstance(self.reserved_slots, Mapping):
            raise BudgetError(f"reserved_slots must be a mapping of kind to int, got {self.reserved_slots!r}")
        slots = {}
        for kind in sorted(self.reserved_slots, key=str):
            value = _int_field(f"reserved_slots[{kind!r}]", self.reserved_slots[kind])
            if value < 0:
                raise BudgetError(f"reserved_slots[{kind!r}] must be >= 0, got {value}")
            slots[str(kind)] = value
        object.__setattr__(self, "max_tokens", max_tokens)
        object.__setattr__(self, "target_tokens", target)
        object.__setattr__(self, "output_reserve", reserve)
        object.__setattr__(self, "reserved_slots", FrozenDict(slots))
        object.__setattr__(self, "estimation_safety_margin_percent", float(margin))

    @property
    def reserved_tokens(self) -> int:
        return sum(self.reserved_slots.values())

    @property
    def room(self) -> int:
        """The window less the output reserve and the reserved slots (never below 0), before the safety margin:
        what the critical sections and the rest may take together (:attr:`capacity` is it after the margin).

        >>> budget = ContextBudget(8000, output_reserve=1000, reserved_slots={"tools": 500},
        ...                        estimation_safety_margin_percent=10)
        >>> budget.room, budget.capacity
        (6500, 5850)
        """
        return max(0, self.max_tokens - self.output_reserve - self.reserved_tokens)

    @property
    def capacity(self) -> int:
        """What the messages may use: ``max_tokens`` less the output reserve and the reserved slots (and the
        safety margin) — the effective max with nothing pinned, the one capacity every path fits to.

        >>> ContextBudget(8000, output_reserve=1000, reserved_slots={"tools": 500}).capacity
        6500
        """
        return self.effective().max_tokens

    def effective(self, pinned_tokens: int = 0) -> EffectiveBudget:
        """Cupel's effective max and target (``docs/concepts.md#budgets``), floors and clamps included."""
        pinned_tokens = _int_field("pinned_tokens", pinned_tokens)
        if pinned_tokens < 0:
            raise BudgetError(f"pinned_tokens must be >= 0, got {pinned_tokens}")
        target = self.max_tokens if self.target_tokens is None else self.target_tokens
        reserved = self.reserved_tokens
        eff_max = max(0, self.room - pinned_tokens)
        eff_target = max(0, target - pinned_tokens - reserved)
        eff_target = min(eff_target, eff_max)
        if self.estimation_safety_margin_percent > 0:
            multiplier = 1.0 - self.estimation_safety_margin_percent / 100.0
            eff_max = math.floor(eff_max * multiplier)
            eff_target = math.floor(eff_target * multiplier)
            eff_target = min(eff_target, eff_max)
        return EffectiveBudget(max_tokens=eff_max, target_tokens=eff_target)

    def to_dict(self) -> dict[str, Any]:
        return {
            "max_tokens": self.max_tokens,
            "target_tokens": self.target_tokens,
            "output_reserve": self.output_reserve,
            "reserved_slots": dict(self.reserved_slots),
            "estimation_safety_margin_percent": self.estimation_safety_margin_percent,
        }

    @classmethod
    def coerce(cls, budget: int | ContextBudget) -> ContextBudget:
        """An int budget is ``ContextBudget(max_tokens=budget)``."""
        if isinstance(budget, ContextBudget):
            return budget
        if isinstance(budget, float) and not math.isfinite(budget):
            raise BudgetError(f"the budget must be a finite number of tokens, got {budget}")
        return cls(max_tokens=_int_field("budget", budget))
