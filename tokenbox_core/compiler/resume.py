"""sha256 of a stream of byte chunks, resumed from the longest prefix it shares with a recent stream.

The compiler's hashes (``trace.input_hash``, ``trace.output_hash``) stream about a megabyte per compile,
and from one turn to the next most of it is the same, in the same place: the policy, the tools, the
evidence, then a history that only grew at its end.  :func:`digest` keeps, for its last few streams, the
chunks and the hash state at checkpoints (every ``_CHECKPOINT_BYTES`` bytes or so); a new stream is
compared with each kept one checkpoint block by checkpoint block (list equality: identity first, then
``memcmp`` — no hashing), and hashing resumes from a copy of the state at the last checkpoint whose whole
prefix is equal.  The result is ``hashlib.sha256(b"".join(chunks)).hexdigest()`` by construction (the
kept state *is* the state after those very bytes), and it can never be stale: nothing is looked up by a
key, every reused byte is compared.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left
from contextlib import suppress
from itertools import accumulate
from typing import Any

__all__ = ["clear_caches", "digest"]

_CHECKPOINT_BYTES = 64 * 1024
_KEEP = 4  # streams kept (the input and the output hash of the last couple of compiles)

_streams: list[tuple[list[bytes], tuple[tuple[int, Any], ...]]] = []


def clear_caches() -> None:
    """Forget the kept streams."""
    _streams.clear()


def _shared(chunks: list[bytes]) -> tuple[int, Any, tuple[tuple[int, Any], ...]]:
    """The longest checkpointed prefix of ``chunks`` equal to a kept stream's: (chunk index, state, the
    checkpoints up to it)."""
    best_at: int = 0
    best_state: Any = None
    best_marks: tuple[tuple[int, Any], ...] = ()
    size = len(chunks)
    for previous, marks in tuple(_streams):  # a snapshot: concurrent compiles may replace the list
        start = 0
        for n, (at, state) in enumerate(marks):
            if at > size or chunks[start:at] != previous[start:at]:
                break
            if at > best_at:
                best_at, best_state, best_marks = at, state, marks[: n + 1]
            start = at
    return best_at, best_state, best_marks


def digest(chunks: list[bytes]) -> str:
    """``sha256(b"".join(chunks)).hexdigest()``, resumed from a kept stream's prefix where one is equal."""
    at, state, kept = _shared(chunks)
    h = state.copy() if state is not None else hashlib.sha256()
    marks = list(kept)
    size = len(chunks)
    first = at
    ends = list(accumulate(map(len, chunks[first:])))  # bytes from `first` up to and including each chunk
    while at < size:
        # a block ends with the first chunk that brings it to _CHECKPOINT_BYTES (or with the stream)
        held = ends[at - first - 1] if at > first else 0
        end = min(bisect_left(ends, held + _CHECKPOINT_BYTES, at - first) + first + 1, size)
        h.update(b"".join(chunks[at:end]))
        at = end
        marks.append((at, h.copy()))
    while len(_streams) >= _KEEP:
        with suppress(IndexError):  # another thread may have emptied it meanwhile
            del _streams[0]
    _streams.append((chunks, tuple(marks)))
    return h.hexdigest()
