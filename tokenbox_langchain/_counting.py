"""Counting LangChain messages: one size per message, computed once.

A :class:`MessageCounter` turns any of the counter shapes LangChain users
pass around into *per-message* sizes plus a *base* (what an empty list
costs), so that ``count(messages) == base + sum(size(m) for m in messages)``:

- a core counter name or :class:`~tokenbox_core.TokenCounter` (``"gpt-4o"``,
  ``"o200k_base"``, ``"whitespace"`` ...): exact chat counts as OpenAI bills
  them (3 priming tokens, 4 per message, role, content, name, tool-call
  payloads and tool-call ids), see :func:`tokenbox_core.count_message_tokens`;
- ``"approximate"``: LangChain's ``count_tokens_approximately`` (the shortcut
  ``trim_messages`` accepts);
- a LangChain model: its ``get_num_tokens_from_messages``;
- a callable over a *list* of messages (LangChain's shape, ``len`` included);
- a callable over *one* message.

Whether a callable takes a list or one message is decided once, reliably:
first from its resolved type hints (string annotations included), then, for
lambdas and un-annotated functions, by calling it on an empty list (a list
counter returns an int; a per-message counter raises).

Nothing is memoised here: the core's count cache (keyed by text) already
spares a tiktoken counter re-encoding a message it has seen, and a user's
counter is called once per message of each fit.
"""

from __future__ import annotations

import collections.abc
import inspect
import types
import typing
from collections.abc import Callable, Sequence
from typing import Any, Union

from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.messages.utils import count_tokens_approximately

from tokenbox_core import CounterError, TokenBoxError, TokenCounter, get_counter
from tokenbox_core.chat import ChatCounter
from tokenbox_core.tokens import PRIMING_TOKENS, content_text

__all__ = [
    "CounterSpec",
    "MessageCounter",
    "InvalidCounter",
    "check_counter_name",
    "content_text",
    "openai_role",
    "takes_one_message",
]

CounterSpec = Union[str, TokenCounter, Callable[..., int], Any]  # noqa: UP007 - a documented alias
"""Anything :class:`MessageCounter` accepts: a counter name, a ``TokenCounter``, a
LangChain model, or a callable over a list of messages or over one message."""

_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool", "function": "function"}


def openai_role(message: BaseMessage) -> str:
    """The chat role a provider sees for ``message`` (``user``, ``assistant``, ``system``, ``tool`` ...)."""
    kind = message.type
    if kind == "system":
        role = message.additional_kwargs.get("__openai_role__")
        return role if isinstance(role, str) else "system"
    if kind == "chat":
        return str(getattr(message, "role", "chat"))
    return _ROLES.get(kind, kind)


