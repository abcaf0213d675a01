"""``scan_neutral`` finds the same position as asking ``neutral_join`` at every position (issue 16: the tiktoken
counters are neutral only right after a newline, so the scan walks newlines with ``str.find``)."""

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
    counter._neutral_newline = False
    return counter


COUNTERS = {
    "o200k_base": get_counter("o200k_base"),
    "cl100k_base": get_counter("cl100k_base"),
    "never": never_neutral(),
    "every-space": EverySpace(get_counter("o200k_base").encoding),
}
TEXT = st.text(alphabet=st.sampled_from(["a", "b", " ", "\n", "/", "\t", "\r", "é", "字", "😀"]), max_size=60)


@pytest.mark.parametrize("name", sorted(COUNTERS))
@given(text=TEXT, lo=st.integers(-3, 64), span=st.integers(-3, 64), last=st.booleans())
def test_scan_neutral_equals_asking_every_position(name: str, text: str, lo: int, span: int, last: bool) -> None:
    counter = COUNTERS[name]
    hi = lo + span
    assert scan_neutral(counter, text, lo, hi, last=last) == reference(counter, text, lo, hi, last=last)


def test_scan_neutral_examples() -> None:
    counter = COUNTERS["o200k_base"]
    text = "one\ntwo\n three\n/four\nfive"
    assert scan_neutral(counter, text, 0, len(text), last=False) == 4  # after the first newline
    assert scan_neutral(counter, text, 0, len(text), last=True) == text.index("five")  # not "\n/" nor "\n "
    assert scan_neutral(counter, "no newline at all", 0, 99, last=True) is None
