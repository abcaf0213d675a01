"""``TokenBoxMessages``: a Runnable that fits a conversation into a token budget.

>>> from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
>>> fit = TokenBoxMessages(budget=60, counter="whitespace")
>>> history = [SystemMessage("be brief")]
>>> for i in range(6):
...     history += [HumanMessage(f"question {i} about things"), AIMessage(f"answer {i} with some words")]
>>> history.append(HumanMessage("final question"))
>>> [m.content for m in fit.invoke(history)]
['be brief', 'question 4 about things', 'answer 4 with some words', 'question 5 about things', \
'answer 5 with some words', 'final question']
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Literal

from langchain_core.messages import BaseMessage, HumanMessage, convert_to_messages
from langchain_core.prompt_values import ChatPromptValue, PromptValue
from langchain_core.runnables import RunnableSerializable
from pydantic import ConfigDict, PrivateAttr, ValidationInfo, field_validator

from tokenbox_core import BudgetError, ContextBudget
from tokenbox_core.arguments import StrictArguments, no_bool
from tokenbox_core.models import find_model_profile
from tokenbox_langchain._counting import MessageCounter
from tokenbox_langchain._fit import FitOptions, FitResult, MessageTypes, fit_messages
from tokenbox_langchain._runs import LAYOUT_EVENT, TracedFit

__all__ = ["LAYOUT_EVENT", "TokenBoxMessages", "budget_from", "to_messages"]


def to_messages(value: Any) -> list[BaseMessage]:
    """A ``PromptValue``, a string or a sequence of message-likes as a list of messages."""
    if isinstance(value, PromptValue):
        return value.to_messages()
    if isinstance(value, str):
        return [HumanMessage(content=value)]
    if isinstance(value, BaseMessage):
        return [value]
    if isinstance(value, Iterable):
        out = list(value)
        if all(issubclass(cls, BaseMessage) for cls in set(map(type, out))):  # the usual list, its classes at C speed
            return out
        known: set[type] = set()  # message classes already checked: one isinstance per class, not per message
        for i, m in enumerate(out):
            cls = type(m)
            if cls in known:
                continue
            if isinstance(m, BaseMessage):
                known.add(cls)
            else:
                try:
                    return convert_to_messages(out)
                except (NotImplementedError, ValueError, TypeError, KeyError) as exc:
                    raise TypeError(
                        f"item {i} of the input is {m!r} ({type(m).__name__}); expected messages or message-likes "
                        f"(('human', 'text') tuples, {{'role': ..., 'content': ...}} dicts, strings): {exc}"
                    ) from exc
        return out
    raise TypeError(
        f"expected a PromptValue, a string or a list of messages, got {type(value).__name__}; "
        f"put TokenBoxMessages after a chat prompt or pass messages"
    )


def budget_from(budget: int | ContextBudget | None, max_tokens: int | None, model: Any) -> ContextBudget:
    """The budget: ``budget`` (int or ContextBudget), its max replaced by ``max_tokens`` when given; when neither
    is set, the chat model's profile ``max_input_tokens``, or a known model name's context window with its
    ``max_output_tokens`` as the output reserve (``counter="gpt-4o"``: 128,000 less 16,384)."""
    if budget is None and max_tokens is None:
        profile = getattr(model, "profile", None)
        window = profile.get("max_input_tokens") if isinstance(profile, Mapping) else None
        if isinstance(window, int) and not isinstance(window, bool):
            return ContextBudget(max_tokens=window)
        known = find_model_profile(model) if isinstance(model, str) else None
        if known is not None:  # "gpt-4o": its window less its largest answer (the layout's budget shows both)
            reserve = min(known.max_output_tokens or 0, known.context_window // 2)
            return ContextBudget(max_tokens=known.context_window, output_reserve=reserve)
        raise BudgetError(
            "no token budget: pass budget=... or max_tokens=..., or counter=<a model name TokenBox knows, or a "
            "chat model whose profile has 'max_input_tokens'>"
        )
    if budget is None:
        return ContextBudget.coerce(max_tokens)  # type: ignore[arg-type]
    resolved = ContextBudget.coerce(budget)
    if max_tokens is None or max_tokens == resolved.max_tokens:
        return resolved
    target = resolved.target_tokens
    return ContextBudget(
        max_tokens=max_tokens,
        target_tokens=None if target is None or target >= resolved.max_tokens else min(target, max_tokens),
        output_reserve=resolved.output_reserve,
        reserved_slots=resolved.reserved_slots,
        estimation_safety_margin_percent=resolved.estimation_safety_margin_percent,
    )


class TokenBoxMessages(StrictArguments, TracedFit, RunnableSerializable[Any, Any]):
    """Fits a conversation into a token budget, deterministically, inside an LCEL chain.

    ``prompt | TokenBoxMessages(budget=8_000, counter="gpt-4o") | model``

    Input: a ``PromptValue``, a list of messages or message-likes, or a string;
    output: the same kind (a ``ChatPromptValue`` for a ``PromptValue``).

    What is kept:

    - the leading system message(s) and the latest human message are critical:
      never evicted (if they alone exceed the budget,
      :class:`~tokenbox_langchain._fit.CriticalMessagesOverflow` says so);
    - the rest is history, evicted oldest first by the core;
    - an ``AIMessage`` with ``tool_calls`` and all its ``ToolMessage`` results
      are one atomic group: never an orphan result, never a call without its
      results (parallel calls included);
    - the history then starts on a ``start_on`` message (whole tool groups are
      dropped until one), stopping at a critical message: an agent loop after
      the latest human message is never emptied;
    - per-message overrides: ``additional_kwargs["tokenbox"] = {"priority": n}``
      (lower is evicted first) or ``{"critical": True/False}``.

    Sizes are exact, one count per message (see
    :mod:`tokenbox_langchain._counting`).  The layout report is sent to the
    callbacks as the custom event ``"tokenbox_layout"``, and its headline
    numbers are in the run's metadata (``tokenbox_budget``,
    ``tokenbox_total_tokens``, ``tokenbox_kept``, ``tokenbox_removed``,
    ``tokenbox_fingerprint``).  ``max_tokens`` can be
    made configurable per call with ``configurable_fields``.
    """

    budget: int | ContextBudget | None = None
    """Token budget: an int, a ``ContextBudget`` (reserves, target, margin), or ``None`` to take
    ``max_input_tokens`` from the profile of the chat model given as ``counter``, or the window of the model
    named as ``counter`` less its output reserve (``"gpt-4o"``: 128,000 with 16,384 reserved)."""

    max_tokens: int | None = None
    """Overrides the budget's ``max_tokens`` (keeping its reserves); meant for ``configurable_fields``."""

    counter: Any = "o200k_base"
    """How messages are counted: a counter or model name (``"gpt-4o"``, ``"o200k_base"``), ``"approximate"``
    (LangChain's approximation), a ``TokenCounter``, a LangChain model (``get_num_tokens_from_messages``),
    or a callable over a list of messages or over one message."""

    keep_system: bool = True
    """Keep the leading system message(s) whatever happens."""

    keep_last_human: bool = True
    """Keep the latest human message whatever happens."""

    start_on: MessageTypes | None = "human"
    """Message type(s) the history must start on after the system message(s); ``None`` to allow any."""

    omission_marker: bool | str = False
    """Leave a message saying how many history messages were removed and their ids: ``True`` for the
    default text, or a template with ``{count}`` and ``{ids}``."""

    marker_type: Literal["system", "human", "ai"] = "system"
    """Message type of the omission marker.  Each history run that lost messages gets one, placed where a
    provider accepts it: a ``"system"`` marker right after the leading system messages, whichever run it
    stands for (a system message never follows a conversation message); a ``"human"`` or ``"ai"`` marker at
    the head of its run's kept messages, except that one not of a ``start_on`` type never opens the
    conversation (it then follows the first message and its tool group).  A message costs the same wherever
    it stands, so the marker is counted exactly in the budget."""

    cache_aware: Any = False
    """``True`` or a :class:`tokenbox_core.cache.CacheWindow`: evict history in prefix-stable blocks so the
    provider's prompt cache keeps serving the prompt (see :mod:`tokenbox_core.cache`); what was cut is replaced
    by one message after the system messages (a summary with ``CacheWindow(summarizer=...)``, else an
    omission marker when ``omission_marker`` is set)."""

    on_invalid: Literal["raise", "repair"] = "raise"
    """Messages a provider would reject (a tool result without its call, a call without results): ``"raise"`` a
    ``ConversationError`` naming the message and the fix, or ``"repair"``: leave them out."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    event_name: ClassVar[str] = LAYOUT_EVENT

    @field_validator("budget", "max_tokens", mode="before")
    @classmethod
    def _not_bool(cls, value: Any, info: ValidationInfo) -> Any:
        return no_bool(str(info.field_name), value)

    _counter: MessageCounter | None = PrivateAttr(default=None)

    @classmethod
    def is_lc_serializable(cls) -> bool:
        return False

    def message_counter(self) -> MessageCounter:
        """The resolved counter (built once per instance)."""
        if self._counter is None:
            self._counter = MessageCounter(self.counter)
        return self._counter

    def resolved_budget(self) -> ContextBudget:
        """The budget this instance lays out into."""
        return budget_from(self.budget, self.max_tokens, self.counter)

    def fit(self, input: Any) -> FitResult:
        """Fit ``input`` and return the full result (messages, core layout, removed messages)."""
        options = FitOptions(
            system="leading" if self.keep_system else "none",
            anchor="human" if self.keep_last_human else None,
            start_on=self.start_on,
            eviction="oldest",
            omission_marker=self.omission_marker,
            marker_type=self.marker_type,
            cache_aware=self.cache_aware,
            on_invalid=self.on_invalid,
        )
        return fit_messages(to_messages(input), self.message_counter(), self.resolved_budget(), options)

    @staticmethod
    def _output(input: Any, result: FitResult) -> Any:
        if isinstance(input, PromptValue):
            return ChatPromptValue(messages=result.messages)
        if isinstance(input, str):
            return "\n".join(m.text for m in result.messages)
        return result.messages

    def _compute(self, input: Any) -> tuple[Any, dict[str, Any]]:
        result = self.fit(input)
        return self._output(input, result), result.report()
