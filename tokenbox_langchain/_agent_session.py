"""The session behind :class:`~tokenbox_langchain._middleware.TokenBoxMiddleware` (``session=...``).

One :class:`~tokenbox_core.ContextSession` per thread id (the run's
``thread_id``; or the ``session_id`` given), on the store the user names — a
SQLite file (a path), a ``SessionStore``, or memory (``True``).  Before every
model call the request's new messages are archived (matched by message id) and
the session compiles the next request: the history that fits, old tool results
masked, oversized ones previewed, what was left out named by a pointer and
recalled when the task needs it.  The system message and the tool schemas are
reserved in the compile's budget, so the system message reaches the model
unchanged.  The compiled messages are mapped back to the original LangChain
messages where ``compiled.message_sources`` says they are unchanged (ids and
``additional_kwargs`` survive); a masked or previewed message is a copy of its
original with the new content (its id and tool-call id kept); a message the
compile wrote (the pointer with the recalled turns) is a new human message.

The ``rehydrate`` tool (contributed through ``AgentMiddleware.tools``) reads any
archived message or offloaded result back by its archived id (``t_17``); the
middleware answers it from the thread's session.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool

from tokenbox_core import ContextBudget, ContextSession, TokenCounter
from tokenbox_core.errors import SessionError
from tokenbox_core.request import ModelRequest
from tokenbox_core.session import OffloadConfig, SessionStore, open_store
from tokenbox_langchain._fit import neutral
from tokenbox_langchain._history import from_neutral

__all__ = ["REHYDRATE_TOOL", "Thread", "ThreadSessions", "rehydrate_tool"]

REHYDRATE_TOOL = "rehydrate"
_T = TypeVar("_T")


def rehydrate_tool() -> BaseTool:
    """The tool the model calls to read an archived message or an offloaded result back."""

    def rehydrate(id: str, offset: int = 0, limit: int = 4000) -> str:
        return "rehydrate is answered by TokenBoxMiddleware; add the middleware to the agent that offers this tool"

    return StructuredTool.from_function(
        rehydrate,
        name=REHYDRATE_TOOL,
        description=(
            "Read an archived message or an offloaded tool result back by its id (such as t_17), as named in an "
            "omission pointer, a masked result or an offload preview; offset and limit are in characters."
        ),
    )


class Thread:
    """One thread's session and the way from archived ids back to the LangChain messages."""

    def __init__(self, session: ContextSession) -> None:
        self.session = session
        self.archived: dict[str, str] = {}  # LangChain message id -> archived id
        self.message_id: dict[str, str] = {}  # archived id -> LangChain message id
        for turn in session.archive.turns():
            mid = turn.message.get("id")
            if mid:
                self._remember(str(mid), turn.turn_id)

    def _remember(self, mid: str, aid: str) -> None:
        self.archived[mid] = aid
        self.message_id[aid] = mid

    def archive(self, messages: Sequence[BaseMessage]) -> None:
        """Archive the messages not archived yet (by message id; by content for messages without one)."""
        if any(not m.id for m in messages):
            self.session.sync(neutral(messages))
            self.__init__(self.session)  # type: ignore[misc]  # re-read the id maps from the archive
            return
        new = [m for m in messages if m.id not in self.archived]
        if new:
            for m, aid in zip(new, self.session.add(neutral(new)), strict=True):
                self._remember(str(m.id), aid)

    def prepare(
        self, messages: Sequence[BaseMessage], request: ModelRequest
    ) -> tuple[list[SystemMessage], list[BaseMessage]]:
        """The prepared request (:meth:`~tokenbox_core.ContextSession.prepare`) as LangChain messages: system
        messages the compile wrote, then the messages (originals where the compile left them unchanged)."""
        prepared = self.session.prepare(request)  # the messages were archived by archive() before
        originals = {m.id: m for m in messages if m.id}
        lead: list[SystemMessage] = []
        out: list[BaseMessage] = []
        for d, source in zip(prepared.messages, prepared.sources, strict=True):
            aid = source or d.get("id")
            mid = self.message_id.get(str(aid)) if aid else None
            original = originals.get(mid) if mid else None
            if original is not None:
                out.append(original if source is not None else original.model_copy(update={"content": d["content"]}))
            elif d.get("role") in ("system", "developer") and not out:
                lead.append(SystemMessage(d["content"]))
            elif mid is not None:  # archived, no longer in the state (a persistent compaction removed it)
                out.append(from_neutral([{**d, "id": mid}])[0])
            else:  # written by the compile: the pointer with the recalled messages
                out.append(HumanMessage(d["content"]) if d.get("role") == "user" else from_neutral([d])[0])
        return lead, out

    def offload(self, state_messages: Sequence[BaseMessage], result: ToolMessage) -> ToolMessage:
        """``result`` archived as it is produced and, over the offload threshold, kept as its preview
        (:meth:`~tokenbox_core.ContextSession.offload`: archived once, however often the preview comes back)."""
        self.archive(state_messages)
        (message,) = neutral([result])
        kept = self.session.offload(message)
        if kept.get("content") == message.get("content"):
            return result
        archived = self.session.archive.answer_of(str(result.tool_call_id))
        if result.id and archived:
            self._remember(str(result.id), archived)
        return result.model_copy(update={"content": kept["content"]})


