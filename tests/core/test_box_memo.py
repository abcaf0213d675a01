"""The box's layout memo and fast paths (issue 16 §1): equal inputs return the previous decisions, never a stale one."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core import ContextBudget, Item, Section, TokenBox
from tokenbox_core.box.core import protection_order
from tokenbox_core.box.memo import MEMO_ENTRIES, memo_safe, same_value
from tokenbox_core.box.state import Slot
from tokenbox_core.select import ReflexiveScorer, SelectionPolicy

from .test_properties import COUNTERS, lay_out, section_lists


def sections() -> list[Section]:
    return [
        Section("policy", "be brief and exact"),
        Section("notes", "one two three four five six seven eight nine ten", shrink=1),
        Section("docs", [Item("a", "alpha beta gamma", score=0.5), Item("b", "delta epsilon", score=0.25)], shrink=2),
    ]


def same_decisions(a: Any, b: Any) -> bool:
    return bool(a.to_json() == b.to_json() and a.text == b.text and a.fingerprint == b.fingerprint)


def test_identical_relayout_is_a_memo_hit_with_a_fresh_trace() -> None:
    box = TokenBox(12, counter="whitespace")
    given_sections = sections()
    first = box.layout(given_sections)
    again = box.layout(given_sections)
    assert box._memo.hits == 1
    assert same_decisions(first, again)
    assert again.input_hash == first.input_hash
    assert again.trace_id != first.trace_id
    assert again.sections is first.sections  # the decisions are shared, not recomputed


def test_equal_fresh_sections_hit_by_value() -> None:
    box = TokenBox(12, counter="whitespace")
    first = box.layout(sections())
    again = box.layout([dataclasses.replace(s) for s in sections()])
    assert box._memo.hits == 1
    assert same_decisions(first, again)


def test_any_changed_input_misses() -> None:
    box = TokenBox(12, counter="whitespace")
    base = sections()
    box.layout(base)
    changes = [
        [base[0], dataclasses.replace(base[1], content="one two three four five six seven eight nine"), base[2]],
        [base[0], dataclasses.replace(base[1], priority=1), base[2]],
        [base[0], base[1], dataclasses.replace(base[2], content=(Item("a", "alpha beta gamma", score=0.5),))],
        # 1 and 1.0 compare equal but encode (and report) differently: a miss, as in the input hash
        [base[0], base[1], Section("docs", [Item("a", "alpha beta gamma", score=1), Item("b", "delta epsilon")])],
        [base[0], base[1]],
        [base[1], base[0], base[2]],
    ]
    for changed in changes:
        got = box.layout(changed)
        assert same_decisions(got, TokenBox(12, counter="whitespace").layout(changed))
    assert box._memo.hits == 0


def test_box_configuration_is_part_of_the_key() -> None:
    box = TokenBox(12, counter="whitespace")
    given_sections = sections()
    small = box.layout(given_sections)
    box.budget = ContextBudget(max_tokens=30)
    big = box.layout(given_sections)
    assert box._memo.hits == 0 and big.total_tokens > small.total_tokens
    box.budget = ContextBudget(max_tokens=12)  # an equal budget, another object: a hit
    assert same_decisions(box.layout(given_sections), small)
    box.strict = True
    box.layout(given_sections)
    assert box._memo.hits == 1


def test_memo_is_bounded() -> None:
    box = TokenBox(50, counter="whitespace")
    for n in range(MEMO_ENTRIES + 3):
        box.layout([Section("s", "word " * n)])
    assert len(box._memo) == MEMO_ENTRIES


class Upper:
    """A callable object: it may hold state the section cannot see change."""

    def __call__(self, text: str, **_: Any) -> str:
        return text.upper()


def test_inputs_that_may_change_behind_a_frozen_section_bypass_the_memo() -> None:
    assert memo_safe(Section("s", "x", shrink=1, strategy=("whitespace",)))
    assert memo_safe(Section("s", [Item("a", "x")], shrink=1, policy=SelectionPolicy(scorer=ReflexiveScorer())))
    assert not memo_safe(Section("s", "x", shrink=1, strategy=(Upper(),)))
    box = TokenBox(50, counter="whitespace")
    unsafe = [Section("s", "some text here", shrink=1, strategy=(Upper(),))]
    box.layout(unsafe)
    box.layout(unsafe)
    assert box._memo.hits == 0 and len(box._memo) == 0


def test_same_value_is_strict_about_types_and_floats() -> None:
    assert same_value((1, "a", None), (1, "a", None))
    assert not same_value(1, 1.0) and not same_value(True, 1) and not same_value(0.0, -0.0)
    assert same_value(float("nan"), float("nan"))  # the same encoding, so the same input
    assert not same_value(lambda: 1, lambda: 1)
    assert same_value(Item("a", "x", metadata={"k": [1]}), Item("a", "x", metadata={"k": [1]}))
    assert not same_value(Item("a", "x", metadata={"k": [1]}), Item("a", "x", metadata={"k": [1.0]}))


@given(
    first=section_lists(),
    second=section_lists(),
    budget=st.integers(0, 120),
    counter=st.sampled_from(COUNTERS),
    order=st.lists(st.integers(0, 1), min_size=1, max_size=6),
)
def test_memo_never_returns_a_stale_layout(
    first: list[Section], second: list[Section], budget: int, counter: str, order: list[int]
) -> None:
    """A box with a memo, fed a sequence of inputs (repeats, equal copies, edits), matches a memo-less box."""
    box = TokenBox(budget, counter=counter)
    inputs = [first, second]
    for step, which in enumerate(order):
        given_sections = inputs[which] if step % 2 else [dataclasses.replace(s) for s in inputs[which]]
        got = lay_out(box, given_sections)
        want = lay_out(TokenBox(budget, counter=counter), given_sections)
        assert (got is None) == (want is None)
        if got is not None and want is not None:
            assert same_decisions(got, want)
            assert got.input_hash == want.input_hash


@given(
    keys=st.lists(
        st.tuples(st.integers(-3, 3), st.sampled_from([0.25, 0.5, 1.0, 1.0000000000000002, 2.0, 7.5])), max_size=40
    )
)
def test_protection_order_matches_the_reference_sort(keys: list[tuple[int, float]]) -> None:
    """Two stable C-keyed sorts give exactly the old sort by (priority, -shrink, index)."""
    slots = [
        Slot(Section(f"s{i}", "x", priority=p, shrink=shrink), None, i, False) for i, (p, shrink) in enumerate(keys)
    ]
    reference = sorted(slots, key=lambda s: (s.section.priority, -s.section.shrink, s.index))
    assert protection_order(slots) == reference
