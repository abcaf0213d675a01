"""Collect resolves values, sync callables and async callables (concurrently) into typed candidates."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tokenbox_core.compiler import ContextCompiler, Policy, Tool
from tokenbox_core.compiler._collect import collect, collect_async
from tokenbox_core.errors import CompilerInputError

from .conftest import evidence


def test_values_are_coerced() -> None:
    """Strings become Policy/Developer, a mapping a TaskState, tool dicts Tools (both OpenAI shapes)."""
    c = collect(
        {
            "policy": "Be exact.",
            "developer": "Use JSON.",
            "task": {"goal": "x"},
            "tools": [
                {"name": "a", "description": "A", "parameters": {"type": "object"}},
                {"type": "function", "function": {"name": "b", "parameters": {}}},
            ],
        }
    )
    assert c.policy == Policy("Be exact.")
    assert c.developer is not None and c.developer.text == "Use JSON."
    assert c.task is not None and c.task.text == '{"goal":"x"}'
    assert [t.name for t in c.tools] == ["a", "b"] and isinstance(c.tools[0], Tool)


def test_sync_sources_and_lists_of_sources() -> None:
    """A callable source is called; a list of sources is flattened in declaration order."""
    first = [evidence("a", "one")]
    c = collect({"evidence": [lambda: first, evidence("b", "two"), lambda: [evidence("c", "three")]]})
    assert [e.id for e in c.evidence] == ["a", "b", "c"]


def test_async_sources_run_concurrently_and_keep_order() -> None:
    """Two async retrievers wait on each other (so they must overlap); results keep declaration order."""
    started: list[str] = []
    both = asyncio.Event()

    def retriever(name: str) -> Any:
        async def run() -> list[Any]:
            started.append(name)
            if len(started) == 2:
                both.set()
            await asyncio.wait_for(both.wait(), timeout=5)
            return [evidence(name, f"text {name}")]

        return run

    c = asyncio.run(collect_async({"evidence": [retriever("slow"), retriever("fast")], "policy": "P"}))
    assert [e.id for e in c.evidence] == ["slow", "fast"]


def test_compile_runs_async_sources() -> None:
    """compile() outside an event loop awaits async sources itself."""

    async def policy() -> str:
        return "Answer briefly."

    compiled = ContextCompiler(2000, counter="whitespace").compile(policy=policy, user="hi")
    assert compiled.messages[0]["content"].startswith("Answer briefly.")


def test_acompile_inside_a_loop() -> None:
    """acompile awaits sources inside a running loop; compile() there asks for acompile."""

    async def policy() -> str:
        return "Answer briefly."

    async def main() -> None:
        compiler = ContextCompiler(2000, counter="whitespace")
        compiled = await compiler.acompile(policy=policy, user="hi")
        assert compiled.sections == ("policy", "history/latest-user")
        with pytest.raises(CompilerInputError, match="acompile"):
            compiler.compile(policy=policy)

    asyncio.run(main())


@pytest.mark.parametrize(
    ("sources", "message"),
    [
        ({"evidence": ["a bare string"]}, "Evidence objects with provenance"),
        ({"history": [{"content": "no role"}]}, "history\\[0\\] must be a message dict"),
        ({"tools": [{"description": "nameless"}]}, "needs a 'name'"),
        ({"policy": 3}, "policy must be a Policy or a string"),
        ({"bogus": 1}, "unknown source 'bogus'"),
    ],
)
def test_bad_sources_name_the_fix(sources: dict[str, Any], message: str) -> None:
    """Every malformed source is rejected with a message naming it."""
    with pytest.raises(CompilerInputError, match=message):
        collect(sources)


def test_a_failing_source_is_reported() -> None:
    """An exception inside a source becomes a CompilerInputError naming the source."""

    def broken() -> list[Any]:
        raise RuntimeError("index offline")

    with pytest.raises(CompilerInputError, match="source 'evidence' raised RuntimeError: index offline"):
        collect({"evidence": broken})
