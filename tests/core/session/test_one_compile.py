"""A ContextSession turn runs the compiler once: the fixed tiers' size comes from ``ContextCompiler.measure``."""

from __future__ import annotations

import json
from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenbox_core import CompilerConfig, ContextCompiler, ContextSession
from tokenbox_core.cache import CacheWindow
from tokenbox_core.defense import DefensePolicy
from tokenbox_core.request import ModelRequest

W = "whitespace"


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def reply(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def call(call_id: str, **args: Any) -> dict[str, Any]:
    fn = {"name": "run", "arguments": json.dumps(args)}
    return {"role": "assistant", "content": "", "tool_calls": [{"id": call_id, "type": "function", "function": fn}]}


def result(call_id: str, text: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


@pytest.fixture
def compiles(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every ContextCompiler.compile call (one entry each), whichever compiler instance makes it."""
    calls: list[int] = []
    original = ContextCompiler.compile

    def counted(self: ContextCompiler, **sources: Any) -> Any:
        calls.append(1)
        return original(self, **sources)

    monkeypatch.setattr(ContextCompiler, "compile", counted)
    return calls


def _agent_loop(session: ContextSession, steps: int) -> None:
    session.add(user("The deploy key lives in vault/prod/deploy; fix the failing test in repo foo"))
    for i in range(steps):
        session.add([call(f"c{i}", cmd=f"step {i}"), result(f"c{i}", f"output {i} " + "log " * 25)])
        session.add(reply(f"step {i} done"))
    session.add(user("Where does the deploy key live?"))


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"recall": False, "masking": False},
        {"config": CompilerConfig(required_sections=(), defense=DefensePolicy(spotlight="datamark"))},
    ],
    ids=["default", "no_recall_no_masking", "defense"],
)
def test_every_compile_and_prepare_runs_one_compile(compiles: list[int], options: dict[str, Any]) -> None:
    """Over a growing agent loop (window full, history cut, recall and masking at work), each compile() and each
    prepare() calls ContextCompiler.compile exactly once."""
    session = ContextSession(None, "s", budget=600, counter=W, **options)
    _agent_loop(session, 30)
    for i in range(6):
        session.add([call(f"d{i}", cmd=f"more {i}"), result(f"d{i}", "more output " * 20)])
        compiles.clear()
        compiled = session.compile(policy="Answer briefly.", tools=())
        assert len(compiles) == 1 and compiled.total_tokens <= 600
    request = ModelRequest(session.messages(), system="Be terse.", window=500)
    compiles.clear()
    prepared = session.prepare(request)
    assert len(compiles) == 1 and prepared.tokens <= 500


def test_a_session_compile_plans_in_the_room_the_measured_fixed_tiers_leave() -> None:
    """The fixed tiers measure what a compile of them alone totals, so the planned history fills the window to the
    same point as when they were compiled to be measured."""
    session = ContextSession(None, "s", budget=600, counter=W)
    _agent_loop(session, 30)
    compiled = session.compile(policy="Answer briefly.")
    fixed = [m for m in session.messages() if m["role"] == "user"][-1:]
    alone = session.compiler.compile(policy="Answer briefly.", history=fixed)
    assert session.compiler.measure(policy="Answer briefly.", history=fixed) == alone.total_tokens
    assert alone.total_tokens < compiled.total_tokens <= 600


def test_a_cache_aware_session_keeps_its_newest_step_in_one_compile(compiles: list[int]) -> None:
    """A cache-aware session mid agent loop sends the newest tool call and result, and compiles once."""
    session = ContextSession(None, "s", budget=600, counter=W, cache_aware=True)
    _agent_loop(session, 30)
    session.add([call("d0", cmd="more 0"), result("d0", "more output " * 20)])
    session.add([call("d1", cmd="more 1"), result("d1", "more output " * 20)])
    compiles.clear()
    compiled = session.compile(policy="Answer briefly.")
    assert any(m.get("tool_call_id") == "d1" for m in compiled.messages)
    assert len(compiles) == 1


@settings(deadline=None)
@given(
    outputs=st.lists(st.sampled_from(["same", "unique", "long"]), min_size=1, max_size=8),
    history=st.integers(0, 30),
    budget=st.sampled_from([300, 450, 600, 900]),
    low_water=st.sampled_from([0.5, 0.7, 0.9]),
    recall=st.booleans(),
)
def test_a_cache_aware_agent_loop_keeps_its_newest_step_within_budget_in_one_compile_a_turn(
    outputs: list[str], history: int, budget: int, low_water: float, recall: bool
) -> None:
    """A cache-aware session at every step of an agent loop in flight after the current question (repeated tool
    outputs included, which reference compression shortens): within the budget, the newest call and its result
    sent (verbatim or previewed), no result twice, and one ContextCompiler.compile per turn."""
    window = CacheWindow(low_water=low_water)
    session = ContextSession(None, "s", budget=budget, counter=W, cache_aware=window, recall=recall)
    _agent_loop(session, history)
    original = ContextCompiler.compile
    calls: list[int] = []

    def counted(self: ContextCompiler, **sources: Any) -> Any:
        calls.append(1)
        return original(self, **sources)

    with patch.object(ContextCompiler, "compile", counted):
        for i, kind in enumerate(outputs):
            text = {"same": "more output " * 20, "unique": f"unique {i} " * 20, "long": f"long {i} " * 400}[kind]
            session.add([call(f"d{i}", cmd=f"more {i}"), result(f"d{i}", text)])
            calls.clear()
            compiled = session.compile(policy="Answer briefly.")
            assert len(calls) == 1 and compiled.total_tokens <= budget
            results = [m["tool_call_id"] for m in compiled.messages if m["role"] == "tool"]
            assert results[-1] == f"d{i}" and len(results) == len(set(results))
            assert compiled.messages[-2]["tool_calls"][0]["id"] == f"d{i}"


@pytest.mark.parametrize("cache_aware", [False, True], ids=["window", "cache-aware"])
def test_checkpoint_summaries_are_made_at_add_never_in_a_compile(
    cache_aware: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long session's first summarised compile used to make every block's summary (hundreds at 500 turns, a
    second of CPU in one model call): they are made as blocks complete, at ``add``."""
    from tokenbox_core.session._checkpoints import Checkpointer

    made: list[str] = []
    original = Checkpointer._summary

    def counted(self: Checkpointer, *args: Any, **kwargs: Any) -> Any:
        made.append("compile" if compiling else "add")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Checkpointer, "_summary", counted)
    compiling = False
    session = ContextSession(None, "s", budget=600, counter=W, cache_aware=cache_aware)
    _agent_loop(session, 60)
    assert made.count("add") >= 10  # 60 steps of 3 messages: blocks of 10 turns past the newest 20
    compiling = True
    compiled = session.compile()
    assert "compile" not in made
    assert compiled.total_tokens <= 600
    with patch.object(Checkpointer, "update", side_effect=AssertionError("no summaries without recall")):
        bare = ContextSession(None, "bare", budget=600, counter=W, recall=False)
        _agent_loop(bare, 30)
        bare.compile()
