"""A small deterministic vocabulary the benchmarks build their texts from."""

from __future__ import annotations

WORDS: tuple[str, ...] = tuple(
    (
        "context budget token layout section priority evidence history retrieval model window policy tool schema "
        "memory summary agent request response careful deterministic compile trace section allocation overflow "
        "the a of and to in is that for on with as by at from it be this an are or"
    ).split()
)
