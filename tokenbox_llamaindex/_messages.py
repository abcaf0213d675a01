"""LlamaIndex chat messages as the core's neutral, OpenAI-shaped message dicts.

LlamaIndex core ships no OpenAI converter (``to_openai_message_dicts`` lives
in the ``llama-index-llms-openai`` integration), so this is the one mapping:
``role``; ``content`` (the text and thinking blocks joined by newlines, or,
when the message has media blocks, a list of text parts and, per image or
audio block, an OpenAI-shaped part with its data that the core costs by the
model's rule (:func:`tokenbox_llamaindex._media.media_part`), per video or
document block a ``{"type": <media>}`` placeholder charged ``media_tokens``);
``name``; ``tool_calls`` in the OpenAI shape, read from both places LlamaIndex keeps them
(``additional_kwargs["tool_calls"]``, OpenAI objects or dicts, and
``ToolCallBlock`` blocks); ``tool_call_id`` of a tool result; and the
per-message overrides of ``additional_kwargs["tokenbox"]`` (``{"critical":
bool, "priority": int}``, as in the LangChain adapter).  A message
costs what :func:`tokenbox_core.count_message_tokens` says of it (less the priming tokens).

The way back: :func:`archived` adds, to each neutral message the plain mapping
(:func:`plain_message`) would not give back unchanged, the LlamaIndex message
itself under :data:`ORIGINAL_KEY` (its blocks in order — ``ToolCallBlock``,
``ImageBlock`` with its path, URL, MIME type and detail, thinking blocks —
and every ``additional_kwargs``), with each media payload that a content part
already carries replaced by that part's index, so nothing is stored twice;
:func:`restore` rebuilds it.  Messages put into a memory come back as they went in.
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
    MessageRole,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    VideoBlock,
)

from tokenbox_core.chat import OVERRIDE_KEY
from tokenbox_core.errors import MediaError
from tokenbox_core.media import media_part_tokens
from tokenbox_llamaindex._media import media_part

__all__ = [
    "DEFAULT_MEDIA_TOKENS",
    "ORIGINAL_KEY",
    "archived",
    "message_role",
    "neutral",
    "plain_message",
    "restore",
    "tool_calls",
]

ORIGINAL_KEY = "llama_index"
"""Key of an archived neutral message holding the LlamaIndex message the neutral shape cannot express."""
_PART = "$part"
_PAYLOAD = {"image": "image", "audio": "audio"}
_ROLES = {"system": MessageRole.SYSTEM, "developer": MessageRole.SYSTEM, "user": MessageRole.USER,
          "assistant": MessageRole.ASSISTANT, "tool": MessageRole.TOOL}  # fmt: skip

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
    # as llama-index-llms-openai's to_openai_message_dict writes a ToolCallBlock's arguments (json.dumps with
    # its defaults): counted as sent, not as compact JSON (issue 32 defect 5)
    return json.dumps(value if value is not None else {})


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


def _media(block: Any, estimates: Mapping[str, int] | None) -> dict[str, Any]:
    """A media block as a content part.  Image and audio blocks carry their data (costed by the model's rule,
    issue 14); without ``estimates`` a video or document block is a placeholder charged ``media_tokens``, with
    them it (and an audio clip the core cannot time) is charged the estimate for its kind."""
    part = media_part(block) or {"type": block.block_type}
    if estimates is None:
        return part
    kind = block.block_type
    if kind in ("video", "document"):
        return {"type": "file", "tokens": int(estimates[kind])}
    if kind == "audio":
        try:
            media_part_tokens(part)
        except MediaError:  # not a WAV clip: LlamaIndex's flat estimate
            return {**part, "tokens": int(estimates[kind])}
    return part


def _parts(blocks: Sequence[Any], estimates: Mapping[str, int] | None) -> tuple[list[dict[str, Any]], bool]:
    parts: list[dict[str, Any]] = []
    media = False
    for block in blocks:
        if isinstance(block, ThinkingBlock):
            if block.content:
                parts.append({"type": "text", "text": block.content})
        elif isinstance(block, _MEDIA):
            media = True
            parts.append(_media(block, estimates))
        elif isinstance(getattr(block, "text", None), str):
            parts.append({"type": "text", "text": block.text})
        elif isinstance(getattr(block, "content", None), list):  # a citable block: its nested blocks
            inner, nested_media = _parts(block.content, estimates)
            parts += inner
            media = media or nested_media
    return parts, media


def _content(message: ChatMessage, estimates: Mapping[str, int] | None = None) -> str | list[dict[str, Any]]:
    """The text (text and thinking blocks), or text parts and media parts when there are media blocks."""
    blocks = message.blocks
    if len(blocks) == 1 and type(blocks[0]) is TextBlock:  # the common case, fast
        return blocks[0].text
    parts, media = _parts(blocks, estimates)
    if not media:
        return "\n".join(p["text"] for p in parts)
    return parts


def neutral(messages: Sequence[ChatMessage], *, estimates: Mapping[str, int] | None = None) -> list[dict[str, Any]]:
    """Each message as the core's neutral dict (see the module docstring); ``estimates`` (block type → tokens)
    charges the media blocks no published rule can cost."""
    out = []
    for message in messages:
        given = message.role
        role: str = given.value if type(given) is MessageRole else message_role(message)
        d: dict[str, Any] = {"role": role, "content": _content(message, estimates)}
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


def plain_message(message: Mapping[str, Any]) -> ChatMessage:
    """A neutral message as a LlamaIndex message: text content (text parts joined), tool calls, tool-call id,
    name and overrides in ``additional_kwargs`` as LlamaIndex's OpenAI integration keeps them."""
    kwargs = {k: message[k] for k in ("tool_calls", "tool_call_id", "name", OVERRIDE_KEY) if message.get(k)}
    content = message.get("content")
    if isinstance(content, list):
        content = "\n".join(p.get("text", json.dumps(p)) if isinstance(p, Mapping) else str(p) for p in content)
    role = _ROLES.get(str(message.get("role")))
    if role is None:
        raise ValueError(f"message role {message.get('role')!r} is not one of {', '.join(_ROLES)}")
    return ChatMessage(role=role, content=content or "", additional_kwargs=kwargs)


