"""Duplicate detection for reference compression: normalised words, shingle sketches, candidate pairs (§6.7.3).

Words are mapped to stable integers (the CRC32 of their UTF-8 bytes) and a
shingle is a tuple of ``size`` consecutive word ids; integer tuples hash
identically in every process (no hash-seed dependence).  Each text is
sketched by the ``_SKETCH`` smallest distinct hashes of its shingles
(bottom-k), which is also the key equal shingle sets share.  Candidate pairs
come from an inverted index over sketch values: segments sharing at least
``k·threshold/3`` sketch values (near-duplicates share about ``k·Jaccard``)
are verified with the exact Jaccard of their full shingle sets, built for
candidates only.  The cost is near-linear in the material rather than
quadratic.  The compiler's :class:`TurnCache` keeps the sketches of texts
already seen, so the next turn of a conversation sketches only what is new.

:func:`find_exact_duplicates` is the cheap mode (``CompilerConfig(near_duplicates=False)``):
only texts with equal normalised words pair, no shingles.

>>> a = shingles("Quarterly revenue grew 12% year over year.", 3)
>>> jaccard(a, shingles("quarterly revenue  grew 12% year over year", 3))
1.0
"""

from __future__ import annotations

import heapq
import math
import re
import string
import zlib
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from tokenbox_core.compiler._turn_cache import TurnCache

__all__ = ["find_duplicates", "find_exact_duplicates", "jaccard", "normalise", "shingles", "text_sketch"]

# punctuation (except %) and the separators \x1c-\x1f, which str.split takes for whitespace, become spaces
_PUNCTUATION = str.maketrans({c: " " for c in string.punctuation.replace("%", "") + "\x1c\x1d\x1e\x1f"})
_PUNCTUATION_BYTES = bytes(range(256)).translate(bytes.maketrans(bytes(sorted(_PUNCTUATION)), b" " * len(_PUNCTUATION)))
# what str.split() takes for whitespace beyond ASCII (every c with c.isspace(), c > "\x7f"; a test checks)
_UNICODE_SPACE = re.compile("[\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")
_SKETCH = 16


def normalise(text: str) -> list[str]:
    """Lower-cased words, punctuation (except ``%``) and spacing ignored."""
    return text.lower().translate(_PUNCTUATION).split()


def _word_ids(text: str) -> tuple[int, ...]:
    """The text's normalised words as stable integers: the CRC32 of each word's UTF-8 bytes.

    The words are :func:`normalise`'s, found with bytes operations (C speed, about 4x faster than
    ``str.translate``): the punctuation is ASCII, so it can be blanked in the UTF-8 bytes, and ``bytes.split``
    splits where ``str.split`` does unless the text holds non-ASCII whitespace (then ``str`` does the split).
    """
    lowered = text.lower()
    if lowered.isascii():
        words = lowered.encode("ascii").translate(_PUNCTUATION_BYTES).split()
    elif _UNICODE_SPACE.search(lowered) is None:
        words = lowered.encode("utf-8", "surrogatepass").translate(_PUNCTUATION_BYTES).split()
    else:
        words = [word.encode("utf-8", "surrogatepass") for word in lowered.translate(_PUNCTUATION).split()]
    return tuple(map(zlib.crc32, words))


def _windows(ids: tuple[int, ...], size: int) -> Iterable[tuple[int, ...]]:
    """The ``size``-word shingles of a text given its word ids (the whole text when shorter; none when empty)."""
    if len(ids) <= size:
        return [ids] if ids else []
    return zip(*(ids[i:] for i in range(size)), strict=False)


def shingles(text: str, size: int) -> frozenset[tuple[int, ...]]:
    """The ``size``-word shingles of the normalised text (the whole text when shorter), words as stable ints."""
    return frozenset(_windows(_word_ids(text), size))


def _sketch(ids: tuple[int, ...], size: int) -> tuple[int, ...]:
    """The bottom-k sketch of a text's shingle set: its ``_SKETCH`` smallest distinct shingle hashes, ascending."""
    return tuple(heapq.nsmallest(_SKETCH, set(map(hash, _windows(ids, size)))))


