"""Tail re-counting (issue 16 §1): counts of text + suffix derived from text's count are exact."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core.tokens import COUNT_CACHE, TiktokenCounter, fast_tail, get_counter
from tokenbox_core.tokens.fast_tail import count_minus, count_plus, neutral_split

from .conftest import TOKEN_PIECES

COUNTERS = [
    get_counter("o200k_base"),
    get_counter("cl100k_base"),
    TiktokenCounter("o200k_base"),
    TiktokenCounter("cl100k_base"),
    get_counter("bytes"),
    get_counter("whitespace"),
]
REFERENCE = TiktokenCounter("o200k_base").encoding

_pieces = st.sampled_from(TOKEN_PIECES)
texts = st.lists(st.one_of(_pieces, st.text(max_size=6)), min_size=1, max_size=40).map("".join)
suffixes = st.sampled_from(["", "\n\n", "\n", " ", "\n\n/", "x", "\r\n", "\u0301", "  \n"])


@pytest.fixture(autouse=True)
def short_tails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fast_tail, "TAIL_MIN_CHARS", 0)  # exercise the tail path on short generated texts


@given(text=texts, suffix=suffixes)
def test_count_plus_and_minus_are_exact(text: str, suffix: str) -> None:
    """From a known count, the other count equals a direct count, for every counter with neutral joins."""
    for counter in COUNTERS:
        COUNT_CACHE.clear()
        counter.count(text)
        assert count_plus(counter, text, suffix) == counter._raw_count(text + suffix)  # type: ignore[attr-defined]
        COUNT_CACHE.clear()
        counter.count(text + suffix)
        assert count_minus(counter, text, suffix) == counter._raw_count(text)  # type: ignore[attr-defined]


def test_split_is_a_neutral_position() -> None:
    """The split lies after a newline before a non-space, or after an ASCII letter before an ASCII non-letter other
    than an apostrophe (tiktoken), and is None when there is none."""
    counter = get_counter("o200k_base")
    text = "alpha beta\ngamma delta\n  epsilon"
    assert neutral_split(counter, text) == text.index("\n  epsilon")  # after "delta"
    assert neutral_split(counter, "1 2\n字字 é 3") == 4  # after the newline
    assert neutral_split(counter, "日本 字\n 1 é.") is None
    assert neutral_split(get_counter("approximate"), text) is None


def test_long_text_recounts_only_the_tail(monkeypatch: pytest.MonkeyPatch) -> None:
    """Counting a long text without its separator reads only the tail after the last neutral position."""
    counter = TiktokenCounter("o200k_base")
    text = "line of words\n" * 5_000 + "the end"
    COUNT_CACHE.clear()
    joined = counter.count(text + "\n\n")
    seen: list[int] = []
    raw = counter._raw_count
    monkeypatch.setattr(counter, "_raw_count", lambda t: seen.append(len(t)) or raw(t))
    assert count_minus(counter, text, "\n\n") == len(REFERENCE.encode_ordinary(text)) == joined - 1
    assert seen and max(seen) < 20
