"""Duplicate finding for reference compression: the shipped finder against the pre-speed-work reference."""

from __future__ import annotations

import string
import struct
import sys
from unittest.mock import patch

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core import CompilerConfig, ContextCompiler
from tokenbox_core.compiler import Memory, sketch_np
from tokenbox_core.compiler import shingles as shipped
from tokenbox_core.errors import TokenBoxError

from . import reference_shingles as reference
from .conftest import evidence

VOCAB = ["alpha", "Beta", "gamma", "delta", "12%", "naïve", "Straße", "x", "omega", "épée"]
GLUE = [" ", "  ", ", ", ". ", "\n", "\t", "!", " - ", "\x1c", "\u00a0", "'", "%"]

word_lists = st.lists(st.sampled_from(VOCAB), max_size=30)


@st.composite
def texts(draw: st.DrawFn) -> str:
    words = draw(word_lists)
    out = []
    for word in words:
        out.append(word.upper() if draw(st.booleans()) and draw(st.booleans()) else word)
        out.append(draw(st.sampled_from(GLUE)))
    return "".join(out)


@st.composite
def corpora(draw: st.DrawFn) -> list[str]:
    """Texts with exact copies, re-cased and re-punctuated copies and one-word edits of earlier ones."""
    base = draw(st.lists(texts(), min_size=1, max_size=12))
    out: list[str] = []
    for text in base:
        out.append(text)
        if draw(st.booleans()):
            source = out[draw(st.integers(0, len(out) - 1))]
            kind = draw(st.sampled_from(["copy", "upper", "punct", "edit"]))
            if kind == "copy":
                out.append(source)
            elif kind == "upper":
                out.append(source.upper())
            elif kind == "punct":
                out.append(source.replace(" ", ", ") + "!")
            else:
                words = source.split()
                if words:
                    words[draw(st.integers(0, len(words) - 1))] = draw(st.sampled_from(VOCAB))
                out.append(" ".join(words))
    return out


@given(st.text(alphabet=st.sampled_from([*string.printable, "\x1c", "\x1f", "\x85", "\u00a0", "É", "ß"])))
def test_ascii_fast_path_gives_normalise_words(text: str) -> None:
    """The byte-table normalisation of an ASCII text gives exactly ``normalise``'s words (and word ids)."""
    words = shipped._words(text)
    as_text = [w.decode("ascii") if isinstance(w, bytes) else w for w in words]
    assert as_text == reference.normalise(text)
    assert list(sketch_np.unpack_ids(shipped._packed(words))) == reference._word_ids(reference.normalise(text))
    assert shipped._signature(text) == "".join(reference.normalise(text)).encode("utf-8", "surrogatepass")


@given(st.lists(texts(), max_size=12), st.integers(0, 3), st.sampled_from([3, 8, 500_000]))
def test_packed_word_ids_are_each_words_crc32(batch: list[str], known: int, memo: int) -> None:
    """``_packed`` (one itemgetter and one join per text, new words learnt first) gives each text's CRC32
    word ids as 4-byte little-endian integers, whatever the memo already holds, also when a text's new words
    overflow a small memo; ``unpack_ids`` reads them back."""
    shipped.clear_caches()
    words = [shipped._words(text) for text in batch]
    with patch.object(shipped, "_WORD_MEMO", memo):
        for listed in words[:known]:  # some words already known, the others new
            shipped._packed(listed)
        got = [shipped._packed(listed) for listed in words]
        assert len(shipped._WORD_IDS) <= max(memo, max(map(len, words), default=0))
    shipped.clear_caches()
    expected = [reference._word_ids(reference.normalise(text)) for text in batch]
    assert got == [struct.pack(f"<{len(ids)}I", *ids) for ids in expected]
    assert [list(sketch_np.unpack_ids(p)) for p in got] == expected


