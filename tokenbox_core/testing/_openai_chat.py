"""A validator of OpenAI's Chat Completions ``messages``, offline: what the API would reject, before you send it.

:func:`openai_chat_problems` checks a message list two ways:

- **the schema**, from the ``openai`` package's own types
  (``openai.types.chat.ChatCompletion*MessageParam``), validated strictly by
  pydantic: each message against the type of its role, no key the type does
  not name (the API answers ``Additional properties are not allowed``), no
  coercion, nested tool calls and content parts included;
- **the protocol** the types cannot express: the list is not empty; system and
  developer messages only lead; every ``tool`` message answers a tool call of
  the assistant message it follows (by ``tool_call_id``); every assistant tool
  call is answered before the next message that is not a tool result; an
  assistant message has content or tool calls; tool-call ids are unique; and,
  with ``start_on_user`` (the default), the conversation after the leading
  system messages starts on a user message (OpenAI accepts an opening
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
    pending: dict[str, int] = {}  # tool calls of the last assistant message not answered yet
    seen_ids: set[str] = set()
    started: int | None = None  # index of the first message that is not system/developer
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping):
            problems.append(f"message {i} is a {type(m).__name__}, not a dict")
            continue
        role = m.get("role")
        if role not in _ROLES:
            problems.append(f"message {i} has role {role!r}; the roles are {', '.join(_ROLES)}")
            continue
        problems += _schema_problems(adapters, i, role, m)
        if role != "tool" and pending:
            ids = ", ".join(sorted(pending))
            problems.append(f"message {i} ({role}) comes before the results of tool calls {ids}")
            pending.clear()
        if role in ("system", "developer"):
            if started is not None:
                problems.append(f"message {i} ({role}) stands after the conversation started (message {started})")
            continue
        if started is None:
            started = i
            if start_on_user and role != "user" and any(n.get("role") == "user" for n in messages[i:]):
                problems.append(f"the conversation starts on {role} (message {i}), not on a user message")
        if role == "assistant":
            calls = m.get("tool_calls") or ()
            if m.get("content") is None and not calls and m.get("function_call") is None:
                problems.append(f"message {i} (assistant) has neither content nor tool_calls")
            for call in calls if isinstance(calls, list | tuple) else ():
                call_id = call.get("id") if isinstance(call, Mapping) else None
                if not isinstance(call_id, str):
                    continue  # the schema check reported it
                if call_id in seen_ids:
                    problems.append(f"message {i} (assistant) repeats tool call id {call_id!r}")
                seen_ids.add(call_id)
                pending[call_id] = i
        elif role == "tool":
            answered = m.get("tool_call_id")
            if answered in pending:
                del pending[answered]
            elif isinstance(answered, str):
                problems.append(
                    f"message {i} (tool) answers tool call {answered!r}, which the assistant message before it "
                    f"did not make (or another tool message answered already)"
                )
    for call_id, at in sorted(pending.items(), key=lambda p: p[1]):
        problems.append(f"tool call {call_id!r} of message {at} has no tool result")
    return problems


def assert_openai_chat(messages: Sequence[Mapping[str, Any]], *, start_on_user: bool = True) -> None:
    """Raise ``AssertionError`` listing every problem :func:`openai_chat_problems` finds (nothing when valid)."""
    problems = openai_chat_problems(messages, start_on_user=start_on_user)
    if problems:
        raise AssertionError(f"{len(problems)} problem(s) OpenAI's chat API would reject:\n- " + "\n- ".join(problems))
