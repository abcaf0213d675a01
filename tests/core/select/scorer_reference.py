"""The spec's O(N²) reference loops for the rank scorers, kept to check the fast ones against."""

from __future__ import annotations

from collections.abc import Sequence

from tokenbox_core._sections import Item
from tokenbox_core.select._model import time_key

__all__ = ["reference_frequency", "reference_priority", "reference_recency"]


# ----------------------------------------------------------------------------- the spec's O(N²) loops


def reference_recency(items: Sequence[Item]) -> list[float]:
    """The spec's RECENCY-SCORE loop, transcribed literally (O(N²)): an oracle for the fast scorer.

    Timestamps are compared through the same exact key the scorer uses, computed once per item.
    """
    keys = [None if item.timestamp is None else time_key(item.timestamp) for item in items]
    out = []
    for mine in keys:
        if mine is None:
            out.append(0.0)
            continue
        count = rank = 0
        for theirs in keys:
            if theirs is None:
                continue
            count += 1
            if theirs < mine:
                rank += 1
        out.append(1.0 if count <= 1 else rank / (count - 1))
    return out


def reference_priority(items: Sequence[Item]) -> list[float]:
    """The spec's PRIORITY-SCORE loop, transcribed literally (O(N²))."""
    out = []
    for item in items:
        if item.priority is None:
            out.append(0.0)
            continue
        count = rank = 0
        for other in items:
            if other.priority is None:
                continue
            count += 1
            if other.priority < item.priority:
                rank += 1
        out.append(1.0 if count <= 1 else rank / (count - 1))
    return out


def reference_frequency(items: Sequence[Item]) -> list[float]:
    """The spec's FREQUENCY-SCORE loop, transcribed literally (O(N²))."""
    out = []
    for item in items:
        if not item.tags or len(items) <= 1:
            out.append(0.0)
            continue
        matching = 0
        for other in items:
            if other is item or not other.tags:
                continue
            if any(a.lower() == b.lower() for a in item.tags for b in other.tags):
                matching += 1
        out.append(matching / (len(items) - 1))
    return out