@given(corpora(), st.sampled_from([0.3, 0.5, 0.75, 0.9, 1.0]), st.integers(1, 4))
def test_find_duplicates_matches_the_reference(corpus: list[str], threshold: float, size: int) -> None:
    """Same pairs as the pre-speed-work finder, with cold caches and again warm."""
    shipped.clear_caches()
    reference.clear_caches()
    expected = reference.find_duplicates(corpus, threshold, size)
    assert shipped.find_duplicates(corpus, threshold, size) == expected
    assert shipped.find_duplicates(corpus, threshold, size) == expected


@given(corpora())
def test_exact_duplicates_are_the_first_equal_earlier_text(corpus: list[str]) -> None:
    """``near_duplicates=False``: each later text pairs with the first earlier one with equal normalised words."""
    words = [reference.normalise(t) for t in corpus]
    expected = []
    for j, w in enumerate(words):
        first = next((k for k in range(j) if words[k] == w), None)
        if w and first is not None:
            expected.append((first, j, 1.0))
    assert shipped.find_exact_duplicates(corpus) == expected


FACT = (
    "Quarterly revenue grew 12% year over year, driven by the enterprise segment, lower churn among mid-size "
    "customers, and the new usage-based pricing tier that launched in March across all European markets."
)


def test_exact_only_mode_keeps_exact_pointers_and_skips_near_duplicates() -> None:
    """With near-duplicates off a re-cased copy still becomes a pointer; a one-word edit stays verbatim."""
    memory = [Memory("copy", FACT.upper()), Memory("edit", FACT.replace("lower", "reduced"))]
    material = {"policy": "P", "evidence": [evidence("kb", FACT, authority=0.9)], "memory": memory}
    both = ContextCompiler(3000, config=CompilerConfig(dedupe_threshold=0.6)).compile(**material)
    exact_only = CompilerConfig(dedupe_threshold=0.6, near_duplicates=False)
    exact = ContextCompiler(3000, config=exact_only).compile(**material)
    assert sorted(r.item_id for r in both.references) == ["copy", "edit"]
    assert [(r.item_id, r.canonical_id, r.similarity) for r in exact.references] == [("copy", "kb", 1.0)]


def test_near_duplicates_setting_is_validated_and_hashed_only_when_off() -> None:
    with pytest.raises(TokenBoxError, match="near_duplicates must be True or False"):
        CompilerConfig(near_duplicates="no")  # type: ignore[arg-type]
    assert "near_duplicates" not in CompilerConfig().describe()
    assert CompilerConfig(near_duplicates=False).describe()["near_duplicates"] is False


def test_pairs_memo_is_bounded_and_returns_copies(monkeypatch: pytest.MonkeyPatch) -> None:
    """Repeated calls give equal, independent lists; the memo holds a bounded number of characters."""
    shipped.clear_caches()
    corpus = ["alpha beta gamma", "Alpha, beta gamma!", "delta"]
    first = shipped.find_duplicates(corpus, 0.9, 3)
    first.append((9, 9, 0.0))
    assert shipped.find_duplicates(corpus, 0.9, 3) == [(0, 1, 1.0)]
    monkeypatch.setattr(shipped, "_PAIRS_CHARS", 40)
    for n in range(5):
        shipped.find_duplicates([f"text number {n} " * 2, "x"], 0.9, 3)
    assert sum(sum(map(len, key[0])) for key in shipped._SCANS) <= 40
    shipped.find_duplicates(["y" * 100], 0.9, 3)  # larger than the whole bound: not kept
    assert all(key[0] != ("y" * 100,) for key in shipped._SCANS)


@given(corpora(), corpora(), st.sampled_from([0.3, 0.75, 0.9]), st.integers(1, 3), st.data())
def test_a_resumed_scan_gives_the_full_scans_pairs(
    corpus: list[str], other: list[str], threshold: float, size: int, data: st.DataObject
) -> None:
    """A call whose texts extend an earlier call's resumes that scan: same pairs as the reference, and a
    second extension of the same prefix (the first one took the scan) still scans from the start."""
    shipped.clear_caches()
    reference.clear_caches()
    cut = data.draw(st.integers(0, len(corpus)))
    shipped.find_duplicates(corpus[:cut], threshold, size)
    assert shipped.find_duplicates(corpus, threshold, size) == reference.find_duplicates(corpus, threshold, size)
    branch = corpus[:cut] + other
    assert shipped.find_duplicates(branch, threshold, size) == reference.find_duplicates(branch, threshold, size)


