"""Cutting to at most N tokens of an encoding (``tokens/cut.py``): within the limit, valid text, the part the mode
keeps, and the largest such cut — the same string as decoding the kept ids and re-counting the whole cut."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core.tokens import COUNT_CACHE, get_counter
from tokenbox_core.tokens._cut import Ends, fit, splits
from tokenbox_core.tokens._tiktoken_counter import TiktokenCounter

from .conftest import TOKEN_PIECES

COUNTERS = [TiktokenCounter("o200k_base"), TiktokenCounter("cl100k_base"), get_counter("o200k_base")]
_short = st.lists(st.one_of(st.sampled_from(TOKEN_PIECES), st.text(max_size=8)), max_size=60).map("".join)
texts = st.one_of(_short, st.tuples(_short, st.integers(2, 120)).map(lambda t: t[0] * t[1]))  # long: past the window


def definition(counter: TiktokenCounter, text: str, limit: int, keep: str) -> str:
    """The cut by definition: the text of the kept ids (a split character's bytes dropped), for the largest
    ``k <= limit`` whose text re-encodes to at most ``k`` tokens."""
    enc = counter.encoding
    ids = enc.encode_ordinary(text)
    if len(ids) <= limit:
        return text

    def text_of(kept: list[int], trim_end: bool) -> str:
        data = enc.decode_bytes(kept)
        for trim in range(4):
            try:
                return (data[: len(data) - trim] if trim_end else data[trim:]).decode("utf-8")
            except UnicodeDecodeError:
                continue
        return data.decode("utf-8", "ignore")

    for k in range(limit, -1, -1):
        h = k if keep == "head" else (k + 1) // 2 if keep == "middle" else 0
        out = text_of(ids[:h], True) + (text_of(ids[len(ids) - (k - h) :], False) if k - h else "")
        if len(enc.encode_ordinary(out)) <= k:
            return out
    return ""


@given(text=texts, fraction=st.floats(0, 1.1), keep=st.sampled_from(["head", "tail", "middle"]))
def test_a_cut_keeps_at_most_the_limit_of_the_part_asked_for_and_is_the_largest(
    text: str, fraction: float, keep: str
) -> None:
    """At most ``limit`` tokens, valid text, a prefix / suffix / both ends as ``keep`` says, and the largest
    such cut (the definition's string, re-counted in full)."""
    for counter in COUNTERS:
        limit = int(len(counter.encoding.encode_ordinary(text)) * fraction)
        COUNT_CACHE.clear()
        kept = counter.truncate(text, limit, keep=keep)  # type: ignore[arg-type]
        assert len(counter.encoding.encode_ordinary(kept)) <= limit
        kept.encode("utf-8")  # valid text: no lone surrogate, no split character
        if keep == "head":
            assert text.startswith(kept)
        elif keep == "tail":
            assert text.endswith(kept)
        else:
            assert any(text.startswith(kept[:i]) and text.endswith(kept[i:]) for i in range(len(kept) + 1))
        assert kept == definition(counter, text, limit, keep)
        assert counter.count(kept) == len(counter.encoding.encode_ordinary(kept))  # the cut's count, cached


@pytest.mark.parametrize("keep", ["head", "tail", "middle"])
def test_a_cut_to_zero_is_empty_and_a_text_that_fits_is_whole(keep: str) -> None:
    """A limit of 0 keeps nothing; a text within the limit comes back unchanged."""
    counter = TiktokenCounter("o200k_base")
    assert counter.truncate("alpha beta gamma", 0, keep=keep) == ""  # type: ignore[arg-type]
    assert counter.truncate("alpha beta gamma", 3, keep=keep) == "alpha beta gamma"  # type: ignore[arg-type]


_lefts = st.tuples(texts, st.sampled_from(["\n", "\n\n", "x", "Word", "\r\n", "日本", " "])).map("".join)
_rights = st.tuples(st.sampled_from(["word", "1234", "!!", ".", " x", "/usr", "'s", "日本", "\n"]), texts).map("".join)


@given(left=_lefts, right=_rights)
def test_a_join_no_token_spans_counts_as_its_two_parts(left: str, right: str) -> None:
    """Where ``splits`` says no token spans a join, the joined text counts as the sum of its parts."""
    if not splits(left, right):
        return
    for counter in COUNTERS:
        enc = counter.encoding
        assert len(enc.encode_ordinary(left + right)) == len(enc.encode_ordinary(left)) + len(
            enc.encode_ordinary(right)
        )


def fit_by_definition(counter: TiktokenCounter, text: str, suffix: str, alloc: int, keep: str) -> tuple[str, int]:
    """The largest cut whose text + suffix fits ``alloc``, by definition: lower the cut's limit until it does."""
    enc = counter.encoding
    limit = alloc - (len(enc.encode_ordinary(text + suffix)) - len(enc.encode_ordinary(text)))
    while limit > 0:
        out = definition(counter, text, limit, keep)
        size = len(enc.encode_ordinary(out + suffix)) if out else 0
        if size <= alloc:
            return out, size
        limit -= 1
    return "", 0


@given(
    text=texts,
    fraction=st.floats(0, 1.1),
    keep=st.sampled_from(["head", "tail", "middle"]),
    suffix=st.sampled_from(["\n\n", "\n", " ", "/", "", "x", "\n---\n"]),
)
def test_fit_is_the_largest_cut_whose_text_and_suffix_fit_and_says_its_count(
    text: str, fraction: float, keep: str, suffix: str
) -> None:
    """``fit`` returns the definition's cut for text + suffix within ``alloc`` and the exact count of both,
    whether it encodes the whole text (its count unknown) or only the ends a cut can keep (its count known,
    alone or with the suffix, as the box measures it), or re-uses the ids a previous cut of the text kept."""
    for counter in COUNTERS:
        alloc = int(len(counter.encoding.encode_ordinary(text + suffix)) * fraction)
        expected = fit_by_definition(counter, text, suffix, alloc, keep)
        for known in (None, text + suffix, text):
            COUNT_CACHE.clear()
            if known is not None:
                counter.count(known)
            assert fit(counter, text, suffix, alloc, keep) == expected  # type: ignore[arg-type]
        ends = Ends()  # a next cut of the same text, a token larger or smaller, from the ids the last one kept
        for grown in (alloc, alloc + 1, alloc - 1):
            want = fit_by_definition(counter, text, suffix, grown, keep)
            assert fit(counter, text, suffix, grown, keep, ends) == want  # type: ignore[arg-type]


@given(
    text=texts,
    suffix=st.sampled_from(["\n\n", "\n", " ", "x", "'s", "日本", "/"]),
    bounds=st.tuples(st.floats(0, 1), st.floats(0, 1)),
)
def test_pieces_and_joins_never_built_count_what_the_whole_text_does(
    text: str, suffix: str, bounds: tuple[float, float]
) -> None:
    """A long text counted or encoded piece by piece, and a text's count with a suffix taken at its end, equal
    tiktoken's count and ids of the whole (pieces shrunk to a few characters so short texts are cut too)."""
    from tokenbox_core.tokens import _cut, _fast, _tiktoken_counter

    start, stop = sorted(int(b * len(text)) for b in bounds)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_cut, "_PIECE", 8)
        patch.setattr(_fast, "_PIECES_ABOVE", 16)
        patch.setattr(_tiktoken_counter, "_IDS_ARRAY_ABOVE", 16)
        assert "".join(_cut.pieces(text)) == text and "".join(_cut.pieces(text, start, stop)) == text[start:stop]
        for counter in COUNTERS:
            enc = counter.encoding
            joined = len(enc.encode_ordinary(text + suffix))
            COUNT_CACHE.clear()
            assert _cut.count_joined(counter, text, suffix, True) == joined  # neither count known: one count
            COUNT_CACHE.clear()
            assert counter.count(text) == len(enc.encode_ordinary(text))
            assert _cut.count_joined(counter, text, suffix, True) == joined  # the text's known: its end counted
            assert _cut.count_joined(counter, text, suffix, True) == joined  # the joined count known
            patch.setattr(_cut, "_JOIN_AT_MOST", 0)  # every text long: never joined
            COUNT_CACHE.clear()
            assert _cut.count_joined(counter, text, suffix, True) == joined
            patch.setattr(_cut, "_JOIN_AT_MOST", 1 << 16)
            assert [int(i) for i in _cut.encode(counter, text, start, stop)] == enc.encode_ordinary(text[start:stop])
