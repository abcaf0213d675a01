"""``CompilerConfig(cache_aware=...)``: volatility order and prefix-stable history (issue 15)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenbox_core.cache import CacheWindow, cache_breakpoints, simulate_cache, with_cache_control
from tokenbox_core.compiler import CompiledContext, CompilerConfig, ContextCompiler, Memory, Tool
from tokenbox_core.compiler._build import LABELS
from tokenbox_core.compiler._stable import SUMMARY_LABEL
from tokenbox_core.errors import CompilerInputError, SectionError
from tokenbox_core.testing._transcripts import agent_session

from .conftest import NOW, evidence

BUDGET = 6000
SESSION = agent_session(60, words_per_turn=150)
USERS = [i for i, m in enumerate(SESSION) if m["role"] == "user"]
TOOLS = [
    Tool("search_logs", "Search the service logs", {"type": "object", "properties": {"q": {"type": "string"}}}),
    Tool("restart", "Restart a worker pool", {"type": "object", "properties": {"pool": {"type": "string"}}}),
]
MEMORY = [Memory("m1", "The user prefers short answers.", created_at=NOW), Memory("m2", "Region: eu-west-1.")]

Compile = Callable[[Sequence[Mapping[str, Any]]], CompiledContext]


def compile_turn(config: CompilerConfig, *, task: Any = None) -> Compile:
    """A trimmer for simulate_cache: one compile per request, with this turn's evidence."""
    compiler = ContextCompiler(BUDGET, config=config)

    def run(messages: Sequence[Mapping[str, Any]]) -> CompiledContext:
        n = sum(1 for m in messages if m["role"] == "user")
        passage = evidence(f"e{n}", f"Runbook {n}: restart the pool when the queue exceeds {n * 10} items.")
        return compiler.compile(
            policy="You are an on-call agent. Be careful with production.",
            tools=TOOLS,
            memory=MEMORY,
            evidence=[passage],
            task=task,
            history=list(messages[:-1]),
            user=messages[-1]["content"],
        )

    return run


def requests() -> list[list[Mapping[str, Any]]]:
    return [SESSION[: u + 1] for u in USERS]


@pytest.fixture(scope="module")
def aware() -> list[CompiledContext]:
    run = compile_turn(CompilerConfig(cache_aware=True))
    return [run(r) for r in requests()]


def turn_start(compiled: CompiledContext) -> int:
    """Index of the first message of the turn part (the evidence)."""
    return next(n for n, m in enumerate(compiled.messages) if str(m["content"]).startswith(LABELS["evidence"]))


def cut_of(compiled: CompiledContext) -> tuple[str, ...]:
    return tuple(e.item_id for e in compiled.excluded if e.reason == "cache_block")


def test_consecutive_turns_share_the_prefix_up_to_the_turn_part(aware: list[CompiledContext]) -> None:
    cuts = 0
    for prev, cur in pairwise(aware):
        if cut_of(prev) != cut_of(cur):
            cuts += 1
            assert len(cut_of(cur)) > len(cut_of(prev))  # the cut only ever moves forward
            continue
        start = turn_start(prev)
        assert cur.messages[:start] == prev.messages[:start]
    assert 3 <= cuts <= 12  # blocks, not one message a turn


def test_volatility_order_keeps_provider_rules(aware: list[CompiledContext]) -> None:
    last = aware[-1]
    roles = [m["role"] for m in last.messages]
    system_run = roles.index("user") if "user" in roles else len(roles)
    assert "system" not in roles[system_run:]  # system messages first
    contents = [str(m["content"]) for m in last.messages]
    assert contents[0].startswith("You are an on-call agent")
    assert contents[1].startswith(LABELS["tools"])
    summary = next(n for n, c in enumerate(contents) if c.startswith(SUMMARY_LABEL))
    memory = next(n for n, c in enumerate(contents) if c.startswith(LABELS["memory"]))
    start = turn_start(last)
    assert summary < memory < start
    assert roles[start] == "user" and roles[-1] == "user"  # evidence is data; the current message ends it
    assert contents[-1].endswith(SESSION[USERS[-1]]["content"])
    for n, m in enumerate(last.messages):  # tool results right after their calls
        if m["role"] == "tool":
            prev = last.messages[n - 1]
            assert prev["role"] in ("assistant", "tool")
            call = next(k for k in range(n - 1, -1, -1) if last.messages[k]["role"] == "assistant")
            ids = [c["id"] for c in last.messages[call].get("tool_calls") or ()]
            assert m["tool_call_id"] in ids


def test_cache_aware_caches_far_more_and_stays_in_budget(aware: list[CompiledContext]) -> None:
    by_request = {len(r): c for r, c in zip(requests(), aware, strict=True)}
    on = simulate_cache(SESSION, lambda msgs: by_request[len(msgs)], rules="openai")
    off = simulate_cache(SESSION, compile_turn(CompilerConfig()), rules="openai")
    assert on.cached_share >= 0.8
    assert on.cached_share >= off.cached_share + 0.5
    limit = ContextCompiler(BUDGET).budget.effective().max_tokens
    assert all(c.total_tokens <= limit for c in aware)
    assert max(t.prompt_tokens for t in on.turns) <= BUDGET


