"""A validator of OpenAI's Chat Completions ``messages``, offline: what the API would reject, before you send it.

:func:`openai_chat_problems` checks a message list two ways:

- **the schema**, from the ``openai`` package's own types
  (``openai.types.chat.ChatCompletion*MessageParam``), validated strictly by
  pydantic: each message against the type of its role, no key the type does
  not name (the API answers ``Additional properties are not allowed``), no
  coercion, nested tool calls and content parts included;
- **the protocol** the types cannot express, which is the core's own rule set
  (:func:`tokenbox_core.chat.conversation_problems` with ``portable=True``, the
  one validator every TokenBox path runs): the list is not empty; every
  ``tool`` message answers a call of an earlier assistant message, directly
  after it and its other results, once; every call is answered; a message has
  content (an assistant message may carry tool calls instead); and the portable
  rules — system and developer messages only lead (OpenAI accepts one later,
  Anthropic and Gemini take a system prompt only at the top), tool-call ids are
  unique and, with ``start_on_user`` (the default), the conversation after the
  leading system messages starts on a user message (OpenAI accepts an opening
  assistant reply, Anthropic and Gemini do not, and a history cut by a budget
  should never begin with a reply whose question was evicted).

Every list of messages TokenBox returns passes it (``tests/test_openai_messages.py``).  The ``openai`` package
is imported on first use, never by ``import tokenbox_core``; without it, :class:`ModuleNotFoundError` names the
extra (``pip install openai``, in the ``dev`` extra).

>>> call = {"id": "c1", "type": "function", "function": {"name": "logs", "arguments": "{}"}}
>>> openai_chat_problems([{"role": "user", "content": "why?"}, {"role": "assistant", "content": None,
...     "tool_calls": [call]}, {"role": "tool", "tool_call_id": "c1", "content": "ok"}])
[]
>>> openai_chat_problems([{"role": "user", "content": "why?"}, {"role": "tool", "content": "ok"}])[0]
'message 1 (tool): schema: tool_call_id: Field required'
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from tokenbox_core.chat._validate import conversation_problems

__all__ = ["assert_openai_chat", "openai_chat_problems"]

_ROLES = ("system", "developer", "user", "assistant", "tool", "function")


def _adapters() -> dict[str, Any]:
    """One strict pydantic adapter per role, built from the ``openai`` package's message types (once per call of
    :func:`openai_chat_problems`: no process-wide state)."""
    try:
        from openai.types import chat
    except ModuleNotFoundError as exc:  # pragma: no cover - the dev extra installs it
        raise ModuleNotFoundError(
            "tokenbox_core.testing._openai_chat needs the openai package (its message types are the schema): "
            "pip install openai",
            name=exc.name,
        ) from exc
    from pydantic import ConfigDict, TypeAdapter

    types = {
        "system": chat.ChatCompletionSystemMessageParam,
        "developer": chat.ChatCompletionDeveloperMessageParam,
        "user": chat.ChatCompletionUserMessageParam,
        "assistant": chat.ChatCompletionAssistantMessageParam,
        "tool": chat.ChatCompletionToolMessageParam,
        "function": chat.ChatCompletionFunctionMessageParam,
    }
    strict = ConfigDict(extra="forbid", strict=True)
    # a list around the TypedDict lets the strict config reach it (and the TypedDicts nested in it)
    return {role: TypeAdapter(list[t], config=strict) for role, t in types.items()}  # type: ignore[valid-type]


def _drain(value: Any) -> None:
    """Consume the lazy validators pydantic leaves for ``Iterable`` fields (content parts, tool calls), so
    what they hold is validated too."""
    if isinstance(value, Mapping):
        for v in value.values():
            _drain(v)
    elif isinstance(value, list | tuple | Iterator):
        for v in value:
            _drain(v)


def _schema_problems(adapters: dict[str, Any], i: int, role: str, message: Mapping[str, Any]) -> list[str]:
    from pydantic import ValidationError

    try:
        _drain(adapters[role].validate_python([dict(message)]))
    except ValidationError as exc:
        out = []
        for error in exc.errors():
            where = ".".join(str(p) for p in error["loc"][1:]) or "message"  # loc[0]: the one-item list
            out.append(f"message {i} ({role}): schema: {where}: {error['msg']}")
        return out
    return []


def openai_chat_problems(messages: Sequence[Mapping[str, Any]], *, start_on_user: bool = True) -> list[str]:
    """Everything OpenAI's Chat Completions API would reject in ``messages`` (an empty list: valid).

    See the module docstring for the rules; ``start_on_user=False`` checks OpenAI's own rules only.
    """
    problems: list[str] = []
    if not isinstance(messages, Sequence) or isinstance(messages, str | bytes):
        return [f"messages must be a list of dicts, got {type(messages).__name__}"]
    if not messages:
        return ["messages is empty; the API needs at least one message"]
    adapters = _adapters()
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping):
            problems.append(f"message {i} is a {type(m).__name__}, not a dict")
            continue
        role = m.get("role")
        if role not in _ROLES:
            problems.append(f"message {i} has role {role!r}; the roles are {', '.join(_ROLES)}")
            continue
        problems += _schema_problems(adapters, i, role, m)
    # the protocol: the core's one rule set (what every TokenBox path validates), with the portable rules
    protocol = conversation_problems(messages, roles=_ROLES, portable=True, start_on_user=start_on_user)
    return problems + [str(p) for p in protocol if p.kind != "unknown_role"]


def assert_openai_chat(messages: Sequence[Mapping[str, Any]], *, start_on_user: bool = True) -> None:
    """Raise ``AssertionError`` listing every problem :func:`openai_chat_problems` finds (nothing when valid)."""
    problems = openai_chat_problems(messages, start_on_user=start_on_user)
    if problems:
        raise AssertionError(f"{len(problems)} problem(s) OpenAI's chat API would reject:\n- " + "\n- ".join(problems))
