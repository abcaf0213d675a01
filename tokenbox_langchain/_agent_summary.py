"""Summaries for :class:`~tokenbox_langchain._middleware.TokenBoxMiddleware`, and its persistent mode.

A ``summarizer`` is what LangChain's ``SummarizationMiddleware`` takes: a chat
model or a ``"provider:model"`` name (resolved by ``init_chat_model``; it then
writes through :class:`~tokenbox_langchain._summarizer.ChatModelSummarizer`:
the core's prompt, temperature 0, a seed from the block hash), a ``Runnable``
or a callable over the removed messages returning the summary text (or a
message).  A core :class:`~tokenbox_core.session.Summarizer` is taken as it is.

- In the default (view) mode the summary stands for the history a prefix-stable
  cut removed (:class:`~tokenbox_core.cache.CacheWindow`): written once per
  cut, memoised by the removed content.
- In the persistent mode (:func:`compact_state`) the graph state itself is
  compacted once the trigger (default: the window) is reached, to ``keep``
  (default ``("fraction", 0.5)``: half the limit, the limit being the budget less
  its output reserve by the window's own rule, :func:`tokenbox_core.request.resolve_window`,
  and less the summary's room): LangChain's idiom,
  ``RemoveMessage(id=REMOVE_ALL_MESSAGES)`` followed by the summary (a human
  message) and the kept messages.  The newest agent step is kept whole in the
  state even when only its preview fits the target (the core's rule,
  :func:`tokenbox_core.chat.fit_conversation`): the model call previews it, the state never
  loses it.
- On the async path (``awrap_model_call``, ``abefore_model``) a summarizer with
  an async API is awaited — a chat model's or Runnable's ``ainvoke``, an
  ``async def`` callable — never called synchronously inside the event loop
  (:func:`run_awaiting`): the fit runs until it needs a summary it does not
  have, the summary is awaited, and the fit runs again with it (once per cut).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, RemoveMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.constants import TAG_NOSTREAM
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from tokenbox_core import ContextBudget, TokenCounter
from tokenbox_core.cache import CacheWindow
from tokenbox_core.errors import ConfigTypeError
from tokenbox_core.request import ContextSize, keep_tokens, reached, resolve_window, thresholds
from tokenbox_core.tokens import canonical_json, content_text
from tokenbox_langchain._fit import FitOptions, fit_messages, neutral
from tokenbox_langchain._history import from_neutral

if TYPE_CHECKING:
    from tokenbox_langchain._middleware import TokenBoxMiddleware

__all__ = [
    "SUMMARY_CONFIG",
    "SUMMARY_PREFIX",
    "SUMMARY_TOKENS",
    "cache_window",
    "compact_state",
    "core_summarizer",
    "deferred",
    "run_awaiting",
    "summarize",
]

SUMMARY_PREFIX = "Summary of the earlier conversation:\n"
SUMMARY_CONFIG: RunnableConfig = {"metadata": {"lc_source": "tokenbox_summarization"}, "tags": [TAG_NOSTREAM]}
"""The config of every summary call: LangGraph's no-stream tag keeps the summary model's tokens out of an agent's
``stream_mode="messages"`` (as ``SummarizationMiddleware`` does); the metadata names the call in traces."""
SUMMARY_TOKENS = 512
"""The room a summary may take in the persistent mode (it is cut to fit)."""
_DEFAULT_KEEP: ContextSize = ("fraction", 0.5)
_T = TypeVar("_T")

_AWAITED: ContextVar[dict[Any, Any] | None] = ContextVar("tokenbox_awaited_summaries", default=None)
"""Set by :func:`run_awaiting` for the fit it runs: the results awaited so far, by the call's input (none outside)."""


class _Await(Exception):
    """A fit run by :func:`run_awaiting` needs the result of an async call it does not have yet."""

    def __init__(self, key: Any, call: Callable[[], Awaitable[Any]]) -> None:
        super().__init__("a summary is awaited")
        self.key = key
        self.call = call


def deferred(key: Any, sync: Callable[[], Any], call: Callable[[], Awaitable[Any]] | None) -> Any:
    """``sync()``; inside :func:`run_awaiting` with an async ``call``, the result of ``await call()`` instead
    (``key`` names the call by its input: the fit stops, the call is awaited, and the fit runs again)."""
    awaited = _AWAITED.get()
    if awaited is None or call is None:
        return sync()
    if key in awaited:
        return awaited[key]
    raise _Await(key, call)


async def run_awaiting(fit: Callable[[], _T]) -> _T:
    """``fit()``, the summaries it needs awaited through the summarizer's async API (see the module docstring)."""
    awaited: dict[Any, Any] = {}
    token = _AWAITED.set(awaited)
    try:
        while True:
            try:
                return fit()
            except _Await as need:
                awaited[need.key] = await need.call()
    finally:
        _AWAITED.reset(token)


