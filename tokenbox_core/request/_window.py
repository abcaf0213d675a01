"""The window of one model call in numbers: what the request may count, when to fit it, and what a fit keeps.

The vocabulary is LangChain's ``SummarizationMiddleware``'s, framework-neutral:
a **size** (:data:`ContextSize`) is ``("tokens", n)``, ``("fraction", f)`` of
the window's limit (the window less the output reserve) or ``("messages",
n)``; a **trigger** (:data:`Trigger`) is a size, a dict of sizes that must all
be reached (``{"tokens": 4000, "messages": 10}``) or a list of those of which
any one suffices, reached at its threshold (``>=``, as LangChain's).

:func:`resolve_window` is the window arithmetic every adapter shares: the
larger of the window's own output reserve and the one the caller read from its framework;
the tool schemas' tokens reserved (``reserved_slots["tools"]``: they are sent
whatever happens); ``keep`` as the budget's target; the trigger's thresholds
in tokens.  Reading the window and the reserve from a framework's model is
the adapter's part.

>>> check_size("keep", ("fraction", 0.5))
('fraction', 0.5)
>>> check_trigger([("messages", 50), {"tokens": 4000, "fraction": 0.5}])
((('messages', 50),), (('tokens', 4000), ('fraction', 0.5)))
>>> window = resolve_window(8000, output_reserve=1000, tools=300, trigger=check_trigger(("fraction", 0.8)),
...                         keep=("fraction", 0.5))
>>> window.limit, window.budget.capacity, window.budget.target_tokens, window.trigger
(7000, 6700, 3800, ((5600, None),))
>>> window.due(messages=12, size=lambda: 5600), window.due(messages=12, size=lambda: 5599)
(True, False)
>>> check_size("keep", ("tokens", 0))
Traceback (most recent call last):
...
tokenbox_core.errors.BudgetError: keep=('tokens', 0): a token count must be an integer >= 1, e.g. ('tokens', 3000)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tokenbox_core._budget import ContextBudget
from tokenbox_core.errors import BudgetError

__all__ = [
    "ContextSize",
    "RequestWindow",
    "Trigger",
    "check_size",
    "check_trigger",
    "keep_tokens",
    "reached",
    "resolve_window",
    "thresholds",
]

ContextSize = tuple[Literal["tokens", "fraction", "messages"], int | float]
"""``("tokens", n)``, ``("fraction", f)`` with ``0 < f <= 1`` of the window's limit, or ``("messages", n)``:
LangChain's ``SummarizationMiddleware`` vocabulary for ``trigger`` and ``keep``."""

Trigger = tuple[tuple[ContextSize, ...], ...]
"""A checked trigger: clauses of which any one suffices, each a tuple of sizes that must all be reached."""

_KINDS = ("tokens", "fraction", "messages")


def check_size(name: str, value: Any) -> ContextSize:
    """``value`` as a :data:`ContextSize`, or :class:`~tokenbox_core.errors.BudgetError` saying what is wrong."""
    if not (isinstance(value, tuple | list) and len(value) == 2 and value[0] in _KINDS):
        raise BudgetError(
            f"{name}={value!r} is not a context size: use ('tokens', n), ('fraction', f) or ('messages', n), "
            f"e.g. {name}=('fraction', 0.8)"
        )
    kind, amount = value[0], value[1]
    if kind == "fraction":
        if isinstance(amount, bool) or not isinstance(amount, int | float) or not 0 < amount <= 1:
            raise BudgetError(f"{name}={tuple(value)!r}: a fraction must be a number in (0, 1], e.g. ('fraction', 0.8)")
        return ("fraction", float(amount))
    if isinstance(amount, bool) or not isinstance(amount, int) or amount < 1:
        example = "('tokens', 3000)" if kind == "tokens" else "('messages', 20)"
        what = "token count" if kind == "tokens" else "message count"
        raise BudgetError(f"{name}={tuple(value)!r}: a {what} must be an integer >= 1, e.g. {example}")
    return (kind, amount)


def check_trigger(value: Any) -> Trigger:
    """``trigger`` as clauses (OR of ANDs): a :data:`ContextSize`, a dict of kinds to amounts (all must be reached)
    or a list of those (any one suffices; an empty list never triggers); :class:`BudgetError` otherwise."""
    if isinstance(value, tuple | list) and len(value) == 2 and isinstance(value[0], str):
        return ((check_size("trigger", value),),)
    if isinstance(value, Mapping):
        return (_clause(value),)
    if isinstance(value, list | tuple):
        return tuple(_clause(v) if isinstance(v, Mapping) else (check_size("trigger", v),) for v in value)
    raise BudgetError(
        f"trigger={value!r} is not a trigger: use a size ('tokens', n) / ('fraction', f) / ('messages', n), a dict "
        f"of them that must all be reached ({{'tokens': 4000, 'messages': 10}}), or a list of which any one suffices"
    )


def _clause(value: Mapping[Any, Any]) -> tuple[ContextSize, ...]:
    unknown = [k for k in value if k not in _KINDS]
    if not value or unknown:
        raise BudgetError(
            f"trigger clause {dict(value)!r}: its keys must be 'tokens', 'fraction' or 'messages' (at least one), "
            f"e.g. {{'tokens': 4000, 'messages': 10}}"
        )
    return tuple(check_size("trigger", (kind, value[kind])) for kind in _KINDS if kind in value)


