"""The Token Box algorithm, step by step, with the whitespace counter (one unit per word).

With that counter the section separator costs nothing, so the arithmetic in
each test can be checked by hand.
"""

from __future__ import annotations

import pytest

from tokenbox_core import (
    ContextBudget,
    ContextCriticalOverflow,
    Item,
    Section,
    SectionError,
    TokenBox,
    count_message_tokens,
    get_counter,
)
from tokenbox_core.layout import section_messages


def words(n: int, tag: str = "w") -> str:
    return " ".join(f"{tag}{i}" for i in range(n))


def box(budget: int | ContextBudget, **kwargs: object) -> TokenBox:
    return TokenBox(budget, counter="whitespace", **kwargs)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- critical load


def test_critical_overflow_names_budget_required_and_ids() -> None:
    """Critical sections over the budget raise ContextCriticalOverflow with the numbers and the fix."""
    with pytest.raises(ContextCriticalOverflow) as info:
        box(20).layout([Section("policy", words(15)), Section("task", words(10)), Section("x", words(5), shrink=1)])
    err = info.value
    assert (err.budget, err.required, err.section_ids) == (20, 25, ("policy", "task"))
    assert "critical sections need 25 tokens but the budget is 20" in str(err)
    assert "'policy', 'task'" in str(err)
    assert "shrink > 0" in str(err)


def test_critical_capacity_subtracts_output_reserve() -> None:
    """The critical capacity is max_tokens minus the output reserve (and reserved slots)."""
    budget = ContextBudget(max_tokens=30, output_reserve=10)
    with pytest.raises(ContextCriticalOverflow) as info:
        box(budget).layout([Section("policy", words(21))])
    assert (info.value.budget, info.value.required) == (20, 21)
    assert box(budget).layout([Section("policy", words(20))]).total_tokens == 20


def test_critical_sections_are_never_touched() -> None:
    """Critical content comes out byte-identical even when everything else is dropped."""
    policy = "Rules:  keep   THIS   exactly.\n\n\nOK"
    layout = box(5).layout([Section("policy", policy), Section("notes", words(50), shrink=1, strategy=["whitespace"])])
    assert layout["policy"].text == policy
    assert layout["policy"].status == "kept"
    assert layout["notes"].status == "dropped"


def test_critical_section_over_its_max_is_an_error() -> None:
    """A critical section larger than its own max_tokens cannot be cut, so it is an error."""
    with pytest.raises(SectionError, match="critical section 'p' has 5 tokens, over its max_tokens \\(3\\)"):
        box(100).layout([Section("p", words(5), max_tokens=3)])


# --------------------------------------------------------------------------- expansion


def test_expansion_uses_largest_remainder_with_declaration_order_ties() -> None:
    """10 free units over three equal grow weights give 4, 3, 3: the tie goes to the first declared."""
    sections = [Section(n, words(20, n), shrink=1, grow=1, basis=0) for n in ("a", "b", "c")]
    layout = box(10).layout(sections)
    assert [s.final_tokens for s in layout.sections] == [4, 3, 3]
    assert [s.status for s in layout.sections] == ["expanded"] * 3
    assert layout["a"].text == "a0 a1 a2 a3"


def test_expansion_is_proportional_to_grow() -> None:
    """Free space is shared in proportion to grow (1:3 of 8 → 2 and 6)."""
    sections = [Section("a", words(20), shrink=1, grow=1, basis=0), Section("b", words(20), shrink=1, grow=3, basis=0)]
    assert [s.final_tokens for s in box(8).layout(sections).sections] == [2, 6]


def test_capped_sections_pass_the_rest_on() -> None:
    """A section capped by its content hands its unused share to the others: no budget is stranded."""
    sections = [
        Section("a", words(2), shrink=1, grow=1, basis=0),
        Section("b", words(20), shrink=1, grow=1, basis=0),
        Section("c", words(20), shrink=1, grow=1, basis=0),
    ]
    layout = box(10).layout(sections)
    assert [s.final_tokens for s in layout.sections] == [2, 4, 4]
    assert layout.total_tokens == 10


