"""Invariants of the Token Box, checked over generated inputs (hypothesis) and across processes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core import (
    ContextBudget,
    ContextCriticalOverflow,
    Item,
    Layout,
    Section,
    SectionError,
    TokenBox,
    count_message_tokens,
    get_counter,
)
from tokenbox_core.errors import OutputFormError

from .conftest import TOKEN_PIECES

WORDS = st.lists(
    st.sampled_from(["alpha", "beta", "gamma", "delta", "x", "yz", "é", "中文", ".", "\n", "  "]), max_size=25
).map(" ".join)


@st.composite
def section_lists(draw: st.DrawFn) -> list[Section]:
    n = draw(st.integers(min_value=1, max_value=7))
    sections = []
    for i in range(n):
        critical = draw(st.booleans()) and draw(st.booleans())
        shrink = 0.0 if critical else draw(st.sampled_from([0.5, 1.0, 2.0]))
        if draw(st.booleans()):
            m = draw(st.integers(min_value=0, max_value=6))
            content: str | list[Item] = [
                Item(
                    f"s{i}i{j}",
                    draw(WORDS),
                    score=draw(st.floats(0, 1)),
                    group=draw(st.sampled_from([None, None, "g1", "g2"])),
                    pinned=draw(st.booleans()) and draw(st.booleans()),
                )
                for j in range(m)
            ]
        else:
            content = draw(WORDS)
        sections.append(
            Section(
                f"s{i}",
                content,
                priority=draw(st.integers(0, 3)),
                shrink=shrink,
                grow=draw(st.sampled_from([0.0, 0.0, 1.0, 2.5])),
                min_tokens=draw(st.integers(0, 4)),
                basis=draw(st.sampled_from([None, None, 0, 3, 10])),
                keep=draw(st.sampled_from(["head", "tail", "middle"])),
                eviction=draw(st.sampled_from(["oldest", "newest", "lowest_score"])),
                partial=draw(st.booleans()),
                omission_marker=draw(st.booleans()),
                strategy=draw(st.sampled_from([(), ("whitespace",), ("dedupe_lines", "sentences")])),
            )
        )
    return sections


COUNTERS = ["whitespace", "o200k_base", "bytes"]


def groups_across_critical(sections: list[Section]) -> bool:
    """Some atomic group has members in a critical and in a flexible section (a SectionError by design)."""
    where: dict[str, set[bool]] = {}
    for s in sections:
        for it in s.items:
            if it.group is not None:
                where.setdefault(it.group, set()).add(s.critical)
    return any(len(kinds) == 2 for kinds in where.values())


def lay_out(box: TokenBox, sections: list[Section]) -> Layout | None:
    """The layout, or None where it must fail: critical overflow, or a group across critical and flexible."""
    if groups_across_critical(sections):
        with pytest.raises(SectionError, match="atomic group"):
            box.layout(sections)
        return None
    try:
        return box.layout(sections)
    except ContextCriticalOverflow:
        return None


@given(
    sections=section_lists(),
    budget=st.integers(0, 120),
    counter=st.sampled_from(COUNTERS),
    reserve=st.integers(0, 20),
    margin=st.sampled_from([0.0, 10.0]),
)
def test_never_over_budget_and_critical_untouched(
    sections: list[Section], budget: int, counter: str, reserve: int, margin: float
) -> None:
    """Never over the effective max; critical sections come out byte-identical; overflow exactly when it must."""
    cb = ContextBudget(max_tokens=budget + reserve, output_reserve=reserve, estimation_safety_margin_percent=margin)
    box = TokenBox(cb, counter=counter)
    c = get_counter(counter)
    critical_load = sum(
        c.count(s.content + "\n\n") for s in sections if s.critical and isinstance(s.content, str) and s.content
    )
    if groups_across_critical(sections):
        with pytest.raises(SectionError, match="atomic group"):
            box.layout(sections)
        return
    try:
        layout = box.layout(sections)
    except ContextCriticalOverflow as err:
        assert err.required > err.budget
        assert critical_load > budget or any(s.critical and s.is_list and s.items for s in sections)
        return
    assert layout.total_tokens <= layout.max_tokens <= budget
    assert layout.total_tokens == c.count(layout.text)
    for s in sections:
        out = layout[s.id]
        if s.critical:
            assert out.status == "kept"
            assert out.content == s.content
        assert out.final_tokens <= out.full_tokens or s.critical


@given(sections=section_lists(), budget=st.integers(0, 120))
def test_lower_priority_is_never_kept_whole_while_higher_is_cut(sections: list[Section], budget: int) -> None:
    """Strict (the seed): if a higher-priority section lost content, no lower one of equal shrink kept all its own."""
    layout = lay_out(TokenBox(budget, counter="whitespace", strict=True), sections)
    if layout is None:
        return
    for hi in sections:
        out_hi = layout[hi.id]
        cut_for_budget = any(
            a.kind in ("truncate", "evict", "drop") and "budget" in a.name + a.detail for a in out_hi.actions
        )
        if hi.critical or not cut_for_budget or out_hi.base_tokens == 0:
            continue
        for lo in sections:
            out_lo = layout[lo.id]
            if lo.critical or lo.priority >= hi.priority or lo.shrink != hi.shrink or out_lo.base_tokens == 0:
                continue
            assert out_lo.status in ("truncated", "dropped", "compressed") or out_lo.final_tokens < out_lo.base_tokens


@given(sections=section_lists(), budget=st.integers(0, 120), counter=st.sampled_from(COUNTERS))
def test_refill_only_gives_back(sections: list[Section], budget: int, counter: str) -> None:
    """Refill never takes from a section what the seed's algorithm left it, and stays within the budget."""
    strict = lay_out(TokenBox(budget, counter=counter, strict=True), sections)
    if strict is None:
        return
    layout = TokenBox(budget, counter=counter).layout(sections)
    assert layout.total_tokens <= layout.max_tokens
    assert layout.total_tokens >= strict.total_tokens
    for s in sections:
        assert layout[s.id].final_tokens >= strict[s.id].final_tokens
        if not layout[s.id].refilled:
            assert layout[s.id].final_tokens == strict[s.id].final_tokens
    assert layout.trace["refilled"] == [s.id for s in layout.sections if s.refilled]


