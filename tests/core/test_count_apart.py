"""The derived count of a text from the count of the text with its separator (``fast_tail.count_apart``, which the
compiler's Rank uses; its split positions are the counter's ``neutral_join``, tokens/neutral.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core.tokens import COUNT_CACHE, TiktokenCounter, get_counter
from tokenbox_core.tokens.fast_tail import count_apart, neutral_split

PIECES = [
    "word", "Word", "WORD", " ", "  ", "\t", "\n", "\n\n", "\r\n", "'s", "'LL", "'", ".", ",", "...", "!?",
    "/", "12", "12345", "%", "é", "É", "ß", "\u0301", "日本", "😀", "\u00a0", "-", "a", "Z", "x'y", "x.", "q1",
    "(", ")", '"', "k\u0301", "n\t", "\x00", "`", "ʰ", "ǅ",
]  # fmt: skip
SUFFIXES = ["\n", "\n\n", " ", "  ", "'s", "s", "x", "\r\n", ".", " \n", "\t", "1", "\u0301", "/", "'", "é"]
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
    COUNT_CACHE.clear()
    assert count_apart(counter, text, suffix) == len(raw(text))
    assert counter.count(text + suffix) == len(raw(text + suffix))  # counted (and cached) on the way
    p = neutral_split(counter, text)
    if p is not None:  # the identity itself, each term encoded afresh
        tail = text[p:]
        assert len(raw(text + suffix)) - len(raw(tail + suffix)) + len(raw(tail)) == len(raw(text))


def test_split_positions_are_the_counters() -> None:
    """The split is the counter's last neutral position within a quarter of the text from its end."""
    counter = COUNTERS["o200k fast"]
    counted: list[str] = []
    raw = counter._raw_count
    counter._raw_count = lambda t: counted.append(t) or raw(t)  # type: ignore[method-assign]
    try:
        COUNT_CACHE.clear()
        count_apart(counter, "alpha beta gamma delta.", "\n")  # tail "." (after "delta")
        COUNT_CACHE.clear()
        count_apart(counter, "é" * 40 + " 字", "\n")  # no neutral position: the text is counted
    finally:
        del counter._raw_count
    assert counted[:3] == ["alpha beta gamma delta.\n", ".\n", "."]
    assert "é" * 40 + " 字" in counted


def test_other_counters_simply_count() -> None:
    """Counters without the piece structure (or no suffix) count the text itself."""
    for spec in ("whitespace", "bytes", "approximate"):
        counter = get_counter(spec)
        assert count_apart(counter, "one two three", "\n") == counter.count("one two three")
    o200k = get_counter("o200k_base")
    assert count_apart(o200k, "one two", "") == o200k.count("one two")


def test_derived_count_is_remembered() -> None:
    """The bare text's count is cached as if counted: a later count() finds it without encoding."""
    counter = get_counter("o200k_base")
    text = "a derived count that nobody has encoded before today."
    value = count_apart(counter, text, "\n")
    seen: list[str] = []
    raw = counter._raw_count
    counter._raw_count = lambda t: seen.append(t) or raw(t)  # type: ignore[method-assign]
    try:
        assert counter.count(text) == value
    finally:
        del counter._raw_count
    assert seen == []
