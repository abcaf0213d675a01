"""LlamaIndex ``FunctionTool``s over the session archive: ``rehydrate`` and ``search_archive`` (§6.10.5).

>>> from tokenbox_core.session import MemorySessionStore
>>> store = MemorySessionStore()
>>> _ = store.append("s1", {"role": "user", "content": "the invoice total was 912 EUR"})
>>> rehydrate, search = session_tools(store, "s1")
>>> str(rehydrate.call(ids=["t_1"]))
't_1 user: the invoice total was 912 EUR'
"""

from __future__ import annotations

from llama_index.core.tools import FunctionTool

from tokenbox_core.errors import TokenBoxError
from tokenbox_core.session import (
    REHYDRATE_DESCRIPTION,
    SEARCH_DESCRIPTION,
    SessionStore,
    format_turns,
    rehydrate,
    search_archive,
)

__all__ = ["rehydrate_tool", "search_archive_tool", "session_tools"]


def rehydrate_tool(store: SessionStore, session_id: str, *, limit: int = 5) -> FunctionTool:
    """A ``FunctionTool`` taking turn ids (or a summary id) or a query; the turns come back as text and are
    pinned into the session's next compile.  Errors are returned as text the agent can read."""

    def rehydrate_turns(ids: list[str] | None = None, query: str | None = None) -> str:
        if (ids is None) == (query is None):
            return "error: pass exactly one of ids (a list of turn ids) or query (text)"
        try:
            turns = rehydrate(store, session_id, ids if ids is not None else str(query), limit=limit)
        except TokenBoxError as exc:
            return f"error: {exc}"
        return format_turns(turns) if turns else f"no archived turn matches {query!r}"

    return FunctionTool.from_defaults(fn=rehydrate_turns, name="rehydrate", description=REHYDRATE_DESCRIPTION)


def search_archive_tool(store: SessionStore, session_id: str, *, limit: int = 5) -> FunctionTool:
    """A ``FunctionTool`` searching the archive by text without restoring anything."""

    def search(query: str) -> str:
        try:
            turns = search_archive(store, session_id, query, limit=limit)
        except TokenBoxError as exc:
            return f"error: {exc}"
        return format_turns(turns) if turns else f"no archived turn matches {query!r}"

    return FunctionTool.from_defaults(fn=search, name="search_archive", description=SEARCH_DESCRIPTION)


def session_tools(store: SessionStore, session_id: str, *, limit: int = 5) -> list[FunctionTool]:
    """``[rehydrate, search_archive]`` for one session."""
    return [rehydrate_tool(store, session_id, limit=limit), search_archive_tool(store, session_id, limit=limit)]