class ThreadSessions:
    """The sessions of one middleware, one per thread (see the module docstring)."""

    def __init__(
        self,
        store: Any,
        *,
        session_id: str | None,
        counter: TokenCounter,
        options: Mapping[str, Any],
    ) -> None:
        self.store: SessionStore = open_store(store, argument="session")
        self.session_id = session_id
        self.counter = counter
        self.options = dict(options)
        self.offload = self.options.get("offload", True)
        self._threads: dict[str, Thread] = {}
        self._locks: tuple[Any, dict[str, asyncio.Lock]] | None = None  # (event loop, a lock per session id)

    def thread_id(self, runtime: Any) -> str:
        """The session id of a run: ``session_id`` if given, else the run's thread id."""
        if self.session_id is not None:
            return self.session_id
        info = getattr(runtime, "execution_info", None)
        thread = getattr(info, "thread_id", None)
        if not thread:
            from langgraph.config import get_config

            try:
                thread = (get_config().get("configurable") or {}).get("thread_id")
            except RuntimeError:  # outside a run
                thread = None
        if not thread:
            raise SessionError(
                "TokenBoxMiddleware(session=...) needs a thread: run the agent with a checkpointer and "
                "config={'configurable': {'thread_id': ...}}, or pass session_id=..."
            )
        return str(thread)

    def thread(self, runtime: Any, budget: ContextBudget) -> Thread:
        """The thread of a run, its session opened on first use."""
        return self.open(self.thread_id(runtime), budget)

    def open(self, tid: str, budget: ContextBudget) -> Thread:
        """The thread ``tid``, its session opened on first use."""
        found = self._threads.get(tid)
        if found is None:
            session = ContextSession(self.store, tid, budget=budget, counter=self.counter, **self.options)
            found = self._threads[tid] = Thread(session)
        return found

    async def run(self, runtime: Any, work: Callable[[], _T]) -> _T:
        """``work()`` (the session work of a hook: archive appends, recall, compile) in a worker thread, so the
        event loop serves other runs meanwhile; one at a time per session, so two calls of one thread never
        interleave their appends, while different threads' sessions run concurrently.  Why a thread rather than
        an async store: the stores, the archive and the caches are locked for threads already (SQLite opens a
        connection per thread, PostgreSQL draws one from its pool), so one code path serves both APIs.  The
        threads are the loop's default executor (``asyncio.to_thread``): size it with ``loop.set_default_executor``
        for more concurrent sessions."""
        tid = self.thread_id(runtime)
        loop = asyncio.get_running_loop()
        if self._locks is None or self._locks[0] is not loop:  # an asyncio.Lock belongs to one event loop
            self._locks = (loop, {})
        lock = self._locks[1].setdefault(tid, asyncio.Lock())
        async with lock:
            return await asyncio.to_thread(work)

    def offload_config(self) -> OffloadConfig | None:
        """The offload settings (None when offload is off)."""
        value = self.offload
        if value is False or value is None:
            return None
        if isinstance(value, OffloadConfig):
            return value
        return OffloadConfig(**value) if isinstance(value, Mapping) else OffloadConfig()
