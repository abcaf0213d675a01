"""The Layout: content, messages, fingerprint, trace, explain and canonical export."""

from __future__ import annotations

import json

import pytest

from tokenbox_core import ContextBudget, Item, Layout, Section, TokenBox, count_message_tokens, get_counter
from tokenbox_core.errors import ConversationError, OutputFormError
from tokenbox_core.testing import make_sections


def sample(budget: int = 40) -> Layout:
    return TokenBox(budget, counter="whitespace", strict=True).layout(make_sections())  # the seed, literally


def test_sections_report_sizes_statuses_and_content() -> None:
    """Each laid-out section reports id, status, base/alloc/final sizes, content and actions."""
    layout = sample()
    assert [s.id for s in layout.sections] == ["policy", "task", "evidence", "history"]
    evidence = layout["evidence"]
    assert evidence.status == "truncated"
    assert evidence.base_tokens == evidence.full_tokens == 60
    assert evidence.final_tokens < evidence.base_tokens
    assert isinstance(evidence.content, tuple)
    assert all(isinstance(it, Item) for it in evidence.content)
    assert layout["history"].status == "dropped"
    assert layout["history"].text == ""
    assert any(a.kind == "evict" for a in evidence.actions)
    assert layout.total_tokens <= 40


def test_removed_items_carry_reasons_and_numbers() -> None:
    """Removed items list the section, the reason, their size and score."""
    layout = sample()
    removed = {r.id: r for r in layout.removed}
    assert removed["doc-4"].section == "evidence"
    assert removed["doc-4"].reason == "budget"
    assert removed["doc-4"].tokens == 12
    score = removed["doc-4"].score
    assert score is not None and abs(score - 0.2) < 1e-9
    assert removed["turn-0"].reason == "section dropped"


def test_text_joins_emitted_sections_with_the_separator() -> None:
    """Layout.text is the emitted sections in declaration order joined by the separator."""
    layout = TokenBox(100, counter="whitespace", separator="\n---\n").layout(
        [Section("a", "alpha"), Section("b", "", shrink=1), Section("c", "gamma")]
    )
    assert layout.text == "alpha\n---\ngamma"


def test_messages_use_item_then_section_roles() -> None:
    """Layout.messages tags each text section and list item with its role."""
    layout = TokenBox(100, counter="whitespace", mode="messages").layout(
        [
            Section("sys", "be kind", role="system"),
            Section("h", [Item("1", "hi", role="user"), Item("2", "hello", role="assistant")]),
            Section("q", "question", role="user"),
        ]
    )
    assert layout.messages == [
        {"role": "system", "content": "be kind"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "question"},
    ]


def test_fingerprint_is_stable_and_sensitive() -> None:
    """The same input gives the same fingerprint; any change in output or decisions changes it."""
    a, b = sample(), sample()
    assert a.fingerprint == b.fingerprint
    assert a.trace["trace_id"] != b.trace["trace_id"]
    assert sample(41).fingerprint != a.fingerprint
    assert len(a.fingerprint) == 64


def test_trace_has_the_chapter_fields() -> None:
    """The trace follows §6.4.2: ids and hashes, config, allocations, exclusions, ratios, latency."""
    trace = sample().trace
    for key in (
        "trace_id",
        "timestamp",
        "config_version",
        "input_hash",
        "output_hash",
        "total_tokens",
        "section_allocations",
        "excluded_items",
        "compression_ratios",
        "latency_ms",
    ):
        assert key in trace
    assert trace["section_allocations"]["evidence"]["overflow"] is True
    assert trace["section_allocations"]["policy"] == {"allocated": 8, "used": 8, "overflow": False, "status": "kept"}
    assert {
        "item_id": "doc-4",
        "section": "evidence",
        "reason": "budget",
        "score": trace["excluded_items"][0]["score"],
        "tokens": 12,
    } in trace["excluded_items"]
    assert trace["compression_ratios"]["history"] == 0.0
    assert trace["input_hash"] == sample().trace["input_hash"]
    json.dumps(trace)


def test_to_dict_and_to_json_are_canonical() -> None:
    """to_json is canonical (sorted keys, fixed separators) and identical across runs."""
    a, b = sample().to_json(), sample().to_json()
    assert a == b
    data = json.loads(a)
    assert list(data) == sorted(data)
    assert data["fingerprint"] == sample().fingerprint
    assert "trace_id" not in data and "latency_ms" not in data
    assert json.loads(sample().to_json(indent=2)) == data


def test_explain_is_a_readable_table() -> None:
    """explain() shows totals, one row per section with its status and sizes, and removed items."""
    text = sample().explain()
    assert text.splitlines()[0].startswith("TokenBox layout:")
    for word in ("policy", "evidence", "history", "truncated", "dropped", "critical", "removed items"):
        assert word in text
    assert str(sample()) == text


