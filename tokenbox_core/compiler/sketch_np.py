"""The shingle sketches of many texts at once, with numpy (the optional ``fast`` extra), identical to the pure path.

:mod:`~tokenbox_core.compiler.shingles` sketches a text as the ``k`` smallest distinct hashes of its
``size``-word shingles, each shingle a tuple of word ids hashed by Python's ``hash`` (chapter §6.7.3's
near-duplicate detection).  For a first compile that is one ``hash`` call per word of the material and a
per-text selection.  Here every text's shingle hashes are computed in one vectorised pass — CPython's
tuple hash (xxHash-based, 64-bit, the word ids being their own ``hash``) re-implemented on ``uint64``
lanes, wrapping like the C code — and the bottom-``k`` of all texts is taken with the pure path's cut-off
rule (only hashes below ``4k/n`` of the range can be among the ``k`` smallest, checked) and one sort.

:func:`sketches` returns ``None`` when numpy is missing or ``hash`` is not CPython's 64-bit tuple hash;
the caller then takes the pure path.  A property test checks the two give the same sketches.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from struct import unpack as _unpack
from typing import Any

__all__ = ["CUT", "sketches", "unpack_ids"]

_MIN_WORDS = 4096  # below this, numpy's call overhead costs more than it saves
CUT = 2  # hashes below CUT·k/n of the range are sorted (~2k a text); too few distinct ones: all of them
_P1 = 11400714785074694791
_P2 = 14029467366897019727
_P5 = 2870177450012600261
_MASK = (1 << 64) - 1


def _python_tuple_hash(ids: tuple[int, ...]) -> int:
    """CPython 3.8+'s tuple hash of non-negative ints below 2**61 (their own hash), in Python."""
    acc = _P5
    for lane in ids:
        acc = (acc + lane * _P2) & _MASK
        acc = ((acc << 31) | (acc >> 33)) & _MASK
        acc = (acc * _P1) & _MASK
    acc = (acc + (len(ids) ^ (_P5 ^ 3527539))) & _MASK
    if acc == _MASK:
        return 1546275796
    return acc - (1 << 64) if acc >> 63 else acc


def _supported() -> bool:
    if sys.hash_info.width != 64 or sys.implementation.name != "cpython":
        return False
    probe = (3, 1 << 31, 4294967295, 0)
    return all(hash(probe[:n]) == _python_tuple_hash(probe[:n]) for n in range(1, 5))


_np: Any = None
_state: list[bool | None] = [None]  # None: not tried yet


def _numpy() -> Any:
    if _state[0] is None:
        try:
            import numpy
        except ImportError:
            _state[0] = False
        else:
            global _np
            _np = numpy
            _state[0] = _supported()
    return _np if _state[0] else None


def _window_hashes(np: Any, ids: Any, size: int) -> Any:
    """``hash(tuple(ids[p:p + size]))`` for every start ``p`` (as int64), computed in place (one buffer for the
    accumulator, one for the rotation)."""
    m = len(ids) - size + 1
    scaled = ids * np.uint64(_P2)
    acc = scaled[:m] + np.uint64(_P5)
    spill = np.empty_like(acc)
    p1, r31, r33 = np.uint64(_P1), np.uint64(31), np.uint64(33)
    for i in range(size):
        if i:
            acc += scaled[i : i + m]
        np.right_shift(acc, r33, out=spill)
        np.left_shift(acc, r31, out=acc)
        acc |= spill
        acc *= p1
    acc += np.uint64(size ^ (_P5 ^ 3527539))
    acc[acc == np.uint64(_MASK)] = np.uint64(1546275796)
    return acc.view(np.int64)


def unpack_ids(packed: bytes) -> tuple[int, ...]:
    """Word ids packed as 4-byte little-endian integers (``shingles._packed``), as a tuple of ints."""
    return _unpack(f"<{len(packed) >> 2}I", packed)


def sketches(packed: Sequence[bytes], size: int, k: int, hash_bits: int) -> list[list[int]] | None:
    """The bottom-``k`` sketch of each text's ``size``-shingles, its word ids given packed (4 little-endian bytes
    each; the whole id tuple hashed when it has at most ``size`` ids; empty for none), exactly as
    ``shingles._bottom_k`` over the pure hashes — or None (no numpy, another hash, or too little material
    to be worth it)."""
    long = [n for n, ids in enumerate(packed) if len(ids) > 4 * size]
    words = sum(len(packed[n]) for n in long) >> 2
    np = _numpy() if long and words >= _MIN_WORDS else None
    if np is None:
        return None
    lengths = np.array([len(packed[n]) >> 2 for n in long], dtype=np.int64)
    flat = np.frombuffer(b"".join([packed[n] for n in long]), dtype="<u4").astype(np.uint64)
    return _sketched(np, packed, long, flat, lengths, size, k, hash_bits)


def _sketched(
    np: Any, packed: Sequence[bytes], long: list[int], flat: Any, lengths: Any, size: int, k: int, bits: int
) -> list[list[int]]:
    """The sketches of the ``packed`` id lists given the ids of its ``long`` ones (more than ``size`` ids)
    concatenated in ``flat`` (``uint64``), ``lengths`` ids each."""
    out: list[list[int]] = [[] if len(ids) > 4 * size else [hash(unpack_ids(ids))] if ids else [] for ids in packed]
    if not long:
        return out
    with np.errstate(over="ignore"):
        every = _window_hashes(np, flat, size)
    counts = lengths - (size - 1)  # windows per text
    ends = np.cumsum(counts)  # where each text's windows end, once those spanning two texts are left out
    spanning = (np.cumsum(lengths)[:-1, None] - (size - 1) + np.arange(size - 1)).ravel()
    hashes = np.delete(every, spanning) if size > 1 else every
    seg = np.repeat(np.arange(len(long)), counts)
    # shingles._bottom_k's rule: with n hashes, the k smallest distinct are looked for
    # below LOW + CUT·k/n of the range, all n when n <= CUT·k (the count below is checked: exact whatever CUT)
    low, top = -(1 << (bits - 1)), (1 << 63) - 1
    limits = [top if n <= CUT * k else low + ((CUT * k) << bits) // n - 1 for n in counts.tolist()]
    keep = hashes <= np.array(limits, dtype=np.int64)[seg]
    kept_h, kept_seg = hashes[keep], seg[keep]
    # by text, then by hash: kept_seg is already ascending, so a stable sort by text of the hash order
    # (a radix sort on small integers) is the lexicographic order
    order = np.argsort(kept_h)
    small = np.int16 if len(long) < 1 << 15 else np.int64
    order = order[np.argsort(kept_seg[order].astype(small), kind="stable")]
    kept_h, kept_seg = kept_h[order], kept_seg[order]
    fresh = np.ones(len(kept_h), dtype=bool)
    fresh[1:] = (kept_h[1:] != kept_h[:-1]) | (kept_seg[1:] != kept_seg[:-1])
    kept_h, kept_seg = kept_h[fresh], kept_seg[fresh]
    per = np.bincount(kept_seg, minlength=len(long))
    begin = np.concatenate(([0], np.cumsum(per)[:-1]))
    values = kept_h.tolist()
    for t, (n, b, c) in enumerate(zip(long, begin.tolist(), per.tolist(), strict=True)):
        if c < k and limits[t] != top:  # too few below the cut-off: all of this text's hashes
            mine = hashes[ends[t] - counts[t] : ends[t]]
            out[n] = np.unique(mine)[:k].tolist()
        else:
            out[n] = values[b : b + min(c, k)]
    return out
