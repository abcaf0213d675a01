"""Duplicate finding for reference compression: what the pairs mean, on generated corpora of copies and edits."""

from __future__ import annotations

import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core import CompilerConfig, ContextCompiler
from tokenbox_core.compiler import Memory
from tokenbox_core.compiler._shingles import (
    find_duplicates,
    find_exact_duplicates,
    jaccard,
    normalise,
    shingles,
    text_sketch,
)
from tokenbox_core.compiler._turn_cache import ENTRY_BYTES, TurnCache
from tokenbox_core.errors import TokenBoxError

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


def test_words_are_their_crc32_and_shingles_are_consecutive_words() -> None:
    """Word ids are the CRC32 of the normalised word (the same in every process); a short text is one shingle."""
    ids = [zlib.crc32(w.encode()) for w in ("refund", "order", "12%", "straße")]
    assert shingles("Refund, ORDER 12% Straße!", 2) == {tuple(ids[0:2]), tuple(ids[1:3]), tuple(ids[2:4])}
    assert shingles("Refund order", 3) == {tuple(ids[0:2])}
    assert shingles(" ,. ", 3) == frozenset()


@given(
    st.text(
        st.sampled_from(
            [*"aZ %.,!-'\t\n", "\x1c", "\x1f", "\x85", "\u00a0", "\u2009", "\u3000", "\u212a", "É", "ß", "\ud800", "—"]
        )
    )
)
def test_word_ids_are_the_crc32_of_normalised_words_for_any_text(text: str) -> None:
    """ASCII or not (separators, no-break spaces, a Kelvin sign that lower-cases to ASCII, lone surrogates), a
    text's word ids are the CRC32 of the UTF-8 bytes of :func:`normalise`'s words."""
    from tokenbox_core.compiler._shingles import _word_ids

    assert _word_ids(text) == tuple(zlib.crc32(w.encode("utf-8", "surrogatepass")) for w in normalise(text))


def test_the_bytes_split_knows_every_non_ascii_space() -> None:
    """The word splitter's list of non-ASCII whitespace is exactly what ``str.split`` splits at beyond ASCII."""
    from tokenbox_core.compiler._shingles import _UNICODE_SPACE

    spaces = "".join(c for c in map(chr, range(0x80, 0x110000)) if c.isspace())
    assert "".join(_UNICODE_SPACE.findall(spaces)) == spaces
    assert _UNICODE_SPACE.search("".join(c for c in map(chr, range(0x80, 0x3100)) if not c.isspace())) is None


@given(corpora(), st.sampled_from([0.3, 0.5, 0.75, 0.9, 1.0]), st.integers(1, 4))
def test_every_pair_is_a_verified_duplicate_of_an_earlier_text(corpus: list[str], threshold: float, size: int) -> None:
    """Each later text pairs at most once, with an earlier one: equal normalised words at 1.0, else a shingle
    Jaccard (computed exactly) that reaches the threshold."""
    pairs = find_duplicates(corpus, threshold, size)
    assert len({j for _, j, _ in pairs}) == len(pairs)
    assert [j for _, j, _ in pairs] == sorted(j for _, j, _ in pairs)
    for i, j, similarity in pairs:
        assert i < j
        exact = jaccard(shingles(corpus[i], size), shingles(corpus[j], size))
        if similarity == 1.0 and normalise(corpus[i]) == normalise(corpus[j]):
            continue
        assert similarity == exact >= threshold


@given(corpora(), st.sampled_from([0.3, 0.75, 1.0]), st.integers(1, 4))
def test_a_copy_of_an_earlier_text_is_always_found(corpus: list[str], threshold: float, size: int) -> None:
    """A text whose normalised words equal an earlier text's is always paired, at similarity 1.0."""
    pairs = {j: similarity for _, j, similarity in find_duplicates(corpus, threshold, size)}
    words = [normalise(t) for t in corpus]
    for j, w in enumerate(words):
        if w and w in words[:j]:
            assert pairs.get(j) == 1.0


def test_near_duplicates_pair_with_their_most_similar_earlier_text() -> None:
    """A one-word edit pairs with the text it was made from, a re-cased, re-punctuated copy with the edit; an
    unrelated text pairs with nothing."""
    base = " ".join(VOCAB * 3)
    edited = base.replace("omega", "sigma", 1)
    corpus = [base, "nothing alike at all here", edited, edited.replace(" ", ",  ").title()]
    pairs = find_duplicates(corpus, 0.6, 3)
    similarity = jaccard(shingles(base, 3), shingles(edited, 3))
    assert pairs == [(0, 2, similarity), (2, 3, 1.0)]
    assert find_duplicates(corpus, 0.99, 3) == [(2, 3, 1.0)]


@given(corpora())
def test_exact_duplicates_are_the_first_equal_earlier_text(corpus: list[str]) -> None:
    """``near_duplicates=False``: each later text pairs with the first earlier one with equal normalised words."""
    words = [normalise(t) for t in corpus]
    expected = []
    for j, w in enumerate(words):
        first = next((k for k in range(j) if words[k] == w), None)
        if w and first is not None:
            expected.append((first, j, 1.0))
    assert find_exact_duplicates(corpus) == expected


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


@given(corpora(), corpora(), st.sampled_from([0.3, 0.75, 1.0]), st.integers(1, 4))
def test_a_sketch_cache_changes_no_pair(corpus: list[str], other: list[str], threshold: float, size: int) -> None:
    """With a cache (cold, then warm, then over texts it partly holds) the pairs are those found without one."""
    cache = TurnCache()
    expected = find_duplicates(corpus, threshold, size)
    assert find_duplicates(corpus, threshold, size, cache) == expected
    assert find_duplicates(corpus, threshold, size, cache) == expected
    mixed = corpus[: len(corpus) // 2] + other
    assert find_duplicates(mixed, threshold, size, cache) == find_duplicates(mixed, threshold, size)


def test_the_turn_cache_is_keyed_by_content_and_bounded_in_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Equal texts share an entry whatever the object, the shingle size is part of the key, and the least
    recently used entries go once the estimated bytes pass the bound."""
    from tokenbox_core.compiler import _shingles as module

    made: list[tuple[int, ...]] = []
    sketch = module._sketch
    monkeypatch.setattr(module, "_sketch", lambda ids, size: made.append(ids) or sketch(ids, size))
    cache = TurnCache()
    text = "alpha beta gamma delta epsilon"
    first = text_sketch(text, 3, cache)
    assert text_sketch("".join(list(text)), 3, cache) is first and len(made) == 1  # another object, same content
    assert text_sketch(text, 2, cache) != first and len(cache) == 2
    texts = [f"text number {n} " + " ".join(f"word{i}" for i in range(20)) for n in range(3)]  # 16-value sketches
    two = TurnCache(max_bytes=2 * (ENTRY_BYTES + 16 * module._VALUE_BYTES))
    text_sketch(texts[0], 3, two)
    text_sketch(texts[1], 3, two)
    text_sketch(texts[0], 3, two)  # used again: texts[1] is now the least recently used
    text_sketch(texts[2], 3, two)
    assert len(two) == 2 and two.held_bytes <= two.max_bytes
    made.clear()
    text_sketch(texts[0], 3, two)
    text_sketch(texts[2], 3, two)
    assert made == []  # both kept
    text_sketch(texts[1], 3, two)
    assert len(made) == 1  # evicted, sketched again
    tiny = TurnCache(max_bytes=10)
    assert text_sketch(text, 3, tiny) == first and len(tiny) == 0  # an entry larger than the whole bound is not kept