def test_html_report_has_a_budget_bar() -> None:
    """_repr_html_ renders a stacked SVG budget bar and a table."""
    html = sample()._repr_html_()
    assert "<svg" in html and "<rect" in html and "<table" in html


def test_utilisation_and_budget() -> None:
    """Utilisation is total over the effective max; the budget object is kept."""
    layout = TokenBox(ContextBudget(max_tokens=50, output_reserve=10), counter="whitespace").layout(make_sections())
    assert layout.max_tokens == 40
    assert layout.utilisation == layout.total_tokens / 40
    assert layout.budget.output_reserve == 10


def test_layouts_pickle_with_their_decisions() -> None:
    """A layout (lazy sizes included) survives pickling, e.g. to return from a worker process."""
    import pickle

    layout = TokenBox(30, counter="whitespace").layout(
        [*make_sections(), Section("extra", "low priority words " * 20, priority=-1, shrink=1)]
    )
    copy = pickle.loads(pickle.dumps(layout))
    assert copy.fingerprint == layout.fingerprint
    assert copy.text == layout.text
    assert copy.to_json() == layout.to_json()
    assert copy["extra"].full_tokens == layout["extra"].full_tokens == 60


def test_text_mode_layout_has_no_messages_because_they_were_not_sized() -> None:
    """Issue 10 item 1: a text-mode layout counted no chat overhead, so .messages is unavailable, with the fix."""
    sections = [
        Section("sys", "be kind " * 40, role="system"),
        Section("h", [Item(f"m{i}", "word " * 30, role="user") for i in range(40)], shrink=1),
    ]
    budget = ContextBudget(1_000, output_reserve=100, estimation_safety_margin_percent=5)
    text = TokenBox(budget, counter="gpt-4o").layout(sections)
    with pytest.raises(OutputFormError, match=r"sized as text .* mode='messages'") as err:
        _ = text.messages
    assert f"of the {text.max_tokens:,} allowed" in str(err.value)
    chat = TokenBox(budget, counter="gpt-4o", mode="messages").layout(sections)
    assert count_message_tokens(chat.messages, "gpt-4o") == chat.total_tokens <= chat.max_tokens
    assert get_counter("gpt-4o").count(chat.text) <= chat.max_tokens


# --------------------------------------------------------------------------- what Layout.messages refuses (issue 26)


def chat_layout(sections: list[Section], budget: int = 200) -> Layout:
    return TokenBox(budget, counter="whitespace", mode="messages").layout(sections)


def test_messages_refuse_a_tool_result() -> None:
    """A tool message cannot answer its call by id as a plain message: OutputFormError naming the engine."""
    layout = chat_layout(
        [Section("h", [Item("c", "call lookup(x)", role="assistant"), Item("r", "42", role="tool")], shrink=0)]
    )
    with pytest.raises(OutputFormError, match=r"section 'h' holds a tool message.*tool_call_id.*conversation_sections"):
        _ = layout.messages


def test_messages_refuse_an_unknown_role() -> None:
    """A role providers do not know is refused when the messages-mode layout is made, with the roles that exist
    and the closest one."""
    with pytest.raises(ConversationError, match=r"section 'sys' has role 'sytem'.*system, developer, user.*'system'"):
        chat_layout([Section("sys", "be kind", role="sytem")])


def test_messages_refuse_a_system_message_inside_the_conversation() -> None:
    """A system section after a user message is refused: declare it first or make it a user message."""
    layout = chat_layout([Section("q", "question", role="user"), Section("late", "be kind", role="system")])
    with pytest.raises(OutputFormError, match=r"section 'late' emits a system message after the conversation started"):
        _ = layout.messages


def test_messages_refuse_a_conversation_a_cut_can_shorten() -> None:
    """A flexible section of user and assistant items could start on an orphaned reply: refused, naming the fix."""
    turns = [Item(f"t{i}", f"turn {i}", role="user" if i % 2 == 0 else "assistant") for i in range(6)]
    for budget in (200, 30):  # kept whole or cut: the same answer
        layout = chat_layout([Section("h", turns, shrink=1)], budget)
        with pytest.raises(OutputFormError, match=r"section 'h' holds a conversation .*\(shrink=0\)"):
            _ = layout.messages
        assert layout.fingerprint  # the layout's identity does not depend on the rendering being valid


def test_a_marker_speaks_with_its_sections_role_else_user() -> None:
    """An omission marker inside a conversation is a user message unless its section has a role."""
    docs = [Item(f"d{i}", f"doc {i} " * 5) for i in range(6)]
    sections = [Section("q", "question", role="user"), Section("docs", docs, shrink=1, omission_marker=True)]
    layout = chat_layout(sections, 30)
    assert layout.messages[1]["role"] == "user" and layout.messages[1]["content"].startswith("[")
    as_system = chat_layout([Section("docs", docs, shrink=1, omission_marker=True, role="system")], 30)
    assert as_system.messages[0]["role"] == "system"
