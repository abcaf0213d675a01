"""Duplicate detection for reference compression: normalised words, shingle sketches, candidate pairs (§6.7.3).

Words are mapped to stable integers (CRC32, memoised per word; a text's ids are
held packed, 4 little-endian bytes each — one join per text, and numpy reads
them without a per-word conversion) and shingles are tuples of those integers, hashed at C speed; integer tuples hash
identically in every process (no hash-seed dependence).  Each text's
shingles are hashed once, into its sketch (memoised by text across
compiles, bounded by bytes), which is also the key equal sets share; the tuple
sets are built only for candidate pairs and key matches.  Candidate pairs
come from a bottom-k sketch (the ``_SKETCH`` smallest shingle hashes of
each segment) and an inverted index over sketch values: segments sharing at
least ``k·threshold/3`` sketch values (near-duplicates share about
``k·Jaccard``) are verified with the exact Jaccard of the full shingle sets.  The cost is
near-linear in the material rather than quadratic.  With numpy installed (the ``fast`` extra), the
sketches of a call's new texts are computed in one vectorised pass (:mod:`~tokenbox_core.compiler.sketch_np`,
identical sketches); without it, text by text.

An ASCII text (the common case) is normalised as bytes — lower-cased,
punctuation and the separators ``str.split`` knows mapped to spaces by one
byte table, split — which gives exactly :func:`normalise`'s words (as bytes,
with the same CRC32 ids) at a fraction of the cost.

:func:`find_exact_duplicates` is the cheap mode (``CompilerConfig(near_duplicates=False)``):
only texts with equal normalised words pair, found through a signature (the
text lower-cased with every separator and punctuation mark but ``%`` deleted,
one C-level pass) that equal word lists always share, confirmed word by word.

>>> a = shingles("Quarterly revenue grew 12% year over year.", 3)
>>> jaccard(a, shingles("quarterly revenue  grew 12% year over year", 3))
1.0
"""

from __future__ import annotations

import math
import string
import struct
import sys
import zlib
from collections import Counter, OrderedDict, defaultdict
from collections.abc import Callable, Collection, Sequence
from contextlib import suppress
from itertools import chain, repeat
from operator import itemgetter
from typing import Any, cast

from tokenbox_core.compiler.sketch_np import CUT, sketches, unpack_ids

__all__ = ["clear_caches", "find_duplicates", "find_exact_duplicates", "jaccard", "normalise", "shingles"]

_PUNCTUATION = str.maketrans({c: " " for c in string.punctuation if c != "%"})
_SEPARATORS = "\x1c\x1d\x1e\x1f"  # whitespace to str.split, not to bytes.split
_BYTE_SPACES = bytes(
    32 if chr(b) in _SEPARATORS or (chr(b) in string.punctuation and chr(b) != "%") else b for b in range(256)
)
_BYTE_WORDS = bytes(b + 32 if 65 <= b <= 90 else _BYTE_SPACES[b] for b in range(256))  # lower-cased too
_BYTE_LOWER = bytes(b + 32 if 65 <= b <= 90 else b for b in range(256))
_BYTE_DELETE = (string.whitespace + _SEPARATORS + string.punctuation.replace("%", "")).encode()
_WORD_IDS: dict[str | bytes, bytes] = {}  # word -> its id, packed (_crc)
_PACK = struct.Struct("<I").pack
_SHINGLES: OrderedDict[tuple[str, int], tuple[tuple[int, ...], bytes]] = OrderedDict()
_SHINGLE_CACHE_BYTES = 2 * 1024 * 1024
_SHINGLE_BYTES = 0
_WORD_MEMO = 500_000
_SKETCH = 16
_PAIRS: OrderedDict[tuple[tuple[str, ...], float, int], tuple[int, list[tuple[int, int, float]]]] = OrderedDict()
_SCANS: OrderedDict[tuple[tuple[str, ...], float, int], _Scan] = OrderedDict()
_PAIRS_KEPT = 8  # calls (of each kind), and at most _PAIRS_CHARS characters of the texts they hold on to
_PAIRS_CHARS = 4 * 1024 * 1024
_PAIRS_HELD = 0
_SCANS_HELD = 0
_HASH_BITS = sys.hash_info.width
_HASH_LOW = -(1 << (_HASH_BITS - 1))


