"""LangChain on the session archive: chat history (RunnableWithMessageHistory), tools, LangGraph hook."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, ClassVar

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory

from tokenbox_core.errors import SessionError
from tokenbox_core.session import MemorySessionStore, SQLiteSessionStore
from tokenbox_langchain._graph import checkpoint_hook
from tokenbox_langchain._history import SessionChatMessageHistory, from_neutral, to_neutral
from tokenbox_langchain._tools import session_tools


def test_history_round_trips_every_message_kind(tmp_path: Path) -> None:
    """Human, AI with tool calls, tool and system messages come back from SQLite equal (ids are turn ids)."""
    call = {"name": "lookup", "args": {"q": "x"}, "id": "c1", "type": "tool_call"}
    messages = [
        SystemMessage("be brief"),
        HumanMessage("find x", name="ann"),
        AIMessage("", tool_calls=[call]),
        ToolMessage("x is 4", tool_call_id="c1"),
        AIMessage("x is 4."),
    ]
    with SQLiteSessionStore(tmp_path / "s.db") as store:
        history = SessionChatMessageHistory(store, "s")
        history.add_messages(messages)
    with SQLiteSessionStore(tmp_path / "s.db") as store:
        got = SessionChatMessageHistory(store, "s").messages
    assert [type(m) for m in got] == [type(m) for m in messages]
    assert [m.content for m in got] == [m.content for m in messages]
    assert got[1].name == "ann" and got[2].tool_calls == [call] and got[3].tool_call_id == "c1"
    assert [m.id for m in got] == ["t_1", "t_2", "t_3", "t_4", "t_5"]
    assert from_neutral(to_neutral(got)) == got


def test_works_with_runnable_with_message_history() -> None:
    """RunnableWithMessageHistory reads and appends through the store, per session."""
    store = MemorySessionStore()
    prompt = ChatPromptTemplate.from_messages([MessagesPlaceholder("history"), ("human", "{question}")])
    chain = prompt | FakeListChatModel(responses=["first reply", "second reply"])
    cfg = {"configurable": {"session_id": "u1"}}
    with warnings.catch_warnings():  # deprecated upstream in favour of LangGraph persistence, still supported
        warnings.simplefilter("ignore", DeprecationWarning)
        with_history = RunnableWithMessageHistory(
            chain,
            lambda sid: SessionChatMessageHistory(store, sid),
            input_messages_key="question",
            history_messages_key="history",
        )
        with_history.invoke({"question": "hello"}, config=cfg)
        with_history.invoke({"question": "again"}, config=cfg)
    assert [t.message["content"] for t in store.turns("u1")] == ["hello", "first reply", "again", "second reply"]


def test_history_with_a_budget_returns_the_managed_history() -> None:
    """With budget=, messages are the summary section then the recent window, within budget."""
    store = MemorySessionStore()
    history = SessionChatMessageHistory(store, "s", budget=300, counter="whitespace", window=6, interval=6)
    for i in range(30):
        history.add_messages([HumanMessage(f"question {i} about plan"), AIMessage(f"answer {i} with details")])
    got = history.messages
    assert isinstance(got[0], SystemMessage) and str(got[0].content).startswith("CONVERSATION_SUMMARY")
    assert history.last_context is not None and history.last_context.total_tokens <= 300
    assert len(got) < store.count("s") and got[-1].content == "answer 29 with details"
    with pytest.raises(TypeError, match="window need budget="):
        SessionChatMessageHistory(store, "s", window=3)


def test_tools_rehydrate_and_search() -> None:
    """The rehydrate tool pins turns; errors come back to the agent as tool errors, not exceptions."""
    store = MemorySessionStore()
    store.extend("s", [{"role": "user", "content": "the invoice total was 912 EUR"}, {"role": "user", "content": "ok"}])
    rehydrate, search = session_tools(store, "s")
    assert search.invoke({"query": "invoice"}) == "t_1 user: the invoice total was 912 EUR"
    assert store.take_rehydration("s") == []
    assert rehydrate.invoke({"query": "invoice total"}) == "t_1 user: the invoice total was 912 EUR"
    assert store.take_rehydration("s") == ["t_1"]
    assert "t_9" in rehydrate.invoke({"ids": ["t_9"]})
    assert "exactly one of" in rehydrate.invoke({})
    assert rehydrate.name == "rehydrate" and "OMITTED" in rehydrate.description


class ToolCallingModel(BaseChatModel):
    """A fake tool-calling model: a user question → a lookup call; a tool result → an answer. Records inputs."""

    received: ClassVar[list[list[BaseMessage]]] = []

    @property
    def _llm_type(self) -> str:
        return "fake-tool-calling"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolCallingModel:  # type: ignore[override]
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **_: Any) -> ChatResult:
        self.received.append(list(messages))
        last = messages[-1]
        if isinstance(last, ToolMessage):
            reply = AIMessage(f"answer: {last.content}")
        else:
            n = len(self.received)
            reply = AIMessage("", tool_calls=[{"name": "lookup", "args": {"q": str(last.content)}, "id": f"call{n}"}])
        return ChatResult(generations=[ChatGeneration(message=reply)])


def lookup(q: str) -> str:
    """Look something up."""
    return f"result for {q} " + "detail " * 5


def test_langgraph_pre_model_hook_with_create_react_agent(tmp_path: Path) -> None:
    """create_react_agent with the hook: the store mirrors the graph, the model sees summaries + window."""
    pytest.importorskip("langgraph")
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.prebuilt import create_react_agent

    ToolCallingModel.received.clear()
    store = SQLiteSessionStore(tmp_path / "agent.db")
    hook = checkpoint_hook(store, budget=220, counter="whitespace", window=8, interval=8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        agent = create_react_agent(ToolCallingModel(), [lookup], pre_model_hook=hook, checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "thread-7"}}
    for i in range(12):
        state = agent.invoke({"messages": [HumanMessage(f"question {i} about sku {i}")]}, cfg)
    assert state["messages"][-1].content.startswith("answer: result for question 11")
    assert store.count("thread-7") == len(state["messages"]) - 1  # every message but the final answer
    seen = ToolCallingModel.received[-1]
    assert isinstance(seen[0], SystemMessage) and str(seen[0].content).startswith("CONVERSATION_SUMMARY")
    assert len(seen) < len(state["messages"])
    tool_ids = {c["id"] for m in seen if isinstance(m, AIMessage) for c in m.tool_calls}
    assert all(m.tool_call_id in tool_ids for m in seen if isinstance(m, ToolMessage))
    store.close()


def test_hook_needs_a_session() -> None:
    """Without session_id and without a thread id the hook says how to fix it."""
    hook = checkpoint_hook(MemorySessionStore(), budget=100, counter="whitespace")
    with pytest.raises(SessionError, match="thread_id"):
        hook({"messages": [HumanMessage("hi")]}, {})
