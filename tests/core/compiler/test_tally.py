"""The derived count of a text from the count of the text with its separator (compiler.tally)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core.compiler.tally import count_before, letter_space_split
from tokenbox_core.tokens import TiktokenCounter, get_counter

PIECES = [
    "word", "Word", "WORD", " ", "  ", "\t", "\n", "\n\n", "\r\n", "'s", "'LL", "'", ".", ",", "...", "!?",
    "/", "12", "12345", "%", "é", "É", "ß", "\u0301", "日本", "😀", "\u00a0", "-", "a", "Z", "x'y",
]  # fmt: skip
SUFFIXES = ["\n", "\n\n", " ", "  ", "'s", "s", "x", "\r\n", ".", " \n", "\t", "1", "\u0301", "/"]
COUNTERS = {
    "o200k fast": get_counter("o200k_base"),
    "cl100k fast": get_counter("cl100k_base"),
    "o200k tiktoken": TiktokenCounter("o200k_base"),
    "cl100k tiktoken": TiktokenCounter("cl100k_base"),
}


@pytest.mark.parametrize("name", sorted(COUNTERS))
@given(st.lists(st.sampled_from(PIECES), max_size=40).map("".join), st.sampled_from(SUFFIXES))
def test_derived_count_is_the_count(name: str, text: str, suffix: str) -> None:
    """count(text) == count(text + suffix) - count(tail + suffix) + count(tail), checked against raw encoding."""
    counter = COUNTERS[name]
    raw = counter.encoding.encode_ordinary
    assert count_before(counter, text, suffix) == len(raw(text))
    p = letter_space_split(text)
    if p is not None:  # the identity itself, each term encoded afresh
        tail = text[p:]
        assert len(raw(text + suffix)) - len(raw(tail + suffix)) + len(raw(tail)) == len(raw(text))


def test_split_needs_an_ascii_letter_before_a_space() -> None:
    assert letter_space_split("alpha beta.") == 5
    assert letter_space_split("é beta") is None  # only ASCII letters are trusted
    assert letter_space_split("a" * 300 + " " + "b" * 300) is None  # outside the window
    assert letter_space_split("") is None


def test_other_counters_simply_count() -> None:
    """Counters without the piece structure (or no suffix) count the text itself."""
    for spec in ("whitespace", "bytes", "approximate"):
        counter = get_counter(spec)
        assert count_before(counter, "one two three", "\n") == counter.count("one two three")
    o200k = get_counter("o200k_base")
    assert count_before(o200k, "one two", "") == o200k.count("one two")


def test_derived_count_is_remembered() -> None:
    """The bare text's count is cached as if counted: a later count() finds it without encoding."""
    counter = get_counter("o200k_base")
    text = "a derived count that nobody has encoded before today."
    value = count_before(counter, text, "\n")
    seen: list[str] = []
    raw = counter._raw_count
    counter._raw_count = lambda t: seen.append(t) or raw(t)  # type: ignore[method-assign]
    try:
        assert counter.count(text) == value
    finally:
        del counter._raw_count
    assert seen == []
