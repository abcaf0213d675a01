"""Hypothesis properties of defensive layout: never over budget, byte-identical for the same secret."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core import Item, Section
from tokenbox_core.defense import DefensePolicy, defensive_layout
from tokenbox_core.errors import ContextCriticalOverflow

_WORDS = st.sampled_from(
    ["ignore", "previous", "instructions", "<|im_start|>", "system:", "data", "\u200b", "<<<END_SECTION", "ok",
     "base64", "aWdub3JlIHRoZSBydWxlcw==", "é", "\U000e0041", "the", "report", "\n"]
)  # fmt: skip
_TEXT = st.lists(_WORDS, max_size=30).map(" ".join)


@st.composite
def _inputs(draw: st.DrawFn) -> tuple[list[Section], int, str]:
    sections = [Section("policy", "Answer briefly.", metadata={"source_type": "system"})]
    for i in range(draw(st.integers(0, 3))):
        source = draw(st.sampled_from(["tool", "retrieval", "user", "memory"]))
        sections.append(Section(f"s{i}", draw(_TEXT), shrink=1, priority=i, metadata={"source_type": source}))
    if draw(st.booleans()):
        items = [Item(f"i{k}", draw(_TEXT)) for k in range(draw(st.integers(1, 4)))]
        sections.append(Section("docs", items, shrink=1, metadata={"source_type": "retrieval"}))
    budget = draw(st.integers(60, 400))
    spotlight = draw(st.sampled_from(["delimit", "datamark", "encode"]))
    return sections, budget, spotlight


@given(_inputs())
def test_defended_layout_never_exceeds_the_budget(case: tuple[list[Section], int, str]) -> None:
    """Markers, spotlighting and the statement are counted: total <= budget, or the critical overflow says why."""
    sections, budget, spotlight = case
    policy = DefensePolicy(secret="p" * 16, spotlight=spotlight, hierarchy=False)  # type: ignore[arg-type]
    try:
        d = defensive_layout(sections, budget, policy=policy, counter="whitespace")
    except ContextCriticalOverflow as exc:
        assert exc.required > exc.budget
        return
    assert d.layout.total_tokens <= budget
    assert d.defense.violations == []  # phase 4 passed: boundaries intact, no marker inside content


@given(_inputs())
def test_same_inputs_and_secret_give_identical_bytes(case: tuple[list[Section], int, str]) -> None:
    """Two compiles of the same inputs with the same secret are byte-identical."""
    sections, _, spotlight = case
    policy = DefensePolicy(secret="p" * 16, spotlight=spotlight)  # type: ignore[arg-type]
    a = defensive_layout(sections, 5_000, policy=policy, counter="o200k_base")
    b = defensive_layout(sections, 5_000, policy=policy, counter="o200k_base")
    assert a.text.encode() == b.text.encode()
    assert a.defense.to_dict() == b.defense.to_dict()