def thresholds(trigger: Trigger, limit: int) -> tuple[tuple[int | None, int | None], ...]:
    """Each clause's (tokens, messages) thresholds; a fraction of ``limit`` is a token threshold of at least 1.

    >>> thresholds(check_trigger({"fraction": 0.5, "messages": 10}), 1000)
    ((500, 10),)
    """
    out = []
    for clause in trigger:
        tokens = [int(n) if k == "tokens" else max(1, math.floor(n * limit)) for k, n in clause if k != "messages"]
        count = [int(n) for k, n in clause if k == "messages"]
        out.append((max(tokens) if tokens else None, max(count) if count else None))
    return tuple(out)


def reached(clauses: Sequence[tuple[int | None, int | None]], messages: int, size: Callable[[], int]) -> bool:
    """Whether one of the (tokens, messages) ``clauses`` holds for ``messages`` messages of ``size()`` tokens
    (counted only if a clause needs it)."""
    for tokens, count in clauses:
        if (count is None or messages >= count) and (tokens is None or size() >= tokens):
            return True
    return False


def keep_tokens(keep: ContextSize, limit: int) -> int:
    """The tokens ``keep`` stands for in a window whose limit is ``limit``: ``("tokens", n)`` is ``n``,
    ``("fraction", f)`` is ``floor(f * limit)``; ``("messages", n)`` depends on the messages, so the caller
    counts its newest ``n`` and passes ``("tokens", count)`` (:class:`BudgetError` otherwise).

    >>> keep_tokens(("fraction", 0.5), 7001), keep_tokens(("tokens", 3000), 7001)
    (3500, 3000)
    """
    if keep[0] == "messages":
        raise BudgetError(
            f"keep={tuple(keep)!r} counts messages: count the newest {keep[1]} messages and pass "
            f"keep=('tokens', count), or keep a number of tokens or a fraction of the window"
        )
    return int(keep[1]) if keep[0] == "tokens" else math.floor(keep[1] * limit)


@dataclass(frozen=True)
class RequestWindow:
    """The budget of one model call: ``budget`` for the system message and the messages (the tool schemas'
    tokens in ``reserved_slots["tools"]``, ``keep`` as its target), and the ``trigger``: clauses of
    (tokens, messages) thresholds (None: not part of the clause), any one of which suffices; None when no
    trigger was given."""

    budget: ContextBudget
    trigger: tuple[tuple[int | None, int | None], ...] | None = None

    @property
    def limit(self) -> int:
        """What the whole request (system message, tool schemas and messages) may count: the window less the
        output reserve."""
        return self.budget.max_tokens - self.budget.output_reserve

    def due(self, messages: int, size: Callable[[], int]) -> bool:
        """Whether ``messages`` messages of ``size()`` tokens (the system message included, the schemas aside)
        must be fitted: there is no trigger (a fit returns what fits unchanged), one is reached, or they are
        over the window with the reserved slots."""
        if self.trigger is None:
            return True
        return reached(self.trigger, messages, size) or size() + self.budget.reserved_tokens > self.limit


def resolve_window(
    window: int | ContextBudget,
    *,
    output_reserve: int = 0,
    tools: int = 0,
    trigger: Trigger | None = None,
    keep: ContextSize | None = None,
) -> RequestWindow:
    """The :class:`RequestWindow` of one call (see the module docstring).

    Args:
        window: the model's input window, or a ``ContextBudget`` (its reserves, slots, target and margin kept).
        output_reserve: the answer's tokens; the larger of it and the window's own ``output_reserve`` is kept
            (the rule :meth:`ModelRequest.budget <tokenbox_core.request.ModelRequest.budget>` follows).
        tools: the tool schemas' tokens (reserved as ``reserved_slots["tools"]``).
        trigger: a checked trigger (:func:`check_trigger`), its fractions taken of the limit.
        keep: ``("tokens", n)`` or ``("fraction", f)`` of the limit: what a fitted request keeps beside the
            schemas (the budget's target, never above the window's own target).

    >>> resolve_window(1000, output_reserve=200, tools=900)
    Traceback (most recent call last):
    ...
    tokenbox_core.errors.BudgetError: the window of 1,000 tokens leaves no room for messages: the output reserve \
takes 200 and the tool schemas 900; raise the budget, lower the output reserve (output_reserve=...) or bind fewer tools
    """
    base = ContextBudget.coerce(window)
    out = max(base.output_reserve, output_reserve)
    if base.max_tokens - out - tools <= 0:
        raise BudgetError(
            f"the window of {base.max_tokens:,} tokens leaves no room for messages: the output reserve takes "
            f"{out:,} and the tool schemas {tools:,}; raise the budget, lower the output reserve "
            f"(output_reserve=...) or bind fewer tools"
        )
    target = None if base.target_tokens is None or base.target_tokens >= base.max_tokens else base.target_tokens
    limit = base.max_tokens - out
    if keep is not None:
        wanted = tools + keep_tokens(keep, limit)
        target = wanted if target is None else min(target, wanted)
    if target is not None:
        target = max(0, min(target, base.max_tokens))
    slots = {**base.reserved_slots, "tools": tools} if tools else dict(base.reserved_slots)
    fitted = ContextBudget(
        max_tokens=base.max_tokens,
        target_tokens=target,
        output_reserve=out,
        reserved_slots=slots,
        estimation_safety_margin_percent=base.estimation_safety_margin_percent,
    )
    return RequestWindow(fitted, None if trigger is None else thresholds(trigger, limit))
