"""Compile benchmark: the prefill compiler against a Token Box layout of the same material.

Material (prose, not a small vocabulary): a policy, developer instructions, a task, 30 tool schemas, 200
evidence chunks, 50 memories and a 400-message history with tool calls — about 185k o200k tokens — into a
128k budget with a 4k output reserve, so every elastic tier is under pressure.

Cases (each trial on text no counter has seen):

- ``cold compile``: a new ``ContextCompiler`` compiles it; peer: ``cold layout``, a new ``TokenBox`` laying out
  the same texts as hand-built Sections (policy, developer, task and tools critical; evidence by score,
  memory, history oldest first, the user message critical) — what a caller did before the compiler.  The
  compile does more (filter, rank, compression, assembly, an exact re-count of what is sent, validation);
- ``next turn compile``: the same compiler after that compile, one message appended to the history (the
  agent loop's next model call); peer: ``next turn layout``, the same for the box (and the cold compile).

Run: ``python benchmarks/bench_compile.py [--baseline PATH] [--rounds N] [--trials N]``.
"""

from __future__ import annotations

import itertools
import json
import random
from datetime import datetime, timedelta, timezone
from typing import Any

from _prose import paragraphs
from _timing import Measured, Row, main, trials

from tokenbox_core import (
    CompilerConfig,
    ContextBudget,
    ContextCompiler,
    Evidence,
    Item,
    Section,
    TokenBox,
    get_counter,
)

NOW = datetime(2025, 6, 1, tzinfo=timezone.utc)
BUDGET = ContextBudget(max_tokens=128_000, output_reserve=4_000)
CONFIG = CompilerConfig(clock=NOW)
_runs = itertools.count()


class _Text:
    """Prose handed out in pieces of about ``chars`` characters, each piece new (a nonce leads each run)."""

    def __init__(self, source: list[str]) -> None:
        self.source = source
        self.at = 0
        self.nonce = f"[run {next(_runs)}] "

    def __call__(self, chars: int) -> str:
        out: list[str] = []
        size = 0
        while size < chars:
            paragraph = self.source[self.at % len(self.source)]
            self.at += 1
            out.append(paragraph)
            size += len(paragraph)
        return self.nonce + "\n".join(out)[:chars]


def material(source: list[str]) -> dict[str, Any]:
    """One turn's sources, as ``ContextCompiler.compile`` takes them (tools and memories as plain dicts)."""
    text, rng = _Text(source), random.Random(11)
    tools = [
        {
            "type": "function",
            "function": {
                "name": f"tool_{i}",
                "description": text(200),
                "parameters": {
                    "type": "object",
                    "properties": {f"arg{j}": {"type": "string", "description": text(60)} for j in range(4)},
                },
            },
        }
        for i in range(30)
    ]
    evidence = [
        Evidence(
            f"doc-{i}",
            text(2_800),
            source=f"kb://doc/{i // 4}",
            retrieved_at=NOW - timedelta(hours=rng.randint(0, 500)),
            authority=round(rng.random(), 3),
            relevance=round(rng.random(), 3),
            span=(i * 1000, i * 1000 + 999),
        )
        for i in range(200)
    ]
    memory = [{"id": f"mem-{i}", "text": text(300), "relevance": round(rng.random(), 3)} for i in range(50)]
    history: list[dict[str, Any]] = []
    turn = 0
    while len(history) < 400:
        history.append({"role": "user", "content": text(400)})
        if turn % 5 == 4:
            call = {"id": f"call{turn}", "type": "function", "function": {"name": "tool_1", "arguments": '{"a": 1}'}}
            history.append({"role": "assistant", "content": "", "tool_calls": [call]})
            history.append({"role": "tool", "tool_call_id": f"call{turn}", "content": text(500)})
        history.append({"role": "assistant", "content": text(450)})
        turn += 1
    return {
        "policy": text(2_000),
        "developer": text(500),
        "task": {"objective": text(150), "plan": [text(60) for _ in range(5)], "step": 3},
        "tools": tools,
        "evidence": evidence,
        "memory": memory,
        "history": history[:400],
        "user": text(250),
        "_text": text,
    }