def test_stable_messages_mark_the_turn_part_for_anthropic_breakpoints(aware: list[CompiledContext]) -> None:
    assert all(c.stable_messages == turn_start(c) for c in aware)
    assert compile_turn(CompilerConfig())(requests()[3]).stable_messages is None
    by_request = {len(r): c for r, c in zip(requests(), aware, strict=True)}

    def marked(msgs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        compiled = by_request[len(msgs)]
        assert compiled.stable_messages is not None
        at = cache_breakpoints(compiled.messages, stable_until=compiled.stable_messages - 1)
        return with_cache_control(compiled.messages, at)

    plain = simulate_cache(SESSION, lambda msgs: by_request[len(msgs)], rules="anthropic")
    pinned = simulate_cache(SESSION, marked, rules="anthropic")
    assert pinned.cached_share >= 0.75 > plain.cached_share  # the breakpoint at the session part's end pays


def test_cache_aware_compiles_are_deterministic(aware: list[CompiledContext]) -> None:
    run = compile_turn(CompilerConfig(cache_aware=True))
    for index in (10, 35, 59):
        again = run(requests()[index])
        assert again.messages == aware[index].messages
        assert again.fingerprint == aware[index].fingerprint


def test_summarizer_replaces_the_cut_and_task_moves_to_the_turn_part() -> None:
    calls: list[int] = []

    def summarize(messages: Sequence[Mapping[str, Any]], target: int) -> str:
        calls.append(len(messages))
        return f"{len(messages)} earlier messages about the incident."

    window = CacheWindow(low_water=0.6, summarizer=summarize, summary_tokens=64, role="user")
    run = compile_turn(CompilerConfig(cache_aware=window), task={"objective": "keep the queue short"})
    out = [run(r) for r in requests()[30:34]]
    for compiled in out:
        contents = [str(m["content"]) for m in compiled.messages]
        roles = [m["role"] for m in compiled.messages]
        summary = next(n for n, c in enumerate(contents) if c.startswith(SUMMARY_LABEL))
        memory = next(n for n, c in enumerate(contents) if c.startswith(LABELS["memory"]))
        task = next(n for n, c in enumerate(contents) if c.startswith(LABELS["task"]))
        assert memory < summary < task < turn_start(compiled) < len(contents) - 1
        assert roles[summary] == "user" and roles[task] == "user"
        assert "earlier messages about the incident" in contents[summary]
    assert len(calls) == len({cut_of(c) for c in out})  # memoised: the summarizer runs once per cut


@pytest.mark.parametrize("output", ["text", "messages"])
def test_text_output_and_utility_allocator_stay_in_budget(output: str) -> None:
    config = CompilerConfig(cache_aware=True, output=output, allocator="utility")  # type: ignore[arg-type]
    run = compile_turn(config)
    limit = ContextCompiler(BUDGET).budget.effective().max_tokens
    for request in requests()[20:60:13]:
        compiled = run(request)
        assert compiled.total_tokens <= limit
        assert SESSION[len(request) - 1]["content"] in compiled.text


def test_plain_config_keeps_canonical_order() -> None:
    compiled = compile_turn(CompilerConfig())(requests()[5])
    assert turn_start(compiled) < [m["role"] for m in compiled.messages].index("system", 2)
    assert not any(e.reason == "cache_block" for e in compiled.excluded)


@pytest.mark.parametrize("bad", ["yes", 1, 0, None, 0.7, {"low_water": 0.7}])
def test_bad_cache_aware_value_is_rejected(bad: Any) -> None:
    with pytest.raises(CompilerInputError, match="cache_aware must be True, False or a CacheWindow"):
        CompilerConfig(cache_aware=bad)


def test_bad_window_is_rejected_at_construction() -> None:
    with pytest.raises(SectionError, match="low_water"):
        CompilerConfig(cache_aware=CacheWindow(low_water=1.5))


def test_config_describes_the_window_without_addresses() -> None:
    config = CompilerConfig(cache_aware=CacheWindow(summarizer=lambda m, t: ""))
    described = config.describe()["cache_aware"]
    assert described["low_water"] == 0.7 and "0x" not in str(described["summarizer"])
    assert CompilerConfig(cache_aware=True).cache_window == CacheWindow()
    assert CompilerConfig().cache_window is None


def test_defense_isolates_the_summary_and_the_budget_holds() -> None:
    from tokenbox_core.defense import DefensePolicy

    config = CompilerConfig(cache_aware=CacheWindow(role="user"), defense=DefensePolicy(secret="s" * 16))
    run = compile_turn(config)
    limit = ContextCompiler(BUDGET).budget.effective().max_tokens
    compiled = run(requests()[40])
    assert compiled.total_tokens <= limit
    assert any(e.reason == "cache_block" for e in compiled.excluded)
    assert "history-summary" in compiled.sections
    assert compiled.messages[-1]["role"] == "user"
    assert run(requests()[40]).messages == compiled.messages


@settings(max_examples=12, deadline=None)
@given(
    budget=st.integers(min_value=3000, max_value=9000),
    low_water=st.floats(min_value=0.4, max_value=0.9),
    turn=st.integers(min_value=2, max_value=59),
)
def test_budget_current_turn_and_tool_groups_hold(budget: int, low_water: float, turn: int) -> None:
    compiler = ContextCompiler(budget, config=CompilerConfig(cache_aware=CacheWindow(low_water=low_water)))
    request = requests()[turn]
    compiled = compiler.compile(
        policy="Be careful.", tools=TOOLS, memory=MEMORY, history=request[:-1], user=request[-1]["content"]
    )
    assert compiled.total_tokens <= compiler.budget.effective().max_tokens
    assert compiled.messages[-1]["role"] == "user"
    assert str(compiled.messages[-1]["content"]).endswith(request[-1]["content"])
    calls = {c["id"] for m in compiled.messages for c in m.get("tool_calls") or ()}
    results = {m["tool_call_id"] for m in compiled.messages if m["role"] == "tool"}
    assert calls == results  # tool groups whole: no call without its result, no orphan result


def test_a_single_task_agent_loop_keeps_the_task_and_its_newest_steps() -> None:
    """Issue 23: a cache-aware compile of one task followed by 60 tool steps keeps the task and the newest steps
    (the block cut moves at tool-group boundaries inside the loop) instead of only the system message and task."""
    import json

    history = [{"role": "user", "content": "fix the failing test"}]
    for i in range(60):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "run", "arguments": json.dumps({"n": i})}}
        history += [
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": f"output {i} " + "blah " * 30},
        ]
    compiled = ContextCompiler(2000, counter="o200k_base", config=CompilerConfig(cache_aware=True)).compile(
        policy="Be an agent.", history=history
    )
    results = [m["tool_call_id"] for m in compiled.messages if m.get("role") == "tool"]
    assert len(results) >= 15 and results[-1] == "c59" and compiled.total_tokens <= 2000
    assert any(str(m.get("content", "")).endswith("fix the failing test") for m in compiled.messages)


