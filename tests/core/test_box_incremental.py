"""The incremental re-layout (issue 16 §1): a box re-deciding only where an edit reaches equals a fresh box."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core import ContextBudget, ContextCriticalOverflow, Item, Layout, Section, SectionError, TokenBox
from tokenbox_core.box import incremental

COUNTERS = ["whitespace", "o200k_base", "bytes"]
VOCAB = ["alpha", "beta", "gamma", "delta", "x", "yz", "é", "中文", ".", "\n", " "]

TEXTS = st.lists(st.sampled_from(VOCAB), min_size=0, max_size=30).map(" ".join)


@contextmanager
def window(above: int, below: int) -> Iterator[None]:
    """Narrow the incremental window so that small generated inputs exercise its edges."""
    saved = incremental.ABOVE, incremental.BELOW
    incremental.ABOVE, incremental.BELOW = above, below
    try:
        yield
    finally:
        incremental.ABOVE, incremental.BELOW = saved


@st.composite
def a_section(draw: st.DrawFn, sid: str) -> Section:
    critical = draw(st.integers(0, 7)) == 0
    content: str | list[Item]
    if draw(st.integers(0, 3)) == 0:
        group = st.sampled_from([None, None, None, "g1"])
        content = [
            Item(f"{sid}i{j}", draw(TEXTS), score=draw(st.floats(0, 1)), group=draw(group))
            for j in range(draw(st.integers(0, 4)))
        ]
    else:
        content = draw(TEXTS)
    minimum = draw(st.sampled_from([0, 0, 0, 2, 8]))
    extra: dict[str, Any] = {}
    if draw(st.integers(0, 5)) == 0:
        extra["basis"] = draw(st.integers(0, 20))
    if draw(st.integers(0, 5)) == 0:
        extra["max_tokens"] = draw(st.integers(max(1, minimum), 30))
    if draw(st.integers(0, 7)) == 0 and isinstance(content, str):
        extra["strategy"] = ("whitespace",)
    return Section(
        sid,
        content,
        priority=draw(st.integers(0, 3)),
        shrink=0.0 if critical else draw(st.sampled_from([0.5, 1.0, 2.0])),
        grow=draw(st.sampled_from([0.0, 0.0, 1.0])),
        min_tokens=minimum,
        **extra,
    )


@st.composite
def inputs(draw: st.DrawFn) -> list[Section]:
    return [draw(a_section(f"s{i}")) for i in range(draw(st.integers(1, 24)))]


EDITS = ["content", "content", "content", "priority", "min", "max", "grow", "shrink", "lens"]
EDITS += ["append", "remove", "rename", "reorder", "budget"]


@st.composite
def edit(draw: st.DrawFn, current: list[Section]) -> tuple[list[Section], int | None]:
    """``current`` after one edit (and a new budget for a ``budget`` edit)."""
    out = list(current)
    kind = draw(st.sampled_from(EDITS))
    if kind == "budget":
        return out, draw(st.integers(0, 200))
    if kind == "append" or not out:
        out.append(draw(a_section(f"n{draw(st.integers(0, 10**6))}")))
        return out, None
    i = draw(st.integers(0, len(out) - 1))
    s = out[i]
    if kind == "content":
        new: Any = draw(TEXTS)
        if not isinstance(s.content, str):
            new = [dataclasses.replace(it, content=draw(TEXTS)) for it in s.content]
        out[i] = dataclasses.replace(s, content=new)
    elif kind == "priority":
        out[i] = dataclasses.replace(s, priority=draw(st.integers(0, 3)))
    elif kind == "min":
        top = 10 if s.max_tokens is None else s.max_tokens
        out[i] = dataclasses.replace(s, min_tokens=draw(st.integers(0, top)))
    elif kind == "max":
        out[i] = dataclasses.replace(s, max_tokens=draw(st.one_of(st.none(), st.integers(max(1, s.min_tokens), 30))))
    elif kind == "grow":
        out[i] = dataclasses.replace(s, grow=draw(st.sampled_from([0.0, 1.0, 2.0])))
    elif kind == "shrink":
        out[i] = dataclasses.replace(s, shrink=draw(st.sampled_from([0.0, 0.5, 1.0, 2.0])))
    elif kind == "lens" and isinstance(s.content, str):
        out[i] = dataclasses.replace(s, strategy=() if s.strategy else ("whitespace",))
    elif kind == "remove":
        del out[i]
    elif kind == "rename":
        out[i] = dataclasses.replace(s, id=f"r{draw(st.integers(0, 10**6))}")
    elif kind == "reorder":
        j = draw(st.integers(0, len(out) - 1))
        out[i], out[j] = out[j], out[i]
    return out, None


def outcome(box: TokenBox, sections: list[Section]) -> tuple[str, Any]:
    """What a layout decides, field by field, or the error it raises."""
    try:
        layout = box.layout(sections)
    except (ContextCriticalOverflow, SectionError) as exc:
        return "error", (type(exc).__name__, str(exc))
    return "layout", decisions(layout)


def decisions(layout: Layout) -> tuple[Any, ...]:
    trace = {k: v for k, v in layout.trace.items() if k not in ("trace_id", "timestamp", "latency_ms")}
    return (
        layout.to_json(),
        layout.text,
        layout.fingerprint,
        layout.input_hash,
        layout.total_tokens,
        layout.sections,
        repr(sorted(trace.items())),
    )


@given(
    data=st.data(),
    base=inputs(),
    budget=st.integers(0, 200),
    counter=st.sampled_from(COUNTERS),
    mode=st.sampled_from(["text", "messages"]),
    strict=st.booleans(),
    above=st.integers(0, 3),
    below=st.integers(0, 3),
)
def test_incremental_relayout_equals_a_fresh_box_over_edit_chains(
    data: st.DataObject,
    base: list[Section],
    budget: int,
    counter: str,
    mode: str,
    strict: bool,
    above: int,
    below: int,
) -> None:
    """One box across a chain of edits decides exactly as a fresh box for each input (both modes, strict or not)."""
    box = TokenBox(budget, counter=counter, mode=mode, strict=strict)  # type: ignore[arg-type]
    current = base
    with window(above, below):
        for _ in range(6):
            if current and len({s.id for s in current}) == len(current):
                fresh = TokenBox(box.budget, counter=counter, mode=mode, strict=strict)  # type: ignore[arg-type]
                want = outcome(fresh, [dataclasses.replace(s) for s in current])
                assert outcome(box, current) == want
            current, new_budget = data.draw(edit(current))
            if new_budget is not None:
                box.budget = ContextBudget.coerce(new_budget)


def corpus(n: int, seed: int = 3) -> list[Section]:
    rng = random.Random(seed)

    def text(words: int) -> str:
        return "\n".join(" ".join(rng.choice(VOCAB[:6]) for _ in range(12)) for _ in range(words // 12 + 1))

    out = [Section("system", text(40))]
    for i in range(1, n):
        if i % 10 == 0:
            items = [Item(f"s{i}-{j}", text(20), score=rng.random()) for j in range(4)]
            out.append(Section(f"s{i}", items, priority=rng.randint(0, 5), shrink=1, eviction="lowest_score"))
        else:
            out.append(Section(f"s{i}", text(60), priority=rng.randint(0, 5), shrink=rng.choice([1, 2])))
    return out


def test_one_section_changed_takes_the_incremental_path_and_matches() -> None:
    """The realistic next call (one section's content replaced) is re-decided incrementally, identically."""
    sections = corpus(300)
    box = TokenBox(6_000, counter="o200k_base")
    box.layout(sections)
    rng = random.Random(5)
    for step in range(12):
        changed = list(sections)
        k = rng.randrange(1, len(changed))
        if isinstance(changed[k].content, str):
            words = changed[k].content.split(" ")
            changed[k] = dataclasses.replace(changed[k], content=" ".join(words[: rng.randint(1, len(words))]))
        got = box.layout(changed)
        want = TokenBox(6_000, counter="o200k_base").layout([dataclasses.replace(s) for s in changed])
        assert decisions(got) == decisions(want), step
    assert box._incremental_hits >= 10  # the layouts above were (nearly all) computed incrementally


def test_edits_the_window_cannot_prove_take_the_full_path() -> None:
    """A critical section moved, edited or removed, or a budget far larger, is laid out in full (and matches)."""
    sections = corpus(60)
    box = TokenBox(1_500, counter="o200k_base")
    box.layout(sections)
    edits = [
        [*sections[1:], sections[0]],
        sections,
        [dataclasses.replace(sections[0], content="short system"), *sections[1:]],
        sections[1:],
    ]
    for changed in edits:
        got = box.layout(changed)
        want = TokenBox(1_500, counter="o200k_base").layout([dataclasses.replace(s) for s in changed])
        assert decisions(got) == decisions(want)
    box.budget = ContextBudget.coerce(60_000)  # every section fits: the claims no longer overflow anywhere
    got = box.layout(sections)
    assert decisions(got) == decisions(TokenBox(60_000, counter="o200k_base").layout(sections))
    assert box._incremental_hits == 0


def test_budget_changes_take_the_incremental_path_and_match() -> None:
    """A new budget (same sections, or with an edit) moves where the claims cross the target; the claims are
    the previous ones, so the window is re-decided around the new crossing, identically to a fresh box."""
    sections = corpus(300)
    box = TokenBox(6_000, counter="o200k_base")
    box.layout(sections)
    current = list(sections)
    budgets = [5_900, 5_000, 5_050, ContextBudget(max_tokens=5_400, output_reserve=300), 4_000, 4_100, 6_000]
    for step, budget in enumerate(budgets):
        box.budget = ContextBudget.coerce(budget)
        if step % 2:
            current[7] = dataclasses.replace(current[7], content=f"edited at step {step}")
        got = box.layout(current)
        want = TokenBox(budget, counter="o200k_base").layout([dataclasses.replace(s) for s in current])
        assert decisions(got) == decisions(want), step
        assert (got.max_tokens, got.target_tokens, got.budget) == (want.max_tokens, want.target_tokens, want.budget)
    assert box._incremental_hits >= len(budgets) - 2


def test_a_budget_below_the_critical_load_still_raises() -> None:
    """A new budget the critical sections alone exceed raises as for a fresh box (the full path decides)."""
    sections = corpus(60)
    box = TokenBox(1_500, counter="o200k_base")
    box.layout(sections)
    box.budget = ContextBudget.coerce(20)
    with pytest.raises(ContextCriticalOverflow) as raised:
        box.layout(sections)
    with pytest.raises(ContextCriticalOverflow) as fresh:
        TokenBox(20, counter="o200k_base").layout(sections)
    assert str(raised.value) == str(fresh.value)


def test_chat_turns_that_append_remove_and_reprioritise_take_the_incremental_path() -> None:
    """Appends, removals, a sliding window and priority/shrink edits move sections in the protection order;
    the settled state is carried to the new positions (box/realign.py) and the layout matches a fresh box."""
    sections = corpus(200)
    box = TokenBox(4_000, counter="o200k_base")
    box.layout(sections)
    rng = random.Random(11)
    current = list(sections)
    kinds = ["append", "remove", "slide", "priority", "shrink", "append+priority", "remove last"]
    for step in range(3 * len(kinds)):
        kind = kinds[step % len(kinds)]
        k = rng.randrange(1, len(current))
        words = " ".join(rng.choice(VOCAB[:6]) for _ in range(80))
        new = Section(f"turn{step}", words, priority=rng.randint(0, 5), shrink=1)
        if kind == "append":
            current = [*current, new]
        elif kind == "remove":
            del current[k]
        elif kind == "slide":  # the oldest message leaves, a new one arrives
            current = [current[0], *current[2:], new]
        elif kind == "priority":
            current[k] = dataclasses.replace(current[k], priority=(current[k].priority + 1) % 6)
        elif kind == "shrink":
            current[k] = dataclasses.replace(current[k], shrink=3.0)
        elif kind == "append+priority":
            current[k] = dataclasses.replace(current[k], priority=5)
            current = [*current, new]
        else:
            current = current[:-1]
        got = box.layout(current)
        want = TokenBox(4_000, counter="o200k_base").layout([dataclasses.replace(s) for s in current])
        assert decisions(got) == decisions(want), (step, kind)
        # every turn was re-decided incrementally, or (an input seen before) answered by the memo
        assert box._incremental_hits + box._memo.hits == step + 1, (step, kind)
    assert box._incremental_hits >= 3 * len(kinds) - 3


def test_the_incremental_path_never_changes_an_earlier_layout() -> None:
    """Records are shared copy-on-write: an earlier Layout reads the same after later incremental calls."""
    sections = corpus(120)
    box = TokenBox(3_000, counter="o200k_base")
    first = box.layout(sections)
    before = decisions(first)
    for k in (5, 17, 33):
        changed = list(sections)
        changed[k] = dataclasses.replace(changed[k], content="a much shorter text")
        box.layout(changed)
    assert box._incremental_hits == 3
    assert decisions(first) == before


@given(section=a_section("s"), counter=st.sampled_from(COUNTERS), mode=st.sampled_from(["text", "messages"]))
def test_a_whole_text_record_made_directly_equals_the_built_one(section: Section, counter: str, mode: str) -> None:
    """``results.whole_text`` sets every slot of the record exactly as ``results.build`` does."""
    from tokenbox_core.box.results import build, whole_text
    from tokenbox_core.records import LaidOutSection

    if not isinstance(section.content, str):
        return
    ruler = TokenBox(100, counter=counter, mode=mode)._ruler  # type: ignore[arg-type]
    slot = ruler.new_slots([section])[0]
    ruler.ensure_measured([slot])
    slot.base_size = slot.alloc = slot.size
    fast, built = whole_text(slot), build(slot)
    for name in LaidOutSection.__slots__:
        assert getattr(fast, name) == getattr(built, name), name


@given(section=a_section("s"), counter=st.sampled_from(COUNTERS))
def test_an_outranked_record_made_directly_equals_the_constructed_one(section: Section, counter: str) -> None:
    """``Results.outranked`` sets every slot as the keyword constructor would (sizes counted when first read)."""
    from tokenbox_core.box.results import OUTRANKED_ACTIONS
    from tokenbox_core.records import LaidOutSection

    box = TokenBox(100, counter=counter)
    fast = box._results.outranked(section)
    reference = LaidOutSection(
        id=section.id,
        status="dropped",
        critical=False,
        priority=section.priority,
        shrink=section.shrink,
        grow=section.grow,
        min_tokens=section.min_tokens,
        full_tokens=None,
        base_tokens=None,
        allocated_tokens=0,
        final_tokens=0,
        content=() if section.is_list else "",
        text="",
        role=section.role,
        actions=OUTRANKED_ACTIONS,
        removed=None,
        late=fast._late,
    )
    for name in LaidOutSection.__slots__:
        assert getattr(fast, name) == getattr(reference, name), name
    assert fast._late is not None and not fast.measured
    assert (fast.full_tokens, fast.base_tokens) == (reference.full_tokens, reference.base_tokens)


@given(text=TEXTS, counter=st.sampled_from(COUNTERS), mode=st.sampled_from(["text", "messages"]))
def test_a_text_template_made_directly_equals_the_constructed_one(text: str, counter: str, mode: str) -> None:
    """``measure_batch`` makes text templates without the keyword constructor: same fields, same values."""
    from tokenbox_core.box.state import Template

    ruler = TokenBox(100, counter=counter, mode=mode)._ruler  # type: ignore[arg-type]
    (template,) = ruler.measure_batch([Section("s", text, shrink=1)])
    neutral = getattr(ruler.counter, "neutral_join", None)
    start_ok = bool(neutral and text and neutral("\n", text[0]))
    assert type(template) is Template
    assert template == Template(size=template.size, units=None, evict_order=[], start_ok=start_ok)
    assert vars(template).keys() == vars(Template(size=0, units=None, evict_order=[])).keys()
