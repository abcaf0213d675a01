"""Memos never change a compile: a conversation compiled turn after turn, over the same input objects (every
memo warm: renderings, hash chunks, rank rows, resumed hashes, shingles, PII findings, counts), gives what a
compile of fresh copies after ``clear_caches()`` and an empty count cache gives — through edits, removals,
reorders, new messages, messages edited in place and config changes."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tokenbox_core import CompilerConfig, ContextCompiler
from tokenbox_core.compiler import Memory, Tool
from tokenbox_core.compiler.refs import clear_caches
from tokenbox_core.tokens import COUNT_CACHE

from .conftest import NOW, evidence

_WORDS = "refund order invoice shipping card policy window return method customer alpha beta".split()
_text = st.lists(st.sampled_from(_WORDS), min_size=3, max_size=30).map(" ".join)
_CONFIGS = (
    {},
    {"allocator": "utility", "overflow": "truncate_lowest"},
    {"near_duplicates": False},
    {"dedupe_threshold": 0.5, "shingle_size": 3},
    {"overflow": "cascade_compress"},
)
_op = st.one_of(
    st.tuples(st.just("say"), _text),
    st.tuples(st.just("edit"), st.integers(0, 20), _text),
    st.tuples(st.just("drop"), st.integers(0, 20)),
    st.tuples(st.just("swap"), st.integers(0, 20), st.integers(0, 20)),
    st.tuples(st.just("copy"), st.integers(0, 20)),
    st.tuples(st.just("config"), st.integers(0, len(_CONFIGS) - 1)),
    st.tuples(st.just("budget"), st.sampled_from([300, 700, 5_000])),
    st.tuples(st.just("step"), _text),
    st.tuples(st.just("rewrite"), st.integers(0, 20), _text),  # a history message changed in place
)


def _fingerprint(compiled: Any) -> str:
    blob = {
        "messages": compiled.messages,
        "trace": compiled.trace.decisions(),
        "metrics": compiled.metrics.to_dict(),
    }
    return hashlib.sha256(json.dumps(blob, sort_keys=True, default=str).encode()).hexdigest()


def _fresh(turn: dict[str, Any]) -> dict[str, Any]:
    """Equal inputs as new objects: nothing kept on them."""
    return {
        **turn,
        "tools": [Tool(t.name, t.description, t.schema, t.relevance) for t in turn["tools"]],
        "evidence": [replace(e) for e in turn["evidence"]],
        "memory": [replace(m) for m in turn["memory"]],
        "history": [dict(m) for m in turn["history"]],
        "task": dict(turn["task"]),
    }


def _compile(budget: int, config: dict[str, Any], turn: dict[str, Any]) -> str:
    compiler = ContextCompiler(budget, config=CompilerConfig(clock=NOW, **{"overflow": "truncate_lowest", **config}))
    try:
        return _fingerprint(compiler.compile(**turn))
    except Exception as error:  # the same failure either way counts as the same outcome
        return f"{type(error).__name__}: {error}"


@settings(max_examples=25)
@given(st.lists(_text, min_size=2, max_size=8), st.lists(_op, min_size=1, max_size=6))
def test_compiles_with_memos_equal_compiles_from_nothing(passages: list[str], ops: list[tuple[Any, ...]]) -> None:
    turn: dict[str, Any] = {
        "policy": "Answer from the evidence only.",
        "task": {"objective": "answer", "step": "refund order"},
        "tools": [Tool("lookup_order", "Look up an order", {"type": "object", "required": ["id"]})],
        "evidence": [
            evidence(f"e{i}", p, authority=(i % 5) / 5, relevance=((i * 3) % 7) / 7, age_days=i)
            for i, p in enumerate(passages)
        ],
        "memory": [Memory("m0", passages[0], relevance=0.5, created_at=NOW)],
        "history": [{"role": "user", "content": passages[-1]}],
        "user": "What about my refund?",
    }
    budget, config = 5_000, _CONFIGS[0]
    turns = []
    clear_caches()
    for op in [("start",), *ops]:
        kind = op[0]
        ev = list(turn["evidence"])
        if kind == "say":
            turn = {**turn, "history": [*turn["history"], {"role": "user", "content": turn["user"]}], "user": op[1]}
        elif kind == "edit" and ev:
            ev[op[1] % len(ev)] = replace(ev[op[1] % len(ev)], text=op[2])
        elif kind == "drop" and ev:
            del ev[op[1] % len(ev)]
        elif kind == "swap" and ev:
            i, j = op[1] % len(ev), op[2] % len(ev)
            ev[i], ev[j] = ev[j], ev[i]
        elif kind == "copy" and ev:  # an exact duplicate under a new id
            ev.append(replace(ev[op[1] % len(ev)], id=f"c{len(ev)}"))
        elif kind == "config":
            config = _CONFIGS[op[1]]
        elif kind == "budget":
            budget = op[1]
        elif kind == "step":
            turn = {**turn, "task": {**turn["task"], "step": op[1]}}
        elif kind == "rewrite":  # the same dict object, edited: no memo may serve the old text
            turn["history"][op[1] % len(turn["history"])]["content"] = op[2]
        turn = {**turn, "evidence": ev}
        # the same objects turn after turn, nothing cleared in between: every memo in play
        turns.append((budget, config, _fresh(turn), _compile(budget, config, turn)))
    for budget, config, fresh, warm in turns:
        clear_caches()
        COUNT_CACHE.clear()
        assert _compile(budget, config, fresh) == warm
