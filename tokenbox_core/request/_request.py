"""The neutral model request: what one model call sends, in the core's terms, counted the way it is sent.

An adapter maps its framework's request to a :class:`ModelRequest` (through the
framework's own converters) and hands it to
:meth:`tokenbox_core.ContextSession.prepare`; the core decides what the
messages are, the adapter maps the answer back.  The window arithmetic is
here, once: :meth:`ModelRequest.budget` is the window less the output reserve,
less what is sent whatever happens (the system text, the tool schemas, the
response-format schema), as a :class:`~tokenbox_core.ContextBudget` whose
:attr:`~tokenbox_core.ContextBudget.capacity` is what the messages may use.

Tool schemas and the response format are counted as the canonical JSON of
their OpenAI shape (``{"type": "function", "function": {...}}``); messages as
:func:`~tokenbox_core.count_message_tokens` counts them (tool-call arguments as
the JSON the provider receives).

>>> request = ModelRequest(
...     [{"role": "user", "content": "Where is the deploy key?", "id": "m1"}],
...     system="Answer briefly.",
...     tools=[{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}],
...     window=8000,
...     output_reserve=1000,
... )
>>> budget = request.budget("o200k_base")
>>> budget.max_tokens, budget.output_reserve, sorted(budget.reserved_slots)
(8000, 1000, ['system', 'tools'])
>>> budget.capacity == 8000 - 1000 - budget.reserved_tokens
True
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tokenbox_core._budget import ContextBudget
from tokenbox_core.errors import BudgetError, ConversationError
from tokenbox_core.tokens import TokenCounter, canonical_json, count_message_tokens, get_counter
from tokenbox_core.tokens._messages import message_token_count

if TYPE_CHECKING:
    from tokenbox_core.compiler import CompiledContext

__all__ = ["ModelRequest", "PreparedRequest", "schema_tokens"]


def schema_tokens(schemas: Sequence[Mapping[str, Any]], counter: TokenCounter | str) -> int:
    """The tokens tool schemas (or a response-format schema) take: each one's canonical JSON, counted."""
    count = get_counter(counter)
    return sum(count.count(canonical_json(dict(s))) for s in schemas)


@dataclass(frozen=True)
class ModelRequest:
    """One model call, neutral (see the module docstring).

    Args:
        messages: the conversation as neutral chat messages (``role``, ``content``, ``tool_calls``,
            ``tool_call_id``), each with the framework's message ``"id"`` where it has one (how
            :meth:`~tokenbox_core.ContextSession.prepare` knows what is archived already).
        system: the system text sent before the messages (reserved, never cut), or ``None``.
        tools: the tool schemas sent with the call, in OpenAI's shape.
        response_format: the structured-output schema sent with the call, or ``None``.
        window: the model's input window in tokens, or a :class:`~tokenbox_core.ContextBudget`.
        output_reserve: tokens kept for the answer; with a budget's own reserve, the larger of the two is kept (a
            provider checks the input against the window less the answer's maximum once, not twice).
        query: what recall searches the archive for (``None``: the newest user message), e.g. the input a
            LlamaIndex ``Memory.get(input=...)`` is given.
    """

    messages: Sequence[Mapping[str, Any]]
    system: str | None = None
    tools: Sequence[Mapping[str, Any]] = ()
    response_format: Mapping[str, Any] | None = None
    window: int | ContextBudget = 0
    output_reserve: int = 0
    query: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "messages", tuple(self.messages))
        object.__setattr__(self, "tools", tuple(self.tools))
        for i, m in enumerate(self.messages):
            if not isinstance(m, Mapping) or "role" not in m:
                raise ConversationError(
                    f"ModelRequest message {i} is {type(m).__name__} without a role; pass neutral message dicts "
                    "such as {'role': 'user', 'content': 'hi'} (the adapters convert framework messages)"
                )
        for i, t in enumerate(self.tools):
            if not isinstance(t, Mapping):
                raise ConversationError(f"ModelRequest tool {i} is a {type(t).__name__}; pass OpenAI tool schemas")
        if self.system is not None and not isinstance(self.system, str):
            raise ConversationError(f"ModelRequest system must be a string or None, got {type(self.system).__name__}")
        if self.query is not None and not isinstance(self.query, str):
            raise ConversationError(f"ModelRequest query must be a string or None, got {type(self.query).__name__}")
        window = self.window
        if isinstance(window, float) and not math.isfinite(window):
            raise BudgetError(f"ModelRequest window must be a finite number of tokens, got {window}")
        if not isinstance(window, ContextBudget) and (
            isinstance(window, bool) or not isinstance(window, int) or window <= 0
        ):
            raise BudgetError(
                f"ModelRequest window must be a positive integer (the model's input window) or a ContextBudget, "
                f"got {window!r}"
            )
        reserve = self.output_reserve
        if isinstance(reserve, bool) or not isinstance(reserve, int) or reserve < 0:
            raise BudgetError(f"ModelRequest output_reserve must be an integer >= 0, got {reserve!r}")

    def schemas(self) -> list[Mapping[str, Any]]:
        """Everything sent as a schema: the tools, then the response format."""
        return [*self.tools, *([self.response_format] if self.response_format is not None else [])]

    def budget(self, counter: TokenCounter | str) -> ContextBudget:
        """The window as a budget: the output reserve kept, the system text and the schemas reserved."""
        base = ContextBudget.coerce(self.window)
        slots = dict(base.reserved_slots)
        if self.system:
            slots["system"] = message_token_count({"role": "system", "content": self.system}, get_counter(counter))
        schemas = self.schemas()
        if schemas:
            slots["tools"] = schema_tokens(schemas, counter)
        return ContextBudget(
            max_tokens=base.max_tokens,
            target_tokens=base.target_tokens,
            output_reserve=max(base.output_reserve, self.output_reserve),
            reserved_slots=slots,
            estimation_safety_margin_percent=base.estimation_safety_margin_percent,
        )

    def tokens(self, counter: TokenCounter | str, messages: Sequence[Mapping[str, Any]] | None = None) -> int:
        """What the request costs as sent (with ``messages`` instead of its own, e.g. the prepared ones): the
        system text and the messages as chat messages, plus the schemas."""
        head = [{"role": "system", "content": self.system}] if self.system else []
        sent = [*head, *(self.messages if messages is None else messages)]
        return count_message_tokens(sent, get_counter(counter)) + schema_tokens(self.schemas(), counter)


@dataclass(frozen=True)
class PreparedRequest:
    """What :meth:`~tokenbox_core.ContextSession.prepare` decided for one model call.

    ``messages``: the neutral messages to send (after the system text); ``sources``: for each, the archived id
    it shows unchanged, or ``None`` (written by the compile: a masked or previewed result — its ``"id"`` is its
    archived id — or the pointer and recalled turns); ``compiled``: the compile (``recalled``, ``masked``,
    ``offloaded``, the trace, ``explain()``); ``tokens``: the request as sent (system text, messages, schemas)."""

    messages: tuple[dict[str, Any], ...]
    sources: tuple[str | None, ...]
    compiled: CompiledContext
    tokens: int
