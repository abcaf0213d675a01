"""The memo of recent cuts (tokens/fast_cut.truncate_once): a repeated cut is answered without cutting again, and
the answer is always the cut itself."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core.tokens import COUNT_CACHE, TiktokenCounter, fast_cut, get_counter
from tokenbox_core.tokens.fast_cut import CUT_MEMO_ENTRIES, CUT_MEMO_MAX_CHARS, truncate_once

COUNTERS = [get_counter("o200k_base"), get_counter("cl100k_base"), TiktokenCounter("o200k_base")]
POOL = [
    "Refunds take two weeks. Contact support with your order number, then wait for the e-mail.",
    "ligne 1: café 🙂 日本語 données\nligne 2: encore\n",
    "x" * 300,
    "def f(x):\n    return x ** 2  # ok\n" * 5,
    "it's a 12345-word document; don't cut it in the middle of 'quotes'",
]


@pytest.fixture(autouse=True)
def empty_memo() -> None:
    fast_cut._memo.__dict__.clear()


@given(
    cuts=st.lists(
        st.tuples(
            st.integers(0, len(COUNTERS) - 1),
            st.integers(0, len(POOL) - 1),
            st.integers(-1, 40),
            st.sampled_from(["head", "tail", "middle"]),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_remembered_cuts_are_the_cuts(cuts: list[tuple[int, int, int, str]]) -> None:
    """Any sequence of cuts (repeats, other limits, other keeps, other encodings) gives the reference's strings."""
    for c, t, limit, keep in cuts:
        counter, text = COUNTERS[c], POOL[t]
        got = truncate_once(counter, text, limit, keep)  # type: ignore[arg-type]
        assert got == counter._truncate_by_recounting(text, limit, keep=keep)  # type: ignore[arg-type]
        assert counter.count(got) <= max(0, limit)


def test_a_repeated_cut_is_not_cut_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same (encoding, text, limit, keep) again: no cut is made, the same string comes back, and its count
    is in the count cache as after the first cut."""
    counter = get_counter("o200k_base")
    text = POOL[0] * 3
    first = truncate_once(counter, text, 20)
    made: list[int] = []
    real = fast_cut._cut
    monkeypatch.setattr(fast_cut, "_cut", lambda *a: made.append(a[2]) or real(*a))
    COUNT_CACHE.clear()
    again = truncate_once(counter, "".join([text]), 20)  # an equal text, another object
    assert again == first and made == []
    assert COUNT_CACHE.get(COUNT_CACHE.key(counter._cache_key, again)) == len(counter.encoding.encode_ordinary(again))
    truncate_once(counter, text, 21)
    truncate_once(counter, text, 20, "tail")
    assert made  # another limit or keep is another cut


def test_the_memo_is_bounded_and_skips_long_texts(monkeypatch: pytest.MonkeyPatch) -> None:
    counter = get_counter("o200k_base")
    for i in range(CUT_MEMO_ENTRIES + 5):
        truncate_once(counter, f"text number {i} " * 10, 3)
    assert len(fast_cut._memo.cuts) == CUT_MEMO_ENTRIES
    assert not any(key[3] == "text number 0 " * 10 for key in fast_cut._memo.cuts)  # the oldest went first
    fast_cut._memo.__dict__.clear()
    long_text = "word " * (CUT_MEMO_MAX_CHARS // 5 + 1)
    truncate_once(counter, long_text, 3)
    assert fast_cut._memo.cuts == {}  # a long text's ids are remembered (encode_ids), not its cut
