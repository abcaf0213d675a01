"""``trim_messages``: a drop-in for ``langchain_core.messages.trim_messages``."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Literal, cast

from langchain_core.messages import BaseMessage
from langchain_core.prompt_values import PromptValue
from langchain_core.runnables import Runnable, RunnableLambda

from tokenbox_core import ContextBudget
from tokenbox_core.chat import tool_groups
from tokenbox_langchain._counting import CounterSpec, MessageCounter
from tokenbox_langchain._fit import FitOptions, MessageTypes, fit_messages, matches, neutral
from tokenbox_langchain._messages import to_messages

__all__ = ["trim_messages"]


def _default_text_splitter(text: str) -> list[str]:
    """LangChain's default: split on newlines, keeping them."""
    splits = text.split("\n")
    return [s + "\n" for s in splits[:-1]] + splits[-1:]


def _end_on(messages: list[BaseMessage], end_on: MessageTypes) -> list[BaseMessage]:
    """Drop trailing messages until one of ``end_on``'s types, whole tool groups at a time."""
    groups = tool_groups(neutral(messages))
    end = len(messages)
    gone: set[int] = set()
    while end > 0:
        i = end - 1
        if i in gone:
            end -= 1
            continue
        if matches(messages[i], end_on):
            break
        gone.update(groups.unit(i))
        end -= 1
    return [m for i, m in enumerate(messages[:end]) if i not in gone]


def trim_messages(
    messages: Iterable[Any] | PromptValue | None = None,
    *,
    max_tokens: int,
    token_counter: CounterSpec,
    strategy: Literal["first", "last"] = "last",
    allow_partial: bool = False,
    end_on: MessageTypes | None = None,
    start_on: MessageTypes | None = None,
    include_system: bool = False,
    text_splitter: Callable[[str], list[str]] | Any | None = None,
    cache_aware: Any = False,
    on_invalid: Literal["raise", "repair"] = "raise",
) -> list[BaseMessage] | Runnable[Any, list[BaseMessage]]:
    """Trim messages to at most ``max_tokens``: LangChain's ``trim_messages``, on the TokenBox core.

    Same parameters and the same results as ``langchain_core.messages.trim_messages``
    wherever LangChain's behaviour is well-defined; called without messages
    it returns a Runnable.  ``token_counter`` takes every shape LangChain
    takes (a function over a list of messages, a function over one message,
    a model with ``get_num_tokens_from_messages``, ``"approximate"``, ``len``)
    and also TokenBox counter names (``"gpt-4o"``, ``"o200k_base"``) for exact
    chat counts.

    Deliberate differences:

    1. **No orphans.** An ``AIMessage`` with ``tool_calls`` and all its
       ``ToolMessage`` results are kept or removed together (``end_on`` and
       ``start_on`` remove whole groups too): never a tool result without its
       call, never a call without its results.
    2. **Never over ``max_tokens``.** A system message (``include_system``)
       that alone exceeds the budget raises
       :class:`~tokenbox_langchain._fit.CriticalMessagesOverflow` instead of
       being returned over budget.
    3. **``start_on`` never empties the history.** The latest message of a
       ``start_on`` type is kept (the start of the turn), so an agent loop
       whose tool steps fill the budget keeps its human message and the newest
       steps instead of collapsing to nothing; if that message alone does not
       fit, ``CriticalMessagesOverflow`` says so.  When no message of that type
       exists the messages are returned as trimmed.
    4. **Per-message counters are detected reliably**, from resolved type
       hints (postponed string annotations included) or, for lambdas and
       un-annotated functions, by trying the counter on an empty list.
       LangChain compares the first parameter's annotation with
       ``BaseMessage``, which fails for those.
    5. **Each message is counted at most once per call**; list
       counters are applied to one message at a time, and what they charge for
       an empty list (e.g. reply priming) is counted once.  LangChain re-counts
       growing prefixes during its binary search.
    6. **The newest agent step is never dropped.** With ``strategy="last"``, the
       last ``AIMessage`` with ``tool_calls`` and all its results (when no
       ``HumanMessage`` follows them) is kept; a result too large for
       ``max_tokens`` is returned as its head and tail with a note naming it
       and the characters cut (a copy of the ``ToolMessage``, same id and
       ``tool_call_id``), where LangChain would drop it
       (the core's newest-step rule, :func:`tokenbox_core.chat.fit_conversation`).

    Beyond LangChain's parameters, ``cache_aware=True`` (or a
    :class:`tokenbox_core.cache.CacheWindow`) evicts history in prefix-stable
    blocks so a provider's prompt cache keeps serving it (``strategy="last"``
    only; see :mod:`tokenbox_core.cache`).  ``on_invalid``: what a list a provider would reject does (a
    tool result without its call, a call without results): ``"raise"`` (the default) a
    :class:`~tokenbox_core.errors.ConversationError` naming the message and the fix, or ``"repair"``: leave
    such messages out first.

    Raises:
        ValueError: ``start_on`` or ``include_system`` with ``strategy="first"``,
            an unknown strategy, or a negative ``max_tokens``.
        CriticalMessagesOverflow: see 2 and 3.
    """
    if messages is None:

        def trim(value: Any) -> list[BaseMessage]:
            return cast(
                list[BaseMessage],
                trim_messages(
                    value,
                    max_tokens=max_tokens,
                    token_counter=token_counter,
                    strategy=strategy,
                    allow_partial=allow_partial,
                    end_on=end_on,
                    start_on=start_on,
                    include_system=include_system,
                    text_splitter=text_splitter,
                    cache_aware=cache_aware,
                    on_invalid=on_invalid,
                ),
            )

        return RunnableLambda(trim, name="trim_messages")
    if start_on and strategy == "first":
        raise ValueError("start_on parameter is only valid with strategy='last'")
    if include_system and strategy == "first":
        raise ValueError("include_system parameter is only valid with strategy='last'")
    if strategy not in ("first", "last"):
        raise ValueError(f"Unrecognized strategy={strategy!r}. Supported strategies are 'last' and 'first'.")
    budget = ContextBudget.coerce(max_tokens)
    splitter: Callable[[str], list[str]] | None = None
    if allow_partial:
        splitter = getattr(text_splitter, "split_text", None) or text_splitter or _default_text_splitter

    msgs = to_messages(messages)
    if strategy == "last" and end_on:
        msgs = _end_on(msgs, end_on)
    options = FitOptions(
        system="first" if include_system else "none",
        anchor=start_on or None,
        start_on=start_on or None,
        eviction="oldest" if strategy == "last" else "newest",
        partial=splitter,
        cache_aware=cache_aware,
        on_invalid=on_invalid,
    )
    result = fit_messages(msgs, MessageCounter(token_counter), budget, options)
    out = result.messages
    if strategy == "first" and end_on:
        out = _end_on(out, end_on)
    return out