def test_a_history_that_fits_whole_is_not_cut_when_reference_compression_shortens_it() -> None:
    """The block cut compares the history tier's allocation with the messages' own sizes, so a history that fits
    whole is not cut because reference compression (a repeated tool output sent as a pointer) shortened it."""
    import json

    history: list[dict[str, Any]] = [{"role": "user", "content": "fix the failing test"}]
    for i in range(2):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "run", "arguments": json.dumps({"n": i})}}
        history += [
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": "more output " * 20},  # the same output twice
        ]
    config = CompilerConfig(cache_aware=True)
    compiled = ContextCompiler(600, counter="whitespace", config=config).compile(policy="Be an agent.", history=history)
    plain = ContextCompiler(600, counter="whitespace", config=CompilerConfig()).compile(
        policy="Be an agent.", history=history
    )
    assert not [e for e in compiled.excluded if e.reason == "cache_block"]
    assert "history-summary" not in compiled.sections
    assert [m.get("tool_call_id") for m in compiled.messages if m["role"] == "tool"] == ["c0", "c1"]
    assert compiled.total_tokens == plain.total_tokens <= 600


def test_cut_history_false_orders_by_volatility_and_leaves_the_history_uncut() -> None:
    """CacheWindow(cut_history=False): the compile is assembled by volatility as with cache_aware=True, but the
    history given is not cut in blocks (no cache_block exclusion, no summary); the ordinary compile keeps the
    budget, and the window is described in the input hash only when the cut is off."""
    request = requests()[40]
    sources = {"policy": "Be careful.", "tools": TOOLS, "memory": MEMORY, "task": {"goal": "triage"}}
    cut = ContextCompiler(BUDGET, config=CompilerConfig(cache_aware=True))
    uncut = ContextCompiler(BUDGET, config=CompilerConfig(cache_aware=CacheWindow(cut_history=False)))
    plain = ContextCompiler(BUDGET, config=CompilerConfig())
    a, b, c = (x.compile(**sources, history=request[:-1], user=request[-1]["content"]) for x in (cut, uncut, plain))
    assert any(e.reason == "cache_block" for e in a.excluded) and "history-summary" in a.sections
    assert not any(e.reason == "cache_block" for e in b.excluded) and "history-summary" not in b.sections
    assert b.total_tokens <= uncut.budget.effective().max_tokens
    kept = [m for m in b.messages if m["role"] in ("assistant", "tool")]
    assert kept == [m for m in c.messages if m["role"] in ("assistant", "tool")]  # the plain compile's history
    task_at = next(i for i, m in enumerate(b.messages) if "triage" in str(m["content"]))
    assert task_at > max(i for i, m in enumerate(b.messages) if m["role"] == "assistant")  # the turn part: last
    assert b.stable_messages < len(b.messages)
    assert "cut_history" not in CompilerConfig(cache_aware=CacheWindow()).describe()["cache_aware"]
    assert uncut.config.describe()["cache_aware"]["cut_history"] is False
