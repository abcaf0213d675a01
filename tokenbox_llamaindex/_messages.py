"""LlamaIndex chat messages as the core's neutral, OpenAI-shaped message dicts.

LlamaIndex core ships no OpenAI converter (``to_openai_message_dicts`` lives
in the ``llama-index-llms-openai`` integration), so this is the one mapping:
``role``; ``content`` (the text and thinking blocks joined by newlines, or,
when the message has media blocks, a list of text parts and one
``{"type": <media>}`` part per image, audio, video or document block, which
the core charges ``media_tokens`` each); ``name``; ``tool_calls`` in the
OpenAI shape, read from both places LlamaIndex keeps them
(``additional_kwargs["tool_calls"]``, OpenAI objects or dicts, and
``ToolCallBlock`` blocks); ``tool_call_id`` of a tool result; and the
per-message overrides of ``additional_kwargs["tokenbox"]`` (``{"critical":
bool, "priority": int}``, as in the LangChain adapter).  A message
costs what :func:`tokenbox_core.tokens.message_token_count` says of it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.base.llms.types import (
    AudioBlock,
    ChatMessage,
    DocumentBlock,
    ImageBlock,
    ThinkingBlock,
    ToolCallBlock,
    VideoBlock,
)

from tokenbox_core.chat import OVERRIDE_KEY

__all__ = ["DEFAULT_MEDIA_TOKENS", "message_role", "neutral", "tool_calls"]

DEFAULT_MEDIA_TOKENS = 256
"""Tokens charged per image, audio, video or document block (LlamaIndex ``Memory`` uses the same default)."""

_MEDIA = (ImageBlock, AudioBlock, VideoBlock, DocumentBlock)


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
    """The message's tool calls as OpenAI ``{"id", "type", "function": {"name", "arguments"}}`` dicts."""
    calls: list[dict[str, Any]] = []
    for call in message.additional_kwargs.get("tool_calls") or ():
        function = _get(call, "function") or call
        arguments = _get(function, "arguments")
        if arguments is None:
            arguments = _get(call, "args")
        name = str(_get(function, "name") or "")
        calls.append(
            {"id": _get(call, "id"), "type": "function", "function": {"name": name, "arguments": _arguments(arguments)}}
        )
    for block in message.blocks:
        if isinstance(block, ToolCallBlock):
            function = {"name": block.tool_name, "arguments": _arguments(block.tool_kwargs)}
            calls.append({"id": block.tool_call_id, "type": "function", "function": function})
    return calls


def _content(message: ChatMessage) -> str | list[dict[str, Any]]:
    """The text (text and thinking blocks), or text parts and media parts when there are media blocks."""
    parts: list[dict[str, Any]] = []
    texts: list[str] = []
    media = False
    for block in message.blocks:
        if isinstance(block, ThinkingBlock):
            if block.content:
                texts.append(block.content)
                parts.append({"type": "text", "text": block.content})
        elif isinstance(block, _MEDIA):
            media = True
            parts.append({"type": block.block_type})
        else:
            text = getattr(block, "text", None)
            if isinstance(text, str):
                texts.append(text)
                parts.append({"type": "text", "text": text})
    if not media:
        return "\n".join(texts)
    return parts


def neutral(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """Each message as the core's neutral dict (see the module docstring)."""
    out = []
    for message in messages:
        role = message_role(message)
        d: dict[str, Any] = {"role": role, "content": _content(message)}
        kwargs = message.additional_kwargs
        if kwargs:
            if role != "tool":
                calls = tool_calls(message)
                if calls:
                    d["tool_calls"] = calls
            if kwargs.get("name"):
                d["name"] = kwargs["name"]
            if kwargs.get("tool_call_id"):
                d["tool_call_id"] = str(kwargs["tool_call_id"])
            if OVERRIDE_KEY in kwargs:
                d[OVERRIDE_KEY] = kwargs[OVERRIDE_KEY]
        elif role != "tool" and any(isinstance(b, ToolCallBlock) for b in message.blocks):
            d["tool_calls"] = tool_calls(message)
        out.append(d)
    return out