def test_max_tokens_caps_growth_and_content() -> None:
    """max_tokens caps a section even when there is room; the rest flows to others."""
    sections = [
        Section("a", words(20), shrink=1, grow=1, basis=0, max_tokens=3),
        Section("b", words(20), shrink=1, grow=1, basis=0),
    ]
    assert [s.final_tokens for s in box(10).layout(sections).sections] == [3, 7]
    capped = box(100).layout([Section("c", words(20), shrink=1, max_tokens=5)])
    assert capped["c"].final_tokens == 5
    assert capped["c"].base_tokens == 5


def test_basis_without_grow_stays_at_its_claim() -> None:
    """A section claiming a basis and no grow keeps exactly its basis even with free space."""
    layout = box(100).layout([Section("docs", words(20), shrink=1, basis=6)])
    assert layout["docs"].final_tokens == 6
    assert layout["docs"].status == "kept"
    assert layout["docs"].full_tokens == 20


def test_list_basis_claims_whole_items_and_grows_back() -> None:
    """A list section with a basis claims its best items and grows by whole items in keep order."""
    docs = [Item(f"d{i}", words(3, f"d{i}x"), score=1 - i / 10) for i in range(6)]
    section = Section("docs", docs, shrink=1, grow=1, basis=6, eviction="lowest_score")
    small = box(6).layout([section])
    assert [it.id for it in small["docs"].content] == ["d0", "d1"]  # type: ignore[union-attr]
    grown = box(12).layout([Section("docs", docs, shrink=1, grow=1, basis=6, eviction="lowest_score")])
    assert [it.id for it in grown["docs"].content] == ["d0", "d1", "d2", "d3"]  # type: ignore[union-attr]
    assert grown["docs"].status == "expanded"


# --------------------------------------------------------------------------- compression


def test_compression_order_priority_then_shrink_then_declaration() -> None:
    """Lower priority is lost first; among equal priority the higher shrink; then declaration order."""
    sections = [
        Section("x", words(10, "x"), priority=0, shrink=1),
        Section("y", words(10, "y"), priority=0, shrink=2),
        Section("z", words(10, "z"), priority=1, shrink=1),
    ]
    cut = box(25).layout(sections)
    assert [s.final_tokens for s in cut.sections] == [10, 5, 10]
    deeper = box(15).layout(sections)
    assert [s.status for s in deeper.sections] == ["truncated", "dropped", "kept"]
    assert [s.final_tokens for s in deeper.sections] == [5, 0, 10]
    tie = box(15).layout([Section("p", words(10, "p"), shrink=1), Section("q", words(10, "q"), shrink=1)])
    assert [s.final_tokens for s in tie.sections] == [5, 10]


def test_truncation_is_exactly_the_deficit() -> None:
    """A section is truncated by exactly min(deficit, size - min)."""
    layout = box(17).layout([Section("keep", words(10)), Section("cut", words(10), shrink=1)])
    assert layout["cut"].final_tokens == 7
    assert layout.total_tokens == 17
    assert layout["cut"].actions[0].before == 10 and layout["cut"].actions[0].after == 7


def test_section_at_min_is_dropped_when_still_over() -> None:
    """Cut to min_tokens and still over budget: the section is dropped whole, not kept below its min."""
    sections = [
        Section("x", words(10, "x"), priority=1, shrink=1),
        Section("y", words(10, "y"), priority=0, shrink=1, min_tokens=8),
    ]
    layout = box(15).layout(sections)
    assert layout["y"].status == "dropped"
    assert layout["x"].status == "kept"
    assert layout.total_tokens == 10
    kinds = [a.kind for a in layout["y"].actions]
    assert kinds == ["truncate", "drop"]


def test_keep_tail_and_middle() -> None:
    """keep='tail' keeps the end of a section and keep='middle' both ends."""
    tail = box(3).layout([Section("log", words(10), shrink=1, keep="tail")])
    assert tail.text == "w7 w8 w9"
    middle = box(4).layout([Section("log", words(10), shrink=1, keep="middle")])
    assert middle.text == "w0 w1 w8 w9"


