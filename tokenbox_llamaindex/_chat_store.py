"""``SessionChatStore``: a LlamaIndex ``BaseChatStore`` on the TokenBox session archive (issue 13 §5).

Each chat-store key is a session.  Appends go straight to the archive; the
operations that rewrite history (``set_messages``, ``delete_message``,
``delete_last_message``, ``add_message`` at an index) replace the session's
turns in one transaction (``SessionStore.replace``), so later turns are renumbered.

>>> from llama_index.core.llms import ChatMessage
>>> from tokenbox_core.session import MemorySessionStore
>>> store = SessionChatStore(store=MemorySessionStore())
>>> store.add_message("u1", ChatMessage(role="user", content="hi"))
>>> [(m.role.value, m.content) for m in store.get_messages("u1")], store.get_keys()
([('user', 'hi')], ['u1'])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import ConfigDict, Field
from llama_index.core.storage.chat_store import BaseChatStore

from tokenbox_core.session import MemorySessionStore, SessionStore, SQLiteSessionStore
from tokenbox_llamaindex._messages import neutral, plain_message

__all__ = ["SessionChatStore", "from_neutral"]


def from_neutral(messages: Sequence[Mapping[str, Any]]) -> list[ChatMessage]:
    """Neutral dicts as LlamaIndex messages (:func:`~tokenbox_llamaindex._messages.plain_message`: tool calls,
    tool-call ids, names and overrides in ``additional_kwargs``, as LlamaIndex's OpenAI integration keeps them),
    with the turn id as ``additional_kwargs['id']``."""
    out = []
    for m in messages:
        message = plain_message(m)
        if m.get("id"):
            message.additional_kwargs["id"] = m["id"]
        out.append(message)
    return out


class SessionChatStore(BaseChatStore):
    """A chat store whose keys are sessions of a :class:`~tokenbox_core.session.SessionStore`.

    ``path`` opens a :class:`~tokenbox_core.session.SQLiteSessionStore` (and is what ``to_dict`` keeps);
    without it the store is ``store`` or a new in-memory one.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    path: str | None = Field(default=None, description="SQLite session archive; None keeps the turns in memory.")
    store: Any = Field(default=None, exclude=True, description="The SessionStore (built from path when None).")

    def model_post_init(self, context: Any, /) -> None:
        if self.store is None:
            self.store = SQLiteSessionStore(self.path) if self.path else MemorySessionStore()
        elif not isinstance(self.store, SessionStore):
            raise TypeError(f"store must be a SessionStore, got {type(self.store).__name__}")

    @classmethod
    def class_name(cls) -> str:
        return "SessionChatStore"

    @property
    def session_store(self) -> SessionStore:
        """The underlying archive."""
        store: SessionStore = self.store
        return store

    def set_messages(self, key: str, messages: list[ChatMessage]) -> None:
        """Replace the session's turns."""
        self._rewrite(key, neutral(messages))

    def get_messages(self, key: str) -> list[ChatMessage]:
        """Every turn of the session."""
        return from_neutral([t.as_message() for t in self.session_store.turns(key)])

    def add_message(self, key: str, message: ChatMessage, idx: int | None = None) -> None:
        """Append (or insert at ``idx``, which rewrites the session)."""
        if idx is None:
            self.session_store.extend(key, neutral([message]))
            return
        turns = self._plain(key)
        turns.insert(idx, neutral([message])[0])
        self._rewrite(key, turns)

    def delete_messages(self, key: str) -> list[ChatMessage] | None:
        """Delete the session; return its messages (None when it was empty)."""
        messages = self.get_messages(key)
        self.session_store.clear(key)
        return messages or None

    def delete_message(self, key: str, idx: int) -> ChatMessage | None:
        """Delete the message at ``idx`` (rewrites the session); None when out of range."""
        turns = self._plain(key)
        if not 0 <= idx < len(turns):
            return None
        removed = turns.pop(idx)
        self._rewrite(key, turns)
        return from_neutral([removed])[0]

    def delete_last_message(self, key: str) -> ChatMessage | None:
        """Delete the last message; None when the session is empty."""
        n = self.session_store.count(key)
        return self.delete_message(key, n - 1) if n else None

    def get_keys(self) -> list[str]:
        """Session ids."""
        return self.session_store.sessions()

    def _plain(self, key: str) -> list[dict[str, Any]]:
        return [dict(t.message) for t in self.session_store.turns(key)]

    def _rewrite(self, key: str, messages: list[dict[str, Any]]) -> None:
        self.session_store.replace(key, messages)
