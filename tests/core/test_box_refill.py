"""Refill, strict mode, atomic groups across sections, and the box's bookkeeping (issue 10 items 2, 3, 5, 15)."""

from __future__ import annotations

import dataclasses

import pytest

from tokenbox_core import Item, Section, SectionError, TokenBox, get_counter
from tokenbox_core.select import ReflexiveScorer, SelectionPolicy


def words(n: int, stem: str = "w") -> str:
    return " ".join(f"{stem}{i}" for i in range(n))


def stranding_sections() -> list[Section]:
    # compression visits low (prio 0) first and drops it whole, then high (prio 1) cannot be cut below its
    # min_tokens and is dropped too: the room high frees is larger than what low needed
    return [
        Section("task", words(2, "t")),
        Section("low", words(3, "l"), priority=0, shrink=1),
        Section("high", words(8, "h"), priority=1, shrink=1, min_tokens=8),
    ]


def test_refill_readmits_a_section_dropped_before_a_later_drop_freed_room() -> None:
    """Issue 10 item 2: room freed by compressing a later section is given back, recorded as `refilled`."""
    strict = TokenBox(8, counter="whitespace", strict=True).layout(stranding_sections())
    assert [strict[s].status for s in ("low", "high")] == ["dropped", "dropped"]
    assert strict.total_tokens == 2
    layout = TokenBox(8, counter="whitespace").layout(stranding_sections())
    assert layout["high"].status == "dropped"  # min_tokens 8 can never fit the room of 6
    assert layout["low"].status == "kept" and layout["low"].text == "l0 l1 l2"
    assert layout["low"].refilled and layout.trace["refilled"] == ["low"]
    assert [a.kind for a in layout["low"].actions] == ["drop", "refill"]
    assert "refill:room 0→3" in layout.explain()
    assert layout.total_tokens == 5 == get_counter("whitespace").count(layout.text)


def test_refill_cuts_a_section_to_the_room_never_below_min_tokens() -> None:
    """A dropped text section comes back cut to the room when its min_tokens allows it; above its priority is passed."""
    sections = [
        Section("task", words(2, "t")),
        Section("low", words(3, "l"), priority=0, shrink=1),
        Section("high", words(8, "h"), priority=1, shrink=1, min_tokens=5, keep="tail"),
        Section("top", words(10, "p"), priority=2, shrink=1, min_tokens=10),
    ]
    strict = TokenBox(8, counter="whitespace", strict=True).layout(sections)
    assert {strict[s].status for s in ("low", "high", "top")} == {"dropped"}
    layout = TokenBox(8, counter="whitespace").layout(sections)
    assert layout["top"].status == "dropped" and not layout["top"].refilled  # min_tokens 10 > the room of 6
    assert layout["high"].final_tokens == 6 and layout["high"].status == "truncated" and layout["high"].refilled
    assert layout["high"].text == "h2 h3 h4 h5 h6 h7"
    assert layout["low"].status == "dropped" and not layout["low"].refilled  # no room left for it
    assert layout.total_tokens == 8


def test_strict_reproduces_the_reference_algorithm_literally() -> None:
    """strict=True: no refill; the room compression freed stays empty, as the seed's loop leaves it."""
    box = TokenBox(8, counter="whitespace", strict=True)
    assert box.strict and "strict=True" in repr(box)
    layout = box.layout(stranding_sections())
    assert not any(s.refilled for s in layout.sections) and layout.trace["refilled"] == []
    with pytest.raises(SectionError, match="strict must be True or False"):
        TokenBox(8, strict="yes")  # type: ignore[arg-type]


def test_refill_is_deterministic() -> None:
    """Two refilling layouts of the same input are byte-identical."""
    a = TokenBox(8, counter="whitespace").layout(stranding_sections())
    b = TokenBox(8, counter="whitespace").layout(stranding_sections())
    assert a.fingerprint == b.fingerprint and a.text == b.text


def test_refill_never_brings_back_an_older_history_run_while_a_newer_one_is_lost() -> None:
    """Within one priority refill keeps the seed's tie order: it stops at the first run it cannot give back."""
    sections = [
        Section("old", [Item("m0", "a")], shrink=1),
        Section("sys", "s s s s"),
        Section("new", [Item("m2", words(6))], shrink=1),
        Section("ask", "q"),
    ]
    layout = TokenBox(10, counter="whitespace").layout(sections)  # 5 fixed; old 1, new 6: both go, room 5
    assert layout["new"].status == "dropped"
    assert layout["old"].status == "dropped" and not layout["old"].refilled