def test_lens_runs_before_truncation() -> None:
    """The lens pipeline is applied first; truncation only takes what is still over."""
    text = "a a a a\nb\nb\nb\nc d"
    layout = box(6).layout([Section("s", text, shrink=1, strategy=["dedupe_lines"])])
    assert layout.text == "a a a a\nb\nc"
    assert [a.kind for a in layout["s"].actions] == ["lens", "truncate"]
    assert layout["s"].status == "truncated"
    only_lens = box(7).layout([Section("s", text, shrink=1, strategy=["dedupe_lines"])])
    assert only_lens.text == "a a a a\nb\nc d"
    assert only_lens["s"].status == "compressed"


def test_output_keeps_declaration_order() -> None:
    """Whatever is cut, the output keeps the sections' declaration order."""
    sections = [
        Section("c", words(3, "c"), priority=5, shrink=1),
        Section("a", words(3, "a"), priority=0, shrink=1),
        Section("b", words(3, "b")),
    ]
    layout = box(7).layout(sections)
    assert [s.id for s in layout.sections] == ["c", "a", "b"]
    assert layout.text == "c0 c1 c2\n\na0\n\nb0 b1 b2"


def test_aims_at_target_and_never_exceeds_max() -> None:
    """The layout aims at the effective target; the effective max is never exceeded."""
    budget = ContextBudget(max_tokens=40, target_tokens=30, output_reserve=5)
    layout = box(budget).layout([Section("a", words(10)), Section("b", words(40), shrink=1)])
    assert layout.total_tokens == 30
    assert layout.max_tokens == 35
    assert layout.target_tokens == 30


def test_safety_margin_applies_to_the_flexible_part() -> None:
    """Critical sections play the pinned role: the margin shrinks what is left after them."""
    budget = ContextBudget(max_tokens=100, estimation_safety_margin_percent=50.0)
    layout = box(budget).layout([Section("a", words(20)), Section("b", words(100), shrink=1)])
    assert layout["b"].final_tokens == 40  # floor((100 - 20) * 0.5)
    assert layout.total_tokens == 60


# --------------------------------------------------------------------------- lists


def history(n: int) -> list[Item]:
    return [Item(f"m{i}", words(2, f"m{i}x"), role="user" if i % 2 == 0 else "assistant") for i in range(n)]


def test_list_evicts_oldest_first_by_whole_items() -> None:
    """History loses whole items, oldest first."""
    layout = box(6).layout([Section("h", history(5), shrink=1)])
    assert [it.id for it in layout["h"].content] == ["m2", "m3", "m4"]  # type: ignore[union-attr]
    assert [r.id for r in layout["h"].removed] == ["m0", "m1"]
    assert layout["h"].status == "truncated"


def test_atomic_groups_leave_together() -> None:
    """An assistant tool call and its results are removed as one group, never split."""
    items = [
        Item("u0", "hello there"),
        Item("call", "calling tools now", group="g"),
        Item("r1", "result one", group="g"),
        Item("r2", "result two", group="g"),
        Item("u1", "thanks a lot"),
    ]
    layout = box(9).layout([Section("h", items, shrink=1)])
    kept = [it.id for it in layout["h"].content]  # type: ignore[union-attr]
    assert kept == ["u1"]
    assert {r.group for r in layout["h"].removed if r.group} == {"g"}
    roomy = box(10).layout([Section("h", items, shrink=1)])
    assert [it.id for it in roomy["h"].content] == ["call", "r1", "r2", "u1"]  # type: ignore[union-attr]


def test_lowest_score_first_with_ties_losing_the_later_item() -> None:
    """Evidence loses the lowest score first; equal scores lose the later item."""
    docs = [
        Item("a", "x x", score=0.9),
        Item("b", "x x", score=0.1),
        Item("c", "x x", score=0.5),
        Item("d", "x x", score=0.5),
    ]
    layout = box(4).layout([Section("docs", docs, shrink=1, eviction="lowest_score")])
    assert [it.id for it in layout["docs"].content] == ["a", "c"]  # type: ignore[union-attr]
    assert [r.id for r in layout["docs"].removed] == ["b", "d"]


def test_newest_first_eviction_and_list_lenses() -> None:
    """eviction='newest' drops from the end; the drop_lowest_score lens selects score order."""
    layout = box(4).layout([Section("h", history(4), shrink=1, eviction="newest")])
    assert [it.id for it in layout["h"].content] == ["m0", "m1"]  # type: ignore[union-attr]
    docs = [Item("a", "x", score=0.1), Item("b", "x", score=0.9)]
    lensed = box(1).layout([Section("d", docs, shrink=1, strategy=["drop_lowest_score"])])
    assert [it.id for it in lensed["d"].content] == ["b"]  # type: ignore[union-attr]


