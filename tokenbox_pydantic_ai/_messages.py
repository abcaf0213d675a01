"""pydantic-ai messages as the core's neutral messages, and the prepared messages back.

A :class:`~pydantic_ai.messages.ModelResponse` is one assistant message (its
text and thinking parts as text, its tool calls as ``tool_calls``: thinking
stays with the response it belongs to).  A
:class:`~pydantic_ai.messages.ModelRequest` is one neutral message per part: a
``ToolReturnPart`` a ``tool`` message with its ``tool_call_id``, a
``UserPromptPart`` or ``RetryFeedbackPart`` a ``user`` message.  System prompt
parts are the request's system text, not messages; they, and the control parts
that carry no conversation (instruction deltas and the like), go back on the
first request unchanged.  Every neutral message carries an id derived from its
part (a tool return's from its tool-call id), which is how the session knows
what it has archived and how :func:`rebuilt` finds the original part again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryFeedbackPart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.tools import ToolDefinition

__all__ = ["Converted", "converted", "rebuilt", "tool_schema"]


@dataclass
class Converted:
    """One conversation in neutral form, and the way back to its parts."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    system: list[str] = field(default_factory=list)  # the system prompt parts' text
    originals: dict[str, Any] = field(default_factory=dict)  # neutral id -> the part (or response) it came from
    carried: list[Any] = field(default_factory=list)  # system prompt and control parts, sent unchanged


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "\n".join(c for c in content if isinstance(c, str))
    return ""


def _digest(*values: Any) -> str:
    return hashlib.sha256(json.dumps(values, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _response(message: ModelResponse) -> dict[str, Any]:
    texts = [p.content for p in message.parts if isinstance(p, ThinkingPart | TextPart) and p.content]
    d: dict[str, Any] = {"role": "assistant", "content": "\n".join(texts)}
    calls = [
        {"id": p.tool_call_id, "type": "function", "function": {"name": p.tool_name, "arguments": p.args_as_json_str()}}
        for p in message.parts
        if isinstance(p, ToolCallPart)
    ]
    if calls:
        d["tool_calls"] = calls
    return d


def _part(part: Any) -> dict[str, Any] | None:
    if isinstance(part, ToolReturnPart):
        content = part.content if isinstance(part.content, str) else part.model_response_str()
        return {"role": "tool", "tool_call_id": part.tool_call_id, "content": content}
    if isinstance(part, UserPromptPart):
        return {"role": "user", "content": _text(part.content)}
    if isinstance(part, RetryFeedbackPart):
        return {"role": "user", "content": part.model_response()}
    return None


def converted(messages: Sequence[ModelMessage]) -> Converted:
    """The neutral messages of a pydantic-ai conversation (see the module docstring)."""
    out = Converted()
    seen: dict[str, int] = {}
    for message in messages:
        if isinstance(message, ModelResponse):
            entries: list[tuple[Any, dict[str, Any]]] = [(message, _response(message))]
        else:
            entries = []
            for part in message.parts:
                d = _part(part)
                if d is None:
                    out.carried.append(part)
                    if isinstance(part, SystemPromptPart):
                        out.system.append(part.content)
                else:
                    entries.append((part, d))
        for source, d in entries:
            if d["role"] == "tool":
                key = f"pai-r-{d['tool_call_id']}"
            else:
                base = _digest(d, message.run_id)
                key = f"pai-{base}-{seen.get(base, 0)}"
                seen[base] = seen.get(base, 0) + 1
            d["id"] = key
            out.originals[key] = source
            out.messages.append(d)
    return out


def tool_schema(tool: ToolDefinition) -> dict[str, Any]:
    """A pydantic-ai tool definition in OpenAI's shape (how the core counts a tool schema)."""
    function: dict[str, Any] = {"name": tool.name, "parameters": tool.parameters_json_schema}
    if tool.description:
        function["description"] = tool.description
    if tool.strict is not None:
        function["strict"] = tool.strict
    return {"type": "function", "function": function}


def _new(d: Mapping[str, Any], original: Any, names: Mapping[str, str]) -> Any:
    """The part (or response) for a prepared message the compile rewrote or wrote, or one archived in an earlier
    run that this run's messages do not hold (``names``: tool-call id -> tool name)."""
    content = d.get("content")
    if isinstance(content, list):
        content = [b.get("text", "") if isinstance(b, Mapping) else str(b) for b in content]
    if isinstance(original, ToolReturnPart):
        return replace(original, content=_text(content))
    if isinstance(original, UserPromptPart):
        if isinstance(content, str) or isinstance(original.content, str):
            return replace(original, content=content if isinstance(content, str) else list(content or []))
        own = [c for c in original.content if isinstance(c, str)]  # images, audio, files: kept where they were
        return replace(original, content=[*(t for t in content or [] if t not in own), *original.content])
    if isinstance(original, ModelResponse):
        calls = [p for p in original.parts if isinstance(p, ToolCallPart)]
        return replace(original, parts=[TextPart(_text(content)), *calls])
    if d.get("role") == "assistant":
        calls = [
            ToolCallPart(c["function"]["name"], c["function"].get("arguments"), tool_call_id=c["id"])
            for c in d.get("tool_calls") or ()
        ]
        text = [TextPart(_text(content))] if _text(content) else []
        return ModelResponse(parts=[*text, *calls])
    if d.get("role") == "tool":
        call_id = str(d.get("tool_call_id"))
        return ToolReturnPart(names.get(call_id, ""), _text(content), tool_call_id=call_id)
    return UserPromptPart(content if isinstance(content, str) else list(content or []))


def rebuilt(
    prepared: Sequence[Mapping[str, Any]],
    sources: Sequence[str | None],
    neutral_id: Mapping[str, str],
    conversation: Converted,
) -> list[ModelMessage]:
    """The prepared messages as pydantic-ai messages: an unchanged message is its original part, a masked or
    previewed one a copy of it with the new content (its tool-call id kept), a written one a new part; parts
    grouped back into requests and responses, the carried parts first."""
    out: list[ModelMessage] = []
    parts: list[Any] = list(conversation.carried)
    names = {c["id"]: c["function"]["name"] for d in prepared for c in d.get("tool_calls") or ()}
    for d, source in zip(prepared, sources, strict=True):
        aid = source or d.get("id")
        original = conversation.originals.get(neutral_id.get(str(aid), "")) if aid else None
        if (
            d.get("role") in ("system", "developer")
            and not out
            and not any(isinstance(p, UserPromptPart | ToolReturnPart) for p in parts)
        ):
            parts.append(SystemPromptPart(_text(d.get("content"))))
            continue
        item = original if source is not None and original is not None else _new(d, original, names)
        if isinstance(item, ModelResponse):
            if parts:
                out.append(ModelRequest(parts=parts))
                parts = []
            out.append(item)
        else:
            parts.append(item)
    if parts:
        out.append(ModelRequest(parts=parts))
    return out