def text_sketch(text: str, size: int, cache: TurnCache | None = None) -> tuple[int, ...]:
    """:func:`_sketch` of the text's words, from ``cache`` when this text was sketched before."""
    if cache is None:
        return _sketch(_word_ids(text), size)
    return cache.get("sketch", text, size, lambda: _sketch(_word_ids(text), size), _sketch_bytes)


def _sketch_bytes(sketch: tuple[int, ...]) -> int:
    return _VALUE_BYTES * len(sketch)


_VALUE_BYTES = 44  # a sketch value: a pointer and a 64-bit int object


def jaccard(a: frozenset[Any], b: frozenset[Any]) -> float:
    """``|a ∩ b| / |a ∪ b|`` (0.0 when both are empty)."""
    if not a and not b:
        return 0.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def find_exact_duplicates(texts: Sequence[str]) -> list[tuple[int, int, float]]:
    """Exact duplicate pairs ``(first, later, 1.0)``: each later text whose normalised words equal an earlier
    one's, paired with the first such text.

    >>> find_exact_duplicates(["Alpha, beta.", "gamma", "alpha beta"])
    [(0, 2, 1.0)]
    """
    first_of: dict[tuple[str, ...], int] = {}
    pairs: list[tuple[int, int, float]] = []
    for j, text in enumerate(texts):
        words = tuple(normalise(text))
        if words:
            first = first_of.setdefault(words, j)
            if first != j:
                pairs.append((first, j, 1.0))
    return pairs


def find_duplicates(
    texts: Sequence[str], threshold: float, shingle_size: int, cache: TurnCache | None = None
) -> list[tuple[int, int, float]]:
    """Duplicate pairs ``(earlier, later, similarity)``: each later text paired with its most similar earlier one.

    Exact duplicates (equal normalised words) have similarity 1.0 and pair with the first text they equal;
    near-duplicates need a shingle Jaccard >= ``threshold`` (ties go to the earliest text).  Candidates share
    enough bottom-k sketch values; each is verified exactly.  ``cache`` keeps the sketches for the next call.
    """
    ids: dict[int, tuple[int, ...]] = {}
    sets: dict[int, frozenset[tuple[int, ...]]] = {}

    def words(i: int) -> tuple[int, ...]:
        """Text ``i``'s word ids, made for the texts a sketch does not settle only."""
        if i not in ids:
            ids[i] = _word_ids(texts[i])
        return ids[i]

    def full(i: int) -> frozenset[tuple[int, ...]]:
        """Text ``i``'s exact shingle set, built for candidates only."""
        if i not in sets:
            sets[i] = frozenset(_windows(words(i), shingle_size))
        return sets[i]

    if cache is None:
        sketches = [_sketch(words(i), shingle_size) for i in range(len(texts))]
    else:
        sketches = [text_sketch(text, shingle_size, cache) for text in texts]
    equal_sets: dict[tuple[int, ...], list[int]] = {}  # sketch -> the first text of each distinct shingle set
    index: dict[int, list[int]] = {}  # sketch value -> the texts whose sketch holds it
    pairs: list[tuple[int, int, float]] = []
    for j, sketch in enumerate(sketches):
        if not sketch:
            continue
        firsts = equal_sets.setdefault(sketch, [])
        first = next((k for k in firsts if words(k) == words(j) or full(k) == full(j)), None)
        if first is None:
            firsts.append(j)
        elif words(first) == words(j) and normalise(texts[first]) == normalise(texts[j]):
            pairs.append((first, j, 1.0))  # an exact duplicate: not indexed, its first stands for it
            continue
        need = max(1, math.floor(len(sketch) * threshold / 3))  # near-duplicates share about Jaccard x k values
        shared = Counter(i for value in sketch for i in index.get(value, ()))
        best: tuple[float, int] | None = None
        for i in sorted(i for i, n in shared.items() if n >= need):
            other, current = full(i), full(j)
            if min(len(other), len(current)) < threshold * max(len(other), len(current)):
                continue  # Jaccard <= |smaller| / |larger|: cannot reach the threshold
            similarity = jaccard(other, current)
            if similarity >= threshold and (best is None or similarity > best[0]):
                best = (similarity, i)
        if best is not None:
            pairs.append((best[1], j, best[0]))
        for value in sketch:
            index.setdefault(value, []).append(j)
    return pairs