def test_pinned_and_item_priority_are_evicted_last() -> None:
    """Pinned items go after every unpinned one; low item priority goes before high."""
    items = [Item("a", "x", pinned=True), Item("b", "x", priority=5), Item("c", "x"), Item("d", "x")]
    layout = box(2).layout([Section("h", items, shrink=1)])
    assert [it.id for it in layout["h"].content] == ["a", "b"]  # type: ignore[union-attr]


def test_omission_marker_is_counted_and_lists_ids() -> None:
    """The omission marker names the removed ids and its words count toward the budget."""
    layout = box(12).layout([Section("h", history(8), shrink=1, omission_marker=True)])
    section = layout["h"]
    assert section.marker.startswith("[")
    assert "omitted" in section.marker
    removed = [r.id for r in section.removed]
    assert f"{len(removed)} items omitted" in section.marker
    assert layout.total_tokens <= 12
    assert layout.total_tokens == get_counter("whitespace").count(layout.text)
    custom = box(6).layout([Section("h", history(8), shrink=1, omission_marker="(dropped {count}: {first}..{last})")])
    assert custom["h"].marker.startswith("(dropped ")


def test_long_omission_lists_are_abbreviated_in_the_marker() -> None:
    """A marker for many removed items lists a few ids and a count; the report keeps them all."""
    layout = box(30).layout([Section("h", history(200), shrink=1, omission_marker=True)])
    section = layout["h"]
    assert "more)" in section.marker
    assert len(section.removed) > 100


def test_partial_truncation_of_the_boundary_item_is_opt_in() -> None:
    """With partial=True the boundary item is cut to fill the allocation instead of being removed."""
    docs = [Item("a", words(5, "a")), Item("b", words(5, "b"))]
    whole = box(7).layout([Section("d", docs, shrink=1, eviction="newest")])
    assert [it.id for it in whole["d"].content] == ["a"]  # type: ignore[union-attr]
    partial = box(7).layout([Section("d", docs, shrink=1, eviction="newest", partial=True)])
    content = partial["d"].content
    assert [it.id for it in content] == ["a", "b"]  # type: ignore[union-attr]
    assert content[1].content == "b0 b1"  # type: ignore[union-attr,index]
    assert partial.total_tokens == 7


def test_empty_sections_and_empty_lists() -> None:
    """Empty text and empty lists lay out to nothing without errors."""
    layout = box(5).layout([Section("a", ""), Section("b", [], shrink=1), Section("c", "x y")])
    assert layout.text == "x y"
    assert layout.total_tokens == 2


# --------------------------------------------------------------------------- units and modes


def test_messages_mode_counts_like_the_chat_format() -> None:
    """In messages mode the total equals count_message_tokens of the emitted messages."""
    items = [Item(f"m{i}", f"message number {i}", role="user" if i % 2 == 0 else "assistant") for i in range(10)]
    sections = [
        Section("sys", "You are helpful.", role="system"),
        Section("hist", items, shrink=1),
        Section("q", "What now?", role="user"),
    ]
    for budget in (200, 80, 40):
        layout = TokenBox(budget, counter="gpt-4o", mode="messages").layout(sections)
        # a cut conversation is the engine's to render (Layout.messages refuses it): count what the sections render
        rendered = [m for s in layout.sections for m in section_messages(s)]
        assert layout.total_tokens <= budget
        assert layout.total_tokens == count_message_tokens(rendered, "gpt-4o")
        assert rendered[0]["role"] == "system"
        assert rendered[-1] == {"role": "user", "content": "What now?"}


def test_messages_mode_trusts_item_tokens() -> None:
    """Item.tokens (e.g. with tool-call payloads) is the size used in messages mode."""
    items = [Item("a", "short", tokens=50), Item("b", "short")]
    layout = TokenBox(30, counter="whitespace", mode="messages").layout([Section("h", items, shrink=1)])
    assert [it.id for it in layout["h"].content] == ["b"]  # type: ignore[union-attr]
    with pytest.raises(SectionError, match="negative size"):
        TokenBox(30, counter="whitespace", mode="messages").layout([Section("h", [Item("x", tokens=-1)], shrink=1)])


