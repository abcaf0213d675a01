"""Prefill compiler benchmark: a full compile against a Token Box layout of the same material (issue 11).

Run on purpose: ``PYTHONPATH=. .venv/bin/python benchmarks/bench_compiler.py [--trials N]``.  Prints a
table; asserts nothing.

Material: a policy, developer instructions, a task state, 30 tool schemas, 200 evidence chunks, 50
memories and a 400-message history with tool calls — about 150k tokens — into a 128k gpt-4o budget with a
4k generation reserve, so every elastic tier is under pressure.

Peer: one ``TokenBox.layout`` of the same texts as hand-built Sections (policy, tools, evidence, memory,
the conversation's sections from ``tokenbox_core.chat.conversation_sections``), in the same budget — what a
caller did before the compiler existed.  The compile does strictly more (Filter with the PII gate, Rank,
reference compression, assembly, an exact re-count of what is sent, metrics, validation); the target is
at most 1.2x the layout.

Both run side by side in each trial, in alternating order, each with the count cache
cleared on fresh material objects and a new box and compiler ("cold": a first turn, every text encoded — a
kept TokenBox would return its remembered layout of the previous trial's equal material) and again warm (each side's
second run over the same material, right after an untimed first: the two sides count different strings —
the compile's passages carry provenance tags — so one side's run does not warm the other's), and "next":
the following turn (the user's message and an answer added to the history, a new user message) right after
a run over this one — what a conversation pays per turn.  Time is CPU
time (``time.process_time``).  Reported: the median of each, the median, min and max of the per-trial ratios
(the machine is shared and noisy), and the compile's stages (medians of ``trace.stage_latency_ms``, wall
clock; "finish" is the rest: metrics, validation, the trace).

``--exact-only`` compiles with ``CompilerConfig(near_duplicates=False)`` (exact duplicates only).
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import WORDS

from tokenbox_core import CompilerConfig, ContextBudget, ContextCompiler, Evidence, Item, Section, TokenBox
from tokenbox_core.chat import conversation_sections
from tokenbox_core.compiler import Memory, Tool
from tokenbox_core.tokens import COUNT_CACHE, get_counter

NOW = datetime(2025, 6, 1, tzinfo=timezone.utc)
BUDGET = ContextBudget(max_tokens=128_000, output_reserve=4_000)


def text(rng: random.Random, n_words: int) -> str:
    words = [rng.choice(WORDS) for _ in range(n_words)]
    return " ".join(" ".join(words[i : i + 16]) + "." for i in range(0, n_words, 16))


def material(seed: int = 11) -> dict[str, Any]:
    rng = random.Random(seed)
    tools = [
        Tool(
            f"tool_{i}",
            text(rng, 30),
            {
                "type": "object",
                "properties": {f"arg{j}": {"type": "string", "description": text(rng, 8)} for j in range(4)},
            },
        )
        for i in range(30)
    ]
    evidence = [
        Evidence(
            f"doc-{i}",
            text(rng, 520),
            source=f"kb://doc/{i // 4}",
            retrieved_at=NOW - timedelta(hours=rng.randint(0, 500)),
            authority=round(rng.random(), 3),
            relevance=round(rng.random(), 3),
            span=(i * 1000, i * 1000 + 999),
            lineage=f"q{i % 3}",
        )
        for i in range(200)
    ]
    memory = [Memory(f"mem-{i}", text(rng, 45), relevance=round(rng.random(), 3)) for i in range(50)]
    history: list[dict[str, Any]] = []
    i = 0
    while len(history) < 400:
        history.append({"role": "user", "content": text(rng, 60)})
        if i % 5 == 4:
            call = {"id": f"call{i}", "type": "function", "function": {"name": "tool_1", "arguments": '{"arg0": "x"}'}}
            history.append({"role": "assistant", "content": "", "tool_calls": [call]})
            history.append({"role": "tool", "tool_call_id": f"call{i}", "content": text(rng, 80)})
        history.append({"role": "assistant", "content": text(rng, 70)})
        i += 1
    history = history[:399]
    return {
        "policy": text(rng, 300),
        "developer": text(rng, 80),
        "task": {"objective": text(rng, 20), "plan": [text(rng, 8) for _ in range(5)], "step": 3},
        "tools": tools,
        "evidence": evidence,
        "memory": memory,
        "history": history,
        "user": text(rng, 40),
    }


def next_turn(data: dict[str, Any]) -> dict[str, Any]:
    """The following turn: the user's message and an answer join the history, and a new user message."""
    rng = random.Random(len(data["history"]))
    answer = {"role": "assistant", "content": text(rng, 70)}
    history = [*data["history"], {"role": "user", "content": data["user"]}, answer]
    return {**data, "history": history, "user": text(rng, 40)}


