"""The fast exact counter (issue 16 §1): identical to tiktoken on adversarial text, refuses unverified encodings."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenbox_core import TokenBox
from tokenbox_core._sections import Section
from tokenbox_core.errors import TokenizerUnavailable
from tokenbox_core.tokens import get_counter
from tokenbox_core.tokens._fast import VERIFIED_ENCODINGS, FastBpeCounter, count_up_to, tiktoken_counter
from tokenbox_core.tokens._tiktoken_counter import TiktokenCounter

pytest.importorskip("rs_bpe", reason="the 'fast' extra is not installed")

ENCODINGS = sorted(VERIFIED_ENCODINGS)
REFERENCE = {name: TiktokenCounter(name).encoding for name in ENCODINGS}
FAST = {name: FastBpeCounter(name) for name in ENCODINGS}

_pieces = st.sampled_from(
    [
        " ",
        "  ",
        "\t",
        "\n",
        "\r\n",
        "\n\n  ",
        "   \n",
        "def f(x):\n    return x ** 2  # ok\n",
        "{'a': [1, 2.5e-3, null]}",
        "日本語のテキスト",
        "中文文本",
        "한국어",
        "👩‍👩‍👧‍👦",
        "🏳️‍🌈",
        "👍🏽",
        "'s",
        "'LL",
        "don't",
        "1234567",
        "<|endoftext|>",
        "<|im_start|>",
        "é",
        "e\u0301",
        "Ǆ",
        "ﬁ",
        "/",
        "...",
        "!!!",
    ]
)
_runs = st.builds(
    lambda ch, n: ch * n, st.sampled_from(["a", " ", "\n", "1", "!", "é", "🙂", "ab", " \n"]), st.integers(1, 3000)
)
adversarial = st.one_of(
    st.text(max_size=200),
    st.lists(st.one_of(_pieces, _runs, st.text(max_size=12)), max_size=30).map("".join),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=300),
)


@pytest.mark.parametrize("encoding", ENCODINGS)
@settings(max_examples=150)
@given(text=adversarial)
def test_fast_counts_equal_tiktoken(encoding: str, text: str) -> None:
    """The fast count is tiktoken's len(encode_ordinary(text)), on every verified encoding."""
    want = len(REFERENCE[encoding].encode_ordinary(text))
    fast = FAST[encoding]
    assert fast._raw_count(text) == want
    assert fast._fast.count_till_limit(text, want) == want
    if want:
        assert fast._fast.count_till_limit(text, want - 1) is None


@given(text=adversarial, limit=st.integers(0, 400))
def test_count_up_to_is_the_count_or_none(text: str, limit: int) -> None:
    """count_up_to returns the exact count when it is at most the limit, else None, for fast and plain counters."""
    for counter in (get_counter("o200k_base"), TiktokenCounter("o200k_base"), get_counter("whitespace")):
        full = counter.count(text)
        assert count_up_to(counter, text, limit) == (full if full <= limit else None)


def test_the_default_counter_is_fast_for_verified_encodings() -> None:
    """get_counter serves verified encodings (and model names) with the fast counter, under the same name."""
    counter = get_counter("gpt-4o")
    assert isinstance(counter, FastBpeCounter) and counter.name == "o200k_base"
    assert isinstance(get_counter("cl100k_base"), FastBpeCounter)


def test_unverified_encoding_is_refused() -> None:
    """The fast counter refuses an encoding it has not been verified on, naming the fallback."""
    with pytest.raises(TokenizerUnavailable, match=r"not verified on 'r50k_base'.*TiktokenCounter"):
        FastBpeCounter("r50k_base")


def test_fallback_when_disabled(monkeypatch: pytest.MonkeyPatch) -> None:
    """TOKENBOX_FAST=0 (or a missing extra) falls back to tiktoken."""
    monkeypatch.setenv("TOKENBOX_FAST", "0")
    counter = tiktoken_counter("o200k_base")
    assert type(counter) is TiktokenCounter


def test_missing_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without rs-bpe the fast counter's error names the 'fast' extra; get_counter falls back silently."""
    import sys

    monkeypatch.setitem(sys.modules, "rs_bpe.bpe", None)
    with pytest.raises(TokenizerUnavailable, match=r"tokenbox-context\[fast\]"):
        FastBpeCounter("o200k_base")
    assert type(tiktoken_counter("o200k_base")) is TiktokenCounter


def test_layouts_are_identical_with_either_counter() -> None:
    """A layout counted by the fast counter equals one counted by tiktoken, fingerprint included."""
    sections = [
        Section("policy", "You are terse.\n"),
        Section("docs", "Lorem ipsum dolor sit amet, 日本語 🙂 " * 400, shrink=1),
        Section("notes", "  spaced   text\n\n" * 300, shrink=2, priority=1),
    ]
    fast = TokenBox(900, counter=FastBpeCounter("o200k_base")).layout(sections)
    plain = TokenBox(900, counter=TiktokenCounter("o200k_base")).layout(sections)
    assert fast.text == plain.text and fast.total_tokens == plain.total_tokens
    assert fast.fingerprint == plain.fingerprint


def test_the_fast_counter_is_reached_through_get_counter() -> None:
    """One way to get a counter: ``get_counter`` serves the fast exact counter; its class is not public (issue 22)."""
    import tokenbox_core.tokens

    assert "FastBpeCounter" not in tokenbox_core.tokens.__all__ and "count_up_to" not in tokenbox_core.tokens.__all__
    assert isinstance(get_counter("o200k_base"), FastBpeCounter)
