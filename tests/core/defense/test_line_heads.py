"""Line-start rules tried only at the line starts before their heads match as if tried at every line start."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core.defense.gates import LINE_HEADS
from tokenbox_core.defense.prefilter import Prefilter, native_available
from tokenbox_core.defense.rules import RULES, line_starts, line_starts_before

_HEADED = [r for r in RULES if r.heads]
_LEADS = "".join(sorted({c for lead, _ in LINE_HEADS.values() if lead for c in lead}))
_PIECES = sorted(
    {h for _, heads in LINE_HEADS.values() for h in heads}
    | {"system message", "system notice", "instruction", "instructions", "response", "end of", "the ", "document",
       "data", "results", "tool output", " of", ": ", "x", "system: please do this thing now", "user:", "human:",
       "assistant:", "system :", "end of document", "end of the data", "end tool output", "## system",
       "### instructions:", "developer: read the following text"}
)  # fmt: skip
_FILL = st.text(alphabet=st.sampled_from(list(_LEADS + " \t\n\r\x0b\x0c\x1c\x85\xa0\u2028\u3000:ab.")), max_size=6)
_LINE = st.tuples(
    st.text(alphabet=st.sampled_from(list(_LEADS + " \t\n\xa0")), max_size=4),
    st.sampled_from(_PIECES),
    st.lists(st.one_of(st.sampled_from(_PIECES), _FILL), max_size=4).map("".join),
).map("".join)
_TEXT = st.lists(st.one_of(_LINE, st.sampled_from(_PIECES), _FILL), max_size=12).map("\n".join)


def _occurrences(text: str, literals: tuple[str, ...]) -> list[int]:
    return [i for a in literals for i in range(len(text)) if text.startswith(a, i)]


def test_line_heads_are_exactly_the_caret_rules_and_name_their_rules() -> None:
    """Every rule with ``heads`` is a line-start rule, and every line-start rule of RULES has them."""
    assert {r.name for r in _HEADED} == set(LINE_HEADS) == {r.name for r in RULES if r.line_start}
    assert all(not r.anchors for r in _HEADED)


def test_backslash_s_is_str_isspace() -> None:
    """``\\s`` in a ``str`` pattern matches exactly the characters ``str.isspace`` accepts (the walk back uses it)."""
    space = re.compile(r"\s")
    assert all((space.match(chr(c)) is not None) == chr(c).isspace() for c in range(0x110000))


@given(_TEXT)
def test_line_starts_before_heads_find_every_match(text: str) -> None:
    """For each headed rule, trying the line starts before its heads finds the matches of a full scan."""
    for rule in _HEADED:
        heads = _occurrences(text, rule.heads)
        narrowed = line_starts_before(text, heads, rule.head_lead)
        assert set(narrowed) <= set(line_starts(text))
        spans = [m.span() for m in rule.pattern.finditer(text)]
        assert [m.span() for m in rule.finditer(text, narrowed)] == spans, rule.name
        # Every match start is a candidate (so the narrowing drops only starts where the pattern fails).
        assert {s for s, _ in spans} <= set(narrowed), rule.name


@pytest.mark.skipif(not native_available(), reason="ahocorasick-rs (the defense extra) not installed")
@given(_TEXT)
def test_native_line_start_candidates_match_like_every_line_start(text: str) -> None:
    """The native prefilter's candidates for a headed rule give the matches of trying every line start."""
    rules, _, starts = Prefilter(RULES, native=True).scan(text)
    assert starts is not None
    for rule, found in zip(rules, starts, strict=True):
        if rule.heads:
            assert found is not None
            expected = [m.span() for m in rule.finditer(text, line_starts(text))]
            assert [m.span() for m in rule.finditer(text, found)] == expected, rule.name


def test_line_starts_before_examples() -> None:
    """A head at a line start, after lead characters over several lines, and after a non-lead character."""
    text = "x system\n  \n== system\nsystem"
    heads = _occurrences(text, ("system",))
    assert sorted(set(line_starts_before(text, heads, "="))) == [9, 12, 22]
    assert line_starts_before(text, heads, None) == [22]
