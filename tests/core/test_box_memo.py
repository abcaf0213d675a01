"""The box's layout memo and fast paths (issue 16 §1): equal inputs return the previous decisions, never a stale one."""

from __future__ import annotations

import dataclasses
import pickle
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core import ContextBudget, Item, Section, TokenBox
from tokenbox_core.box.memo import MEMO_ENTRIES, memo_safe, same_value
from tokenbox_core.box.shape import new_shape, next_shape, protection_order
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
        st.tuples(st.integers(-3, 3), st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.0000000000000002, 2.0, 7.5])),
        max_size=40,
    )
)
def test_protection_order_matches_the_reference_sort(keys: list[tuple[int, float]]) -> None:
    """Two stable C-keyed sorts give exactly the old sort of the flexible slots by (priority, -shrink, index)."""
    sections = [Section(f"s{i}", "x", priority=p, shrink=shrink) for i, (p, shrink) in enumerate(keys)]
    flexible = [i for i, s in enumerate(sections) if s.shrink != 0]
    reference = sorted(flexible, key=lambda i: (sections[i].priority, -sections[i].shrink, i))
    assert protection_order(sections, flexible) == reference


@st.composite
def edits(draw: st.DrawFn, base: list[Section]) -> list[Section]:
    """``base`` after a few realistic edits: content, priority or shrink changed, sections appended or removed."""
    out = list(base)
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["content", "priority", "shrink", "append", "remove", "rename"]))
        if kind == "append" or not out:
            out.append(Section(f"new{len(out)}", draw(st.text("ab .\n", max_size=20)), shrink=draw(SHRINKS)))
            continue
        i = draw(st.integers(0, len(out) - 1))
        if kind == "content":
            out[i] = dataclasses.replace(out[i], content=draw(st.text("ab .\n", max_size=20)))
        elif kind == "priority":
            out[i] = dataclasses.replace(out[i], priority=draw(st.integers(0, 3)))
        elif kind == "shrink":
            out[i] = dataclasses.replace(out[i], shrink=draw(SHRINKS))
        elif kind == "remove":
            del out[i]
        else:
            out[i] = dataclasses.replace(out[i], id=f"renamed{i}")
    return out


SHRINKS = st.sampled_from([0.0, 0.5, 1.0, 2.0])


@given(data=st.data(), base=section_lists(), steps=st.integers(1, 4))
def test_patched_shape_is_the_full_shape(data: st.DataObject, base: list[Section], steps: int) -> None:
    """A shape patched by next_shape equals the shape computed in full, over chains of edits."""
    shape = new_shape(base)
    current = base
    for _ in range(steps):
        current = data.draw(edits(current))
        if len({s.id for s in current}) < len(current) or not current:
            return
        patched = next_shape(shape, tuple(current))
        full = new_shape(current)
        if patched is not None:
            assert patched.sections == full.sections
            assert (patched.flexible, patched.order, patched.memo_safe) == (full.flexible, full.order, full.memo_safe)
            assert patched.ids == frozenset(s.id for s in current)
        shape = full


@given(data=st.data(), base=section_lists(), budget=st.integers(0, 120), counter=st.sampled_from(COUNTERS))
def test_a_box_laying_out_a_chain_of_edits_matches_fresh_boxes(
    data: st.DataObject, base: list[Section], budget: int, counter: str
) -> None:
    """One box (memo, patched shapes, memoised measurements) across edits equals a fresh box for each input."""
    box = TokenBox(budget, counter=counter)
    current = base
    for _ in range(3):
        if len({s.id for s in current}) == len(current) and current:
            got = lay_out(box, current)
            want = lay_out(TokenBox(budget, counter=counter), [dataclasses.replace(s) for s in current])
            assert (got is None) == (want is None)
            if got is not None and want is not None:
                assert same_decisions(got, want)
        current = data.draw(edits(current))


def test_sections_pickle_without_what_the_box_memoised_on_them() -> None:
    """Measurements, outranked records and memo safety live in the section's memo, which pickling leaves out."""
    many = [Section("policy", "be brief"), *(Section(f"s{i}", "word " * 20, shrink=1) for i in range(5))]
    layout = TokenBox(30, counter="whitespace").layout(many)
    assert any(a.name == "outranked" for s in layout.sections for a in s.actions)
    for section in many:
        copy = pickle.loads(pickle.dumps(section))
        assert "_tokenbox_memo" not in copy.__dict__ and copy.content == section.content


def test_a_relayout_with_one_new_section_measures_only_it(monkeypatch: Any) -> None:
    """Measured sections fill a claim batch's room by their size: sections the room never reaches stay unmeasured."""
    from tokenbox_core.box.measure import Ruler

    many = [Section("policy", "be brief"), *(Section(f"s{i}", "word " * 10, shrink=1, priority=i) for i in range(40))]
    box = TokenBox(60, counter="whitespace")
    first = box.layout(many)
    measured: list[list[str]] = []
    original = Ruler.measure_batch
    monkeypatch.setattr(Ruler, "measure_batch", lambda self, s: measured.append([x.id for x in s]) or original(self, s))
    edited = [*many[:-1], Section("s39", "other words " * 5, shrink=1, priority=39)]
    again = box.layout(edited)
    assert measured == [["s39"]]
    assert [s.status for s in again.sections] == [s.status for s in first.sections]
    assert same_decisions(again, TokenBox(60, counter="whitespace").layout([dataclasses.replace(s) for s in edited]))


def test_one_box_serves_threads() -> None:
    """Threads sharing a box (memo, patched shapes) get exactly what fresh boxes give."""
    from concurrent.futures import ThreadPoolExecutor

    inputs = [[*sections()[:2], Section(f"extra{i}", "x y z " * i, shrink=1)] for i in range(6)]
    want = [TokenBox(12, counter="whitespace").layout(s).to_json() for s in inputs]
    box = TokenBox(12, counter="whitespace")
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda k: box.layout(inputs[k % 6]).to_json(), range(200)))
    assert got == [want[k % 6] for k in range(200)]