def test_bytes_units() -> None:
    """FACET byte units: sizes are UTF-8 bytes after NFC, separators included."""
    layout = TokenBox(12, counter="bytes").layout([Section("a", "héllo"), Section("b", "wörld wörld", shrink=1)])
    assert layout.total_tokens <= 12
    assert layout.total_tokens == len(layout.text.encode("utf-8"))
    assert layout.text.startswith("héllo\n\n")


def test_exact_total_with_real_tokens_and_merging_joins() -> None:
    """With tiktoken the reported total is the exact count of the emitted text, joins included."""
    counter = get_counter("o200k_base")
    sections = [
        Section("a", "Rules end with punctuation."),
        Section("b", "   leading spaces and trailing   ", shrink=1),
        Section("c", "/slash starts this", shrink=1),
        Section("d", [Item("i1", " spaced item"), Item("i2", "plain item.")], shrink=1),
    ]
    for budget in (100, 15, 10, 7):
        layout = TokenBox(budget, counter=counter).layout(sections)
        assert layout.total_tokens == counter.count(layout.text)
        assert layout.total_tokens <= budget


def test_invalid_arguments_to_the_box() -> None:
    """Bad budgets, separators and modes are clear errors."""
    with pytest.raises(ValueError, match="max_tokens must be >= 0"):
        TokenBox(-5)
    with pytest.raises(SectionError, match="separator must be a string"):
        TokenBox(5, separator=None)  # type: ignore[arg-type]
    with pytest.raises(SectionError, match="mode must be 'text' or 'messages'"):
        TokenBox(5, mode="json")  # type: ignore[arg-type]


def test_huge_section_with_linear_counters() -> None:
    """A 50 MB section lays out with the byte and approximate counters (linear work, no hang)."""
    big = "lorem ipsum dolor sit amet " * 2_000_000
    for name in ("bytes", "approximate"):
        layout = TokenBox(1_000, counter=name).layout([Section("s", "keep me"), Section("big", big, shrink=1)])
        assert layout.total_tokens <= 1_000
        assert layout["big"].status == "truncated"


def test_text_lenses_apply_to_each_item_of_a_list() -> None:
    """A text lens on a list section rewrites each kept item before any item is evicted."""
    items = [Item("a", "x  y\n\n\n\nz"), Item("b", '{"b": 1,  "a": 2}')]
    layout = TokenBox(14, counter="o200k_base").layout(
        [Section("h", items, shrink=1, strategy=["whitespace", "json_minify"])]
    )
    assert [it.content for it in layout["h"].content] == ["x y\n\nz", '{"a":2,"b":1}']  # type: ignore[union-attr]
    assert layout["h"].status == "compressed"
    assert layout.total_tokens <= 14


def test_messages_mode_truncates_message_content() -> None:
    """In messages mode a text section is cut inside its message, overhead included."""
    layout = TokenBox(20, counter="whitespace", mode="messages").layout(
        [Section("sys", "be brief", role="system"), Section("doc", words(30), role="user", shrink=1)]
    )
    assert layout.total_tokens == 20
    assert layout.total_tokens == count_message_tokens(layout.messages, "whitespace")


def test_messages_mode_marker_counts_as_its_emitted_message() -> None:
    """The omission marker is sized with the role it is emitted with (its section's, else user: a marker may stand
    inside a conversation, where providers take no system message), so totals stay exact."""
    items = [Item(f"m{i}", f"message {i} here", role="user") for i in range(12)]
    layout = TokenBox(40, counter="gpt-4o", mode="messages").layout(
        [Section("h", items, shrink=1, omission_marker=True)]
    )
    assert layout.messages[0]["role"] == "user"
    assert layout.total_tokens == count_message_tokens(layout.messages, "gpt-4o")


def test_marker_never_pushes_a_list_over_its_allocation() -> None:
    """When even the omission marker does not fit, the list emits nothing rather than overflow."""
    section = Section("h", [Item("a", "x")], shrink=1, basis=0, omission_marker=True)
    layout = TokenBox(10, counter="o200k_base").layout([section, Section("t", "", shrink=1)])
    assert layout["h"].final_tokens <= layout["h"].full_tokens
    assert layout["h"].marker == ""


