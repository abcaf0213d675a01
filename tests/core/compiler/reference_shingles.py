"""The reference compression duplicate finder as it was before the speed work (07b26d9), kept verbatim as a
reference: the properties in test_shingles.py check the shipped one gives exactly its pairs (outputs pinned)."""

from __future__ import annotations

import math
import string
import sys
import zlib
from collections import Counter, OrderedDict
from collections.abc import Sequence
from typing import Any

_PUNCTUATION = str.maketrans({c: " " for c in string.punctuation if c != "%"})
_WORD_IDS: dict[str, int] = {}
_SHINGLES: OrderedDict[tuple[str, int], tuple[tuple[int, int], list[int], tuple[int, ...]]] = OrderedDict()
_SHINGLE_CACHE_BYTES = 2 * 1024 * 1024
_SHINGLE_BYTES = 0
_WORD_MEMO = 500_000
_SKETCH = 16
_HASH_BITS = sys.hash_info.width
_HASH_LOW = -(1 << (_HASH_BITS - 1))


def normalise(text: str) -> list[str]:
    """Lower-cased words, punctuation (except ``%``) and spacing ignored."""
    return text.lower().translate(_PUNCTUATION).split()


def _word_ids(words: list[str]) -> list[int]:
    missing = set(words).difference(_WORD_IDS)
    if missing:
        if len(_WORD_IDS) + len(missing) > _WORD_MEMO:  # a memo, not a store: bounded whatever the traffic
            _WORD_IDS.clear()
            missing = set(words)
        for word in missing:
            _WORD_IDS[word] = zlib.crc32(word.encode("utf-8", "surrogatepass"))
    return list(map(_WORD_IDS.__getitem__, words))


def shingles(text: str, size: int) -> frozenset[tuple[int, ...]]:
    """The ``size``-word shingles of the normalised text (the whole text when shorter), words as stable ints."""
    return _tuple_set(_shingled(text, size)[2], size)


def _tuple_set(ids: Sequence[int], size: int) -> frozenset[tuple[int, ...]]:
    if len(ids) <= size:
        return frozenset([tuple(ids)]) if ids else frozenset()
    return frozenset(zip(*(ids[i:] for i in range(size)), strict=False))


def _shingled(text: str, size: int) -> tuple[tuple[int, int], list[int], tuple[int, ...]]:
    """A key of the shingle set (its size and the hash of its shingles' hash set), its bottom-k sketch (the
    ``_SKETCH`` smallest hashes; integer tuples hash the same in every process) and the word ids.  The tuple
    sets themselves are built only for candidate pairs (:func:`_tuple_set`); no set is kept, so the memo
    holds only integers (cheap for the garbage collector too)."""
    key = (text, size)
    found = _SHINGLES.get(key)
    if found is not None:
        _SHINGLES.move_to_end(key)
        return found
    ids = tuple(_word_ids(normalise(text)))
    if len(ids) <= size:
        hashes = frozenset([hash(ids)]) if ids else frozenset()
    else:
        hashes = frozenset(map(hash, zip(*(ids[i:] for i in range(size)), strict=False)))
    entry = ((len(hashes), hash(hashes)), _bottom_k(hashes), ids)
    # Why a cache: a conversation's next turn re-compiles mostly the same passages, memories and turns, and
    # shingling is the costliest step of reference compression.  Bounded by the bytes of the texts it keys
    # (an entry takes about 10x its text).
    global _SHINGLE_BYTES
    _SHINGLES[key] = entry
    _SHINGLE_BYTES += len(text)
    while _SHINGLE_BYTES > _SHINGLE_CACHE_BYTES and _SHINGLES:
        (old, _), _ = _SHINGLES.popitem(last=False)
        _SHINGLE_BYTES -= len(old)
    return entry


def _bottom_k(hashes: frozenset[int]) -> list[int]:
    """The ``_SKETCH`` smallest hashes, in order.  Hashes spread evenly over their range, so about
    ``4·k`` of them fall below ``4·k/n`` of it: those are sorted instead of all ``n`` (the full sort
    when fewer than ``k`` do, so the result is always exact)."""
    n = len(hashes)
    if n <= 4 * _SKETCH:
        return sorted(hashes)[:_SKETCH]
    cutoff = _HASH_LOW + (4 * _SKETCH << _HASH_BITS) // n
    below = sorted(filter(cutoff.__gt__, hashes))
    return below[:_SKETCH] if len(below) >= _SKETCH else sorted(hashes)[:_SKETCH]


def clear_caches() -> None:
    """Forget memoised shingles and word ids (benchmarks measuring a cold compile call this)."""
    global _SHINGLE_BYTES
    _SHINGLES.clear()
    _WORD_IDS.clear()
    _SHINGLE_BYTES = 0


def jaccard(a: frozenset[Any], b: frozenset[Any]) -> float:
    """``|a ∩ b| / |a ∪ b|`` (0.0 when both are empty)."""
    if not a and not b:
        return 0.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def find_duplicates(texts: Sequence[str], threshold: float, shingle_size: int) -> list[tuple[int, int, float]]:
    """Duplicate pairs ``(earlier, later, similarity)``: each later text paired with its most similar earlier one.

    Exact duplicates (equal normalised words) have similarity 1.0; near-duplicates need a shingle Jaccard
    >= ``threshold``.  Candidates share a bottom-k sketch value; each is verified exactly.
    """
    shingled = [_shingled(t, shingle_size) for t in texts]
    tuple_sets: dict[int, frozenset[tuple[int, ...]]] = {}

    def real(i: int) -> frozenset[tuple[int, ...]]:  # the exact shingle set, built for candidates only
        found = tuple_sets.get(i)
        if found is None:
            found = tuple_sets[i] = _tuple_set(shingled[i][2], shingle_size)
        return found

    # Equal shingle sets have equal keys; a key match is confirmed on the exact sets, and every Jaccard is
    # computed on the exact sets.
    exact: dict[tuple[int, int], list[int]] = {}  # key -> the first index of each distinct set with it
    index: dict[int, list[int]] = {}
    pairs: list[tuple[int, int, float]] = []
    for j, (key, sketch, ids) in enumerate(shingled):
        if not key[0]:
            continue
        firsts = exact.setdefault(key, [])
        first = next((k for k in firsts if ids == shingled[k][2] or real(k) == real(j)), None)
        if first is None:
            firsts.append(j)
        elif ids == shingled[first][2] and normalise(texts[j]) == normalise(texts[first]):
            pairs.append((first, j, 1.0))
            continue
        shared = Counter(i for value in sketch for i in index.get(value, ()))
        need = max(1, math.floor(len(sketch) * threshold / 3))  # near-duplicates share ~Jaccard x k values
        candidates = sorted(i for i, n in shared.items() if n >= need)
        best: tuple[float, int] | None = None
        for i in candidates:
            other, current = real(i), real(j)
            if min(len(other), len(current)) < threshold * max(len(other), len(current)):
                continue  # Jaccard <= |smaller| / |larger|: cannot reach the threshold
            sim = jaccard(other, current)
            if sim >= threshold and (best is None or sim > best[0]):
                best = (sim, i)
        if best is not None:
            pairs.append((best[1], j, best[0]))
        for value in sketch:
            index.setdefault(value, []).append(j)
    return pairs
