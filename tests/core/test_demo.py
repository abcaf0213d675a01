"""The built-in demo: realistic, deterministic, offline, and exercising the layout's decisions."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tokenbox_core import Layout, TokenBox, get_counter
from tokenbox_core._demo import (
    DEMO_MAX_TOKENS,
    DEMO_MODEL,
    DEMO_OUTPUT_RESERVE,
    demo_box,
    demo_budget,
    demo_layout,
    demo_messages,
    demo_sections,
    documents,
    history,
    tool_schemas,
)
from tokenbox_core.errors import OutputFormError
from tokenbox_core.testing import openai_chat_problems


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
    """20 scored documents, 64 OpenAI-shaped messages with structured tool calls, 8 tool schemas, critical
    policy and task."""
    docs = documents()
    assert len(docs) == 20 and all(d.score is not None for d in docs)
    assert len({d.score for d in docs}) == 20
    turns = history()
    assert len(turns) == 64
    assert openai_chat_problems([{k: v for k, v in m.items() if k != "tokenbox"} for m in turns]) == []
    calls = [m["tool_calls"] for m in turns if m.get("tool_calls")]
    assert len(calls) == 15 and any(len(c) > 1 for c in calls)  # parallel tool calls exist
    assert all(json.loads(c["function"]["arguments"]) for group in calls for c in group)
    assert len(tool_schemas()) == 8
    sections = {s.id: s for s in demo_sections()}
    json.loads(sections["tools"].content)  # type: ignore[arg-type]
    assert sections["policy"].critical and sections["task"].critical
    assert sections["documents"].basis is not None and sections["documents"].grow > 0
    grouped = [it for it in sections["history"].items if it.group]
    assert {it.role for it in grouped} == {"assistant", "tool"} and len({it.group for it in grouped}) == 15


def test_demo_fits_the_8k_budget_with_an_output_reserve(layout: Layout) -> None:
    """The default layout stays within 8,192 minus the answer reserve, counted with gpt-4o's encoding."""
    assert layout.budget.max_tokens == DEMO_MAX_TOKENS and layout.budget.output_reserve == DEMO_OUTPUT_RESERVE
    assert layout.total_tokens <= DEMO_MAX_TOKENS - DEMO_OUTPUT_RESERVE
    assert layout.counter_name == get_counter("gpt-4o").name


def test_demo_default_statuses(layout: Layout) -> None:
    """At 8k the critical sections are kept whole, history is truncated and the scratchpad cut to what is left."""
    status = {s.id: s.status for s in layout.sections}
    assert status["policy"] == status["task"] == "kept"
    assert status["history"] == "truncated"
    assert status["scratchpad"] == "truncated" and layout["scratchpad"].refilled
    for s in layout.sections:
        if s.critical:
            assert s.final_tokens == s.full_tokens


def test_history_is_evicted_oldest_first_without_splitting_tool_calls(layout: Layout) -> None:
    """The removed history is a prefix of the conversation and never half of a tool-call group."""
    ids = [m["tokenbox"]["id"] for m in history()]
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
    """Laying out the demo twice gives the same fingerprint, the same text and the same messages."""
    again = demo_layout()
    assert again.fingerprint == layout.fingerprint and again.text == layout.text
    assert demo_messages() == demo_messages()


def test_demo_messages_are_what_a_provider_accepts(layout: Layout) -> None:
    """The demo's messages keep tool calls structured, answer them by id and restart the cut history on a user
    turn; Layout.messages refuses the layout's tool messages and names the engine."""
    messages = demo_messages()
    assert openai_chat_problems(messages) == []
    history_part = [m for m in messages if m.get("tool_calls") or m["role"] == "tool"]
    assert history_part and all("tokenbox" not in m and "id" not in m for m in messages)
    marker = next(i for i, m in enumerate(messages) if m["content"] and "earlier messages omitted" in m["content"])
    assert messages[marker]["role"] == "user" and messages[marker + 1]["role"] == "user"
    with pytest.raises(OutputFormError, match="holds a tool message.*conversation_sections"):
        _ = layout.messages


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
    """Laying out the demo (and reading its fingerprint) on a box does not change that box's next layout."""
    from tokenbox_core.chat import conversation_sections

    sections = demo_sections()
    more = [*history(), {"role": "user", "content": "Show me the dry run first."}]
    more.append({"role": "assistant", "content": "Here it is."})
    conversation = conversation_sections(more, counter=DEMO_MODEL, keep_last=None, history_priority=1)
    turn16 = [s for s in sections if s.id != "history"]
    turn16[4:4] = conversation.sections
    box = demo_box()
    box.layout(sections).fingerprint  # noqa: B018 - reading it must have no effect on later layouts
    assert box.layout(turn16).fingerprint == demo_box().layout(turn16).fingerprint