@given(sections=section_lists(), budget=st.integers(0, 120))
def test_refill_keeps_the_tie_order_within_a_priority(sections: list[Section], budget: int) -> None:
    """Refill never gives a section back while one of its priority that it yields to (the seed's ties) is short."""
    layout = lay_out(TokenBox(budget, counter="whitespace"), sections)
    if layout is None:
        return
    flexible = [(s, n) for n, s in enumerate(sections) if not s.critical]
    for hi, i in flexible:
        out_hi = layout[hi.id]
        short = out_hi.status == "dropped" and any(a.kind == "drop" for a in out_hi.actions)
        if not short:
            continue
        for lo, j in flexible:
            yields = lo.priority == hi.priority and (-lo.shrink, j) < (-hi.shrink, i)
            assert not (yields and layout[lo.id].refilled), (hi.id, lo.id)


@given(sections=section_lists(), budget=st.integers(0, 120), strict=st.booleans())
def test_cross_section_atomic_groups(sections: list[Section], budget: int, strict: bool) -> None:
    """An atomic group is kept or removed as a whole, across sections too (never a tool result without its call)."""
    layout = lay_out(TokenBox(budget, counter="whitespace", strict=strict), sections)
    if layout is None:
        return
    kept: dict[str, set[bool]] = {}
    for s in sections:
        emitted = {it.id for it in layout[s.id].content} if isinstance(layout[s.id].content, tuple) else set()
        for it in s.items:
            if it.group is not None:
                kept.setdefault(it.group, set()).add(it.id in emitted)
    assert all(len(flags) == 1 for flags in kept.values()), kept


@given(
    sections=section_lists(),
    budget=st.integers(0, 160),
    counter=st.sampled_from(COUNTERS),
    mode=st.sampled_from(["text", "messages"]),
    strict=st.booleans(),
)
def test_every_output_form_within_budget(
    sections: list[Section], budget: int, counter: str, mode: str, strict: bool
) -> None:
    """Whatever a layout emits fits, counted the way it is sent: the text always, the messages when sized as such."""
    layout = lay_out(TokenBox(budget, counter=counter, mode=mode, strict=strict), sections)  # type: ignore[arg-type]
    if layout is None:
        return
    text_tokens = get_counter(counter).count(layout.text)
    assert text_tokens <= layout.max_tokens
    if mode == "messages":
        assert count_message_tokens(layout.messages, counter) == layout.total_tokens <= layout.max_tokens
    else:
        assert text_tokens == layout.total_tokens
        with pytest.raises(OutputFormError):
            _ = layout.messages