def normalise(text: str) -> list[str]:
    """Lower-cased words, punctuation (except ``%``) and spacing ignored."""
    return text.lower().translate(_PUNCTUATION).split()


def _words(text: str) -> list[str] | list[bytes]:
    """:func:`normalise`'s words; as bytes for an ASCII text (same words, same CRC32, cheaper)."""
    if text.isascii():
        return text.encode("ascii").translate(_BYTE_WORDS).split()  # one pass: lower-case and separators
    return normalise(text)


def _signature(text: str) -> bytes:
    """The normalised words concatenated (equal for texts whose :func:`normalise` words are equal)."""
    if text.isascii():
        return text.encode("ascii").translate(_BYTE_LOWER, _BYTE_DELETE)
    return "".join(normalise(text)).encode("utf-8", "surrogatepass")


def _crc(word: str | bytes) -> bytes:
    """A word's id: its CRC32 (of its UTF-8 bytes), as 4 little-endian bytes."""
    return _PACK(zlib.crc32(word if isinstance(word, bytes) else word.encode("utf-8", "surrogatepass")))


def _packed(words: Sequence[str | bytes]) -> bytes:
    """The words' ids (:func:`_crc`) one after another: one C-level ``itemgetter`` call over the memo and
    one join (a text with a word not seen before has its new words put in, then is looked up again)."""
    if len(words) > 1:  # itemgetter of one key gives the value, not a 1-tuple
        try:
            return b"".join(itemgetter(*words)(_WORD_IDS))
        except KeyError:
            if _learn(words):
                with suppress(KeyError):  # another thread may have emptied the memo meanwhile
                    return b"".join(itemgetter(*words)(_WORD_IDS))
    return b"".join(map(_crc, words))  # one word, or more new words than the memo keeps


def _learn(words: Sequence[str | bytes]) -> bool:
    """Put the words the memo lacks into it (emptying it first when it would grow past ``_WORD_MEMO``);
    False, and the memo left as it is, when the text's words alone are more than it holds."""
    missing = set(words).difference(_WORD_IDS)
    if len(_WORD_IDS) + len(missing) > _WORD_MEMO:  # a memo, not a store: bounded whatever the traffic
        distinct = set(words)
        if len(distinct) > _WORD_MEMO:
            return False
        _WORD_IDS.clear()
        missing = distinct
    new = list(missing)
    # one text's words are all bytes (an ASCII text, :func:`_words`) or all str: CRC32'd by a C-level map
    if new and type(new[0]) is str:
        raw = [w.encode("utf-8", "surrogatepass") for w in cast("list[str]", new)]
    else:
        raw = cast("list[bytes]", new)
    _WORD_IDS.update(zip(new, map(_PACK, map(zlib.crc32, raw)), strict=True))
    return True


def shingles(text: str, size: int) -> frozenset[tuple[int, ...]]:
    """The ``size``-word shingles of the normalised text (the whole text when shorter), words as stable ints."""
    return _tuple_set(_shingled(text, size)[1], size)


def _tuple_set(packed: bytes, size: int) -> frozenset[tuple[int, ...]]:
    ids = unpack_ids(packed)
    if len(ids) <= size:
        return frozenset([ids]) if ids else frozenset()
    return frozenset(zip(*(ids[i:] for i in range(size)), strict=False))


