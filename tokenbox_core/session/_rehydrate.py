"""Rehydration (chapter §6.10.5) and rehydration pointers (§6.7.2).

An omission marker names every turn it stands for and how to get them back::

    [OMITTED: 3 turns (t_17, t_18, t_19) — subtask "data validation" completed.
    Rehydrate via: rehydrate(["t_17","t_18","t_19"])]

(one line in the context; wrapped here)

:func:`rehydrate` fetches archived turns by id (summary ids expand to the turns they cover) or by a text query,
and asks the store to pin them for the session's next compile only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from tokenbox_core.errors import SessionError
from tokenbox_core.session._model import Turn
from tokenbox_core.session._recall import RecallIndex, SearchableStore, fts_query
from tokenbox_core.session._store import SessionStore
from tokenbox_core.session._summarize import turn_line

__all__ = [
    "REHYDRATE_DESCRIPTION",
    "SEARCH_DESCRIPTION",
    "format_turns",
    "rehydrate",
    "rehydration_pointer",
    "search_archive",
    "turns_payload",
]

Embed = Callable[[str], Sequence[float]]

REHYDRATE_DESCRIPTION = (
    "Restore archived conversation turns into your next context. Pass the turn ids named in an "
    '[OMITTED: ...] marker (e.g. ["t_17","t_18"]) or a summary id, or a query describing the topic. '
    "Returns the original turns as '<id> <role>: <text>' lines."
)
SEARCH_DESCRIPTION = (
    "Search the archived conversation by text without restoring anything; returns matching turns as "
    "'<id> <role>: <text>' lines, best first. Use rehydrate with the ids you need."
)


def rehydration_pointer(turn_ids: Sequence[str], reason: str | None = None) -> str:
    """The omission marker for ``turn_ids``: every id listed (never abbreviated) and the call that restores them.

    Summary ids (a summary the budget evicted) are counted as summaries; rehydrate() expands them.

    >>> print(rehydration_pointer(["t_17", "t_18", "t_19"], 'subtask "data validation" completed'))
    [OMITTED: 3 turns (t_17, t_18, t_19) — subtask "data validation" completed. Rehydrate via: \
rehydrate(["t_17","t_18","t_19"])]
    """
    if not turn_ids:
        raise SessionError("a rehydration pointer needs at least one turn id")
    turns = sum(1 for i in turn_ids if i.startswith("t_"))
    counts = [f"{n} {noun}{'' if n == 1 else 's'}" for n, noun in ((len(turn_ids) - turns, "summary"), (turns, "turn"))]
    what = " and ".join(c for c in counts if not c.startswith("0 ")).replace("summarys", "summaries")
    why = f" — {reason}" if reason else ""
    call = json.dumps(list(turn_ids), separators=(",", ":"), ensure_ascii=False)
    return f"[OMITTED: {what} ({', '.join(turn_ids)}){why}. Rehydrate via: rehydrate({call})]"


def search_archive(
    store: SessionStore, session_id: str, query: str, *, limit: int = 5, embed: Embed | None = None
) -> list[Turn]:
    """Archived turns matching ``query``, best first: the ranking a :class:`~tokenbox_core.ContextSession`'s
    recall uses (:class:`~tokenbox_core.session._recall.RecallIndex`: SQLite FTS5 ``bm25()`` over the session's
    turns, ties newer first; with ``embed``, fused with the embeddings' cosine ranking by reciprocal rank).  A
    store with its own full-text index (:class:`~tokenbox_core.session.PostgresSessionStore`) ranks by it."""
    if limit < 1:
        raise SessionError(f"limit must be >= 1, got {limit}")
    if fts_query(query) is None:
        raise SessionError(f"query {query!r} has no words to search for; pass turn ids or a descriptive query")
    if embed is None and isinstance(store, SearchableStore):  # the database ranks (PostgreSQL's full-text index)
        hits = store.search(session_id, query, limit=limit)
        return store.get_turns(session_id, [h.id for h in hits]) if hits else []
    turns = {t.turn_id: t for t in store.turns(session_id)}
    index = RecallIndex(embed)
    try:
        index.extend([(turn_id, t.text) for turn_id, t in turns.items()])
        return [turns[hit.id] for hit in index.search(query, limit=limit)]
    finally:
        index.close()


def _expand(store: SessionStore, session_id: str, ids: Sequence[str]) -> list[str]:
    summaries = {s.summary_id: s for s in store.summaries(session_id, include_invalidated=True)}
    out: list[str] = []
    for i in ids:
        out.extend(summaries[i].source_turn_ids if i in summaries else (i,))
    return list(dict.fromkeys(out))


def rehydrate(
    store: SessionStore,
    session_id: str,
    target: Sequence[str] | str,
    *,
    limit: int = 5,
    embed: Embed | None = None,
    pin: bool = True,
) -> list[Turn]:
    """Fetch archived turns and pin them for the next compile of the session (§6.10.5).

    Args:
        target: turn ids (``["t_17", "t_18"]``; a summary id stands for every turn it covers) or a text query.
        limit: most turns a query returns.
        embed: optional embedding function that ranks a query's matches.
        pin: ask the store to include the turns, pinned, in the session's next compile (then they return to
            the archive).

    Returns the turns in turn order.  Unknown ids raise :class:`UnknownTurnError` naming them.
    """
    if isinstance(target, str):
        turns = search_archive(store, session_id, target, limit=limit, embed=embed)
    else:
        if not target:
            raise SessionError("rehydrate needs turn ids or a query; got an empty list")
        turns = store.get_turns(session_id, _expand(store, session_id, list(target)))
    turns = sorted(turns, key=lambda t: t.seq)
    if pin and turns:
        store.request_rehydration(session_id, [t.turn_id for t in turns])
    return turns


def format_turns(turns: Sequence[Turn]) -> str:
    """Turns as ``<id> <role>: <text>`` lines (the text a rehydrate tool returns)."""
    return "\n".join(turn_line(t.as_message()) for t in turns)


def turns_payload(turns: Sequence[Turn]) -> list[dict[str, Any]]:
    """Turns as JSON-ready dicts (id, role, text, message) for tools and servers."""
    return [{"id": t.turn_id, "role": t.role, "text": t.text, "message": t.as_message()} for t in turns]
