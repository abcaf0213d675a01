"""A list Section with a selection policy inside a Token Box layout."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core import Item, Section, SectionError, TokenBox
from tokenbox_core.select import (
    ChronologicalPlacer,
    CompositeScorer,
    GreedySlicer,
    PriorityScorer,
    RecencyScorer,
    ReflexiveScorer,
    SelectionPolicy,
    UShapedPlacer,
    chat_policy,
    rag_policy,
)

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def docs(*hints: float) -> list[Item]:
    """Documents of 5 words each (whitespace counter), with relevance hints."""
    return [Item(f"doc-{i}", f"doc{i} alpha beta gamma delta", score=h) for i, h in enumerate(hints)]


def test_policy_fills_the_allocation_in_placed_order_with_a_report() -> None:
    """The policy picks and orders the items; excluded items are in removed with the selection's reason."""
    items = [*docs(0.9, 0.1, 0.8, 0.3, 0.7), Item("copy", "doc0 alpha beta gamma delta", score=0.2)]
    layout = TokenBox(20, counter="whitespace").layout(
        [Section("task", "answer briefly"), Section("evidence", items, shrink=1, policy=rag_policy())]
    )
    evidence = layout["evidence"]
    assert layout.total_tokens <= 20
    assert [it.id for it in evidence.content] == ["doc-0", "doc-4", "doc-2"]  # U-shaped: best at both edges
    removed = {r.id: r.reason for r in evidence.removed}
    assert removed == {"copy": "Deduplicated", "doc-1": "BudgetExceeded", "doc-3": "BudgetExceeded"}
    assert evidence.selection is not None
    assert [e["id"] for e in evidence.selection["included"]] == ["doc-0", "doc-4", "doc-2"]
    assert evidence.selection["allocation"] == 18  # the budget minus the task section
    assert evidence.final_tokens == evidence.selection["included_tokens"] == 15
    assert layout.trace["selection"]["evidence"] == dict(evidence.selection)
    assert any(a.kind == "select" and a.name == "rag" for a in evidence.actions)


def test_policy_differs_from_eviction_order() -> None:
    """Without a policy the oldest items go first; with a relevance policy the least relevant go."""
    items = docs(0.9, 0.2, 0.8, 0.1)
    plain = TokenBox(11, counter="whitespace").layout([Section("e", items, shrink=1, eviction="oldest")])
    chosen = SelectionPolicy(ReflexiveScorer(), placer=ChronologicalPlacer())
    selected = TokenBox(11, counter="whitespace").layout([Section("e", items, shrink=1, policy=chosen)])
    assert [it.id for it in plain["e"].content] == ["doc-2", "doc-3"]
    assert [it.id for it in selected["e"].content] == ["doc-0", "doc-2"]
    assert plain["e"].selection is None
    assert not any(a.kind == "select" for a in plain["e"].actions)


def test_policy_runs_when_a_section_grows_into_free_space() -> None:
    """A section claiming a basis and growing is re-filled by its policy at the grown allocation."""
    items = docs(0.1, 0.9, 0.5, 0.7)
    policy = SelectionPolicy(ReflexiveScorer(), placer=ChronologicalPlacer())
    layout = TokenBox(16, counter="whitespace").layout([Section("e", items, shrink=1, basis=5, grow=1, policy=policy)])
    section = layout["e"]
    assert section.status == "expanded"
    assert [it.id for it in section.content] == ["doc-1", "doc-3", "doc-2"]
    assert section.selection is not None and section.selection["allocation"] == 16


def test_policy_never_splits_an_atomic_group() -> None:
    """A group the policy kept only in part is removed whole, with reason AtomicGroup."""
    items = [
        Item("call", "tool call one two", group="g", timestamp=T0),
        Item("result", "tool result one two three", group="g", timestamp=T0 + timedelta(1)),
        Item("later", "user says hi", timestamp=T0 + timedelta(2)),
    ]
    layout = TokenBox(9, counter="whitespace").layout([Section("h", items, shrink=1, policy=chat_policy())])
    section = layout["h"]
    assert [it.id for it in section.content] == ["later"]
    assert {r.id: r.reason for r in section.removed} == {"call": "BudgetExceeded", "result": "AtomicGroup"}


def test_pinned_items_larger_than_the_allocation_empty_the_section() -> None:
    """If the pinned items alone exceed the allocation, nothing is kept and the reason says why."""
    items = [Item("pin", "one two three four five six", pinned=True), Item("x", "seven")]
    layout = TokenBox(10, counter="whitespace").layout(
        [Section("a", "one two three four five"), Section("h", items, shrink=1, policy=chat_policy())]
    )
    section = layout["h"]
    assert section.status == "dropped"
    assert {r.id for r in section.removed} == {"pin", "x"}
    assert section.selection is not None and section.selection["pinned_tokens"] == 6


