"""Responses-API input items <-> neutral chat messages, losslessly.

Each neutral message keeps the items it stands for verbatim under ``"items"`` (the archive gives back exactly
what it was given), and a key under ``"id"`` (how :meth:`~tokenbox_core.ContextSession.sync` knows what is
archived already): the item's own ``id``, ``output:<call_id>`` for a function call's output, else a digest of
the item with its ordinal among equal items.

- a message (``user``, ``system``, ``developer``, ``assistant``) is a chat message, its text parts as text parts
  and other parts (images, files, refusals) verbatim;
- a run of consecutive function calls and provider items (reasoning, compaction, hosted tool calls) is one
  assistant message: the calls as its tool calls (``call_id`` as the tool-call id), the provider items verbatim
  as its content parts — kept atomic, the reasoning with the calls it led to;
- a function call's output is a tool message answering its ``call_id``.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from tokenbox_core.errors import ConfigTypeError

__all__ = ["continues_step", "from_message", "item_key", "to_messages", "tool_schema"]

_ROLES = ("user", "system", "developer", "assistant")
_TEXT_PARTS = ("input_text", "output_text")


def _item(value: Any, index: int, copy_items: bool) -> dict[str, Any]:
    if hasattr(value, "model_dump"):  # a pydantic item the SDK's own types build
        value = value.model_dump(exclude_unset=True, mode="json")
    if not isinstance(value, Mapping):
        raise ConfigTypeError(
            f"item {index} must be a Responses input item (a dict such as {{'role': 'user', 'content': '...'}}), "
            f"got {type(value).__name__}"
        )
    return copy.deepcopy(dict(value)) if copy_items else dict(value)


def _kind(item: Mapping[str, Any]) -> str:
    kind = item.get("type")
    if kind in (None, "message") and item.get("role") in _ROLES:
        return "message"
    if kind == "function_call_output":
        return "output"
    return "step"  # a function call, a reasoning or compaction item, a hosted tool call


def continues_step(archived: Mapping[str, Any], items: Sequence[Any]) -> bool:
    """Whether ``items`` begin with a step item (a function call, a reasoning item) continuing the run of step items
    the ``archived`` message stands for: one run split across two ``add_items`` calls, one assistant message."""
    stored = archived.get("items") or ()
    return (
        bool(stored and items)
        and all(_kind(i) == "step" for i in stored)
        and _kind(_item(items[0], 0, copy_items=False)) == "step"
    )


def item_key(item: Mapping[str, Any], seen: dict[str, int]) -> str:
    """The key of ``item`` (see the module docstring); ``seen`` counts the digests met so far."""
    if item.get("type") == "function_call_output":
        return f"output:{item.get('call_id')}"
    if isinstance(item.get("id"), str) and item["id"]:
        return str(item["id"])
    if item.get("type") == "function_call" and item.get("call_id"):
        return f"call:{item['call_id']}"
    canonical = json.dumps(dict(item), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    digest = hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    seen[digest] = seen.get(digest, -1) + 1
    return f"item:{digest}:{seen[digest]}"


def _content(content: Any) -> Any:
    if isinstance(content, str) or content is None:
        return content
    return [
        {"type": "text", "text": p["text"]} if isinstance(p, Mapping) and p.get("type") in _TEXT_PARTS else p
        for p in content
    ]


def _output_text(output: Any) -> Any:
    if isinstance(output, str):
        return output
    return _content(output)


def to_messages(
    items: Sequence[Any], seen: dict[str, int] | None = None, *, copy_items: bool = True
) -> list[dict[str, Any]]:
    """The neutral messages of ``items`` (see the module docstring); ``copy_items=False`` when the messages are
    only read (the archive copies what it stores)."""
    seen = {} if seen is None else seen
    out: list[dict[str, Any]] = []
    step: list[dict[str, Any]] = []

    def close_step() -> None:
        if not step:
            return
        calls = [
            {"id": str(i["call_id"]), "type": "function", "function": {"name": i["name"], "arguments": i["arguments"]}}
            for i in step
            if i.get("type") == "function_call"
        ]
        provider = [i for i in step if i.get("type") != "function_call"]
        message: dict[str, Any] = {"role": "assistant", "content": provider or None}
        if calls:
            message["tool_calls"] = calls
        out.append({**message, "id": item_key(step[0], seen), "items": list(step)})
        step.clear()

    for index, value in enumerate(items):
        item = _item(value, index, copy_items)
        kind = _kind(item)
        if kind == "step":
            step.append(item)
            continue
        close_step()
        key = item_key(item, seen)
        if kind == "output":
            out.append(
                {"role": "tool", "tool_call_id": str(item.get("call_id")), "content": _output_text(item.get("output"))}
                | {"id": key, "items": [item]}
            )
        else:
            out.append({"role": item["role"], "content": _content(item.get("content")), "id": key, "items": [item]})
    close_step()
    return out


def _input_parts(content: Any) -> Any:
    if isinstance(content, str) or content is None:
        return content
    return [
        {"type": "input_text", "text": p["text"]} if isinstance(p, Mapping) and p.get("type") == "text" else p
        for p in content
    ]


def from_message(message: Mapping[str, Any], archived: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The items a compiled message stands for: the archived items when the compile changed nothing
    (``archived`` given), else the archived items with the compile's content (a masked or previewed output,
    the current user message with the session block first), else a new user message (written by the compile)."""
    items = [copy.deepcopy(dict(i)) for i in (archived or {}).get("items") or ()]
    if archived is not None and message.get("content") == archived.get("content"):
        return items
    content = message.get("content")
    if len(items) == 1 and items[0].get("type") == "function_call_output":
        return [{**items[0], "output": content if isinstance(content, str) else _input_parts(content)}]
    if len(items) == 1 and _kind(items[0]) == "message" and message.get("role") == items[0]["role"]:
        return [{**items[0], "content": _input_parts(content)}]
    if items:  # a step the compile does not rewrite
        return items
    return [{"role": str(message.get("role") or "user"), "content": _input_parts(content)}]


def tool_schema(tool: Any) -> dict[str, Any] | None:
    """A tool (a ``FunctionTool``, a ``Handoff``) as the schema the provider receives, in OpenAI's shape."""
    name = getattr(tool, "tool_name", None) or getattr(tool, "name", None)
    if not name:
        return None
    function: dict[str, Any] = {"name": str(name)}
    description = getattr(tool, "tool_description", None) or getattr(tool, "description", None)
    if description:
        function["description"] = str(description)
    parameters = getattr(tool, "params_json_schema", None) or getattr(tool, "input_json_schema", None)
    if parameters:
        function["parameters"] = parameters
    return {"type": "function", "function": function}
