"""Batch and exact-concatenation counting for any counter (using the counter's fast paths when it has them)."""

from __future__ import annotations

from collections.abc import Sequence

from tokenbox_core.tokens.base import TokenCounter, _checked

__all__ = ["count_concat", "count_many"]


def count_many(counter: TokenCounter, texts: Sequence[str]) -> list[int]:
    """Batch counting for any counter (uses the counter's own batch path when it has one)."""
    many = getattr(counter, "count_many", None)
    if many is not None:
        return list(many(texts))
    return [_checked(counter.count(t), getattr(counter, "name", "counter")) for t in texts]


def count_concat(counter: TokenCounter, parts: Sequence[str]) -> int:
    """Exact count of ``"".join(parts)`` for any counter."""
    concat = getattr(counter, "count_concat", None)
    if concat is not None:
        return int(concat(parts))
    return _checked(counter.count("".join(parts)), getattr(counter, "name", "counter"))