_ids = st.lists(st.integers(0, 2**32 - 1) | st.sampled_from([0, 1, 7, 2**31]), max_size=120).map(tuple)


@given(st.lists(_ids, max_size=8), st.integers(1, 5), st.sampled_from([1, 4, 16]))
def test_vectorised_sketches_equal_the_pure_ones(id_lists: list[tuple[int, ...]], size: int, k: int) -> None:
    """numpy's sketches (CPython's tuple hash on uint64 lanes, the same cut-off rule) are the pure path's."""
    pytest.importorskip("numpy")
    saved = sketch_np._MIN_WORDS
    sketch_np._MIN_WORDS = 0
    try:
        got = sketch_np.sketches([struct.pack(f"<{len(i)}I", *i) for i in id_lists], size, k, sys.hash_info.width)
    finally:
        sketch_np._MIN_WORDS = saved
    if not any(len(ids) > size for ids in id_lists):
        assert got is None  # nothing to vectorise
        return
    assert got is not None
    with patch.object(shipped, "_SKETCH", k):
        assert got == [shipped._bottom_k(shipped._hashes(ids, size)) for ids in id_lists]
    for ids in id_lists[:2]:
        assert sketch_np._python_tuple_hash(ids) == hash(ids)


@given(st.lists(st.lists(st.sampled_from(["a", "b", "c", "d", "e", "f"]), max_size=40), min_size=2, max_size=12))
def test_find_duplicates_with_and_without_numpy_agree(word_lists: list[list[str]]) -> None:
    """The vectorised sketches give the same pairs as the pure path (and the kept reference finder)."""
    texts = [" ".join(words) for words in word_lists] + [" ".join(word_lists[0]).upper()]
    saved = sketch_np._MIN_WORDS
    try:
        sketch_np._MIN_WORDS = 0
        shipped.clear_caches()
        vectorised = shipped.find_duplicates(texts, 0.5, 2)
        sketch_np._MIN_WORDS = 10**9
        shipped.clear_caches()
        pure = shipped.find_duplicates(texts, 0.5, 2)
    finally:
        sketch_np._MIN_WORDS = saved
        shipped.clear_caches()
    reference.clear_caches()
    assert vectorised == pure == reference.find_duplicates(texts, 0.5, 2)


def test_without_numpy_the_pure_path_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    """numpy missing (or a hash that is not CPython's 64-bit tuple hash): no vectorised sketches, same pairs."""
    texts = [" ".join(["refund", "order", str(i % 7)] * 300) for i in range(12)]
    shipped.clear_caches()
    expected = shipped.find_duplicates(texts, 0.8, 3)
    monkeypatch.setattr(sketch_np, "_state", [False])
    assert sketch_np.sketches([struct.pack("<5000I", *range(5000))], 3, 16, 64) is None
    shipped.clear_caches()
    assert shipped.find_duplicates(texts, 0.8, 3) == expected and expected
    shipped.clear_caches()


@pytest.mark.parametrize("numpy_path", [True, False])
def test_a_text_twice_in_one_batch_is_held_and_counted_once(numpy_path: bool) -> None:
    shipped.clear_caches()
    t = " ".join(f"word{i}" for i in range(5_000))  # enough words for the vectorised path
    u = " ".join(f"other{i}" for i in range(5_000))
    with patch.object(sketch_np, "_MIN_WORDS", 0 if numpy_path else sys.maxsize):
        out = shipped._shingled_many([t, u, t], 3)
    assert out[0] == out[2] == shipped._shingled(t, 3)
    assert len(shipped._SHINGLES) == 2
    assert len(t) + len(u) == shipped._SHINGLE_BYTES  # not len(t) twice: eviction takes each entry off once
