"""The Token Boxes the compiler keeps across compiles (compiler/compress.py): one per budget, counter object and
config version, bounded; a kept box gives what a new one gives (the incremental property covers whole turns)."""

from __future__ import annotations

from tokenbox_core import CompilerConfig, ContextBudget, ContextCompiler
from tokenbox_core.compiler import compress
from tokenbox_core.compiler.refs import clear_caches
from tokenbox_core.tokens import COUNT_CACHE, get_counter

from .conftest import NOW, evidence


def test_one_box_per_budget_counter_and_version_and_bounded() -> None:
    clear_caches()
    o200k, cl100k = get_counter("o200k_base"), get_counter("cl100k_base")
    budget = ContextBudget(max_tokens=1_000)
    box = compress._box(budget, o200k, "1.0.0")
    assert compress._box(ContextBudget(max_tokens=1_000), o200k, "1.0.0") is box
    assert compress._box(budget, cl100k, "1.0.0") is not box
    assert compress._box(budget, o200k, "1.0.1") is not box
    assert compress._box(ContextBudget(max_tokens=999), o200k, "1.0.0") is not box
    for n in range(compress._BOXES_KEPT + 1):
        compress._box(ContextBudget(max_tokens=2_000 + n), o200k, "1.0.0")
    assert len(compress._BOXES) == compress._BOXES_KEPT
    assert compress._box(budget, o200k, "1.0.0") is not box  # pushed out: a new one
    clear_caches()
    assert not compress._BOXES


def test_a_repeat_compile_through_a_kept_box_equals_a_fresh_one() -> None:
    turn = {
        "policy": "Answer from the evidence.",
        "evidence": [evidence(f"e{i}", f"passage {i} about refunds and orders " * (i + 3)) for i in range(6)],
        "history": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
        "user": "refund?",
    }
    compiler = ContextCompiler(300, config=CompilerConfig(clock=NOW, overflow="truncate_lowest"))
    clear_caches()
    first = compiler.compile(**turn)
    again = compiler.compile(**turn)  # the kept box's layout memo
    clear_caches()
    COUNT_CACHE.clear()
    fresh = compiler.compile(**turn)
    assert again.messages == first.messages == fresh.messages
    assert again.trace.decisions() == first.trace.decisions() == fresh.trace.decisions()
