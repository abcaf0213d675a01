"""The OpenAI Agents SDK's ``Session`` protocol on the TokenBox archive, and the input filter that prepares
each model call through :meth:`~tokenbox_core.ContextSession.prepare`.

``TokenBoxSession`` stores every item the runner gives it, losslessly (``get_items`` gives back exactly what
``add_items`` was given), on a SQLite file, a PostgreSQL database or memory.  ``TokenBoxInputFilter`` is a
``RunConfig(call_model_input_filter=...)``: before every model call it builds the neutral request (the
instructions as the system text, the agent's tools, handoffs and output schema as schemas, the model's window),
calls ``prepare`` once, and maps the compiled messages back to the original items (:mod:`._items`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from agents.run_config import CallModelData, ModelInputData

from tokenbox_core import ContextBudget, ContextSession
from tokenbox_core.errors import ConfigTypeError, SessionError
from tokenbox_core.request import ModelRequest, PreparedRequest
from tokenbox_core.session import SessionStore, open_store
from tokenbox_openai_agents._items import continues_step, from_message, to_messages, tool_schema

__all__ = ["TokenBoxInputFilter", "TokenBoxSession", "rehydrate_tool"]


def _store(store: Any) -> SessionStore:
    return open_store(store, argument="store")


class TokenBoxSession:
    """An Agents SDK ``Session`` (``Runner.run(agent, input, session=TokenBoxSession("user-1", store="a.db"))``)
    whose items are archived by a :class:`~tokenbox_core.ContextSession`.

    Args:
        session_id: the conversation's id in the store.
        store: ``None`` (in memory), a path (a SQLite file), a PostgreSQL URI or a ``SessionStore``.
        window: the window :class:`TokenBoxInputFilter` prepares into (an int or a ``ContextBudget``); the
            filter's own ``window=`` wins.
        counter / recall / masking / offload / cache_aware / defense: as :class:`~tokenbox_core.ContextSession`.
    """

    session_settings: Any = None

    def __init__(
        self, session_id: str, *, store: Any = None, window: int | ContextBudget = 128_000, **options: Any
    ) -> None:
        self.session_id = session_id
        self.window = window
        self._options = options
        self._owns_store = not isinstance(store, SessionStore)
        self.context = ContextSession(_store(store), session_id, budget=window, **options)

    def _reopen(self) -> None:
        """A new ContextSession on the same store: what it derived from the archive (views, the recall index)
        is read again after the archive was rewritten (pop, clear)."""
        store = self.context.store
        self.context.archive.close()
        self.context = ContextSession(store, self.session_id, budget=self.window, **self._options)

    def close(self) -> None:
        """Close the archive (and the store it opened from a path or URI)."""
        self.context.archive.close()
        if self._owns_store:
            self.context.store.close()

    def _messages(self) -> list[dict[str, Any]]:
        return [dict(t.message) for t in self.context.archive.turns()]

    def archived(self) -> dict[str, dict[str, Any]]:
        """Each archived message by its archived id (``t_17``)."""
        return {t.turn_id: dict(t.message) for t in self.context.archive.turns()}

    def archive(self, items: list[Any]) -> None:
        """Archive the items the archive does not hold yet (matched by their keys, :func:`._items.item_key`)."""
        self.context.sync(to_messages(items))

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """Every archived item in order, or the newest ``limit`` of them."""
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise SessionError(f"limit must be an integer >= 0 or None, got {limit!r}")
        items = [copy.deepcopy(dict(i)) for m in self._messages() for i in m.get("items") or ()]
        return items if limit is None else items[len(items) - limit :] if limit else []

    async def add_items(self, items: list[Any]) -> None:
        """Archive ``items`` after the archived ones (those an input filter archived already are recognised).

        Items that continue the run of function calls and provider items the archive ends with (one model
        response given in two calls) join its assistant message, as they would had they come in one call: the
        calls stay one message, their outputs directly after it (the last message is rewritten)."""
        items = list(items)
        messages = self._messages()
        if messages and continues_step(messages[-1], items):
            items = [*messages[-1]["items"], *items]
            self.context.store.replace(self.session_id, messages[:-1])
            self._reopen()
            messages = messages[:-1]
        keys = {str(m.get("id")) for m in messages}
        seen: dict[str, int] = {}  # the ordinals of the digests archived so far
        for key in keys:
            if key.startswith("item:"):
                _, digest, n = key.split(":")
                seen[digest] = max(seen.get(digest, -1), int(n))
        new = [m for m in to_messages(items, seen) if m["id"] not in keys]
        if new:
            self.context.add(new)

    async def pop_item(self) -> Any | None:
        """Remove the newest item and return it (``None`` when the session is empty)."""
        messages = self._messages()
        if not messages:
            return None
        *rest, last = messages[-1].get("items") or [None]
        kept = messages[:-1] + (to_messages(rest) if rest else [])
        self.context.store.replace(self.session_id, kept)
        self._reopen()
        return last

    async def clear_session(self) -> None:
        """Remove every item of this session."""
        self.context.store.clear(self.session_id)
        self._reopen()


class TokenBoxInputFilter:
    """``RunConfig(call_model_input_filter=TokenBoxInputFilter(session))``: every model input prepared within the
    window by :meth:`~tokenbox_core.ContextSession.prepare` (see the module docstring).

    Args:
        session: the :class:`TokenBoxSession` whose archive the inputs go to (the runner's ``session=``, or
            one of its own for runs without a session).
        window: the model's input window (default: the session's).
        output_reserve: tokens kept for the answer (default: the agent's ``model_settings.max_tokens``, else 0).
    """

    def __init__(
        self,
        session: TokenBoxSession,
        *,
        window: int | ContextBudget | None = None,
        output_reserve: int | None = None,
    ) -> None:
        if not isinstance(session, TokenBoxSession):
            raise ConfigTypeError(
                f"TokenBoxInputFilter needs a TokenBoxSession (TokenBoxInputFilter(TokenBoxSession('id', "
                f"store=...))), got {type(session).__name__}"
            )
        self.session = session
        self.window = session.window if window is None else window
        self.output_reserve = output_reserve
        self.last: PreparedRequest | None = None  # the newest prepared request (what the model received)

    def request(self, data: CallModelData[Any]) -> ModelRequest:
        """The neutral request of one model call."""
        from agents import Handoff, handoff

        agent = data.agent
        handoffs = [h if isinstance(h, Handoff) else handoff(h) for h in getattr(agent, "handoffs", ())]
        tools = [s for t in [*getattr(agent, "tools", ()), *handoffs] if (s := tool_schema(t))]
        response_format = None
        output_type = getattr(agent, "output_type", None)
        if output_type is not None and output_type is not str:
            from agents.agent_output import AgentOutputSchema

            schema = output_type if hasattr(output_type, "json_schema") else AgentOutputSchema(output_type)
            response_format = {"type": "json_schema", "json_schema": {"schema": schema.json_schema()}}
        reserve = self.output_reserve
        if reserve is None:
            reserve = getattr(getattr(agent, "model_settings", None), "max_tokens", None) or 0
        known = {str(t.message.get("id")) for t in self.session.context.archive.turns()}
        return ModelRequest(  # the input beyond the archive (prepare archives it; the archive holds the rest)
            [m for m in to_messages(data.model_data.input, copy_items=False) if m["id"] not in known],
            system=data.model_data.instructions,
            tools=tools,
            response_format=response_format,
            window=self.window,
            output_reserve=reserve,
        )

    def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        """The model input of one call, prepared (see the class docstring)."""
        prepared = self.session.context.prepare(self.request(data))
        self.last = prepared
        archived = self.session.archived()
        items: list[Any] = []
        for message, source in zip(prepared.messages, prepared.sources, strict=True):
            if source is not None:
                items.extend(dict(i) for i in archived[source].get("items") or ())
            else:
                found = archived.get(str(message.get("id")))
                items.extend(from_message(message, found if isinstance(found, Mapping) else None))
        return ModelInputData(input=items, instructions=data.model_data.instructions)


def rehydrate_tool(session: TokenBoxSession) -> Any:
    """The ``rehydrate`` function tool (``Agent(tools=[..., rehydrate_tool(session)])``): the model reads an
    archived message or an offloaded result back by the archived id a pointer, a masked output or a preview
    names (``t_17``)."""
    from agents import function_tool

    def rehydrate(id: str, offset: int = 0, limit: int = 4000) -> str:
        """Read an archived message or an offloaded tool result back by its id (such as t_17), as named in an
        omission pointer, a masked result or an offload preview; offset and limit are in characters."""
        return session.context.rehydrate(id, offset, limit)

    return function_tool(rehydrate, name_override="rehydrate")
