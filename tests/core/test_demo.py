"""The built-in demo: realistic, deterministic, offline, and exercising the layout's decisions."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tokenbox_core import Layout, TokenBox, get_counter
from tokenbox_core.demo import (
    DEMO_MAX_TOKENS,
    DEMO_MODEL,
    DEMO_OUTPUT_RESERVE,
    demo_box,
    demo_budget,
    demo_layout,
    demo_sections,
    documents,
    history,
    tool_schemas,
)


@pytest.fixture(scope="module")
def layout() -> Layout:
    return demo_layout()


def test_demo_data_is_deterministic() -> None:
    """Two builds of the demo context are identical, item by item."""
    a, b = demo_sections(), demo_sections()
    assert [(s.id, s.content if isinstance(s.content, str) else [(i.id, i.content) for i in s.content]) for s in a] == [
        (s.id, s.content if isinstance(s.content, str) else [(i.id, i.content) for i in s.content]) for s in b
    ]


def test_demo_has_the_promised_shape() -> None:
    """20 scored documents, 60 messages with grouped tool calls, 8 JSON tool schemas, critical policy and task."""
    docs = documents()
    assert len(docs) == 20 and all(d.score is not None for d in docs)
    assert len({d.score for d in docs}) == 20
    turns = history()
    assert len(turns) == 60
    grouped = [t for t in turns if t.group]
    assert {t.role for t in grouped} == {"assistant", "tool"}
    for group in {t.group for t in grouped}:
        assert [t.kind for t in grouped if t.group == group] == ["ToolCall", "ToolOutput"]
    calls = [json.loads(t.content) for t in turns if t.kind == "ToolCall"]
    assert any(len(c) > 1 for c in calls)  # parallel tool calls exist
    assert len(tool_schemas()) == 8
    sections = {s.id: s for s in demo_sections()}
    json.loads(sections["tools"].content)  # type: ignore[arg-type]
    assert sections["policy"].critical and sections["task"].critical
    assert sections["documents"].basis is not None and sections["documents"].grow > 0


def test_demo_fits_the_8k_budget_with_an_output_reserve(layout: Layout) -> None:
    """The default layout stays within 8,192 minus the answer reserve, counted with gpt-4o's encoding."""
    assert layout.budget.max_tokens == DEMO_MAX_TOKENS and layout.budget.output_reserve == DEMO_OUTPUT_RESERVE
    assert layout.total_tokens <= DEMO_MAX_TOKENS - DEMO_OUTPUT_RESERVE
    assert layout.counter_name == get_counter("gpt-4o").name


def test_demo_default_statuses(layout: Layout) -> None:
    """At 8k the critical sections are kept whole, history is truncated and the scratchpad dropped."""
    status = {s.id: s.status for s in layout.sections}
    assert status["policy"] == status["task"] == "kept"
    assert status["history"] == "truncated"
    assert status["scratchpad"] == "dropped"
    for s in layout.sections:
        if s.critical:
            assert s.final_tokens == s.full_tokens


def test_history_is_evicted_oldest_first_without_splitting_tool_calls(layout: Layout) -> None:
    """The removed history is a prefix of the conversation and never half of a tool-call group."""
    ids = [t.id for t in history()]
    removed = [r.id for r in layout["history"].removed]
    assert removed and removed == ids[: len(removed)]
    content = layout["history"].content
    assert isinstance(content, tuple)
    kept_groups = {it.group for it in content if it.group}
    removed_groups = {r.group for r in layout["history"].removed if r.group}
    assert not kept_groups & removed_groups


def test_documents_lose_the_lowest_scores(layout: Layout) -> None:
    """Every document kept scores higher than every document removed."""
    kept = layout["documents"].content
    assert isinstance(kept, tuple) and kept
    removed = layout["documents"].removed
    assert removed
    assert min(d.score for d in kept if d.score is not None) > max(r.score for r in removed if r.score is not None)


def test_demo_is_deterministic(layout: Layout) -> None:
    """Laying out the demo twice gives the same fingerprint and the same text."""
    again = demo_layout()
    assert again.fingerprint == layout.fingerprint
    assert again.messages == layout.messages


def test_room_to_spare_expands_the_documents() -> None:
    """With a larger window the documents grow past their basis (status expanded)."""
    roomy = demo_layout(DEMO_MAX_TOKENS * 4)
    assert roomy["documents"].status == "expanded"
    assert roomy["documents"].final_tokens > roomy["documents"].base_tokens


def test_a_tight_window_compresses_the_tool_schemas() -> None:
    """When only the tools can give, the json_minify lens compresses them instead of cutting them."""
    full = demo_layout(10**6)
    critical = full.fixed_tokens
    tools = full["tools"].full_tokens
    budget = critical + tools - 100 + DEMO_OUTPUT_RESERVE  # 100 tokens short: less than minifying saves
    strict = TokenBox(demo_budget(budget), counter=DEMO_MODEL, mode="messages", strict=True).layout(demo_sections())
    assert strict["tools"].status == "compressed"
    json.loads(strict["tools"].text)
    assert {strict[s].status for s in ("memory", "documents", "history", "scratchpad")} == {"dropped"}
    tight = demo_layout(budget)  # refill: what minifying saved beyond the deficit goes back, highest priority first
    assert tight["tools"].status == "compressed"
    json.loads(tight["tools"].text)
    assert tight["memory"].refilled and tight.total_tokens > strict.total_tokens
    assert tight.total_tokens <= tight.max_tokens


def test_refill_no_longer_strands_memory_at_2400() -> None:
    """`tokenbox demo --budget 2400`: refill re-admits memory (128 tokens) into the room later compression freed."""
    strict = TokenBox(demo_budget(2400), counter=DEMO_MODEL, mode="messages", strict=True).layout(demo_sections())
    layout = demo_layout(2400)
    assert strict["memory"].status == "dropped" and strict.total_tokens == 1_114
    assert layout["memory"].status == "kept" and layout["memory"].final_tokens == 128
    assert layout["memory"].refilled and "memory" in layout.trace["refilled"]
    assert strict.total_tokens < layout.total_tokens <= layout.max_tokens == 1_376


def test_demo_box_counts_chat_messages() -> None:
    """The demo lays out chat messages (message-mode box)."""
    assert demo_box().mode == "messages"


def test_tokenbox_demo_runs_offline_in_a_fresh_process() -> None:
    """`tokenbox demo` works in a new process with no network access allowed and prints the table."""
    env = dict(os.environ, TOKENBOX_OFFLINE="1")
    proc = subprocess.run(
        [sys.executable, "-m", "tokenbox_core.cli", "demo"], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "TokenBox layout:" in proc.stdout and "history" in proc.stdout and "truncated" in proc.stdout
    assert proc.stderr == ""


def test_a_reused_box_lays_out_like_a_fresh_one() -> None:
    """Laying out turn 60 (and reading its fingerprint) on a box does not change that box's next layout."""
    from dataclasses import replace

    from tokenbox_core import Item

    sections = demo_sections()
    extra = [Item("t16-user", "Show me the dry run first.", role="user"), Item("t16-answer", "Here it is.")]
    turn61 = [replace(s, content=(*s.items, *extra)) if s.id == "history" else s for s in sections]
    box = demo_box()
    box.layout(sections).fingerprint  # noqa: B018 - reading it must have no effect on later layouts
    assert box.layout(turn61).fingerprint == demo_box().layout(turn61).fingerprint