def core_summarizer(spec: Any) -> Any:
    """``spec`` as the core's summarizer: a ``Summarizer`` or a callable ``(messages, target_tokens) -> str``
    over neutral messages (see the module docstring)."""
    if hasattr(spec, "summarize"):
        return spec
    if isinstance(spec, str):  # "provider:model", as SummarizationMiddleware resolves it
        from langchain.chat_models import init_chat_model

        spec = init_chat_model(spec)
    if isinstance(spec, BaseChatModel):
        from tokenbox_langchain._summarizer import ChatModelSummarizer

        return ChatModelSummarizer(spec)
    acall: Callable[[list[BaseMessage]], Awaitable[Any]] | None = None
    call: Callable[[list[BaseMessage]], Any]
    if isinstance(spec, Runnable):
        runnable = spec
        call = functools.partial(runnable.invoke, config=SUMMARY_CONFIG)
        acall = functools.partial(runnable.ainvoke, config=SUMMARY_CONFIG)

    elif inspect.iscoroutinefunction(spec) or inspect.iscoroutinefunction(getattr(spec, "__call__", None)):  # noqa: B004
        call = _async_only(spec)
        acall = spec
    elif callable(spec):
        call = spec
    else:
        raise ConfigTypeError(
            f"summarizer must be a chat model, a Runnable or a callable over messages returning text, got "
            f"{type(spec).__name__}"
        )

    def written(messages: Sequence[Mapping[str, Any]], target_tokens: int) -> str:
        rows = from_neutral(messages)
        later = None if acall is None else (lambda: acall(rows))
        value = deferred(("summary", canonical_json(list(messages))), lambda: call(rows), later)
        return content_text(value.content) if isinstance(value, BaseMessage) else str(value)

    return written


def _async_only(spec: Any) -> Callable[[list[BaseMessage]], Any]:
    def call(messages: list[BaseMessage]) -> Any:
        raise ConfigTypeError(
            f"the summarizer {getattr(spec, '__name__', type(spec).__name__)} is an async function: run the agent "
            f"with ainvoke/astream, or pass a synchronous summarizer"
        )

    return call


def cache_window(cache_aware: Any, summarizer: Any) -> Any:
    """The ``cache_aware`` option with the summarizer in it (a summary needs the prefix-stable cut)."""
    if summarizer is None:
        return cache_aware
    if isinstance(cache_aware, CacheWindow):
        if cache_aware.summarizer is not None:
            return cache_aware
        return dataclasses.replace(cache_aware, summarizer=summarizer)
    return CacheWindow(summarizer=summarizer)


def summarize(summarizer: Any, messages: Sequence[BaseMessage], target: int, counter: TokenCounter) -> str:
    """The summary of ``messages`` in at most ``target`` tokens (cut to it when the summarizer writes more), without
    the whitespace around it."""
    rows = neutral(messages)
    if hasattr(summarizer, "summarize"):
        text = summarizer.summarize(rows, target, counter=counter)
    else:
        text = summarizer(rows, target)
    text = text.strip()
    return counter.truncate(text, target) if counter.count(text) > target else text


def compact_state(middleware: TokenBoxMiddleware, messages: Sequence[BaseMessage]) -> dict[str, Any] | None:
    """The state update compacting ``messages`` (see the module docstring); None below the trigger."""
    budget = middleware.budget
    assert budget is not None  # checked at construction
    # the window's own rule (resolve_window): the larger of the budget's output reserve and output_reserve=...;
    # the model's profile is not known before the model call, and the tool schemas are reserved by the call's fit
    limit = resolve_window(budget, output_reserve=middleware.output_reserve or 0).limit
    counter = middleware.counter

    def size() -> int:
        return middleware.converted.count(messages)

    if middleware.trigger is None:
        due = size() > limit
    else:
        due = reached(thresholds(middleware.trigger, limit), len(messages), size)
    if not due:
        return None
    keep = middleware._keep(None, messages) or _DEFAULT_KEEP
    kept_tokens = keep_tokens(keep, limit)
    room = SUMMARY_TOKENS if middleware.summarizer is not None else 0
    # keep's tokens are the kept messages', the summary comes on top (as SummarizationMiddleware's); both in the limit
    target = max(1, min(kept_tokens, limit - room))
    options = FitOptions(system="leading", anchor="human", start_on="human", on_invalid=middleware.options.on_invalid)
    result = fit_messages(messages, counter, ContextBudget(max_tokens=target), options, middleware.converted)
    kept = set(result.kept)
    removed = [m for i, m in enumerate(messages) if i not in kept]
    if not removed:
        return None
    # the kept messages as they are: a previewed newest result stays whole in the state (the model call's fit
    # previews it again against the whole window), so compaction never deletes it
    whole = [messages[i] for i in result.kept]
    head: list[BaseMessage] = []
    if middleware.summarizer is not None:
        text = summarize(middleware.summarizer, removed, room, counter.text_counter())
        digest = hashlib.sha256("\n".join(str(m.id) for m in removed).encode()).hexdigest()[:16]
        head.append(HumanMessage(SUMMARY_PREFIX + text, id=f"tokenbox-summary-{digest}"))
    return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *head, *whole]}
