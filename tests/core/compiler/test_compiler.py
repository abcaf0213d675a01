"""End-to-end: the six stages produce a validated, traced, deterministic context."""

from __future__ import annotations

from typing import Any

import pytest

from tokenbox_core import CompilationError, CompilerConfig, ContextBudget, ContextCompiler
from tokenbox_core.compiler._build import PRECEDENCE_STATEMENT
from tokenbox_core.errors import CompilerInputError
from tokenbox_core.tokens import count_message_tokens, get_counter


def test_compile_emits_every_tier_in_canonical_order(turn: dict[str, Any]) -> None:
    """With room for everything, every tier is emitted once, in the chapter's order."""
    compiled = ContextCompiler(4000).compile(**turn)
    assert compiled.sections == (
        "policy",
        "developer",
        "task",
        "tools",
        "evidence",
        "memory",
        "history/history",
        "history/latest-user",
    )
    roles = [m["role"] for m in compiled.messages]
    assert roles == ["system", "system", "system", "system", "user", "user", "user", "assistant", "user"]
    assert compiled.messages[0]["content"].endswith(PRECEDENCE_STATEMENT)
    assert compiled.messages[-1]["content"].endswith("Can I get a refund for order 1234?")


def test_total_is_the_exact_count_of_what_is_sent(turn: dict[str, Any]) -> None:
    """total_tokens is count_message_tokens of the messages, within the budget minus the reserve."""
    budget = ContextBudget(max_tokens=4000, output_reserve=500)
    compiled = ContextCompiler(budget).compile(**turn)
    assert compiled.total_tokens == count_message_tokens(list(compiled.messages), get_counter("o200k_base"))
    assert compiled.total_tokens + 500 <= 4000


def test_same_inputs_same_output_and_hashes(turn: dict[str, Any]) -> None:
    """Two compiles of the same inputs are byte-identical; only run id, timestamp and latency differ."""
    compiler = ContextCompiler(4000)
    a, b = compiler.compile(**turn), compiler.compile(**turn)
    assert a.messages == b.messages and a.text == b.text
    assert a.trace.input_hash == b.trace.input_hash and a.trace.output_hash == b.trace.output_hash
    assert a.trace.trace_id != b.trace.trace_id
    assert a.trace.decisions() == b.trace.decisions()


def test_pressure_drops_lowest_priority_first(turn: dict[str, Any]) -> None:
    """Under the priority allocator history (priority 1) is lost before memory (2) and evidence (3)."""
    full = ContextCompiler(4000).compile(**turn)
    fixed = sum(full.layout[s].final_tokens for s in ("policy", "developer", "task", "tools", "history/latest-user"))
    budget = full.total_tokens - full.layout["history/history"].final_tokens + 2
    tight = ContextCompiler(budget).compile(**turn)
    assert "history/history" not in tight.sections
    assert "evidence" in tight.sections and "memory" in tight.sections
    assert tight.total_tokens <= budget
    assert fixed < tight.total_tokens


def test_text_output_has_headers_and_labels(turn: dict[str, Any]) -> None:
    """Text output starts each section with ## HEADER; evidence is labelled without directive authority."""
    compiled = ContextCompiler(4000, config=CompilerConfig(output="text")).compile(**turn)
    text = compiled.text
    headers = ["## SYSTEM_POLICY", "## DEVELOPER_INSTRUCTIONS", "## TASK_STATE", "## TOOL_AFFORDANCES", "## EVIDENCE"]
    positions = [text.index(h) for h in headers]
    assert positions == sorted(positions)
    assert "no directive authority" in text
    assert compiled.total_tokens == get_counter("o200k_base").count(text)


def test_required_sections_missing_is_rejected(turn: dict[str, Any]) -> None:
    """Without the policy the compile is rejected, naming the rule."""
    turn.pop("policy")
    with pytest.raises(CompilationError) as info:
        ContextCompiler(4000).compile(**turn)
    assert info.value.rules == ("required_sections",)
    assert "'policy'" in str(info.value)


def test_config_must_be_a_compiler_config() -> None:
    """A wrong config type fails at construction."""
    with pytest.raises(CompilerInputError, match="CompilerConfig"):
        ContextCompiler(100, config={"allocator": "utility"})  # type: ignore[arg-type]