def next_turn(data: dict[str, Any]) -> dict[str, Any]:
    """The next model call of the loop: one message (an assistant step) appended to the history."""
    return {**data, "history": [*data["history"], {"role": "assistant", "content": data["_text"](450)}]}


def compile_args(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if not k.startswith("_")}


def _call_id(message: dict[str, Any]) -> str | None:
    calls = message.get("tool_calls")
    return calls[0]["id"] if calls else None


def layout_sections(data: dict[str, Any]) -> list[Section]:
    """The same texts as hand-built Sections, for one Token Box layout."""
    history = [  # a tool call and its result as one atomic group
        Item(f"h{i}", m["content"] or json.dumps(m["tool_calls"]), group=m.get("tool_call_id") or _call_id(m))
        for i, m in enumerate(data["history"])
    ]
    memory = [Item(m["id"], m["text"], score=m["relevance"]) for m in data["memory"]]
    return [
        Section("policy", data["policy"]),
        Section("developer", data["developer"]),
        Section("task", json.dumps(data["task"])),
        Section("tools", [Item(t["function"]["name"], json.dumps(t)) for t in data["tools"]]),
        Section(
            "evidence",
            [Item(e.id, e.text, score=e.relevance) for e in data["evidence"]],
            priority=3,
            shrink=1,
            eviction="lowest_score",
        ),
        Section("memory", memory, priority=2, shrink=1),
        Section("history", history, priority=1, shrink=1, eviction="oldest"),
        Section("user", data["user"]),
    ]


def measure(n: int) -> Measured:
    source = paragraphs(1_000_000)
    ContextCompiler(BUDGET, counter="o200k_base", config=CONFIG).compile(**compile_args(material(source)))  # warm-up

    def cold_compile() -> object:
        data, compiler = material(source), ContextCompiler(BUDGET, counter="o200k_base", config=CONFIG)
        return lambda: compiler.compile(**compile_args(data))

    def cold_layout() -> object:
        data, box = material(source), TokenBox(BUDGET, counter="o200k_base")
        return lambda: box.layout(layout_sections(data))

    def next_compile() -> object:
        data, compiler = material(source), ContextCompiler(BUDGET, counter="o200k_base", config=CONFIG)
        compiler.compile(**compile_args(data))
        turn = compile_args(next_turn(data))
        return lambda: compiler.compile(**turn)

    def next_layout() -> object:
        data, box = material(source), TokenBox(BUDGET, counter="o200k_base")
        box.layout(layout_sections(data))
        turn = next_turn(data)
        return lambda: box.layout(layout_sections(turn))

    ms = trials(
        {
            "cold compile": cold_compile,
            "cold layout": cold_layout,
            "next turn compile": next_compile,
            "next turn layout": next_layout,
        },
        n,
    )
    data = material(source)
    compiled = ContextCompiler(BUDGET, counter="o200k_base", config=CONFIG).compile(**compile_args(data))
    laid = TokenBox(BUDGET, counter="o200k_base").layout(layout_sections(data))
    counter = get_counter("o200k_base")
    texts = [t for s in layout_sections(data) for t in ([s.content] if isinstance(s.content, str) else s.content)]
    material_tokens = sum(counter.count(t if isinstance(t, str) else t.content) for t in texts)
    return Measured(
        ms,
        {
            "material tokens (its texts, o200k)": material_tokens,
            "compiled tokens": compiled.total_tokens,
            "laid out tokens": laid.total_tokens,
        },
    )


ROWS = (
    Row("cold compile", "cold layout"),
    Row("cold layout"),
    Row("next turn compile", "next turn layout"),
    Row("next turn layout"),
    Row("next turn compile", "cold compile"),
)

if __name__ == "__main__":
    main(
        "bench_compile: a realistic agent context (30 tools, 200 evidence chunks, 50 memories, 400 messages) into 128k",
        measure,
        ROWS,
    )
