"""The resumed stream digest is sha256 of the joined chunks, whatever streams came before."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenbox_core.compiler import resume

_chunk = st.binary(max_size=12)
_stream = st.lists(_chunk, max_size=30)


def _edits(base: list[bytes], data: st.DataObject) -> list[bytes]:
    kind = data.draw(st.sampled_from(["same", "extend", "edit", "cut", "insert", "fresh"]))
    out = list(base)
    if kind == "extend":
        out += data.draw(_stream)
    elif kind == "edit" and out:
        out[data.draw(st.integers(0, len(out) - 1))] = data.draw(_chunk)
    elif kind == "cut":
        out = out[: data.draw(st.integers(0, len(out)))]
    elif kind == "insert":
        out.insert(data.draw(st.integers(0, len(out))), data.draw(_chunk))
    elif kind == "fresh":
        out = data.draw(_stream)
    return [bytes(c) for c in out]  # equal bytes, new objects: reuse must compare, not trust identity


@given(_stream, st.data())
def test_resumed_digest_is_the_plain_sha256(first: list[bytes], data: st.DataObject) -> None:
    """Over a sequence of streams derived from each other (same, extended, edited, cut, new), each digest
    equals hashlib's over the joined chunks (checkpoints every few bytes, so resumption happens)."""
    saved = resume._CHECKPOINT_BYTES
    resume._CHECKPOINT_BYTES = 8
    resume.clear_caches()
    try:
        stream = first
        for _ in range(6):
            assert resume.digest(list(stream)) == hashlib.sha256(b"".join(stream)).hexdigest()
            stream = _edits(stream, data)
    finally:
        resume._CHECKPOINT_BYTES = saved
        resume.clear_caches()


def test_a_kept_stream_is_resumed_not_rehashed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stream that extends a kept one hashes only what follows the last shared checkpoint."""
    monkeypatch.setattr(resume, "_CHECKPOINT_BYTES", 4)
    resume.clear_caches()
    base = [b"abcd"] * 10
    resume.digest(list(base))
    fed: list[int] = []
    real = hashlib.sha256

    class Spy:
        def __init__(self) -> None:
            self.h = real()

        def update(self, data: bytes) -> None:
            fed.append(len(data))
            self.h.update(data)

        def copy(self) -> object:
            return self.h.copy()

        def hexdigest(self) -> str:
            return self.h.hexdigest()

    monkeypatch.setattr(resume.hashlib, "sha256", Spy)
    longer = [*base, b"efgh"]
    assert resume.digest(longer) == real(b"".join(longer)).hexdigest()
    assert fed == []  # resumed from the kept state (a hashlib object), so the spy never saw a byte
    resume.clear_caches()
    assert resume.digest(longer) == real(b"".join(longer)).hexdigest()
    assert sum(fed) == 44  # after clear_caches: everything hashed again
    resume.clear_caches()


def _checkpoints_one_by_one(chunks: list[bytes], limit: int, at: int = 0) -> list[int]:
    """Where the stream's checkpoints fell, from chunk ``at`` on, before they were found by bisection (a
    chunk-by-chunk loop, kept as the reference): each block ends with the first chunk that brings it to
    ``limit`` bytes, or the stream."""
    marks = []
    while at < len(chunks):
        end, held = at, 0
        while end < len(chunks) and held < limit:
            held += len(chunks[end])
            end += 1
        marks.append(end)
        at = end
    return marks


@given(_stream, _stream, st.integers(1, 40))
def test_checkpoints_fall_where_the_chunk_by_chunk_loop_put_them(
    chunks: list[bytes], more: list[bytes], limit: int
) -> None:
    """The bisection over the running byte counts puts the checkpoints where the old loop did: on a fresh
    stream, and on a stream that extends it (resumed at the kept stream's end)."""
    saved = resume._CHECKPOINT_BYTES
    resume._CHECKPOINT_BYTES = limit
    resume.clear_caches()
    try:
        assert resume.digest(list(chunks)) == hashlib.sha256(b"".join(chunks)).hexdigest()
        first = [at for at, _ in resume._streams[-1][1]]
        assert first == _checkpoints_one_by_one(chunks, limit)
        longer = [*chunks, *more]
        assert resume.digest(longer) == hashlib.sha256(b"".join(longer)).hexdigest()
        resumed = first[-1] if first else 0
        expected = first + _checkpoints_one_by_one(longer, limit, resumed)
        assert [at for at, _ in resume._streams[-1][1]] == expected
    finally:
        resume._CHECKPOINT_BYTES = saved
        resume.clear_caches()
