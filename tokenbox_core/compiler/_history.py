"""Tier 4 history through the core's conversation engine (:func:`tokenbox_core.chat.conversation_sections`).

The compiler does not decide on its own what a conversation may lose: the
engine's rules apply — leading system messages
and the latest user message are critical, history is evicted oldest first by
whole tool groups, a trimmed history restarts on a user message without
emptying an agent loop.  The compiler puts the engine's Sections into its
own single layout and maps the result back with
:meth:`ConversationSections.finish`.

The current user message (``user=``) is appended as the conversation's last
user turn, as the user wrote it, so it is the engine's critical anchor (the
instruction hierarchy is stated in the system tier, see
:mod:`tokenbox_core.compiler._assemble`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tokenbox_core.chat import ConversationSections, conversation_sections
from tokenbox_core.tokens import TokenCounter, content_text

__all__ = ["PREFIX", "History", "history_sections", "message_text"]

PREFIX = "history/"
"""Every conversation section id (and tool group) starts with this prefix in the compiler's layout."""


@dataclass(frozen=True)
class History:
    """The conversation's sections and the engine's mapping back; ``anchor`` is the current turn's section."""

    conversation: ConversationSections
    anchor: str | None


def message_text(message: Mapping[str, Any]) -> str:
    """A message as one line of a text prompt: ``role: content`` plus its tool calls."""
    role = str(message.get("role") or "user")
    text = content_text(message.get("content"))
    parts = [text] if text else []
    for call in message.get("tool_calls") or ():
        fn = call.get("function", call) if isinstance(call, Mapping) else {}
        name = fn.get("name", "?") if isinstance(fn, Mapping) else "?"
        args = fn.get("arguments", "") if isinstance(fn, Mapping) else ""
        parts.append(f"[tool call {name}({args})]")
    if role == "tool" and message.get("tool_call_id"):
        role = f"tool[{message['tool_call_id']}]"
    return f"{role}: {' '.join(parts)}"


def history_sections(
    messages: Sequence[Mapping[str, Any]],
    *,
    user: str | None,
    counter: TokenCounter,
    priority: int,
) -> History | None:
    """The conversation (plus the current user message) as engine Sections; ``None`` when there is none."""
    msgs = [dict(m) for m in messages]
    if user is not None:
        msgs.append({"role": "user", "content": user})
    if not msgs:
        return None
    anchor = next((i for i in range(len(msgs) - 1, -1, -1) if msgs[i].get("role") == "user"), None)
    conversation = conversation_sections(
        msgs, counter=counter, keep_last="user", start_on="user", history_priority=priority, prefix=PREFIX
    )
    anchor_section = None
    if anchor is not None:
        anchor_id = conversation.ids.get(anchor)
        for section in conversation.sections:
            if any(item.id == anchor_id for item in section.items):
                anchor_section = section.id
    return History(conversation, anchor_section)
