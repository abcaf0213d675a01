"""The box's measuring step (issue 16, fourth pass): the faster ``measure_batch`` equals the one it replaced.

``tests/core/box_measure_reference.py`` keeps the previous code (one span tuple per section, a probe slot and two
re-counts per list, a sort key built per group); every template — size, units, eviction order, kept total,
neutral start — must be the same, and so must the error for a negative ``Item.tokens``.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core import Item, Section, SectionError
from tokenbox_core.box.measure import Ruler
from tokenbox_core.tokens import COUNT_CACHE, get_counter

from . import box_measure_reference as reference
from .conftest import TOKEN_PIECES

COUNTERS = ["o200k_base", "cl100k_base", "whitespace", "bytes", "approximate"]
TEXTS = st.lists(st.one_of(st.sampled_from(TOKEN_PIECES), st.text(max_size=6)), max_size=12).map("".join)


@st.composite
def an_item(draw: st.DrawFn, iid: str) -> Item:
    return Item(
        iid,
        draw(st.one_of(st.just(""), TEXTS)),
        tokens=draw(st.one_of(st.none(), st.none(), st.integers(0, 40))),
        score=draw(st.one_of(st.none(), st.floats(0, 1), st.sampled_from([0.5]))),
        priority=draw(st.one_of(st.none(), st.integers(0, 2))),
        pinned=draw(st.booleans()),
        group=draw(st.sampled_from([None, None, None, "g1", "g2"])),
        role=draw(st.sampled_from([None, "user", "tool"])),
    )


@st.composite
def a_section(draw: st.DrawFn, sid: str) -> Section:
    content: str | list[Item]
    if draw(st.booleans()):
        content = [draw(an_item(f"{sid}-{j}")) for j in range(draw(st.integers(0, 6)))]
    else:
        content = draw(st.one_of(st.just(""), TEXTS))
    lenses = ("drop_oldest",) if draw(st.integers(0, 5)) == 0 and not isinstance(content, str) else ()
    return Section(
        sid,
        content,
        shrink=draw(st.sampled_from([0, 1])),
        eviction=draw(st.sampled_from(["oldest", "newest", "lowest_score"])),
        item_separator=draw(st.sampled_from(["\n", ", ", ""])),
        role=draw(st.sampled_from([None, "system"])),
        strategy=lenses,
    )


@given(
    sections=st.integers(0, 6).flatmap(lambda n: st.tuples(*(a_section(f"s{i}") for i in range(n)))),
    counter=st.sampled_from(COUNTERS),
    separator=st.sampled_from(["\n\n", "\n", " ", ""]),
    mode=st.sampled_from(["text", "messages"]),
)
def test_measure_batch_equals_the_previous_code(
    sections: tuple[Section, ...], counter: str, separator: str, mode: str
) -> None:
    """Every template (and its units and eviction order) is the one the previous code made."""
    ruler = Ruler(get_counter(counter), separator, mode)  # type: ignore[arg-type]
    COUNT_CACHE.clear()
    got = ruler.measure_batch(list(sections))
    COUNT_CACHE.clear()
    want = reference.measure_batch(ruler, list(sections))
    assert got == want


@pytest.mark.parametrize("mode", ["text", "messages"])
def test_a_negative_item_size_is_named_as_before(mode: str) -> None:
    """A negative ``Item.tokens`` is refused with the same message (the item, the section, the fix)."""
    section = Section("notes", [Item("a", "one"), Item("b", "two", tokens=-3)], shrink=1)
    ruler = Ruler(get_counter("o200k_base"), "\n\n", mode)  # type: ignore[arg-type]
    with pytest.raises(SectionError) as new:
        ruler.measure_batch([section])
    with pytest.raises(SectionError) as old:
        reference.measure_batch(ruler, [section])
    assert str(new.value) == str(old.value)
    assert "'b'" in str(new.value) and "'notes'" in str(new.value) and "(-3)" in str(new.value)
