"""Budgets: ``ContextBudget`` (Cupel's budget, ``docs/concepts.md#budgets``) and the model-aware
``TokenBudgetCalculator`` (``docs/adr/0039-token-budget-allocation.md``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tokenbox_core.errors import BudgetError
from tokenbox_core.frozen import FrozenDict
from tokenbox_core.logs import warn_once
from tokenbox_core.tokens import (
    PRIMING_TOKENS,
    TokenCounter,
    get_counter,
    message_token_count,
    register_model_encoding,
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

    def effective(self, pinned_tokens: int = 0) -> EffectiveBudget:
        """Cupel's effective max and target (``docs/concepts.md#budgets``), floors and clamps included."""
        pinned_tokens = _int_field("pinned_tokens", pinned_tokens)
        if pinned_tokens < 0:
            raise BudgetError(f"pinned_tokens must be >= 0, got {pinned_tokens}")
        target = self.max_tokens if self.target_tokens is None else self.target_tokens
        reserved = self.reserved_tokens
        eff_max = max(0, self.max_tokens - self.output_reserve - pinned_tokens - reserved)
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


# --------------------------------------------------------------------------- calculator

MODEL_CONTEXT_WINDOWS: dict[str, int] = {
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "gpt-3.5-turbo-16k": 16_385,
}
"""Context windows by model (``docs/adr/0039-token-budget-allocation.md``). Extend with :func:`register_model`."""

DEFAULT_CONTEXT_WINDOW = 8_192
"""Conservative fallback for unknown models."""

RESPONSE_RESERVE_RATIO = 0.15
RESPONSE_RESERVE_MIN = 500
RESPONSE_RESERVE_MAX = 4_096
SAFETY_BUFFER_RATIO = 0.05


def register_model(name: str, context_window: int, encoding: str | None = None) -> None:
    """Teach TokenBox a model's window (and tiktoken encoding) without editing the library.

    >>> register_model("acme-llm", 32_000, encoding="cl100k_base")
    >>> MODEL_CONTEXT_WINDOWS["acme-llm"]
    32000
    """
    window = _int_field("context_window", context_window)
    if window <= 0:
        raise BudgetError(f"context_window must be > 0, got {window}")
    MODEL_CONTEXT_WINDOWS[name] = window
    if encoding is not None:
        register_model_encoding(name, encoding)


@dataclass(frozen=True)
class TokenBudget:
    """How many tokens remain for memory injection (``docs/adr/0039-token-budget-allocation.md``)."""

    model: str
    context_window: int
    messages_tokens: int
    directive_tokens: int
    response_reserve: int
    safety_buffer: int
    memory_tokens: int
    is_constrained: bool

    def to_context_budget(self) -> ContextBudget:
        """The same reserves as a ``ContextBudget`` for a Token Box layout."""
        return ContextBudget(
            max_tokens=self.context_window,
            output_reserve=min(self.context_window, self.response_reserve + self.safety_buffer),
        )


class TokenBudgetCalculator:
    """Calculates the exact token budget for memory injection (``docs/adr/0039-token-budget-allocation.md``).

    Reserves 15% of the window for the response (min 500, max 4,096), 5% as a
    safety buffer, the directive in full, and the messages with their chat
    overhead; what remains is ``memory_tokens``.  Messages may be dicts or
    objects with ``.role``/``.content``.  Unknown models use the 8,192-token
    fallback window and the cl100k_base encoding, without raising.
    """

    def __init__(self, counter: str | TokenCounter | None = None) -> None:
        self._counter = counter

    def _counter_for(self, model: str) -> TokenCounter:
        return get_counter(self._counter if self._counter is not None else model)

    def count_tokens(self, text: str, model: str) -> int:
        return self._counter_for(model).count(text)

    def count_messages_tokens(self, messages: Iterable[Any], model: str) -> int:
        counter = self._counter_for(model)
        return PRIMING_TOKENS + sum(message_token_count(m, counter) for m in messages)

    def calculate(self, model: str, messages: Iterable[Any], directive: str = "") -> TokenBudget:
        context_window = MODEL_CONTEXT_WINDOWS.get(model, DEFAULT_CONTEXT_WINDOW)
        if model not in MODEL_CONTEXT_WINDOWS:
            warn_once(
                "unknown-window",
                model,
                f"unknown model {model!r}: assuming the {DEFAULT_CONTEXT_WINDOW:,}-token fallback context window "
                f"(register it with register_model(name, window))",
            )
        messages_tokens = self.count_messages_tokens(messages, model)
        directive_tokens = self.count_tokens(directive, model) if directive else 0
        response_reserve = max(
            RESPONSE_RESERVE_MIN, min(RESPONSE_RESERVE_MAX, int(context_window * RESPONSE_RESERVE_RATIO))
        )
        safety_buffer = int(context_window * SAFETY_BUFFER_RATIO)
        consumed = messages_tokens + directive_tokens + response_reserve + safety_buffer
        memory_tokens = max(0, context_window - consumed)
        return TokenBudget(
            model=model,
            context_window=context_window,
            messages_tokens=messages_tokens,
            directive_tokens=directive_tokens,
            response_reserve=response_reserve,
            safety_buffer=safety_buffer,
            memory_tokens=memory_tokens,
            is_constrained=memory_tokens < 1_000,
        )