def _first_param_annotation(fn: Callable[..., Any]) -> Any:
    """The resolved annotation of ``fn``'s first parameter, or ``None`` when unknown."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    if not params:
        return None
    annotation = params[0].annotation
    if annotation is inspect.Parameter.empty:
        return None
    if isinstance(annotation, str):  # postponed annotations: resolve them (LangChain compares the string)
        target = fn.__call__ if not inspect.isroutine(fn) and hasattr(fn, "__call__") else fn  # noqa: B004
        try:
            hints = typing.get_type_hints(target)
        except Exception:  # unresolvable forward references: fall back to probing
            return None
        return hints.get(params[0].name)
    return annotation


def _is_message_type(annotation: Any) -> bool:
    if isinstance(annotation, type):
        return issubclass(annotation, BaseMessage)
    origin = typing.get_origin(annotation)
    if origin is Union or origin is types.UnionType:
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return bool(args) and all(_is_message_type(a) for a in args)
    return False


def _is_list_type(annotation: Any) -> bool:
    origin = typing.get_origin(annotation) or annotation
    return (
        isinstance(origin, type)
        and issubclass(origin, (list, tuple, collections.abc.Iterable))
        and not (isinstance(origin, type) and issubclass(origin, (str, BaseMessage)))
    )


def takes_one_message(fn: Callable[..., Any]) -> bool:
    """True when ``fn`` counts one message, False when it counts a list of messages.

    Type hints decide when they say something (``BaseMessage`` or a union of
    message classes → one message; ``list``/``Sequence``/``Iterable`` → a list);
    otherwise ``fn([])`` is tried: a list counter returns an int for an empty
    list, a per-message counter fails on it.
    """
    annotation = _first_param_annotation(fn)
    if annotation is not None:
        if _is_message_type(annotation):
            return True
        if _is_list_type(annotation):
            return False
    try:
        value = fn([])
    except Exception:  # a per-message counter fails on a list: that is the signal
        return True
    return isinstance(value, bool) or not isinstance(value, int)


class InvalidCounter(CounterError, ValueError):
    """A counter string that names no counter, or a value that is no counter: a ``ValueError``, as LangChain
    raises for an unknown ``token_counter`` (issue 10 item 11)."""


_SHORTCUTS = ("approximate", "bytes", "whitespace")


def check_counter_name(name: str) -> str:
    """``name`` when it names a counter: LangChain's ``"approximate"``, TokenBox's ``"bytes"`` and
    ``"whitespace"``, a tiktoken encoding, a model tiktoken knows (dated snapshots included) or one registered
    with :func:`tokenbox_core.register_model`; else :class:`InvalidCounter` (a ``ValueError``) with the closest
    names.  Unknown strings used to count silently with cl100k_base."""
    import difflib

    import tiktoken
    import tiktoken.model

    from tokenbox_core import MODEL_CONTEXT_WINDOWS

    encodings = tiktoken.list_encoding_names()
    if name in _SHORTCUTS or name in encodings or name in MODEL_CONTEXT_WINDOWS:
        return name
    bare = name.rsplit("/", 1)[-1]
    try:
        tiktoken.model.encoding_name_for_model(bare)
        return name
    except KeyError:
        pass
    from tokenbox_core.models import suggest_model

    close = difflib.get_close_matches(name, [*_SHORTCUTS, *encodings], n=1, cutoff=0.8)  # a near-exact shortcut
    suggestion = close[0] if close else suggest_model(name)  # else a model name: 'gpt4o' is 'gpt-4o', not 'gpt2'
    hint = f" Did you mean {suggestion!r}?" if suggestion else ""
    raise InvalidCounter(
        f"Invalid token_counter shortcut {name!r}.{hint} Use 'approximate' (LangChain's shortcut), 'bytes', "
        f"'whitespace', a tiktoken encoding ({', '.join(encodings)}), a model name tiktoken knows ('gpt-4o', "
        f"'gpt-4o-mini', 'o1' ...) or one registered with tokenbox_core.register_model, or pass a callable"
    )


def _checked(value: Any, owner: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise CounterError(f"token counter {owner} returned {value!r} ({type(value).__name__}); it must return an int")
    if value < 0:
        raise CounterError(f"token counter {owner} returned a negative count ({value}); counts must be >= 0")
    return value


class MessageCounter:
    """Per-message sizes for any counter shape (see the module docstring).

    Attributes:
        name: a readable name for reports.
        base: what counting an empty list costs (3 priming tokens for chat counts).
        exact_chat: True when sizes follow the core's chat-message semantics
            (a tiktoken or core counter), so the core can size extra messages
            (an omission marker) in the same units.
    """

    def __init__(self, spec: CounterSpec) -> None:
        self.spec = spec
        self.exact_chat = False
        self._one: Callable[[BaseMessage], int]
        self.core: TokenCounter | None = None
        if isinstance(spec, str) and spec == "approximate":
            self.name = "approximate (langchain)"
            self.base = 0
            self._one = _approximate_one
        elif isinstance(spec, str | TokenCounter):
            core = get_counter(check_counter_name(spec) if isinstance(spec, str) else spec)
            self.core = core
            self._chat = ChatCounter.of(core)
            self.name = core.name
            self.base = PRIMING_TOKENS
            self.exact_chat = True
            self._one = self._chat_size
        elif hasattr(spec, "get_num_tokens_from_messages"):
            model = spec
            self.name = f"{type(model).__name__}.get_num_tokens_from_messages"
            fn = model.get_num_tokens_from_messages
            self.base = _checked(fn([]), self.name)
            self._one = self._list_one(fn)
        elif callable(spec):
            self.name = getattr(spec, "__qualname__", None) or type(spec).__name__
            if takes_one_message(spec):
                self.base = 0
                self._one = spec
            else:
                self.base = _checked(spec([]), self.name)
                self._one = self._list_one(spec)
        else:
            raise InvalidCounter(
                f"'token_counter' expected to be a model that implements 'get_num_tokens_from_messages()' or a "
                f"function. Received object of type {type(spec)}. TokenBox also takes a counter name ('gpt-4o', "
                f"'o200k_base', 'approximate'), a TokenCounter, or a callable over one message"
            )

    def __repr__(self) -> str:
        return f"MessageCounter({self.name!r})"

    def _chat_size(self, message: BaseMessage) -> int:
        return self._chat.size(
            {
                "role": openai_role(message),
                # issue 14 hook: a list keeps its media parts, which the core costs by the model's rules
                "content": message.content if isinstance(message.content, list) else content_text(message.content),
                "name": message.name,
                "tool_calls": getattr(message, "tool_calls", None),
                "tool_call_id": getattr(message, "tool_call_id", None),
            }
        )

    def _list_one(self, fn: Callable[[list[BaseMessage]], int]) -> Callable[[BaseMessage], int]:
        base = self.base

        def one(message: BaseMessage) -> int:
            return _checked(fn([message]), self.name) - base

        return one

    def size(self, message: BaseMessage) -> int:
        """The tokens ``message`` adds to a list."""
        return _checked(self._call(message), self.name)

    def _call(self, message: BaseMessage) -> Any:
        """The counter on one message; what it raises becomes a CounterError naming it (issue 10 item 9)."""
        try:
            return self._one(message)
        except TokenBoxError:  # the core's own errors (a lone surrogate: InvalidTextError) already say the fix
            raise
        except Exception as exc:
            raise CounterError(
                f"token counter {self.name} raised {type(exc).__name__}: {exc}; fix the counter, or pass a counter "
                f"name such as 'gpt-4o' or 'approximate'"
            ) from exc

    def count(self, messages: Sequence[BaseMessage]) -> int:
        """``base + sum(size)``: what the list costs."""
        return self.base + sum(self.size(m) for m in messages)

    def text_counter(self) -> TokenCounter:
        """A text counter in this counter's units, for text the core itself must size (a marker).

        Text is sized as a human message holding it, which includes the
        per-message overhead: a safe over-estimate for user counters.
        """
        if self.core is not None:
            return self.core
        as_human = ChatCounter(lambda m, i: self.size(HumanMessage(content=m["content"])), name=self.name)
        return as_human.text_counter("user")


def _approximate_one(message: BaseMessage) -> int:
    return count_tokens_approximately([message])
