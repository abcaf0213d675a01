"""The archive and context session behind :class:`~tokenbox_llamaindex.TokenBoxSessionMemory`.

:class:`HistorySession` archives neutral messages through a :class:`~tokenbox_core.ContextSession`, keeps
the flush mark (as eviction events in the archive, so a reload in another process keeps it), decides with the
core's conversation engine which messages a flush takes, and prepares each model call's history with the
session (``ContextSession.prepare``: recall, masking, offload, tool groups whole — the core decides).  It returns
LlamaIndex messages: each archived message the compile left unchanged rebuilt from the archive (so it comes back
as it went in), each message the compile wrote (the pointer with recalled turns, a masked or offloaded preview)
from its text.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from llama_index.core.base.llms.types import ChatMessage

from tokenbox_core import CompilerConfig, ContextCriticalOverflow, ContextSession, TokenCounter
from tokenbox_core.chat import ChatCounter, ConversationOverflow, fit_conversation
from tokenbox_core.errors import CompilationError, ConfigError, ConfigTypeError
from tokenbox_core.request import ModelRequest
from tokenbox_core.session import PostgresSessionStore, SessionStore, open_store
from tokenbox_llamaindex._memory import MemoryOverflow
from tokenbox_llamaindex._messages import plain_message, restore

__all__ = ["FLUSHED", "HistorySession", "ShareOverflow", "chat_store_of", "sqlite_path", "store_of"]

FLUSHED = "flushed"
"""Reason of the eviction events that record flushes."""
_SQLITE_PREFIXES = ("sqlite+aiosqlite:///", "sqlite:///")


def store_of(chat_store: Any) -> tuple[SessionStore, str | None]:
    """(the session store, its SQLite path) for ``chat_store``, as :func:`tokenbox_core.session.open_store` opens
    it: a SessionStore, a SQLite path, a PostgreSQL URI (``postgresql+psycopg://…``), or None (in memory)."""
    try:
        store = open_store(chat_store, argument="chat_store")
    except ConfigTypeError as exc:
        raise ConfigTypeError(
            f"{exc}; LlamaIndex's AsyncDBChatStore is not supported (TokenBoxSessionMemory archives in a session "
            f"store): pass chat_store='memory.db' or async_database_uri='sqlite+aiosqlite:///memory.db'"
        ) from exc
    path = getattr(store, "path", None)
    return store, None if path is None else os.fspath(path)


def sqlite_path(uri: str) -> str | None:
    """The file of a SQLite ``async_database_uri`` (``None`` for ``:memory:``); other databases raise."""
    for prefix in _SQLITE_PREFIXES:
        if uri.startswith(prefix):
            path = uri[len(prefix) :]
            return None if path in ("", ":memory:") else path
    raise ConfigError(
        f"async_database_uri {uri!r} is neither SQLite nor PostgreSQL; TokenBoxSessionMemory archives in either: "
        f"pass async_database_uri='sqlite+aiosqlite:///memory.db' or 'postgresql+psycopg://user@host/db' "
        f"(or chat_store=<a TokenBox SessionStore>)"
    )


def chat_store_of(
    chat_store: Any, table_name: str, async_database_uri: str | None, async_engine: Any, db_schema: str | None
) -> Any:
    """``Memory.from_defaults``'s storage arguments as a ``chat_store`` for :func:`store_of`."""
    if async_engine is not None or db_schema is not None or table_name != "llama_index_memory":
        raise ConfigError(
            "TokenBoxSessionMemory archives in a TokenBox session store (SQLite, PostgreSQL or memory): async_engine, "
            "db_schema and table_name do not apply; pass async_database_uri='sqlite+aiosqlite:///memory.db' "
            "or chat_store=<path or SessionStore>"
        )
    if async_database_uri is None:
        return chat_store
    if chat_store is not None:
        raise ConfigError("give chat_store or async_database_uri, not both")
    if PostgresSessionStore.accepts(async_database_uri):
        return async_database_uri  # store_of opens it with PostgresSessionStore
    return sqlite_path(async_database_uri)


class ShareOverflow(MemoryOverflow):
    """:class:`~tokenbox_llamaindex.MemoryOverflow` of the agent memory, whose limit is its share."""

    limit_name = "the memory's share of token_limit (token_limit minus reserve)"


class HistorySession:
    """One memory's session in ``store`` (see the module docstring); ``options`` are the ContextSession's
    ``recall``, ``masking``, ``offload``, ``on_invalid`` and ``defense``."""

    def __init__(self, store: SessionStore, session_id: str, path: str | None, **options: Any) -> None:
        self.store = store
        self.session_id = session_id
        self.path = path
        self.options = options
        self._flushed: int | None = None
        self._context: ContextSession | None = None

    def context(self, counter: TokenCounter) -> ContextSession:
        """The context session counting with ``counter`` (made again when the counter or the archive changed
        under it: its view of the archive is read incrementally)."""
        context = self._context
        if context is None or context.compiler.counter.name != counter.name:
            if context is not None:
                context.close()
            config = CompilerConfig(required_sections=())
            options = {"counter": counter, "config": config, **self.options}
            context = ContextSession(self.store, self.session_id, budget=1, **options)  # budget: given per compile
            self._context = context
        return context

    @property
    def flushed_count(self) -> int:
        """How many of the session's first messages were flushed."""
        if self._flushed is None:
            events = self.store.evictions(self.session_id)
            self._flushed = sum(len(e.turn_ids) for e in events if e.reason == FLUSHED)
        return self._flushed

    def turns(self, start: int = 0, stop: int | None = None) -> list[dict[str, Any]]:
        """Archived messages (neutral, ``id`` = the archived id) by position."""
        return [t.as_message() for t in self.store.turns(self.session_id, start=start, stop=stop)]

    def add(self, messages: Sequence[dict[str, Any]], counter: TokenCounter) -> list[str]:
        """Validate and archive ``messages`` (one transaction); their archived ids."""
        return self.context(counter).add(messages)

    def replace(self, messages: Sequence[dict[str, Any]], flushed: int = 0) -> None:
        """Replace the session's messages, the first ``flushed`` of them marked flushed."""
        plain = [{k: v for k, v in m.items() if k != "id"} for m in messages]
        ids = self.store.replace(self.session_id, plain)
        if flushed:
            self.store.record_eviction(self.session_id, ids[:flushed], FLUSHED)
        self._flushed = flushed
        if self._context is not None:
            self._context.close()
            self._context = None

    def flush(self, limit: int, flush_size: int, chat: ChatCounter) -> list[dict[str, Any]]:
        """When the active messages cost more than ``limit``, mark the oldest flushed — at least ``flush_size``
        tokens, whole tool groups, the rest starting on a user message (the core's conversation engine
        decides) — and return them; else ``[]``."""
        active = self.turns(start=self.flushed_count)
        if sum(chat.size(m) for m in active) <= limit:
            return []
        try:
            fit = fit_conversation(
                active, max(1, limit - flush_size), counter=chat, include_system=False, start_on="user"
            )
            boundary = fit.kept[0] if fit.kept else len(active)
        except ConversationOverflow:  # the latest user turn alone is over: keep it and what follows
            boundary = max((i for i, m in enumerate(active) if m["role"] == "user"), default=len(active))
        flushed = active[:boundary]
        if flushed:
            self.store.record_eviction(self.session_id, [m["id"] for m in flushed], FLUSHED)
            self._flushed = self.flushed_count + len(flushed)
        return flushed

    def prepare(self, request: ModelRequest, counter: TokenCounter) -> tuple[list[ChatMessage], Any, int]:
        """(the history for ``request`` — :meth:`~tokenbox_core.ContextSession.prepare`, once per model call — as
        LlamaIndex messages, the session's CompiledContext, what the messages cost, priming not included)."""
        if not self.store.count(self.session_id):
            return [], None, 0
        base = ChatCounter.of(counter).base
        share = request.budget(counter).capacity - base
        try:
            prepared = self.context(counter).prepare(request)
        except CompilationError as exc:  # first: the compiler's FixedTiersOverflow is a ContextCriticalOverflow too
            if "overflow" not in exc.rules:
                raise
            fixed = self._fixed()  # the leading system messages and the latest user message: every compile's
            names = ["system"] * (fixed[0]["role"] != "user") + ["latest-user"]
            raise ShareOverflow(share, sum(ChatCounter.of(counter).size(m) for m in fixed), names) from exc
        except ContextCriticalOverflow as exc:
            raise ShareOverflow(share, exc.required - base, exc.section_ids) from exc
        pairs = zip(prepared.messages, prepared.sources, strict=True)
        out = [restore(m) if source is not None else plain_message(m) for m, source in pairs]
        return out, prepared.compiled, prepared.tokens - base

    def _fixed(self) -> list[dict[str, Any]]:
        turns = self.turns()
        lead = next((i for i, m in enumerate(turns) if m["role"] not in ("system", "developer")), len(turns))
        users = [m for m in turns if m["role"] == "user"]
        return turns[:lead] + users[-1:]
