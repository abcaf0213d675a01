"""What the window of one agent model call is, read from LangChain: the window, the output reserve, the schemas.

:class:`TokenBoxMiddleware <tokenbox_langchain._middleware.TokenBoxMiddleware>`
reads these from the request and hands them to the core's window arithmetic
(:func:`tokenbox_core.request.resolve_window`: reserves, the ``trigger`` and
``keep`` vocabulary of LangChain's ``SummarizationMiddleware``, the budget's
target):

- the **window** (:func:`model_window`): the ``budget`` given, else the model
  profile's ``max_input_tokens``;
- the **output reserve** (:func:`output_reserve`): the configured one, else
  the request's max tokens (``model_settings`` or the model's own field), else
  the profile's ``max_output_tokens``, else none;
- the **tool schemas**, counted as the provider receives them — each tool
  through ``convert_to_openai_tool``, its canonical JSON counted — and
  reserved in the budget (``reserved_slots["tools"]``): they are sent as
  tools, never as text.  With a ``response_format``, what ``create_agent``
  adds after the middleware is counted too (:func:`request_schemas`): the
  structured-output tools of a ``ToolStrategy`` (one per schema), or the
  JSON schema of a ``ProviderStrategy`` (sent as ``response_format``); a raw
  schema is resolved as ``create_agent`` resolves it for the request's model.

>>> tool_schema({"type": "web_search"})  # a provider's built-in tool: sent as it is
{'type': 'web_search'}
>>> def lookup(query: str) -> str:
...     "Look a word up."
...     return query
>>> tool_schema(lookup)["function"]["name"]
'lookup'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.utils.function_calling import convert_to_openai_tool

from tokenbox_core import BudgetError, ContextBudget, TokenCounter
from tokenbox_core.tokens import canonical_json

__all__ = ["model_window", "output_reserve", "request_schemas", "tool_schema", "tool_tokens"]

_MAX_TOKEN_FIELDS = ("max_tokens", "max_completion_tokens", "max_output_tokens")


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


def model_window(budget: int | ContextBudget | None, model: Any) -> int | ContextBudget:
    """The window of a call to ``model``: ``budget`` when given, else its profile's ``max_input_tokens``."""
    if budget is not None:
        return budget
    window = _int(_profile(model).get("max_input_tokens"))
    if window is None:
        raise BudgetError(
            f"no token budget for {type(model).__name__}: its profile has no 'max_input_tokens'; pass "
            f"TokenBoxMiddleware(budget=...) (an int or a ContextBudget)"
        )
    return window


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