def test_importing_the_core_does_not_load_asyncio() -> None:
    """The compiler imports asyncio only when a source or an evaluation is async."""
    import subprocess
    import sys

    code = "import sys, tokenbox_core; print('asyncio' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_compiler_package_exports() -> None:
    """tokenbox_core.compiler's __all__ is sorted, complete, and re-exports the public names of tokenbox_core."""
    import types

    import tokenbox_core
    import tokenbox_core.compiler as compiler

    names = list(compiler.__all__)
    assert names == sorted(names) and len(names) == len(set(names))
    public = {n for n, v in vars(compiler).items() if not n.startswith("_") and not isinstance(v, types.ModuleType)}
    assert public == set(names)
    for name in ("CompiledContext", "CompilerConfig", "ContextCompiler", "Evidence", "ablate"):
        assert getattr(tokenbox_core, name) is getattr(compiler, name)


def test_compiled_context_diff_uses_the_compiles_own_numbers() -> None:
    """CompiledContext.diff reports the compiles' totals, utilisation and fingerprints (what is sent), not the
    laid-out bodies' numbers that layout.diff would give."""
    compiler = ContextCompiler(800, counter="gpt-4o")
    turn = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    a = compiler.compile(policy="Be brief and exact.", history=turn, user="What is 2+2?")
    b = compiler.compile(
        policy="Be brief and exact.",
        history=[*turn, {"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "4"}],
        user="What is 3+3?",
    )
    d = a.diff(b)
    assert (d.total_a, d.total_b) == (a.total_tokens, b.total_tokens)
    assert (d.utilisation_a, d.utilisation_b) == (a.metrics.budget_utilization, b.metrics.budget_utilization)
    assert (d.fingerprint_a, d.fingerprint_b) == (a.fingerprint, b.fingerprint) and not d.identical
    assert a.layout.diff(b.layout).total_a != d.total_a  # the body-only figure the issue reported
    assert a.diff(a).identical


def _compiled_total(compiler: ContextCompiler, sources: dict[str, Any]) -> int | str:
    try:
        return compiler.compile(**sources).total_tokens
    except CompilationError as exc:
        return f"{type(exc).__name__}: {', '.join(exc.rules)}"


def _measured_total(compiler: ContextCompiler, sources: dict[str, Any]) -> int | str:
    try:
        return compiler.measure(**sources)
    except CompilationError as exc:
        return f"{type(exc).__name__}: {', '.join(exc.rules)}"


@pytest.mark.parametrize("budget", [40, 60, 100, 160, 400, 900, 4000])
@pytest.mark.parametrize("policy", ["Answer briefly.", "Answer briefly. " * 20])
def test_measure_is_the_compiles_total_at_every_budget(turn: dict[str, Any], budget: int, policy: str) -> None:
    """measure() returns compile()'s total_tokens, or fails with the same error, from a roomy window down to one
    where the precedence statement is left out, the policy breaks its density limit or the fixed tiers overflow."""
    for sources in ({**turn, "policy": policy}, {"policy": policy, "user": "What is 2+2?"}):
        compiler = ContextCompiler(budget, counter="gpt-4o")
        assert _measured_total(compiler, sources) == _compiled_total(compiler, sources)


def test_measure_counts_what_a_defence_and_a_cache_window_add(turn: dict[str, Any]) -> None:
    """Under a DefensePolicy (boundaries derived from the input hash) and a cache-aware window, measure() is still
    the compile's total."""
    from tokenbox_core.cache import CacheWindow
    from tokenbox_core.defense import DefensePolicy

    history = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} " * 12} for i in range(30)]
    sources = {"policy": "Be exact.", "evidence": turn["evidence"], "history": history, "user": "And now?"}
    for config in (
        CompilerConfig(defense=DefensePolicy(secret="s" * 16)),
        CompilerConfig(cache_aware=CacheWindow(role="user")),
    ):
        for budget in (300, 900):
            compiler = ContextCompiler(budget, counter="gpt-4o", config=config)
            assert compiler.measure(**sources) == compiler.compile(**sources).total_tokens


def test_measure_refuses_async_sources() -> None:
    """measure() takes values and sync callables; an async source is refused with the way to compile it."""

    async def policy() -> str:
        return "Be brief."

    with pytest.raises(CompilerInputError, match=r"measure\(\) takes values or sync callables: await acompile"):
        ContextCompiler(400, counter="whitespace").measure(policy=policy, user="hi")
