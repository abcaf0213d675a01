"""The adapters' async paths on a session (SQLite, PostgreSQL; issue 34): TokenBoxMiddleware's awrap_* hooks and
TokenBoxSessionMemory's async methods run the archive work off the event loop, one call at a time per session."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from llama_index.core.agent.workflow import FunctionAgent

from tokenbox_core.session import PostgresSessionStore, SQLiteSessionStore
from tokenbox_langchain import TokenBoxMiddleware
from tokenbox_langchain.testing import FakeToolModel, lookup_tool
from tokenbox_llamaindex import TokenBoxSessionMemory
from tokenbox_llamaindex.testing import RecordingFunctionLLM

INSPECT_DEPRECATIONS = "ignore::DeprecationWarning:inspect"  # LlamaIndex reads pydantic's deprecated attributes


class LoopWatch:
    """Wraps every method of a store: records the thread each call ran on and, off the loop's thread, waits for
    the event loop to run a callback while the call is in flight (it could not if the call blocked the loop)."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.loop: asyncio.AbstractEventLoop | None = None
        self.calls: list[tuple[str, int]] = []
        self.answered = 0
        for name in dir(type(store)):
            if not name.startswith("_") and callable(getattr(type(store), name)) and name not in ("accepts", "close"):
                setattr(store, name, self._wrapped(name, getattr(store, name)))

    def _wrapped(self, name: str, method: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            loop = self.loop
            if loop is not None:
                self.calls.append((name, threading.get_ident()))
                if threading.get_ident() != self.loop_thread:
                    served = threading.Event()
                    loop.call_soon_threadsafe(served.set)
                    if served.wait(30):  # a deadline against a hang only: a blocked loop fails, never passes
                        self.answered += 1
            return method(*args, **kwargs)

        return call

    async def watching(self, work: Any) -> Any:
        """``await work`` with the calls recorded (from this task's loop, on its thread)."""
        self.loop, self.loop_thread = asyncio.get_running_loop(), threading.get_ident()
        try:
            return await work
        finally:
            self.loop = None


def _agent(mw: TokenBoxMiddleware, model: FakeToolModel) -> Any:
    return create_agent(model, [lookup_tool(words=60)], system_prompt="Research.", middleware=[mw])


async def _ainvoke(agent: Any, thread: str) -> list[Any]:
    config = {"configurable": {"thread_id": thread}, "recursion_limit": 1_000}
    state = await agent.ainvoke(
        {"messages": [HumanMessage(f"Research the catalogue for {thread}.", id="task")]}, config
    )
    return list(state["messages"])


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """A SQLite file, or a PostgreSQL schema (skips without TOKENBOX_TEST_POSTGRES_DSN)."""
    if request.param == "postgres":
        made: Any = PostgresSessionStore(request.getfixturevalue("postgres_dsn"))
    else:
        made = SQLiteSessionStore(tmp_path / "agent.db")
    yield made
    made.close()


def test_ainvoke_runs_every_archive_call_off_the_event_loop(store: Any) -> None:
    """agent.ainvoke with session=<store>: every store call of the hooks runs on a worker thread while the event
    loop keeps serving (a callback it runs mid-call), and a ticker task ticks throughout."""
    watch = LoopWatch(store)
    model = FakeToolModel(steps=6)
    mw = TokenBoxMiddleware(3_000, session=store, offload=True)
    ticks: list[int] = []

    async def main() -> list[Any]:
        done = asyncio.Event()

        async def ticker() -> None:
            while not done.is_set():
                ticks.append(len(watch.calls))
                await asyncio.sleep(0.002)

        tick = asyncio.create_task(ticker())
        try:
            return await watch.watching(_ainvoke(_agent(mw, model), "t1"))
        finally:
            done.set()
            await tick

    state = asyncio.run(main())
    assert watch.calls, "the hooks called the store"
    assert {ident for _, ident in watch.calls}.isdisjoint({watch.loop_thread})
    assert watch.answered == len(watch.calls)  # the loop served a callback during every store call
    assert len(set(ticks)) > 1  # the ticker ran between store calls too
    assert [m["id"] for m in mw.session("t1").messages()] == [m.id for m in state[:-1]]


def test_two_threads_gathered_archive_every_message_once_in_order(store: Any) -> None:
    """Two threads' ainvoke gathered on one middleware: each thread's archive holds its messages once, in order,
    and one session's worker calls never overlapped."""
    watch = LoopWatch(store)
    model = FakeToolModel(steps=8)
    mw = TokenBoxMiddleware(3_000, session=store)
    active: dict[str, int] = {}
    overlaps: list[str] = []
    guard = threading.Lock()
    original = mw.sessions.run

    async def run(runtime: Any, work: Any) -> Any:
        tid = mw.sessions.thread_id(runtime)

        def counted() -> Any:
            with guard:
                active[tid] = active.get(tid, 0) + 1
                if active[tid] > 1:
                    overlaps.append(tid)
            try:
                return work()
            finally:
                with guard:
                    active[tid] -= 1

        return await original(runtime, counted)

    mw.sessions.run = run

    async def main() -> tuple[list[Any], list[Any]]:
        agent = _agent(mw, model)
        a, b = await watch.watching(asyncio.gather(_ainvoke(agent, "a"), _ainvoke(agent, "b")))
        return a, b

    a, b = asyncio.run(main())
    assert overlaps == []
    for tid, state in (("a", a), ("b", b)):
        archived = mw.session(tid).messages()
        assert [m["id"] for m in archived] == [m.id for m in state[:-1]]
        assert archived[0]["content"] == f"Research the catalogue for {tid}."
        assert store.count(tid) == len(state) - 1
    assert {ident for _, ident in watch.calls}.isdisjoint({watch.loop_thread})


# -- LlamaIndex -------------------------------------------------------------------------------------------------


@pytest.mark.postgres
@pytest.mark.filterwarnings(INSPECT_DEPRECATIONS)
def test_function_agent_async_on_postgres_archives_everything_and_continues(postgres_dsn: str) -> None:
    """FunctionAgent.run with TokenBoxSessionMemory(async_database_uri='postgresql+psycopg://...'): every store call
    off the event loop, every message archived once; a new memory on the same URI continues the conversation."""
    uri = "postgresql+psycopg://" + postgres_dsn.removeprefix("postgresql://")

    def memory() -> TokenBoxSessionMemory:
        return TokenBoxSessionMemory.from_defaults(token_limit=3_000, session_id="trip", async_database_uri=uri)

    first, llm = memory(), RecordingFunctionLLM(tool_rounds=2)
    agent = FunctionAgent(tools=[_lookup], llm=llm, system_prompt="You are a travel desk assistant.")
    watch = LoopWatch(first.session_store)

    async def main(mem: TokenBoxSessionMemory, questions: range) -> None:
        for i in questions:
            await agent.run(f"Question {i}: check booking {1000 + i}.", memory=mem)

    asyncio.run(watch.watching(main(first, range(4))))
    assert watch.calls and {ident for _, ident in watch.calls}.isdisjoint({watch.loop_thread})
    assert watch.answered == len(watch.calls)
    archived = first.get_all()
    assert len(archived) == 4 * 6  # user, (call, result) x 2, answer per question
    assert [m.content for m in archived if m.role.value == "user"] == [
        f"Question {i}: check booking {1000 + i}." for i in range(4)
    ]
    again = memory()
    before = len(llm.requests)
    asyncio.run(main(again, range(4, 5)))
    history = [str(m.content) for m in llm.requests[before].messages if m.role.value == "user"]
    assert "Question 3: check booking 1003." in history  # the new memory sees the conversation it continues
    assert len(again.get_all()) == 5 * 6 and first.session_store.count("trip") == 5 * 6
    first.session_store.close()
    again.session_store.close()


def _lookup(query: str) -> str:
    """Look up a booking record."""
    return f"Record for {query[:40]}: " + " ".join(f"field{i}=value{i}" for i in range(20))
