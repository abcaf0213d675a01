"""LlamaIndex chat messages as TokenBox message items: text, size and atomic group.

A message costs what :func:`tokenbox_core.tokens.message_token_count` says:
chat overhead, role, text, name, tool-call payloads (function names and
arguments) and the tool-call id of a tool result.  Tool calls are read from
both places LlamaIndex keeps them: ``additional_kwargs["tool_calls"]``
(OpenAI-style objects or dicts) and ``ToolCallBlock`` blocks.  Media blocks
(images, audio, video, documents) cost a fixed estimate each.

A plain message (role and text only) is left for the core to size in its
messages mode, which charges exactly the same (overhead + role + text) and
counts all such texts in one batch; the adapter vouches for ``Item.tokens``
only where the chat format carries more than the text.

An assistant message with tool calls and the tool results answering it form
one atomic group.  Results are matched by ``tool_call_id``; a result whose id
matches no call joins the tool-call message it directly follows.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from llama_index.core.base.llms.types import (
    AudioBlock,
    ChatMessage,
    DocumentBlock,
    ImageBlock,
    ThinkingBlock,
    ToolCallBlock,
    VideoBlock,
)

from tokenbox_core import Item, TokenCounter
from tokenbox_core.tokens import message_token_count

__all__ = ["DEFAULT_MEDIA_TOKENS", "Parsed", "message_groups", "message_role", "parse", "to_item"]

DEFAULT_MEDIA_TOKENS = 256
"""Tokens charged per image, audio, video or document block (LlamaIndex ``Memory`` uses the same default)."""

_MEDIA = (ImageBlock, AudioBlock, VideoBlock, DocumentBlock)


class Parsed(NamedTuple):
    """What the layout needs from one message."""

    role: str
    text: str
    tokens: int | None  # None: a plain message the core sizes itself
    call_ids: tuple[str | None, ...]  # ids of the tool calls it makes (empty: none)
    result_of: str | None  # the tool-call id a tool result answers


def message_role(message: ChatMessage) -> str:
    """The role as plain text (``MessageRole`` is a str enum whose ``str()`` is not its value)."""
    role = message.role
    return str(getattr(role, "value", role))


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)


def _arguments(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value if value is not None else {}, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def tool_calls(message: ChatMessage) -> list[dict[str, Any]]:
    """The message's tool calls as ``{"id", "function": {"name", "arguments"}}`` dicts."""
    calls: list[dict[str, Any]] = []
    for call in message.additional_kwargs.get("tool_calls") or ():
        function = _get(call, "function") or call
        arguments = _get(function, "arguments")
        if arguments is None:
            arguments = _get(call, "args")
        calls.append(
            {
                "id": _get(call, "id"),
                "function": {"name": str(_get(function, "name") or ""), "arguments": _arguments(arguments)},
            }
        )
    for block in message.blocks:
        if isinstance(block, ToolCallBlock):
            calls.append(
                {
                    "id": block.tool_call_id,
                    "function": {"name": block.tool_name, "arguments": _arguments(block.tool_kwargs)},
                }
            )
    return calls


def _text(message: ChatMessage) -> tuple[str, int]:
    """The message's text (text and thinking blocks) and its number of media blocks."""
    parts: list[str] = []
    media = 0
    for block in message.blocks:
        if isinstance(block, ThinkingBlock):
            if block.content:
                parts.append(block.content)
        elif isinstance(block, _MEDIA):
            media += 1
        else:
            text = getattr(block, "text", None)
            if isinstance(text, str):
                parts.append(text)
    return "\n".join(parts), media


def parse(
    messages: Sequence[ChatMessage], counter: TokenCounter, *, media_tokens: int = DEFAULT_MEDIA_TOKENS
) -> list[Parsed]:
    """Role, text, size (when the chat format adds to the text) and tool-call links of each message."""
    out = []
    for message in messages:
        role = message_role(message)
        text, media = _text(message)
        kwargs = message.additional_kwargs
        calls = tool_calls(message) if role != "tool" else []
        name = kwargs.get("name")
        call_id = kwargs.get("tool_call_id")
        tokens = None
        if calls or name or call_id or media:
            record = {"role": role, "content": text, "name": name, "tool_calls": calls, "tool_call_id": call_id}
            tokens = message_token_count(record, counter) + media * media_tokens
        out.append(
            Parsed(
                role=role,
                text=text,
                tokens=tokens,
                call_ids=tuple(None if c["id"] is None else str(c["id"]) for c in calls),
                result_of=str(call_id) if call_id and role == "tool" else None,
            )
        )
    return out


def message_groups(parsed: Sequence[Parsed]) -> list[str | None]:
    """The atomic group of each message: ``"tools-<i>"`` for a tool call at ``i`` and its results, else ``None``."""
    groups: list[str | None] = [None] * len(parsed)
    by_call_id: dict[str, str] = {}
    current: str | None = None  # the tool-call group that directly following results join
    for index, message in enumerate(parsed):
        if message.call_ids:
            current = groups[index] = f"tools-{index}"
            for call_id in message.call_ids:
                if call_id is not None:
                    by_call_id[call_id] = current
        elif message.role == "tool":
            group = by_call_id.get(message.result_of) if message.result_of else None
            groups[index] = group if group is not None else current
        else:
            current = None
    return groups


def to_item(key: str, message: Parsed, group: str | None = None) -> Item:
    """The message as a messages-mode Item."""
    kind = "ToolOutput" if message.role == "tool" else "Message"
    return Item(id=key, content=message.text, role=message.role, kind=kind, group=group, tokens=message.tokens)