def _shingled(text: str, size: int) -> tuple[tuple[int, ...], bytes]:
    """The bottom-k sketch of the text's shingle set (the ``_SKETCH`` smallest shingle hashes; integer tuples
    hash the same in every process) and its word ids (packed, :func:`_packed`).  Equal shingle sets have
    equal sketches, so the sketch is also the key under which equal sets are looked for.  The tuple sets
    themselves are built only for candidate pairs (:func:`_tuple_set`); no set is kept, so the memo holds
    only integers and bytes (cheap for the garbage collector too)."""
    key = (text, size)
    found = _SHINGLES.get(key)
    if found is not None:
        with suppress(KeyError):  # another thread may have just evicted it
            _SHINGLES.move_to_end(key)
        return found
    packed = _packed(_words(text))
    return _store(key, (tuple(_bottom_k(_hashes(unpack_ids(packed), size))), packed))


def _hashes(ids: tuple[int, ...], size: int) -> list[int]:
    if len(ids) <= size:
        return [hash(ids)] if ids else []
    return list(map(hash, zip(*(ids[i:] for i in range(size)), strict=False)))


def _store(key: tuple[str, int], entry: tuple[tuple[int, ...], bytes]) -> tuple[tuple[int, ...], bytes]:
    # Why a cache: a conversation's next turn re-compiles mostly the same passages, memories and turns, and
    # shingling is the costliest step of reference compression.  Bounded by the bytes of the texts it keys
    # (an entry takes about 10x its text).
    global _SHINGLE_BYTES
    found = _SHINGLES.get(key)
    if found is not None:  # the same text twice in one batch: held (and counted) once
        return found
    _SHINGLES[key] = entry
    _SHINGLE_BYTES += len(key[0])
    while _SHINGLE_BYTES > _SHINGLE_CACHE_BYTES and _SHINGLES:
        (old, _), _ = _SHINGLES.popitem(last=False)
        _SHINGLE_BYTES -= len(old)
    return entry


def _shingled_many(texts: Sequence[str], size: int) -> list[tuple[tuple[int, ...], bytes]]:
    """:func:`_shingled` of each text; the sketches of the texts not memoised are computed in one vectorised
    pass when numpy is installed (``sketch_np``, identical sketches), else one by one."""
    out: list[tuple[tuple[int, ...], bytes] | None] = [_SHINGLES.get((t, size)) for t in texts]
    missing = [n for n, found in enumerate(out) if found is None]
    if len(missing) > 1:
        packed = [_packed(_words(texts[n])) for n in missing]  # each text's words dropped once packed
        batch = sketches(packed, size, _SKETCH, _HASH_BITS)
        if batch is None:  # no numpy, or too few words to pay for it: the same sketches one by one
            batch = [_bottom_k(_hashes(unpack_ids(ids), size)) for ids in packed]
        for n, sketch, ids in zip(missing, batch, packed, strict=True):
            out[n] = _store((texts[n], size), (tuple(sketch), ids))
    return [found if found is not None else _shingled(t, size) for found, t in zip(out, texts, strict=True)]


def _bottom_k(hashes: Collection[int]) -> list[int]:
    """The ``_SKETCH`` smallest distinct hashes, in order.  Hashes spread evenly over their range, so about
    ``CUT·k`` of the ``n`` (``len(hashes)``, at least the distinct count) fall below ``CUT·k/n`` of it: only
    those are sorted (all of them when fewer than ``k`` distinct ones do, so the result is always exact; the
    numpy path, :mod:`~tokenbox_core.compiler.sketch_np`, applies the same rule)."""
    n = len(hashes)
    if n <= CUT * _SKETCH:
        return sorted(set(hashes))[:_SKETCH]
    cutoff = _HASH_LOW + (CUT * _SKETCH << _HASH_BITS) // n
    below = {h for h in hashes if h < cutoff}
    if len(below) < _SKETCH:
        return sorted(set(hashes))[:_SKETCH]
    return sorted(below)[:_SKETCH]


def clear_caches() -> None:
    """Forget memoised shingles and word ids (benchmarks measuring a cold compile call this)."""
    global _SHINGLE_BYTES, _PAIRS_HELD, _SCANS_HELD
    _SHINGLES.clear()
    _WORD_IDS.clear()
    _PAIRS.clear()
    _SCANS.clear()
    _SHINGLE_BYTES = _PAIRS_HELD = _SCANS_HELD = 0