def peer_sections(data: dict[str, Any]) -> list[Section]:
    """The same material as hand-built sections, laid out by one Token Box (the pre-compiler way)."""
    conversation = conversation_sections(
        [*data["history"], {"role": "user", "content": data["user"]}], counter="o200k_base", prefix="history/"
    )
    return [
        Section("policy", data["policy"], role="system"),
        Section("developer", data["developer"], role="system"),
        Section("task", str(data["task"]), role="system"),
        Section("tools", [Item(t.id, t.text) for t in data["tools"]], role="system"),
        Section(
            "evidence",
            [Item(e.id, e.text, score=e.relevance) for e in data["evidence"]],
            priority=3,
            shrink=1,
            eviction="lowest_score",
        ),
        Section("memory", [Item(m.id, m.text, score=m.relevance) for m in data["memory"]], priority=2, shrink=1),
        *conversation.sections,
    ]


def timed(fn: Any) -> tuple[float, Any]:
    gc.collect()
    start = time.process_time()
    result = fn()
    return time.process_time() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=7)
    parser.add_argument("--exact-only", action="store_true", help="near_duplicates=False (exact duplicates only)")
    args = parser.parse_args()
    data = material()
    counter = get_counter("o200k_base")
    options: dict[str, Any] = {"near_duplicates": False} if args.exact_only else {}
    config = CompilerConfig(clock=NOW, constraint_density_limit=None, **options)
    engines: dict[str, Any] = {}  # each trial's box and compiler, new for its cold run
    raw = sum(counter.count(s) for s in [data["policy"], *[e.text for e in data["evidence"]]])
    print(f"material: {raw:,}+ tokens of policy and evidence alone; budget {BUDGET.max_tokens:,} (reserve 4,000)")

    phases = ("cold", "warm", "next")
    rows: dict[str, list[float]] = {f"{side} {phase}": [] for phase in phases for side in ("layout", "compile")}
    ratios: dict[str, list[float]] = {phase: [] for phase in phases}
    stages: dict[str, dict[str, list[float]]] = {phase: {} for phase in phases}
    compiled = layout = None
    for trial in range(args.trials):
        order = ("layout", "compile") if trial % 2 == 0 else ("compile", "layout")
        for phase in phases:
            times = {}
            for which in order:
                if which == "layout":  # building the sections (the conversation counted) is part of the work
                    run: Any = lambda d: engines["box"].layout(peer_sections(d))  # noqa: E731
                else:
                    run = lambda d: engines["compiler"].compile(**d)  # noqa: E731
                if phase == "cold":  # a first turn: fresh objects, nothing cached anywhere
                    data = material()
                    COUNT_CACHE.clear()
                    # a new box and compiler too: a TokenBox remembers its last layouts by value (issue 16's
                    # layout memo), so a kept box would serve this trial's equal material from memory
                    if which == "layout":
                        engines["box"] = TokenBox(BUDGET, counter=counter)
                    else:
                        engines["compiler"] = ContextCompiler(BUDGET, counter=counter, config=config)
                else:  # a second turn of this side over the same material
                    run(data)
                turn = next_turn(data) if phase == "next" else data
                if which == "layout":
                    times[which], layout = timed(lambda r=run, d=turn: r(d))
                else:
                    times[which], compiled = timed(lambda r=run, d=turn: r(d))
                    laps = dict(compiled.trace.stage_latency_ms)
                    laps["finish"] = compiled.trace.latency_ms - sum(laps.values())
                    for name, ms in laps.items():
                        stages[phase].setdefault(name, []).append(ms)
            rows[f"layout {phase}"].append(times["layout"])
            rows[f"compile {phase}"].append(times["compile"])
            ratios[phase].append(times["compile"] / times["layout"])
    assert compiled is not None and layout is not None
    print(f"compiled: {compiled.total_tokens:,} tokens sent; layout: {layout.total_tokens:,} tokens")
    print(f"{'run':<14}{'median ms':>12}{'min ms':>10}{'max ms':>10}")
    for name, values in rows.items():
        ms = [v * 1000 for v in values]
        print(f"{name:<14}{statistics.median(ms):>12.1f}{min(ms):>10.1f}{max(ms):>10.1f}")
    for phase, values in ratios.items():
        print(
            f"compile / layout ({phase}): median {statistics.median(values):.2f}x, "
            f"min {min(values):.2f}x, max {max(values):.2f}x over {len(values)} trials (target <= 1.2x)"
        )
    for phase, laps in stages.items():  # wall-clock laps, so only indicative on a busy machine
        print(
            f"compile {phase} by stage (median ms): "
            + ", ".join(f"{k} {statistics.median(v):.1f}" for k, v in laps.items())
        )


if __name__ == "__main__":
    main()
