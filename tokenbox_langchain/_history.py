"""LangChain chat history on the TokenBox session archive (issue 13 §5; chapter §6.10).

``SessionChatMessageHistory`` is a ``BaseChatMessageHistory``: it works with ``RunnableWithMessageHistory``.
Every message is archived in a :class:`~tokenbox_core.session.SessionStore` (SQLite or memory).  With a
``budget``, ``messages`` is the *managed* history of Algorithm 6.7 — the summary section, pending rehydrated
turns, a rehydration pointer for what the budget evicted, then the recent window — so a long conversation
reaches the model compacted and nothing is lost: the archive keeps every turn.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from tokenbox_core import ContextBudget
from tokenbox_core.errors import ConfigTypeError
from tokenbox_core.session import ManagedContext, ManagedHistory, SessionStore
from tokenbox_langchain._fit import neutral

__all__ = ["SessionChatMessageHistory", "from_neutral", "to_neutral"]


def to_neutral(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """LangChain messages as the core's neutral dicts (LangChain's own OpenAI conversion)."""
    return neutral(messages)


def _tool_calls(calls: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for call in calls:
        fn = call.get("function", call)
        args = fn.get("arguments", fn.get("args", {}))
        if isinstance(args, str):
            try:
                args = json.loads(args) if args else {}
            except ValueError:
                args = {"__raw__": args}
        out.append({"name": fn.get("name", ""), "args": args, "id": call.get("id"), "type": "tool_call"})
    return out


def from_neutral(messages: Sequence[Mapping[str, Any]]) -> list[BaseMessage]:
    """Neutral dicts as LangChain messages (ids kept, the reserved ``tokenbox`` options dropped)."""
    out: list[BaseMessage] = []
    for m in messages:
        role, content, extra = m.get("role"), m.get("content") or "", {"id": m.get("id")}
        if m.get("name"):
            extra["name"] = m["name"]
        if role in ("system", "developer"):
            out.append(SystemMessage(content=content, **extra))
        elif role == "user":
            out.append(HumanMessage(content=content, **extra))
        elif role == "assistant":
            out.append(AIMessage(content=content, tool_calls=_tool_calls(m.get("tool_calls") or ()), **extra))
        elif role == "tool":
            out.append(ToolMessage(content=content, tool_call_id=str(m.get("tool_call_id") or ""), **extra))
        else:
            raise ValueError(f"message role {role!r} is not one of system, developer, user, assistant, tool")
    return out


class SessionChatMessageHistory(BaseChatMessageHistory):
    """A LangChain chat history stored in a TokenBox session archive.

    Args:
        store: the archive (``SQLiteSessionStore(path)`` survives restarts and is shared between processes).
        session_id: the conversation.
        budget: when given, :attr:`messages` returns the managed history fitted to this many tokens;
            ``None`` returns every stored message.
        counter, summarizer, checkpoint options: passed to :class:`~tokenbox_core.session.ManagedHistory`.

    >>> from tokenbox_core.session import MemorySessionStore
    >>> history = SessionChatMessageHistory(MemorySessionStore(), "s1")
    >>> history.add_user_message("hello")
    >>> [(type(m).__name__, m.content, m.id) for m in history.messages]
    [('HumanMessage', 'hello', 't_1')]
    """

    def __init__(
        self,
        store: SessionStore,
        session_id: str,
        *,
        budget: int | ContextBudget | None = None,
        counter: Any = "gpt-4o",
        **managed_options: Any,
    ) -> None:
        self.store = store
        self.session_id = session_id
        self.managed: ManagedHistory | None = None
        if budget is not None:
            self.managed = ManagedHistory(store, session_id, budget=budget, counter=counter, **managed_options)
        elif managed_options:
            raise ConfigTypeError(f"{', '.join(sorted(managed_options))} need budget= (the managed history's size)")
        self.last_context: ManagedContext | None = None

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """Every stored message, or the managed history when a budget was given."""
        if self.managed is None:
            return from_neutral([t.as_message() for t in self.store.turns(self.session_id)])
        self.last_context = self.managed.compile()
        return from_neutral(self.last_context.messages)

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Archive the messages in one transaction."""
        self.store.extend(self.session_id, to_neutral(list(messages)))

    def clear(self) -> None:
        """Delete the session from the archive."""
        self.store.clear(self.session_id)
