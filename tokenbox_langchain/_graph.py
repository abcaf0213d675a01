"""A LangGraph ``pre_model_hook`` that compiles an agent's messages with checkpoints (chapter §6.10.3–6.10.5).

Legacy route: ``langgraph.prebuilt.create_react_agent`` and its ``pre_model_hook`` are deprecated since
LangGraph 1.0 (``LangGraphDeprecatedSinceV10``, to be removed in 2.0).  New agents are built with
``langchain.agents.create_agent`` (or deepagents) and get TokenBox through
:class:`~tokenbox_langchain._middleware.TokenBoxMiddleware`.  This hook stays for existing
``create_react_agent`` code.

>>> from tokenbox_core.session import MemorySessionStore
>>> hook = checkpoint_hook(MemorySessionStore(), budget=2_000, counter="whitespace")
>>> from langchain_core.messages import HumanMessage
>>> hook({"messages": [HumanMessage("hi", id="a")]}, {"configurable": {"thread_id": "t1"}})["llm_input_messages"]
[HumanMessage(content='hi', additional_kwargs={}, response_metadata={}, id='t_1')]

Use it with ``create_react_agent(model, tools, pre_model_hook=hook)``: before every model call, the graph's
new messages are archived in the session store (the session mirrors the graph's message list; its id is
``session_id`` or the thread id of the run), the checkpoints are brought up to date, and the model receives
the managed history — summaries, rehydrated turns, a rehydration pointer, the recent window — as
``llm_input_messages`` while the graph's state keeps every message.  Needs the ``langgraph`` extra only to run
an agent; the hook itself is plain LangChain.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig

from tokenbox_core import ContextBudget
from tokenbox_core.errors import SessionError
from tokenbox_core.session import ManagedHistory, SessionStore
from tokenbox_langchain._history import from_neutral, to_neutral

__all__ = ["checkpoint_hook"]


def checkpoint_hook(
    store: SessionStore,
    *,
    budget: int | ContextBudget,
    session_id: str | None = None,
    counter: Any = "gpt-4o",
    **managed_options: Any,
) -> Callable[[Mapping[str, Any], RunnableConfig], dict[str, Any]]:
    """A ``pre_model_hook`` returning ``{"llm_input_messages": managed history}`` (see the module docstring).

    Args:
        store: the session archive.
        budget: tokens for the messages the model receives (the system prompt of the agent comes on top).
        session_id: fixed session id; ``None`` uses ``config["configurable"]["thread_id"]``.
        counter, managed_options: passed to :class:`~tokenbox_core.session.ManagedHistory` (``window``,
            ``interval``, ``summarizer``, ...).
    """
    ManagedHistory(store, "__validate__", budget=budget, counter=counter, **managed_options)  # fail early
    histories: dict[str, ManagedHistory] = {}

    def hook(state: Mapping[str, Any], config: RunnableConfig) -> dict[str, Any]:
        sid = session_id or (config.get("configurable") or {}).get("thread_id")
        if not sid:
            raise SessionError("no session: pass session_id= to checkpoint_hook or run the graph with a thread_id")
        messages = list(state["messages"])
        stored = store.count(sid)
        if len(messages) < stored:
            raise SessionError(
                f"the graph holds {len(messages)} messages but session {sid!r} archived {stored}: the session "
                f"mirrors the graph's message list, so removing messages from the graph state is not supported; "
                f"use another session_id"
            )
        if len(messages) > stored:
            store.extend(sid, to_neutral(messages[stored:]))
        history = histories.get(sid)
        if history is None:
            history = histories[sid] = ManagedHistory(store, sid, budget=budget, counter=counter, **managed_options)
        return {"llm_input_messages": from_neutral(history.compile().messages)}

    return hook
