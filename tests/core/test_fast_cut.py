"""Cutting from one encode (issue 16 §1): the same cuts as the re-counting algorithm, from one encode."""

from __future__ import annotations

import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core.tokens import COUNT_CACHE, TiktokenCounter, fast_cut, get_counter
from tokenbox_core.tokens.fast_cut import truncate_once

from .conftest import TOKEN_PIECES

COUNTERS = [
    TiktokenCounter("o200k_base"),
    TiktokenCounter("cl100k_base"),
    get_counter("o200k_base"),
    get_counter("cl100k_base"),
]
_pieces = st.sampled_from(TOKEN_PIECES)
texts = st.lists(st.one_of(_pieces, st.text(max_size=8)), min_size=0, max_size=60).map("".join)


@pytest.fixture(autouse=True)
def no_cut_memo(monkeypatch: pytest.MonkeyPatch) -> None:
    """These properties test the cutting algorithm: no answers from the memo of cuts (tests/core/test_cut_memo.py)."""
    monkeypatch.setattr(fast_cut, "CUT_MEMO_MAX_CHARS", -1)


@given(text=texts, fraction=st.floats(0, 1.2), keep=st.sampled_from(["head", "tail", "middle"]))
def test_one_encode_cut_equals_the_recounting_cut(text: str, fraction: float, keep: str) -> None:
    """For every text, limit and keep, truncate (one encode) returns the reference algorithm's string."""
    for counter in COUNTERS:
        limit = int(len(counter.encoding.encode_ordinary(text)) * fraction)
        COUNT_CACHE.clear()
        want = counter._truncate_by_recounting(text, limit, keep=keep)  # type: ignore[arg-type]
        COUNT_CACHE.clear()
        got = truncate_once(counter, text, limit, keep)  # type: ignore[arg-type]
        assert got == want
        assert counter.count(got) == len(counter.encoding.encode_ordinary(got)) <= max(limit, 0)


