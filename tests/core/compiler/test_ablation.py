"""Ablation (§6.11.4): ΔU per section and pairwise interactions, deterministic, async evaluations."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tokenbox_core import CompiledContext, ContextCompiler, ablate
from tokenbox_core.errors import CompilationError, CompilerInputError

from .conftest import evidence

INPUTS: dict[str, Any] = {
    "policy": "Answer from the evidence.",
    "evidence": [evidence("kb-1", "Refunds take 14 days."), evidence("kb-2", "Refunds take two weeks.")],
    "memory": [],
    "user": "How long do refunds take?",
}


def knows_refund_time(compiled: CompiledContext) -> float:
    """1 when the context can answer the question."""
    return float("14 days" in compiled.text or "two weeks" in compiled.text)


def test_deltas_and_interactions() -> None:
    """ΔU per section; removing the policy is rejected (scores on_error); redundant pairs interact negatively."""
    compiler = ContextCompiler(2000, counter="whitespace")
    report = ablate(compiler, INPUTS, knows_refund_time, pairs=True)
    assert report.baseline == 1.0
    assert report.deltas == {"policy": 1.0, "evidence": 1.0, "user": 0.0}  # without the policy: rejected (0)
    assert "policy" in report.errors
    assert report.interactions[("evidence", "user")] == pytest.approx(-0.0)
    assert report.pair_deltas[("policy", "evidence")] == 1.0
    assert report.interactions[("policy", "evidence")] == -1.0  # redundant: each alone already costs it all
    assert report.ranking()[0][1] == 1.0


def test_async_evaluation_runs_concurrently() -> None:
    """An async evaluate is awaited for every variant concurrently; results keep declaration order."""
    gate = asyncio.Event()
    started = 0

    async def evaluate(compiled: CompiledContext) -> float:
        nonlocal started
        started += 1
        if started == 3:  # the full context and both variants all start before any finishes
            gate.set()
        await asyncio.wait_for(gate.wait(), timeout=5)
        return knows_refund_time(compiled)

    report = ablate(
        ContextCompiler(2000, counter="whitespace"), INPUTS, evaluate, on_error=None, sections=["evidence", "user"]
    )
    assert report.deltas == {"evidence": 1.0, "user": 0.0}


def test_errors() -> None:
    """Unknown inputs fail; on_error=None re-raises a rejected variant."""
    compiler = ContextCompiler(2000, counter="whitespace")
    with pytest.raises(CompilerInputError, match="unknown input"):
        ablate(compiler, {"bogus": 1}, knows_refund_time)
    with pytest.raises(CompilerInputError, match="not among the inputs"):
        ablate(compiler, INPUTS, knows_refund_time, sections=["tools"])
    with pytest.raises(CompilationError):
        ablate(compiler, INPUTS, knows_refund_time, on_error=None)
