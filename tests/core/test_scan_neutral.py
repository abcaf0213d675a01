"""``scan_neutral`` finds the same position as asking ``neutral_join`` at every position (issue 16: for the tiktoken
counters a regular expression finds them in C, tokens/neutral.py)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core.tokens import get_counter
from tokenbox_core.tokens.fast_tail import scan_neutral
from tokenbox_core.tokens.tiktoken_counter import TiktokenCounter


def reference(counter: Any, text: str, lo: int, hi: int, *, last: bool) -> int | None:
    """The plain definition: every position in range, asked one by one."""
    positions = [p for p in range(max(lo, 1), min(hi, len(text))) if counter.neutral_join(text[p - 1], text[p])]
    if not positions:
        return None
    return positions[-1] if last else positions[0]


class EverySpace(TiktokenCounter):
    """A counter whose joins are neutral somewhere else (after any space): the scan must ask it position by position."""

    def neutral_join(self, left_end: str, right_start: str) -> bool:
        return left_end == " "


def never_neutral() -> Any:
    """An encoding whose pattern reads past newlines (as r50k/p50k do): no position is neutral."""
    counter = copy.copy(get_counter("o200k_base"))
    counter._neutral = False
    return counter


COUNTERS = {
    "o200k_base": get_counter("o200k_base"),
    "cl100k_base": get_counter("cl100k_base"),
    "never": never_neutral(),
    "every-space": EverySpace(get_counter("o200k_base").encoding),
}
ALPHABET = ["a", "b", "Z", " ", "\n", "/", "\t", "\r", "é", "字", "😀", "'", "1", ".", "\x1c", "\x85", "\u2028", "\xa0"]
ALPHABET += ["\u180e", "\u0301", "\x7f", "\x00", "`", "{", "@", "[", "_", "~", "\u3000", "ß"]
TEXT = st.text(alphabet=st.sampled_from(ALPHABET), max_size=60)
LONG_RUNS = ["字" * 40, "a" * 30, "\n" * 9, " " * 70, "é" * 200]
LONG = st.lists(st.sampled_from([*ALPHABET, *LONG_RUNS]), max_size=40).map("".join)


@pytest.mark.parametrize("name", sorted(COUNTERS))
@given(text=TEXT, lo=st.integers(-3, 64), span=st.integers(-3, 64), last=st.booleans())
def test_scan_neutral_equals_asking_every_position(name: str, text: str, lo: int, span: int, last: bool) -> None:
    counter = COUNTERS[name]
    hi = lo + span
    assert scan_neutral(counter, text, lo, hi, last=last) == reference(counter, text, lo, hi, last=last)


@pytest.mark.parametrize("name", sorted(COUNTERS))
@given(text=LONG, lo=st.integers(-3, 1500), span=st.integers(-3, 1500), last=st.booleans())
def test_scan_neutral_on_long_runs(name: str, text: str, lo: int, span: int, last: bool) -> None:
    """Long stretches without a neutral position: the backward windows grow and meet ``lo`` exactly."""
    counter = COUNTERS[name]
    hi = lo + span
    assert scan_neutral(counter, text, lo, hi, last=last) == reference(counter, text, lo, hi, last=last)


def test_scan_neutral_examples() -> None:
    counter = COUNTERS["o200k_base"]
    text = "one\ntwo\n three\n/four\nfive"
    assert scan_neutral(counter, text, 0, len(text), last=False) == 3  # after "one", before the newline
    assert scan_neutral(counter, text, 0, len(text), last=True) == text.index("five")  # not "\n/" nor "\n "
    assert scan_neutral(counter, "é 字 1 2 é", 0, 99, last=True) is None  # no ASCII letter, no newline
    assert scan_neutral(counter, "it's", 0, 99, last=True) is None  # an apostrophe starts a contraction
    assert scan_neutral(counter, "x" * 10_000 + " ", 0, 10_001, last=True) == 10_000
