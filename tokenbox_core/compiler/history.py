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
:mod:`tokenbox_core.compiler.assemble`).

The last few conversations' sections are kept (:data:`_KEPT` of them): compiling the same
conversation again (a retry, a page, the same turn with other evidence) re-uses the very Section
objects, so the engine does not re-build them and the Token Box finds its measurements on them.  A
kept conversation is used only when the messages (with the current turn) are equal
to a private deep copy taken when it was built, and the messages it holds still are too (nothing
mutated them in place since), for the same counter object and priority; only plain JSON-like
messages are kept.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tokenbox_core.chat import ConversationSections, conversation_sections
from tokenbox_core.tokens import TokenCounter, content_text

__all__ = ["PREFIX", "History", "clear_caches", "history_sections", "message_text"]

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
    kept = _kept(msgs, counter, priority)
    if kept is not None:
        return kept
    conversation = conversation_sections(
        msgs, counter=counter, keep_last="user", start_on="user", history_priority=priority, prefix=PREFIX
    )
    anchor_section = None
    if anchor is not None:
        anchor_id = conversation.ids.get(anchor)
        for section in conversation.sections:
            if any(item.id == anchor_id for item in section.items):
                anchor_section = section.id
    history = History(conversation, anchor_section)
    _keep(msgs, counter, priority, history)
    return history


# ---------------------------------------------------------------- the kept conversations

_KEPT = 4  # conversations
_KEPT_CHARS = 8 * 1024 * 1024  # a conversation with more text than this is not kept
_SCALARS = (str, int, float, bool, type(None))
_TEXTS = (str, type(None))
_lock = threading.Lock()
_kept_entries: list[tuple[list[dict[str, Any]], tuple[int, ...], TokenCounter, int, History]] = []


class _NotPlain(Exception):
    pass


def _copy(value: Any) -> Any:
    """A private deep copy of JSON-like data (dicts with string keys, lists, tuples, scalars)."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict:
        if not all(type(k) is str for k in value):
            raise _NotPlain
        return {k: _copy(v) for k, v in value.items()}
    if kind is list:
        return [_copy(v) for v in value]
    if kind is tuple:
        return tuple(_copy(v) for v in value)
    raise _NotPlain


def _snapshot(msgs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], tuple[int, ...]] | None:
    """A deep copy of the messages and the indices of those holding anything but strings and ``None`` (``None``
    when a message holds anything but plain data, or there is too much)."""
    out: list[dict[str, Any]] = []
    strict: list[int] = []
    chars = 0
    try:
        for i, m in enumerate(msgs):
            if all(type(v) in _TEXTS for v in m.values()) and all(type(k) is str for k in m):
                out.append(dict(m))  # the common case: nothing nested, no number
            else:
                out.append(_copy(m))
                strict.append(i)
            content = m.get("content")
            chars += len(content) if type(content) is str else 0
    except _NotPlain:
        return None
    return (out, tuple(strict)) if chars <= _KEPT_CHARS else None


def _same(a: Any, b: Any) -> bool:
    """``a == b`` with strict types and key order: ``1``, ``1.0`` and ``True`` differ, so do ``0.0`` and
    ``-0.0``, and so do two dicts listing their keys in another order (they render differently)."""
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is dict:
        return list(a) == list(b) and all(_same(v, b[k]) for k, v in a.items())
    if kind is list or kind is tuple:
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if kind is float:
        return repr(a) == repr(b)
    return bool(a == b)


def _equal(msgs: Sequence[Mapping[str, Any]], snapshot: list[dict[str, Any]], strict: tuple[int, ...]) -> bool:
    """Whether ``msgs`` equal the snapshot as the engine sees them: ``==``, the same key order, and for the
    messages holding numbers or nested data, :func:`_same`."""
    return (
        msgs == snapshot
        and list(map(tuple, msgs)) == list(map(tuple, snapshot))
        and all(_same(msgs[i], snapshot[i]) for i in strict)
    )


def _kept(msgs: list[dict[str, Any]], counter: TokenCounter, priority: int) -> History | None:
    with _lock:
        entries = list(_kept_entries)
    for n in range(len(entries) - 1, -1, -1):
        snapshot, strict, kept_counter, kept_priority, found = entries[n]
        if kept_counter is not counter or kept_priority != priority or len(snapshot) != len(msgs):
            continue
        # equal to the copy taken at build time, and so is what the kept conversation holds (a caller may
        # have changed a nested value of one of its messages in place since)
        if _equal(msgs, snapshot, strict) and _equal(found.conversation.messages, snapshot, strict):
            return found
    return None


def _keep(msgs: list[dict[str, Any]], counter: TokenCounter, priority: int, history: History) -> None:
    taken = _snapshot(msgs)
    if taken is None:
        return
    snapshot, strict = taken
    with _lock:
        _kept_entries.append((snapshot, strict, counter, priority, history))
        del _kept_entries[:-_KEPT]


def clear_caches() -> None:
    """Forget the kept conversations."""
    with _lock:
        _kept_entries.clear()
