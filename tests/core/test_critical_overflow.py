"""One error for one condition: critical material alone over the budget is a ContextCriticalOverflow on every path
(issue 36 §7) — the compiler's and the session's too, where it is also the CompilationError they always raised."""

from __future__ import annotations

import pickle
from collections.abc import Callable

import pytest

from tokenbox_core import (
    CompilationError,
    ContextCompiler,
    ContextCriticalOverflow,
    ContextSession,
    Section,
    TokenBox,
    fit_conversation,
)
from tokenbox_core.errors import FixedTiersOverflow

WORDS = "word " * 200


def _box() -> None:
    TokenBox(50, counter="whitespace").layout([Section("policy", WORDS)])


def _fit() -> None:
    fit_conversation(
        [{"role": "system", "content": WORDS}, {"role": "user", "content": "hi"}], 50, counter="whitespace"
    )


def _compiler_policy() -> None:
    ContextCompiler(50, counter="whitespace").compile(policy=WORDS, user="hi")


def _session_policy() -> None:
    session = ContextSession(None, "s", budget=50, counter="whitespace")
    session.add({"role": "user", "content": "hi"})
    session.compile(policy=WORDS)


def _session_user() -> None:
    session = ContextSession(None, "s", budget=50, counter="whitespace")
    session.add({"role": "user", "content": WORDS})
    session.compile(policy="be brief")


PATHS: dict[str, Callable[[], None]] = {
    "TokenBox": _box,
    "fit_conversation": _fit,
    "ContextCompiler": _compiler_policy,
    "ContextSession-policy": _session_policy,
    "ContextSession-user": _session_user,
}


@pytest.mark.parametrize("path", list(PATHS))
def test_critical_overflow_is_one_error_everywhere(path: str) -> None:
    """Every path raises ContextCriticalOverflow with the budget, what is required and the critical section ids."""
    with pytest.raises(ContextCriticalOverflow) as info:
        PATHS[path]()
    exc = info.value
    assert exc.required > exc.budget >= 0
    assert exc.section_ids
    assert "raise the budget" in str(exc).lower()


@pytest.mark.parametrize("path", ["ContextCompiler", "ContextSession-policy", "ContextSession-user"])
def test_compiler_overflow_stays_a_compilation_error(path: str) -> None:
    """The compiler's overflow is a FixedTiersOverflow: a ContextCriticalOverflow and the CompilationError it was."""
    with pytest.raises(CompilationError) as info:
        PATHS[path]()
    assert isinstance(info.value, FixedTiersOverflow)
    assert info.value.rules in (("overflow",), ("fixed_tiers",))
    copy = pickle.loads(pickle.dumps(info.value))
    assert (copy.budget, copy.required, copy.section_ids, copy.rules) == (
        info.value.budget,
        info.value.required,
        info.value.section_ids,
        info.value.rules,
    )
    assert str(copy) == str(info.value)