def _payload(part: Any) -> str | None:
    """The base64 data a media content part carries (``None`` for a URL or a placeholder)."""
    if not isinstance(part, Mapping):
        return None
    image = part.get("image_url")
    if isinstance(image, Mapping) and str(image.get("url", "")).startswith("data:"):
        return str(image["url"]).split(",", 1)[1]
    audio = part.get("input_audio")
    if isinstance(audio, Mapping) and isinstance(audio.get("data"), str) and "://" not in audio["data"]:
        return str(audio["data"])
    return None


def archived(messages: Sequence[ChatMessage], *, estimates: Mapping[str, int] | None = None) -> list[dict[str, Any]]:
    """:func:`neutral` messages that :func:`restore` turns back into the messages given (module docstring)."""
    out = neutral(messages, estimates=estimates)
    for message, d in zip(messages, out, strict=True):
        if plain_message(d) == message:
            continue
        dump = message.model_dump(mode="json")
        content = d["content"] if isinstance(d["content"], list) else []
        payloads = [_payload(part) for part in content]
        for block in dump.get("blocks", ()):
            field = _PAYLOAD.get(block.get("block_type"))
            if field and block.get(field) and block[field] in payloads:
                block[_PART] = payloads.index(block[field])
                block[field] = None
        d[ORIGINAL_KEY] = dump
    return out


def restore(message: Mapping[str, Any]) -> ChatMessage:
    """The LlamaIndex message an archived neutral message came from (:func:`archived`); a message without
    :data:`ORIGINAL_KEY` (one a compile wrote) by :func:`plain_message`."""
    original = message.get(ORIGINAL_KEY)
    if not isinstance(original, Mapping):
        return plain_message(message)
    dump = json.loads(json.dumps(original))  # a copy: the archive's dict stays as stored
    given = message.get("content")
    content = given if isinstance(given, list) else []
    for block in dump.get("blocks", ()):
        if _PART in block:
            block[_PAYLOAD[block["block_type"]]] = _payload(content[block.pop(_PART)])
    return ChatMessage.model_validate(dump)
