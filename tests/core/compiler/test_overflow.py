"""The five overflow policies (chapter §6.4.3), when the elastic minimums do not fit."""

from __future__ import annotations

from typing import Any

import pytest

from tokenbox_core.compiler import CompilerConfig, ContextCompiler, Memory
from tokenbox_core.errors import CompilationError

from .conftest import evidence

BUDGET = 400


def material() -> dict[str, Any]:
    """A policy, six passages, three memories and a conversation: about 600 whitespace tokens."""
    return {
        "policy": "Answer from the evidence only.",
        "evidence": [
            evidence(f"e{i}", f"passage {i}: " + " ".join(f"fact{i}-{j}" for j in range(40)), relevance=0.9 - i / 10)
            for i in range(6)
        ],
        "memory": [Memory(f"m{i}", "remembered " + " ".join(f"note{i}-{j}" for j in range(30))) for i in range(3)],
        "history": [
            {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} " + "words " * 20} for i in range(6)
        ],
        "user": "What do we know?",
    }


def compiler(**config: Any) -> ContextCompiler:
    minimums = config.pop("minimums", {"evidence": 200, "memory": 100, "history": 100})
    return ContextCompiler(BUDGET, counter="whitespace", config=CompilerConfig(minimums=minimums, **config))


def test_fail_loud_names_the_numbers() -> None:
    """fail_loud rejects the compile with the minimums, the elastic budget and the fixed load."""
    with pytest.raises(CompilationError) as info:
        compiler(overflow="fail_loud").compile(**material())
    assert info.value.rules == ("overflow",)
    message = str(info.value)
    assert "the elastic minimums need 400 tokens" in message and "under overflow policy 'fail_loud'" in message


def test_safety_critical_defaults_to_fail_loud_interactive_to_cascade() -> None:
    """The task class picks the default policy."""
    assert CompilerConfig(task_class="safety_critical").overflow_policy == "fail_loud"
    assert CompilerConfig(task_class="interactive").overflow_policy == "cascade_compress"
    assert CompilerConfig(task_class="safety_critical", overflow="paginate").overflow_policy == "paginate"


def test_truncate_lowest_drops_whole_sections_lowest_priority_first() -> None:
    """History (priority 1) goes first; the rest then fits its minimums."""
    minimums = {"evidence": 150, "memory": 100, "history": 100}
    compiled = compiler(overflow="truncate_lowest", minimums=minimums).compile(**material())
    events = compiled.trace.overflow_events
    assert [(e["action"], e["section"]) for e in events] == [("drop_tier", "history")]
    assert "history/history" not in compiled.sections
    assert "evidence" in compiled.sections and "memory" in compiled.sections
    assert compiled.layout["evidence"].final_tokens >= 150 and compiled.layout["memory"].final_tokens >= 100
    assert {x.reason for x in compiled.excluded if x.section == "history/history"} == {"overflow_truncate_lowest"}
    assert compiled.total_tokens <= BUDGET


def test_cascade_compress_lenses_everything_before_dropping() -> None:
    """cascade_compress rewrites every elastic section with its lenses, then scales the minimums to fit."""
    data = material()
    data["evidence"] = [evidence("dup", "same line\nsame line\nsame line\n" + "x " * 50)] + data["evidence"]
    compiled = compiler(overflow="cascade_compress").compile(**data)
    actions = [(e["action"], e["section"]) for e in compiled.trace.overflow_events]
    assert actions[:3] == [("lenses", "evidence"), ("lenses", "memory"), ("lenses", "history")]
    assert ("scale_minimum", "evidence") in actions
    lensed = compiled.trace.overflow_events[0]["numbers"]
    assert lensed["after"] < lensed["before"]
    assert {"evidence", "memory", "history/history"} <= set(compiled.sections)
    assert compiled.total_tokens <= BUDGET


def test_defer_retrieval_emits_without_evidence_and_flags_it() -> None:
    """defer_retrieval drops the evidence and lists it in retrieval_pending for the next turn."""
    compiled = compiler(overflow="defer_retrieval").compile(**material())
    assert "evidence" not in compiled.sections
    assert compiled.retrieval_pending == ("e0", "e1", "e2", "e3", "e4", "e5")
    assert compiled.trace.retrieval_pending == compiled.retrieval_pending


def test_defer_retrieval_not_enough_raises() -> None:
    """When deferring evidence does not make room, the compile fails loudly with the numbers."""
    config = CompilerConfig(overflow="defer_retrieval", minimums={"memory": 200, "history": 200})
    with pytest.raises(CompilationError, match="deferring evidence is not enough"):
        ContextCompiler(300, counter="whitespace", config=config).compile(**material())


def test_paginate_splits_evidence_across_pages_with_all_fixed_tiers() -> None:
    """Every page carries the policy and the user turn; together the pages hold every passage once."""
    compiled = compiler(overflow="paginate", minimums={}).compile(**material())
    pages = compiled.pages
    assert len(pages) > 1 and pages[0].messages == compiled.messages
    assert (compiled.trace.page, compiled.trace.pages) == (1, len(pages))  # the returned context says "1 of N"
    seen: list[str] = []
    for number, page in enumerate(pages, 1):
        assert page.trace.page == number and page.trace.pages == len(pages)
        assert page.sections[0] == "policy" and page.sections[-1] == "history/latest-user"
        assert page.total_tokens <= BUDGET
        seen += [i.id for i in page.layout["evidence"].content if page.layout["evidence"].status != "dropped"]
    assert sorted(seen) == [f"e{i}" for i in range(6)]
    assert len(seen) == len(set(seen))


def test_fixed_tiers_over_the_window_always_fail() -> None:
    """No policy can cut fixed tiers: the error says which sections and by how much."""
    with pytest.raises(CompilationError) as info:
        ContextCompiler(20, counter="whitespace", config=CompilerConfig(overflow="cascade_compress")).compile(
            policy="word " * 50, user="hi"
        )
    assert info.value.rules == ("overflow",)
    assert "the fixed tiers alone exceed the window" in str(info.value)