def jaccard(a: frozenset[Any], b: frozenset[Any]) -> float:
    """``|a ∩ b| / |a ∪ b|`` (0.0 when both are empty)."""
    if not a and not b:
        return 0.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def find_exact_duplicates(texts: Sequence[str]) -> list[tuple[int, int, float]]:
    """Exact duplicate pairs ``(first, later, 1.0)``: each later text whose normalised words equal an earlier
    one's, paired with the first such text (no shingles: a signature pass, words compared on collisions only).
    Remembered like :func:`find_duplicates`'s pairs.

    >>> find_exact_duplicates(["Alpha, beta.", "gamma", "alpha beta"])
    [(0, 2, 1.0)]
    """
    return _remembered(tuple(texts), -1.0, 0, _find_exact)


def _find_exact(texts: Sequence[str], threshold: float, shingle_size: int) -> list[tuple[int, int, float]]:
    groups: dict[bytes, list[int]] = {}
    pairs: list[tuple[int, int, float]] = []
    for j, text in enumerate(texts):
        signature = _signature(text)
        if not signature:
            continue
        firsts = groups.get(signature)
        if firsts is None:
            groups[signature] = [j]
            continue
        words = normalise(text)
        first = next((k for k in firsts if normalise(texts[k]) == words), None)
        if first is None:
            firsts.append(j)
        else:
            pairs.append((first, j, 1.0))
    return pairs


def _remembered(
    texts: tuple[str, ...],
    threshold: float,
    shingle_size: int,
    find: Callable[[Sequence[str], float, int], list[tuple[int, int, float]]],
) -> list[tuple[int, int, float]]:
    """``find(texts, threshold, shingle_size)``, kept for the next identical call (bounded; a fresh list)."""
    global _PAIRS_HELD
    key = (texts, threshold, shingle_size)
    found = _PAIRS.get(key)
    if found is not None:
        with suppress(KeyError):
            _PAIRS.move_to_end(key)
        return list(found[1])
    pairs = find(texts, threshold, shingle_size)
    size = sum(map(len, key[0]))
    if size <= _PAIRS_CHARS:
        _PAIRS[key] = (size, pairs)
        _PAIRS_HELD += size
        while _PAIRS and (len(_PAIRS) > _PAIRS_KEPT or _PAIRS_HELD > _PAIRS_CHARS):
            _PAIRS_HELD -= _PAIRS.popitem(last=False)[1][0]
    return list(pairs)


def find_duplicates(texts: Sequence[str], threshold: float, shingle_size: int) -> list[tuple[int, int, float]]:
    """Duplicate pairs ``(earlier, later, similarity)``: each later text paired with its most similar earlier one.

    Exact duplicates (equal normalised words) have similarity 1.0; near-duplicates need a shingle Jaccard
    >= ``threshold``.  Candidates share a bottom-k sketch value; each is verified exactly.

    The scan goes through the texts in order, and the pairs of a text depend only on the texts before it,
    so the scans of the last few calls are kept (bounded by calls and characters): the same texts again —
    a retry, an ablation, a page — cost one tuple look-up, and texts that extend an earlier call's — the
    next turn of a conversation, whose new messages come last — resume that scan where it stopped.
    """
    global _SCANS_HELD
    done = tuple(texts)
    key = (done, float(threshold), shingle_size)
    scan = _SCANS.get(key)
    if scan is not None:
        with suppress(KeyError):
            _SCANS.move_to_end(key)
        return list(scan.pairs)
    scan = _resumable(key) or _Scan(float(threshold), shingle_size)
    scan.extend(done[len(scan.texts) :])
    size = sum(map(len, done))
    if size <= _PAIRS_CHARS:
        _SCANS[key] = scan
        _SCANS_HELD += size
        while _SCANS and (len(_SCANS) > _PAIRS_KEPT or _SCANS_HELD > _PAIRS_CHARS):
            _SCANS_HELD -= sum(map(len, _SCANS.popitem(last=False)[1].texts))
    return list(scan.pairs)


