"""Measuring a long text by encoding only what a cut keeps (issue 16 §1): exact against a full encode."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core import Section, TokenBox
from tokenbox_core.tokens import COUNT_CACHE, TiktokenCounter, fast_cut, fast_measure
from tokenbox_core.tokens.fast import FastBpeCounter, fast_available
from tokenbox_core.tokens.fast_measure import measure_head

from .conftest import TOKEN_PIECES

COUNTERS: list[TiktokenCounter] = [TiktokenCounter("o200k_base"), TiktokenCounter("cl100k_base")]
if fast_available():
    COUNTERS += [FastBpeCounter("o200k_base"), FastBpeCounter("cl100k_base")]

_pieces = st.sampled_from(TOKEN_PIECES)
texts = st.lists(st.one_of(_pieces, st.text(max_size=6)), min_size=0, max_size=80).map("".join)


@pytest.fixture(autouse=True)
def no_cut_memo(monkeypatch: pytest.MonkeyPatch) -> None:
    """These properties test the cutting algorithm: no answers from the memo of cuts (tests/core/test_cut_memo.py)."""
    monkeypatch.setattr(fast_cut, "CUT_MEMO_MAX_CHARS", -1)


@contextmanager
def thresholds(min_chars: int, chunk: int = 7, per_token: int = 1) -> Iterator[None]:
    """Take the prefix path on short texts (``min_chars=0``), in small chunks, so generated text exercises
    every branch; ``min_chars`` huge turns it off (the reference: count whole, cut from a full encode)."""
    saved = fast_cut.PARTIAL_MIN_CHARS, fast_measure.END_MARGIN, fast_measure._CHUNK, fast_measure.CHARS_PER_TOKEN
    slack = fast_measure._SLACK
    fast_cut.PARTIAL_MIN_CHARS, fast_measure.END_MARGIN, fast_measure._SLACK = min_chars, 0, 0
    fast_measure._CHUNK, fast_measure.CHARS_PER_TOKEN = chunk, per_token
    try:
        yield
    finally:
        fast_cut.PARTIAL_MIN_CHARS, fast_measure.END_MARGIN, fast_measure._CHUNK, fast_measure.CHARS_PER_TOKEN = saved
        fast_measure._SLACK = slack
        fast_cut._memo.__dict__.clear()


@given(text=texts, reach=st.integers(1, 40), suffix=st.sampled_from(["", "\n\n", "\n", " ", "x", "\n/"]))
def test_prefix_measure_is_exact(text: str, reach: int, suffix: str) -> None:
    """count(text + suffix) from the prefix's ids and the rest's count equals a full encode; so does count(text);
    every cut up to ``reach`` from the remembered prefix equals the re-counting reference's."""
    for counter in COUNTERS:
        enc = counter.encoding
        for limit in sorted({0, 1, reach // 2, reach}):
            with thresholds(0):
                COUNT_CACHE.clear()
                got = measure_head(counter, text, suffix, reach)
                if got is None:
                    break
                assert got == len(enc.encode_ordinary(text + suffix))
                assert counter.count(text) == len(enc.encode_ordinary(text))  # cached by the measure
                cut = counter.truncate(text, limit)
            COUNT_CACHE.clear()
            assert cut == counter._truncate_by_recounting(text, limit)


@given(text=texts, reach=st.integers(1, 40), keep=st.sampled_from(["head", "tail", "middle"]))
def test_layout_with_prefix_measure_equals_full_measure(text: str, reach: int, keep: str) -> None:
    """A box that measures long sections by their prefix decides exactly as one that counts them whole."""
    for counter in COUNTERS:
        outcomes = []
        for min_chars in (10**12, 0):
            sections = [
                Section("policy", "Be careful.", shrink=0),
                Section("doc", (text + "\n") * 3, shrink=1, keep=keep),  # type: ignore[arg-type]
                Section("tail", "the end", priority=3),
            ]
            with thresholds(min_chars, chunk=5, per_token=0):
                COUNT_CACHE.clear()
                layout = TokenBox(reach + 8, counter=counter).layout(sections)
            outcomes.append(
                (
                    layout.text,
                    layout.total_tokens,
                    [(s.id, s.status, s.final_tokens, s.full_tokens, s.actions) for s in layout.sections],
                )
            )
        assert outcomes[0] == outcomes[1]


def test_long_section_cut_encodes_only_its_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 300,000-character section laid out into 2,000 tokens: the ids built and kept cover the prefix, not the
    text (the rest is only counted), and the layout equals the one that counts the text whole."""
    counter = TiktokenCounter("o200k_base")
    text = "".join(f"line {i} of a long document with words 日本語 🙂\n" for i in range(7_000))
    assert len(text) > fast_cut.PARTIAL_MIN_CHARS

    def run() -> tuple[str, int]:
        COUNT_CACHE.clear()
        fast_cut._memo.__dict__.clear()
        layout = TokenBox(2_000, counter=counter).layout([Section("doc", text, shrink=1)])
        return layout.text, layout.total_tokens

    monkeypatch.setattr(fast_cut, "_memo", type(fast_cut._memo)())
    new = run()
    assert getattr(fast_cut._memo, "last", None) is None  # the whole text was never encoded to ids
    _, measured, view = fast_cut._memo.partial
    assert measured is text
    assert 2_000 <= len(view.head) < len(counter.encoding.encode_ordinary(text)) // 10
    monkeypatch.setattr(fast_cut, "PARTIAL_MIN_CHARS", 10**12)
    assert run() == new
    assert new[1] <= 2_000 and text.startswith(new[0])