def test_long_text_is_encoded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Repeated cuts of one long text encode it once and count only short tails."""
    counter = TiktokenCounter("o200k_base")
    text = "a line of several words\n" * 4_000
    encodes: list[int] = []

    class Proxy:
        def __init__(self, inner: object) -> None:
            self.inner = inner

        def __getattr__(self, name: str) -> object:
            return getattr(self.inner, name)

        def encode_to_numpy(self, t: str, **kw: object) -> object:
            encodes.append(len(t))
            return self.inner.encode_to_numpy(t, **kw)  # type: ignore[attr-defined]

    monkeypatch.setattr(fast_cut, "_memo", type(fast_cut._memo)())
    monkeypatch.setattr(counter, "encoding", Proxy(counter.encoding))
    counts: list[int] = []
    raw = counter._raw_count
    monkeypatch.setattr(counter, "_raw_count", lambda t: counts.append(len(t)) or raw(t))
    limits = (20_000, 15_000, 900, 10)
    cuts = [counter.truncate(text, n, keep="head") for n in limits]
    assert len(encodes) == 1
    assert max(counts) < 100  # only tails after the last newline are re-counted
    reference = TiktokenCounter("o200k_base").encoding
    assert all(len(reference.encode_ordinary(c)) <= n for c, n in zip(cuts, limits, strict=True))


@given(text=texts, suffix=st.sampled_from(["\n\n", "\n", " ", "x", "\n\n/", "  \n"]))
def test_ids_from_a_measured_text_with_its_separator(text: str, suffix: str) -> None:
    """Ids derived from the encode of text + separator (the measure pass) equal a fresh encode of text."""
    counter = TiktokenCounter("o200k_base")
    fast_cut.encode_ids(counter, text + suffix)
    assert list(fast_cut.encode_ids(counter, text)) == counter.encoding.encode_ordinary(text)


@given(text=texts, fraction=st.floats(0, 1.2), keep=st.sampled_from(["head", "tail", "middle"]))
def test_cut_from_a_partial_encode_equals_the_recounting_cut(text: str, fraction: float, keep: str) -> None:
    """A text whose count is known is cut from the ids of its kept part only, with the same result."""
    counter = get_counter("o200k_base")
    limit = int(len(counter.encoding.encode_ordinary(text)) * fraction)
    COUNT_CACHE.clear()
    want = counter._truncate_by_recounting(text, limit, keep=keep)  # type: ignore[attr-defined]
    COUNT_CACHE.clear()
    fast_cut._memo.last = None
    counter.count(text)  # known count, no ids: the partial path
    saved = fast_cut.PARTIAL_MIN_CHARS
    fast_cut.PARTIAL_MIN_CHARS = 0
    try:
        got = truncate_once(counter, text, limit, keep)  # type: ignore[arg-type]
    finally:
        fast_cut.PARTIAL_MIN_CHARS = saved
    assert got == want


def test_a_long_measured_text_is_not_encoded_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast counter measures a long text without ids; cutting it then encodes about the kept part only."""
    counter = get_counter("o200k_base")
    text = "".join(f"line {i} of a long document about budgets\n" for i in range(20_000))
    COUNT_CACHE.clear()
    fast_cut._memo.last = None
    total = counter.count(text)
    encoded: list[int] = []
    real = fast_cut._encode
    monkeypatch.setattr(fast_cut, "_encode", lambda c, t: encoded.append(len(t)) or real(c, t))
    out = counter.truncate(text, total // 10)
    assert out == counter._truncate_by_recounting(text, total // 10)  # type: ignore[attr-defined]
    assert sum(encoded) < len(text) // 5


@given(
    text=texts,
    fractions=st.lists(st.floats(0, 1.2), min_size=1, max_size=5),
    keep=st.sampled_from(["head", "tail", "middle"]),
    partial=st.booleans(),
)
def test_repeated_cuts_of_one_text_reuse_ids_and_bytes_with_the_same_results(
    text: str, fractions: list[float], keep: str, partial: bool
) -> None:
    """Cuts of one text to several limits (refill regrowing a cut, a search over sizes) reuse the ids encoded
    before, and still return the reference algorithm's strings."""
    counter = get_counter("o200k_base")
    n = len(counter.encoding.encode_ordinary(text))
    limits = [int(n * f) for f in fractions]
    COUNT_CACHE.clear()
    want = [counter._truncate_by_recounting(text, k, keep=keep) for k in limits]  # type: ignore[attr-defined]
    COUNT_CACHE.clear()
    fast_cut._memo.__dict__.clear()
    if partial:
        counter.count(text)  # known count, no ids: the partial path
    saved = fast_cut.PARTIAL_MIN_CHARS
    fast_cut.PARTIAL_MIN_CHARS = 0
    try:
        got = [truncate_once(counter, text, k, keep) for k in limits]  # type: ignore[arg-type]
    finally:
        fast_cut.PARTIAL_MIN_CHARS = saved
    assert got == want


def test_a_regrown_cut_encodes_nothing_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cutting a measured long text, then cutting it a little longer, encodes once."""
    counter = get_counter("o200k_base")
    text = "".join(f"line {i} of a long document about budgets\n" for i in range(20_000))
    COUNT_CACHE.clear()
    fast_cut._memo.__dict__.clear()
    total = counter.count(text)
    encoded: list[int] = []
    real = fast_cut._encode
    monkeypatch.setattr(fast_cut, "_encode", lambda c, t: encoded.append(len(t)) or real(c, t))
    first = counter.truncate(text, total // 10)
    again = counter.truncate(text, total // 10 + 3)
    assert len(encoded) == 1 and again.startswith(first) and len(again) > len(first)
    assert again == counter._truncate_by_recounting(text, total // 10 + 3)  # type: ignore[attr-defined]


def test_a_regrown_head_cut_decodes_only_the_ids_it_adds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Growing a head cut decodes the added ids only, and gives the reference cut (multi-byte text)."""
    counter = get_counter("o200k_base")
    text = "".join(f"ligne {i}: café 🙂 日本語 données\n" for i in range(3_000))
    COUNT_CACHE.clear()
    fast_cut._memo.__dict__.clear()
    n = counter.count(text)
    decoded: list[int] = []
    real = fast_cut._decode_bytes
    monkeypatch.setattr(fast_cut, "_decode_bytes", lambda c, ids: decoded.append(len(ids)) or real(c, ids))
    for limit in (n // 3, n // 3 + 1, n // 3 + 7, n // 2):
        decoded.clear()
        assert counter.truncate(text, limit) == counter._truncate_by_recounting(text, limit)  # type: ignore[attr-defined]
        if limit != n // 3:
            assert sum(decoded) < 2 * (limit - n // 3) + 16  # the added ids, not the whole head again


def _decode_head_reference(counter: TiktokenCounter, ids: list[int], k: int) -> tuple[str, int]:
    """What ``_decode_head`` gave before it read the cut off the text: a decode of the first ``k`` ids."""
    data = counter.encoding.decode_bytes(ids[:k])
    whole = fast_cut._trimmed_head(data)
    return whole if whole is not None else (data.decode("utf-8", "ignore"), -1)


_ascii = st.lists(
    st.one_of(st.sampled_from([p for p in TOKEN_PIECES if p.isascii()]), st.text(string.printable, max_size=8)),
    max_size=60,
).map("".join)


@given(text=st.one_of(texts, _ascii), prefix=st.floats(0, 1), fraction=st.floats(0, 1))
def test_a_head_cut_read_off_the_text_equals_the_decoded_ids(text: str, prefix: float, fraction: float) -> None:
    """The first k ids' text (and trimmed bytes), read off the text less the ids after them, equals their decode.

    The view's head is the ids of a prefix ending where no token spans (the partial path) or of the whole
    text; every k in it, ASCII and multi-byte text alike (the two ways ``_decode_head`` reads it).
    """
    counter = TiktokenCounter("o200k_base")
    p = fast_cut._next_neutral(counter, text, int(len(text) * prefix)) if text else None
    end = len(text) if p is None else p
    ids = counter.encoding.encode_ordinary(text[:end])
    view = fast_cut._Ids(ids, [], len(ids), text, end, len(text))
    for k in sorted({0, len(ids), int(len(ids) * fraction), max(0, len(ids) - 1), len(ids) // 2 + 1}):
        if k > len(ids):
            continue
        fast_cut._memo.__dict__.pop("head", None)
        assert fast_cut._decode_head(counter, view, k) == _decode_head_reference(counter, ids, k)


@given(text=st.one_of(texts, _ascii), start=st.floats(0, 1), fraction=st.floats(0, 1))
def test_a_tail_cut_read_off_the_text_equals_the_decoded_ids(text: str, start: float, fraction: float) -> None:
    """The last k ids' text (and trimmed leading bytes), read off the text less the ids before them, equals
    their decode (``_decode(..., from_end=True)``): the view's tail is the ids of a suffix starting where no
    token spans (the partial path) or of the whole text."""
    counter = TiktokenCounter("o200k_base")
    p = fast_cut._next_neutral(counter, text, int(len(text) * start)) if text else None
    begin = 0 if p is None else p
    ids = counter.encoding.encode_ordinary(text[begin:])
    view = fast_cut._Ids([], ids, len(ids), text, 0, begin)
    for k in sorted({1, len(ids), int(len(ids) * fraction), max(1, len(ids) - 1), len(ids) // 2 + 1}):
        if k > len(ids):
            continue
        assert fast_cut._decode_tail(counter, view, k) == fast_cut._decode(counter, ids[len(ids) - k :], from_end=True)