@given(sections=section_lists(), budget=st.integers(0, 120))
def test_declaration_order_and_determinism(sections: list[Section], budget: int) -> None:
    """Output keeps declaration order, and two layouts of the same input are byte-identical."""
    a = lay_out(TokenBox(budget, counter="whitespace"), sections)
    if a is None:
        return
    b = TokenBox(budget, counter="whitespace").layout(sections)
    assert [s.id for s in a.sections] == [s.id for s in sections]
    assert a.text == b.text and a.fingerprint == b.fingerprint and a.to_json() == b.to_json()
    position = 0
    for s in a.sections:
        if s.text:
            found = a.text.find(s.text, position)
            assert found >= 0
            position = found + len(s.text)


def test_critical_overflow_exactly_at_the_boundary() -> None:
    """ContextCriticalOverflow is raised exactly when the critical load exceeds the budget."""
    sections = [Section("a", "one two three"), Section("b", "four five")]
    assert TokenBox(5, counter="whitespace").layout(sections).total_tokens == 5
    with pytest.raises(ContextCriticalOverflow):
        TokenBox(4, counter="whitespace").layout(sections)


DETERMINISM_SCRIPT = textwrap.dedent(
    """
    from tokenbox_core import Item, Section, TokenBox
    items = [
        Item(f"m{i}", f"turn {i} " * (i % 5 + 1), score=(i * 7 % 11) / 11, group=f"g{i // 3}" if i % 4 else None)
        for i in range(60)
    ]
    sections = [
        Section("policy", "Be exact.", role="system"),
        Section("docs", items[:30], priority=2, shrink=1, eviction="lowest_score", omission_marker=True),
        Section("history", items[30:], priority=1, shrink=1, omission_marker=True, partial=True),
        Section("notes", "note " * 50, shrink=2, grow=1, basis=5, strategy=["whitespace", "sentences"]),
    ]
    for budget in (60, 150, 400):
        layout = TokenBox(budget, counter="o200k_base").layout(sections)
        print(layout.fingerprint, layout.input_hash, layout.total_tokens)
    """
)


def test_byte_identical_across_hash_seeds() -> None:
    """Layouts are identical in processes with different PYTHONHASHSEED values."""
    outputs = set()
    for seed in ("0", "1", "12345", "random"):
        env = dict(os.environ, PYTHONHASHSEED=seed, TOKENBOX_OFFLINE="1")
        result = subprocess.run(
            [sys.executable, "-c", DETERMINISM_SCRIPT], env=env, capture_output=True, text=True, check=True
        )
        outputs.add(result.stdout)
    assert len(outputs) == 1


def test_core_import_loads_no_framework() -> None:
    """import tokenbox_core loads neither langchain_core nor llama_index."""
    code = (
        "import sys, tokenbox_core\n"
        "from tokenbox_core import TokenBox, Section\n"
        "TokenBox(10, counter='whitespace').layout([Section('a', 'b')])\n"
        "print(sorted(m for m in sys.modules if m.startswith(('langchain', 'llama_index'))))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


_PIECES = st.lists(st.sampled_from(TOKEN_PIECES), max_size=12).map("".join)


@given(
    texts=st.lists(st.one_of(_PIECES, st.lists(_PIECES, max_size=4)), min_size=1, max_size=6),
    separator=st.sampled_from(["\n\n", "\n", "", " ", "\n---\n", "/"]),
    item_separator=st.sampled_from(["\n", "", "\n\n", " "]),
    budget=st.integers(0, 80),
    encoding=st.sampled_from(["o200k_base", "cl100k_base", "o200k_harmony"]),
    vouched=st.booleans(),
)
def test_the_total_is_the_count_of_the_emitted_text_on_adversarial_joins(
    texts: list[str | list[str]], separator: str, item_separator: str, budget: int, encoding: str, vouched: bool
) -> None:
    """The reported total is the exact count of the text, whatever the joins (newlines before spaces and
    slashes, letters before apostrophes, empty separators), with and without vouched item sizes."""
    sections = []
    for i, content in enumerate(texts):
        if isinstance(content, list):
            items = [Item(f"i{i}.{j}", t, tokens=3 if vouched and j == 1 else None) for j, t in enumerate(content)]
            sections.append(Section(f"s{i}", items, shrink=1, item_separator=item_separator, partial=True))
        else:
            sections.append(Section(f"s{i}", content, shrink=0 if i == 0 else 1, keep=("head", "tail")[i % 2]))
    layout = lay_out(TokenBox(budget, counter=encoding, separator=separator), sections)
    if layout is None:
        return
    assert layout.total_tokens <= budget
    if not any(it.tokens is not None for s in sections for it in s.items):
        assert layout.total_tokens == get_counter(encoding).count(layout.text)
