"""Compile-level invariants over random material: within budget, deterministic, every invariant held."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core import CompilationError, CompilerConfig, ContextCompiler
from tokenbox_core.compiler import Memory
from tokenbox_core.tokens import count_message_tokens, get_counter

from .conftest import evidence

WORDS = st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta", "refund", "order", "12%", "ok"]), max_size=40)


@st.composite
def material(draw: Any) -> dict[str, Any]:
    n_ev, n_mem, n_hist = draw(st.integers(0, 6)), draw(st.integers(0, 4)), draw(st.integers(0, 8))
    text = lambda: " ".join(draw(WORDS)) or "x"  # noqa: E731
    history = [{"role": "user" if i % 2 == 0 else "assistant", "content": text()} for i in range(n_hist)]
    return {
        "policy": "Follow the rules.",
        "evidence": [
            evidence(f"e{i}", text(), relevance=draw(st.floats(0, 1)), authority=draw(st.floats(0, 1)))
            for i in range(n_ev)
        ],
        "memory": [Memory(f"m{i}", text()) for i in range(n_mem)],
        "history": history,
        "user": draw(st.none() | st.just("And now?")),
    }


@given(
    data=material(),
    budget=st.integers(60, 700),
    allocator=st.sampled_from(["priority", "utility"]),
    overflow=st.sampled_from(["fail_loud", "truncate_lowest", "cascade_compress", "defer_retrieval", "paginate"]),
    minimum=st.integers(0, 120),
)
def test_compile_never_exceeds_the_budget(
    data: dict[str, Any], budget: int, allocator: str, overflow: str, minimum: int
) -> None:
    """Whatever the material, budget, allocator and overflow policy: within budget, or a CompilationError."""
    config = CompilerConfig(
        allocator=allocator,  # type: ignore[arg-type]
        overflow=overflow,  # type: ignore[arg-type]
        minimums={"evidence": minimum, "history": minimum // 2},
        constraint_density_limit=None,
        quantum=16,
    )
    compiler = ContextCompiler(budget, counter="whitespace", config=config)
    try:
        compiled = compiler.compile(**data)
    except CompilationError as exc:
        assert set(exc.rules) <= {"overflow", "fixed_tiers"}, exc
        return
    counter = get_counter("whitespace")
    for page in compiled.pages or (compiled,):
        assert page.total_tokens == count_message_tokens(list(page.messages), counter) <= budget
    again = compiler.compile(**data)
    assert again.messages == compiled.messages and again.trace.decisions() == compiled.trace.decisions()
