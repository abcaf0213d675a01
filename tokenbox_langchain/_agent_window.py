"""The window of one agent model call: how many tokens the messages may use, and when to fit them.

:class:`TokenBoxMiddleware <tokenbox_langchain._middleware.TokenBoxMiddleware>`
reads it from the request before it hands the messages to the core:

- the **window**: the ``budget`` given, else the model profile's
  ``max_input_tokens``;
- the **output reserve**: the configured one, else the request's max tokens
  (``model_settings`` or the model's own field), else the profile's
  ``max_output_tokens``, else none;
- the **tool schemas**, counted as the provider receives them — each tool
  through ``convert_to_openai_tool``, its canonical JSON counted — and
  reserved in the budget (``reserved_slots["tools"]``): they are sent as
  tools, never as text.  With a ``response_format``, what ``create_agent``
  adds after the middleware is counted too (:func:`request_schemas`): the
  structured-output tools of a ``ToolStrategy`` (one per schema), or the
  JSON schema of a ``ProviderStrategy`` (sent as ``response_format``); a raw
  schema is resolved as ``create_agent`` resolves it for the request's model;
- ``trigger`` and ``keep`` in :class:`~langchain.agents.middleware.SummarizationMiddleware`'s
  vocabulary, ``("tokens", n)``, ``("fraction", f)`` (of the window less the
  output reserve) or ``("messages", n)``: sizes of the system message and the
  messages, the tool schemas aside (they are sent whatever happens).  A trigger
  is reached at its threshold (``>=``, as LangChain's); like LangChain's, it may
  be a dict of conditions that must all hold (``{"tokens": 4000, "messages":
  10}``) or a list of sizes and dicts of which any one suffices (:func:`check_trigger`).

>>> check_size("keep", ("fraction", 0.5))
('fraction', 0.5)
>>> check_trigger([("messages", 50), {"tokens": 4000, "fraction": 0.5}])
((('messages', 50),), (('tokens', 4000), ('fraction', 0.5)))
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

from langchain_core.utils.function_calling import convert_to_openai_tool

from tokenbox_core import BudgetError, ContextBudget, TokenCounter
from tokenbox_core.tokens import canonical_json

__all__ = [
    "ContextSize",
    "Window",
    "Trigger",
    "check_size",
    "check_trigger",
    "output_reserve",
    "reached",
    "request_schemas",
    "resolve_window",
    "thresholds",
    "tool_tokens",
]

ContextSize = tuple[Literal["tokens", "fraction", "messages"], int | float]
"""``("tokens", n)``, ``("fraction", f)`` with ``0 < f <= 1`` of the window, or ``("messages", n)``:
LangChain's ``SummarizationMiddleware`` vocabulary for ``trigger`` and ``keep``."""

Trigger = tuple[tuple[ContextSize, ...], ...]
"""A checked trigger: clauses of which any one suffices, each a tuple of sizes that must all be reached."""

_KINDS = ("tokens", "fraction", "messages")
_MAX_TOKEN_FIELDS = ("max_tokens", "max_completion_tokens", "max_output_tokens")


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


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _profile(model: Any) -> Mapping[str, Any]:
    profile = getattr(model, "profile", None)
    return profile if isinstance(profile, Mapping) else {}


def output_reserve(model: Any, settings: Mapping[str, Any]) -> int:
    """The tokens the answer may use: the request's max tokens (``model_settings``, then the model's own
    field), else the profile's ``max_output_tokens``, else 0."""
    for source in (settings, getattr(model, "__dict__", {})):
        for name in _MAX_TOKEN_FIELDS:
            found = _int(source.get(name))
            if found is not None:
                return found
    return _int(_profile(model).get("max_output_tokens")) or 0


@dataclass(frozen=True)
class Window:
    """The budget of one model call: ``budget`` for the system message and the messages (the tools' tokens in
    ``reserved_slots["tools"]``, ``keep`` as its target), and the ``trigger``: clauses of (tokens, messages)
    thresholds (None: not part of the clause), any one of which suffices; None when no trigger was given."""

    budget: ContextBudget
    trigger: tuple[tuple[int | None, int | None], ...] | None = None

    @property
    def limit(self) -> int:
        """What the whole request (system message, tool schemas and messages) may count."""
        return self.budget.max_tokens - self.budget.output_reserve


