"""Tier 4 history: neutral chat messages → core Items (the compiler's one translation point).

Messages are framework-neutral dicts in the OpenAI chat shape (``role``,
``content`` as text or content parts, optional ``name``, ``tool_calls``,
``tool_call_id``, ``id``).  :func:`split_history` applies the conversation
rules of DESIGN.md:

- leading ``system``/``developer`` messages are pinned (critical);
- the latest user message is the current turn (critical) unless the caller
  passes ``user`` separately, and the messages after it (an agent loop in
  flight: tool calls and their results) are kept with it;
- everything before is elastic history, evicted oldest first, an assistant
  tool call and all its results sharing one ``Item.group`` so they are kept
  or removed together.

This module is the only place the compiler translates conversations; it is
meant to be replaced by the core's conversation engine
(``tokenbox_core.chat.conversation_sections``) when that lands.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tokenbox_core.sections import Item
from tokenbox_core.tokens import TokenCounter, content_text, message_token_count

__all__ = ["HistoryParts", "message_text", "split_history"]

_PINNED_ROLES = ("system", "developer")


@dataclass(frozen=True)
class HistoryParts:
    """A conversation split for compilation: items plus the original message of each item id."""

    pinned: tuple[Item, ...] = ()
    body: tuple[Item, ...] = ()
    current: Item | None = None
    loop: tuple[Item, ...] = ()
    messages: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


def message_text(message: Mapping[str, Any]) -> str:
    """A message as one line of a text prompt: ``role: content`` plus its tool calls."""
    role = str(message.get("role") or "user")
    text = content_text(message.get("content"))
    calls = message.get("tool_calls") or ()
    parts = [text] if text else []
    for call in calls:
        fn = call.get("function", call) if isinstance(call, Mapping) else {}
        name = fn.get("name", "?") if isinstance(fn, Mapping) else "?"
        args = fn.get("arguments", "") if isinstance(fn, Mapping) else ""
        parts.append(f"[tool call {name}({args})]")
    if role == "tool" and message.get("tool_call_id"):
        role = f"tool[{message['tool_call_id']}]"
    return f"{role}: {' '.join(parts)}"


def _ids(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    out: list[str] = []
    seen: set[str] = set()
    for index, message in enumerate(messages):
        raw = message.get("id")
        base = f"history:{raw}" if isinstance(raw, str) and raw else f"history:{index}"
        candidate = base if base not in seen else f"{base}#{index}"
        seen.add(candidate)
        out.append(candidate)
    return out


def _groups(messages: Sequence[Mapping[str, Any]]) -> list[str | None]:
    """An assistant tool call and the tool results that answer it share a group."""
    groups: list[str | None] = [None] * len(messages)
    open_calls: dict[str, str] = {}
    for index, message in enumerate(messages):
        calls = message.get("tool_calls") or ()
        if message.get("role") == "assistant" and calls:
            group = f"tools@{index}"
            groups[index] = group
            for call in calls:
                call_id = call.get("id") if isinstance(call, Mapping) else None
                if isinstance(call_id, str):
                    open_calls[call_id] = group
        elif message.get("role") == "tool":
            call_id = message.get("tool_call_id")
            if isinstance(call_id, str) and call_id in open_calls:
                groups[index] = open_calls[call_id]
    return groups


def split_history(
    messages: Sequence[Mapping[str, Any]],
    *,
    user: str | None,
    counter: TokenCounter,
    output: str,
) -> HistoryParts:
    """Split a conversation into pinned, elastic, current-turn and agent-loop items (rules above).

    In ``"messages"`` output each item vouches for its chat cost
    (``Item.tokens`` = overhead + role + content + tool-call payloads); in
    ``"text"`` output its content is the ``role: content`` line.
    """
    ids = _ids(messages)
    groups = _groups(messages)
    lead = 0
    while lead < len(messages) and messages[lead].get("role") in _PINNED_ROLES:
        lead += 1
    latest_user = None
    if user is None:
        for index in range(len(messages) - 1, lead - 1, -1):
            if messages[index].get("role") == "user":
                latest_user = index
                break
    end = latest_user if latest_user is not None else len(messages)

    def item(index: int) -> Item:
        message = messages[index]
        role = str(message.get("role") or "user")
        if output == "messages":
            text = content_text(message.get("content"))
            return Item(
                ids[index],
                text,
                role=role,
                kind="Message",
                group=groups[index],
                tokens=message_token_count(message, counter),
            )
        return Item(ids[index], message_text(message), role=role, kind="Message", group=groups[index])

    return HistoryParts(
        pinned=tuple(item(i) for i in range(lead)),
        body=tuple(item(i) for i in range(lead, end)),
        current=item(latest_user) if latest_user is not None else None,
        loop=tuple(item(i) for i in range(latest_user + 1, len(messages))) if latest_user is not None else (),
        messages={ids[i]: messages[i] for i in range(len(messages))},
    )