def test_text_mode_trusts_vouched_item_sizes() -> None:
    """In text mode an Item.tokens is the item's whole emitted cost (e.g. chat overhead included)."""
    items = [Item("a", "one two", tokens=6), Item("b", "three four", tokens=6), Item("c", "five six")]
    layout = box(10).layout([Section("h", items, shrink=1)])
    assert [it.id for it in layout["h"].content] == ["b", "c"]  # type: ignore[union-attr]
    assert layout.total_tokens == 6 + 2
    roomy = box(100).layout([Section("h", items, shrink=1)])
    assert roomy.total_tokens == 14
    assert roomy["h"].full_tokens == 14


def test_vouched_items_are_recounted_when_rewritten_and_never_cut() -> None:
    """A lens re-counts a vouched item's new text; partial truncation skips vouched items."""
    items = [Item("a", "x   y", tokens=50), Item("b", "z")]
    lensed = box(10).layout([Section("h", items, shrink=1, strategy=["whitespace"])])
    assert lensed.total_tokens == 3
    partial = box(20).layout([Section("h", [Item("a", words(30), tokens=30), Item("b", "z")], shrink=1, partial=True)])
    assert [it.id for it in partial["h"].content] == ["b"]  # type: ignore[union-attr]


def test_critical_load_is_exact_about_the_final_separator() -> None:
    """A critical section that ends the context does not pay for a separator that is never emitted."""
    chars = get_counter(len)
    assert TokenBox(10, counter=chars).layout([Section("q", "what next?")]).total_tokens == 10
    with pytest.raises(ContextCriticalOverflow) as info:
        TokenBox(9, counter=chars).layout([Section("q", "what next?")])
    assert info.value.required == 10
    layout = TokenBox(20, counter=chars).layout([Section("notes", "x" * 30, shrink=1), Section("q", "what next?")])
    assert layout.total_tokens == 20
    assert layout.text == "xxxxxxxx\n\nwhat next?"


def test_a_box_leaves_nothing_on_its_sections() -> None:
    """Laying out sections writes nothing onto them; equal, copied or pickled sections lay out identically."""
    import dataclasses
    import pickle

    sections = [Section("a", words(30), shrink=1), Section("b", [Item("i", "x y z")], shrink=1)]
    before = [dict(vars(s)) for s in sections]
    first = box(20).layout(sections)
    again = box(20).layout(sections)
    assert [dict(vars(s)) for s in sections] == before
    fresh = box(20).layout([dataclasses.replace(s) for s in sections])
    assert first.fingerprint == again.fingerprint == fresh.fingerprint
    clone = pickle.loads(pickle.dumps(sections[0]))
    assert box(20).layout([clone, sections[1]]).fingerprint == first.fingerprint


def test_empty_items_emit_nothing_and_cost_nothing() -> None:
    """An empty item adds no separator: the total is the exact count of the emitted text."""
    counter = get_counter("o200k_base")
    layout = TokenBox(3, counter=counter).layout(
        [Section("a", [Item("e", "")], shrink=0.5), Section("b", ""), Section("c", "alpha", shrink=0.5)]
    )
    assert layout.text == "alpha"
    assert layout.total_tokens == counter.count(layout.text) == 1


def test_partial_cut_then_full_restore_keeps_sizes_exact() -> None:
    """A boundary cut explored and abandoned leaves the list's size bookkeeping exact (found by search)."""
    for counter in ("bytes", "whitespace", "o200k_base"):
        layout = TokenBox(0, counter=counter).layout(
            [Section("s", [Item("i", "alpha")], shrink=0.5, basis=0, partial=True)]
        )
        assert layout.text == "" and layout.total_tokens == 0


def test_growth_never_adds_a_marker_that_does_not_fit() -> None:
    """Expansion restores items and adds the omission marker only if it fits the allocation."""
    section = Section("s", [Item("a", ""), Item("b", "alpha")], shrink=0.5, basis=0, grow=1, omission_marker=True)
    layout = box(5).layout([section])
    assert layout["s"].final_tokens <= layout["s"].full_tokens
    assert layout.text == "alpha"