def test_omission_marker_is_paid_for_inside_the_allocation() -> None:
    """With an omission marker the policy is re-run until marker and items fit the allocation."""
    items = docs(0.9, 0.8, 0.7, 0.6, 0.5)
    policy = SelectionPolicy(ReflexiveScorer(), placer=ChronologicalPlacer())
    layout = TokenBox(14, counter="whitespace").layout(
        [Section("e", items, shrink=1, policy=policy, omission_marker="[{count} omitted]")]
    )
    section = layout["e"]
    assert layout.total_tokens <= 14
    assert section.marker.startswith("[")
    assert section.text.startswith(section.marker)
    assert len(section.content) + len(section.removed) == 5


def test_policy_in_messages_mode_uses_message_sizes() -> None:
    """In messages mode the policy sees each item's message size (Item.tokens when given)."""
    turns = [Item(f"t{i}", f"turn {i}", role="user", tokens=10, timestamp=T0 + timedelta(i)) for i in range(6)]
    layout = TokenBox(40, counter="whitespace", mode="messages").layout(
        [Section("h", turns, shrink=1, policy=chat_policy())]
    )
    assert [it.id for it in layout["h"].content] == ["t3", "t4", "t5"]  # 3 priming tokens + 3 x 10
    assert layout.total_tokens <= 40


def test_a_policy_that_is_not_a_selection_policy_is_rejected() -> None:
    """Section.policy must be a SelectionPolicy; anything else is a SectionError naming the section."""
    section = Section("h", docs(0.5, 0.4), shrink=1, policy="recency")
    with pytest.raises(SectionError, match="section 'h': policy must be a tokenbox_core.select.SelectionPolicy"):
        TokenBox(100, counter="whitespace").layout([section])


def test_layouts_with_policies_are_deterministic() -> None:
    """Two layouts of the same input have the same fingerprint and selection reports."""
    items = [*docs(0.3, 0.3, 0.9, 0.1), *docs(0.3, 0.5)]
    items = [Item(f"{it.id}-{n}", it.content + f" {n}", score=it.score, priority=n % 2) for n, it in enumerate(items)]
    policy = SelectionPolicy(CompositeScorer([(ReflexiveScorer(), 1.0), (PriorityScorer(), 1.0)]), GreedySlicer(),
                             UShapedPlacer())  # fmt: skip
    sections = [Section("e", items, shrink=1, policy=policy)]
    first = TokenBox(20, counter="whitespace").layout(sections)
    second = TokenBox(20, counter="whitespace").layout(list(sections))
    assert first.fingerprint == second.fingerprint
    assert first["e"].selection == second["e"].selection


@given(
    st.lists(st.tuples(st.integers(1, 6), st.floats(0, 1), st.booleans()), min_size=1, max_size=12),
    st.integers(5, 60),
    st.booleans(),
)
def test_policy_sections_never_exceed_the_budget(
    rows: list[tuple[int, float, bool]], budget: int, marker: bool
) -> None:
    """Whatever the items and budget, a layout with a policy section stays within the budget."""
    items = [
        Item(
            f"i{n}",
            " ".join(["w"] * words) + f" {n}",
            score=s,
            timestamp=T0 + timedelta(hours=n),
            pinned=pin and n == 0,
        )
        for n, (words, s, pin) in enumerate(rows)
    ]
    policy = SelectionPolicy(
        CompositeScorer([(RecencyScorer(), 1.0), (ReflexiveScorer(), 1.0)]), placer=UShapedPlacer()
    )
    layout = TokenBox(budget, counter="whitespace").layout(
        [Section("head", "a b c"), Section("list", items, shrink=1, policy=policy, omission_marker=marker)]
    )
    assert layout.total_tokens <= budget
    section = layout["list"]
    assert len(section.content) + len(section.removed) == len(items)


def test_pinned_items_that_fill_the_allocation_with_a_marker() -> None:
    """A pinned item that fits only without the omission marker is kept, the marker left out (found by search)."""
    items = [
        Item("i0", "w 0", timestamp=T0, pinned=True),
        Item("i1", "w 1", timestamp=T0 + timedelta(hours=1)),
    ]
    policy = SelectionPolicy(
        CompositeScorer([(RecencyScorer(), 1.0), (ReflexiveScorer(), 1.0)]), placer=UShapedPlacer()
    )
    layout = TokenBox(5, counter="whitespace").layout(
        [Section("head", "a b c"), Section("list", items, shrink=1, policy=policy, omission_marker=True)]
    )
    assert layout.total_tokens <= 5
    assert [it.id for it in layout["list"].content] == ["i0"]  # type: ignore[union-attr]
    assert layout["list"].marker == ""