def test_refill_gives_back_evicted_items_in_reverse_eviction_order() -> None:
    """A list cut by compression regrows with the groups it lost last, up to the room."""
    sections = [
        Section("docs", [Item(f"d{i}", words(3, f"d{i}x")) for i in range(4)], priority=0, shrink=1),
        Section("big", words(10), priority=1, shrink=1, min_tokens=10),
    ]
    layout = TokenBox(9, counter="whitespace").layout(sections)
    assert layout["big"].status == "dropped"
    assert [it.id for it in layout["docs"].content] == ["d1", "d2", "d3"] and layout["docs"].refilled
    assert [r.id for r in layout["docs"].removed] == ["d0"] and layout["docs"].removed[0].reason == "budget"


# --------------------------------------------------------------------------- atomic groups across sections


def conversation(critical_hurry: bool = True) -> list[Section]:
    """[System, Human(long), AI(tool_calls c1), Human("also, hurry"), Tool(c1)] as a chat adapter lays it out."""
    return [
        Section("system", "You are terse.", role="system"),
        Section(
            "run-1",
            [Item("human", words(30), role="user"), Item("ai", "call lookup(x)", role="assistant", group="c1")],
            shrink=1,
        ),
        Section("hurry", [Item("hurry", "also, hurry", role="user")], shrink=0 if critical_hurry else 1),
        Section("run-2", [Item("tool", "result: 42", role="tool", group="c1")], shrink=1, priority=1),
    ]


@pytest.mark.parametrize("budget", range(20, 70, 3))
def test_cross_section_atomic_group_never_keeps_a_tool_result_without_its_call(budget: int) -> None:
    """Issue 10 item 3: a group that spans sections is kept or removed as a whole."""
    for strict in (False, True):
        layout = TokenBox(budget, counter="gpt-4o", mode="messages", strict=strict).layout(conversation())
        kept = {it.content for s in layout.sections if isinstance(s.content, tuple) for it in s.content}
        assert ("call lookup(x)" in kept) == ("result: 42" in kept), (budget, strict, kept)
        assert layout.total_tokens <= layout.max_tokens


def test_the_group_is_removed_whole_with_the_reason_atomic_group() -> None:
    """The member kept elsewhere leaves with reason `atomic group`, and the record says why."""
    layout = TokenBox(32, counter="gpt-4o", mode="messages").layout(conversation())
    assert "result: 42" not in {it.content for s in layout.sections if isinstance(s.content, tuple) for it in s.content}
    (removed,) = [r for r in layout.removed if r.id == "tool"]
    assert removed.reason == "atomic group" and removed.group == "c1"
    assert any(a.name == "atomic group" for a in layout["run-2"].actions)


def test_a_group_across_a_critical_and_a_flexible_section_is_an_error() -> None:
    """A critical member cannot be removed, so the box refuses a group that is half critical, naming the fix."""
    sections = [
        Section("a", [Item("call", "call", group="c1")], shrink=1),
        Section("b", [Item("result", "result", group="c1")]),
    ]
    with pytest.raises(SectionError, match=r"atomic group 'c1' spans critical section\(s\) \['b'\] .* or none"):
        TokenBox(100, counter="whitespace").layout(sections)
    both = [Section("a", sections[0].content), sections[1]]
    assert TokenBox(100, counter="whitespace").layout(both).total_tokens == 2


# --------------------------------------------------------------------------- bookkeeping


def test_vouched_sizes_survive_a_selection_policy_in_text_mode() -> None:
    """Issue 10 item 5: a policy reorders items without losing their vouched Item.tokens; totals agree."""
    items = [Item(f"i{n}", f"word{n} " * 3, tokens=100, score=float(n)) for n in range(5)]
    policy = SelectionPolicy(scorer=ReflexiveScorer())
    layout = TokenBox(2000, counter="o200k_base").layout(
        [Section("s", "sys"), Section("l", items, shrink=1, policy=policy)]
    )
    assert layout["l"].final_tokens == 500
    assert layout.total_tokens == get_counter("o200k_base").count("sys\n\n") + 500


def test_a_section_refilled_after_an_earlier_drop_keeps_its_drop_action() -> None:
    """A box that dropped a section before records its later drop-and-refill exactly as a fresh box does."""
    x = Section("x", "a b c d e", priority=0, shrink=1)
    y = Section("y", "a b c d e f g h i", priority=1, shrink=1, min_tokens=9)
    z = Section("z", "a b c", priority=2, shrink=1)
    w = Section("w", "a b c d e f g h", priority=1, shrink=1, min_tokens=8)
    box = TokenBox(9, counter="whitespace")
    assert box.layout([y, x])["x"].status == "dropped"
    again = box.layout([z, w, x])
    fresh = TokenBox(9, counter="whitespace").layout([dataclasses.replace(s) for s in (z, w, x)])
    assert [a.kind for a in again["x"].actions] == ["drop", "refill"]
    assert again.to_json() == fresh.to_json()