def _resumable(key: tuple[tuple[str, ...], float, int]) -> _Scan | None:
    """The kept scan over the longest proper prefix of ``key``'s texts (taken out of the memo), if any."""
    global _SCANS_HELD
    texts, threshold, size = key
    best: tuple[tuple[str, ...], float, int] | None = None
    for kept in list(_SCANS):
        done = kept[0]
        if kept[1:] != (threshold, size) or not len(done) < len(texts) or (best and len(best[0]) >= len(done)):
            continue
        if texts[: len(done)] == done:
            best = kept
    if best is None:
        return None
    scan = _SCANS.pop(best, None)
    if scan is not None:
        _SCANS_HELD -= sum(map(len, best[0]))
    return scan


class _Scan:
    """The duplicate scan's state after ``texts``: sketches, exact shingle sets built so far, the equal-set
    groups, the inverted index over sketch values and the pairs found."""

    __slots__ = ("exact", "index", "pairs", "shingled", "size", "texts", "threshold", "tuple_sets")

    def __init__(self, threshold: float, size: int) -> None:
        self.threshold = threshold
        self.size = size
        self.texts: tuple[str, ...] = ()
        self.shingled: list[tuple[tuple[int, ...], bytes]] = []
        self.tuple_sets: dict[int, frozenset[tuple[int, ...]]] = {}
        # Equal shingle sets have equal sketches; a sketch match is confirmed on the exact sets, and every
        # Jaccard is computed on the exact sets.
        self.exact: dict[tuple[int, ...], list[int]] = {}  # sketch -> the first index of each distinct set
        self.index: defaultdict[int, list[int]] = defaultdict(list)  # .get (the look-ups) never adds a key
        self.pairs: list[tuple[int, int, float]] = []

    def real(self, i: int) -> frozenset[tuple[int, ...]]:
        """The exact shingle set of text ``i``, built for candidates only."""
        found = self.tuple_sets.get(i)
        if found is None:
            found = self.tuple_sets[i] = _tuple_set(self.shingled[i][1], self.size)
        return found

    def extend(self, texts: Sequence[str]) -> None:
        start = len(self.shingled)
        self.texts += tuple(texts)
        self.shingled.extend(_shingled_many(texts, self.size))
        for j in range(start, len(self.shingled)):
            self._add(j)

    def _add(self, j: int) -> None:
        sketch, ids = self.shingled[j]
        if not sketch:
            return
        shingled, real, threshold, index = self.shingled, self.real, self.threshold, self.index
        firsts = self.exact.get(sketch)
        if firsts is None:  # the common case: no earlier text has this sketch
            self.exact[sketch] = [j]
        else:
            first = next((k for k in firsts if ids == shingled[k][1] or real(k) == real(j)), None)
            if first is None:
                firsts.append(j)
            elif ids == shingled[first][1] and normalise(self.texts[j]) == normalise(self.texts[first]):
                self.pairs.append((first, j, 1.0))
                return
        hits = list(chain.from_iterable(map(index.get, sketch, repeat(()))))
        need = max(1, math.floor(len(sketch) * threshold / 3))  # near-duplicates share ~Jaccard x k values
        # a candidate shares >= need values, so hits then repeat at least need - 1 times: most texts share
        # fewer (checked on a set, cheaper than counting)
        if len(hits) >= need and (need == 1 or len(hits) - len(set(hits)) >= need - 1):
            candidates = sorted(i for i, n in Counter(hits).items() if n >= need)
            best: tuple[float, int] | None = None
            for i in candidates:
                other, current = real(i), real(j)
                if min(len(other), len(current)) < threshold * max(len(other), len(current)):
                    continue  # Jaccard <= |smaller| / |larger|: cannot reach the threshold
                sim = jaccard(other, current)
                if sim >= threshold and (best is None or sim > best[0]):
                    best = (sim, i)
            if best is not None:
                self.pairs.append((best[1], j, best[0]))
        for value in sketch:
            index[value].append(j)