def resolve_window(
    budget: int | ContextBudget | None,
    *,
    model: Any,
    settings: Mapping[str, Any],
    reserve: int | None,
    tools: int,
    trigger: Trigger | None,
    keep: ContextSize | None,
) -> Window:
    """The :class:`Window` of one call (see the module docstring); ``tools`` is the tool schemas' tokens."""
    if budget is None:
        window = _int(_profile(model).get("max_input_tokens"))
        if window is None:
            raise BudgetError(
                f"no token budget for {type(model).__name__}: its profile has no 'max_input_tokens'; pass "
                f"TokenBoxMiddleware(budget=...) (an int or a ContextBudget)"
            )
        base = ContextBudget(max_tokens=window)
    else:
        base = ContextBudget.coerce(budget)
    out = base.output_reserve
    if not out:
        out = reserve if reserve is not None else output_reserve(model, settings)
    room = base.max_tokens - out - tools
    if room <= 0:
        raise BudgetError(
            f"the window of {base.max_tokens:,} tokens leaves no room for messages: the output reserve takes "
            f"{out:,} and the tool schemas {tools:,}; raise the budget, lower the output reserve "
            f"(output_reserve=...) or bind fewer tools"
        )
    target = None if base.target_tokens is None or base.target_tokens >= base.max_tokens else base.target_tokens
    limit = base.max_tokens - out
    if keep is not None:  # ("tokens", n) or ("fraction", f): the middleware turns ("messages", n) into tokens
        wanted = tools + (int(keep[1]) if keep[0] == "tokens" else math.floor(keep[1] * limit))
        target = wanted if target is None else min(target, wanted)
    if target is not None:
        target = max(0, min(target, base.max_tokens))
    clauses = None if trigger is None else thresholds(trigger, limit)
    slots = {**base.reserved_slots, "tools": tools} if tools else dict(base.reserved_slots)
    fitted = ContextBudget(
        max_tokens=base.max_tokens,
        target_tokens=target,
        output_reserve=out,
        reserved_slots=slots,
        estimation_safety_margin_percent=base.estimation_safety_margin_percent,
    )
    return Window(fitted, clauses)


def reached(clauses: Sequence[tuple[int | None, int | None]], messages: int, size: Callable[[], int]) -> bool:
    """Whether one of the (tokens, messages) ``clauses`` holds for ``messages`` messages of ``size()`` tokens
    (counted only if a clause needs it)."""
    for tokens, count in clauses:
        if (count is None or messages >= count) and (tokens is None or size() >= tokens):
            return True
    return False


def thresholds(trigger: Trigger, limit: int) -> tuple[tuple[int | None, int | None], ...]:
    """Each clause's (tokens, messages) thresholds; a fraction of ``limit`` is a token threshold of at least 1."""
    out = []
    for clause in trigger:
        tokens = [int(n) if k == "tokens" else max(1, math.floor(n * limit)) for k, n in clause if k != "messages"]
        count = [int(n) for k, n in clause if k == "messages"]
        out.append((max(tokens) if tokens else None, max(count) if count else None))
    return tuple(out)


def tool_schema(tool: Any) -> dict[str, Any]:
    """A tool as the provider receives it (OpenAI's shape); a provider's built-in tool dict as given."""
    if isinstance(tool, Mapping) and "type" in tool and tool.get("type") != "function":
        return dict(tool)  # a server-side tool (web search, code execution ...): sent as it is
    return convert_to_openai_tool(tool)


def tool_tokens(tools: Sequence[Any], counter: TokenCounter) -> int:
    """The tokens the tool schemas take: each schema's canonical JSON, counted (a schema dict as it is)."""
    return sum(counter.count(canonical_json(tool_schema(t))) for t in tools)


def _provider_strategy(model: Any, tools: Sequence[Any]) -> bool:
    """Whether ``create_agent`` answers a raw schema with the provider's structured output for ``model`` (its own
    test); a tool strategy when that test is not available."""
    try:
        from langchain.agents.factory import _supports_provider_strategy
    except ImportError:  # pragma: no cover - an older or newer langchain without the test: count the tools
        return False
    return bool(_supports_provider_strategy(model, tools=list(tools)))


def request_schemas(request: Any) -> list[dict[str, Any]]:
    """What the provider receives for ``request``'s tools: its tools, then the structured-output tools (a
    ``ToolStrategy``) or JSON schema (a ``ProviderStrategy``) ``create_agent`` adds for its ``response_format``."""
    schemas = [tool_schema(t) for t in request.tools or ()]
    fmt = getattr(request, "response_format", None)
    if fmt is None:
        return schemas
    from langchain.agents.structured_output import AutoStrategy, OutputToolBinding, ProviderStrategy, ToolStrategy

    if not isinstance(fmt, AutoStrategy | ToolStrategy | ProviderStrategy):
        fmt = AutoStrategy(schema=fmt)  # a raw schema, as create_agent reads it
    if isinstance(fmt, AutoStrategy):
        provider = _provider_strategy(request.model, request.tools or ())
        fmt = ProviderStrategy(schema=fmt.schema) if provider else ToolStrategy(schema=fmt.schema)
    if isinstance(fmt, ToolStrategy):
        schemas += [convert_to_openai_tool(OutputToolBinding.from_schema_spec(s).tool) for s in fmt.schema_specs]
    else:
        schemas.append(fmt.to_model_kwargs()["response_format"])
    return schemas
