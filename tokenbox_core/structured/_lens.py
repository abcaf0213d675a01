"""The ``structured`` lens: JSON text re-rendered in its cheapest lossless format (chapter §6.12.3).

Registered as ``Section(..., strategy="structured")``.  It never changes the
data, only its serialisation, and leaves text that is not JSON (or that no
format makes cheaper) unchanged.  Lossy steps (columns, rows, sampling,
aggregation) are explicit calls in :mod:`tokenbox_core.structured._reduce`.
"""

from __future__ import annotations

import json

from tokenbox_core.structured._render import cheapest
from tokenbox_core.tokens import TokenCounter

__all__ = ["structured_lens"]


def structured_lens(text: str, target: int, counter: TokenCounter) -> str:
    """``text`` (JSON) in the cheapest lossless format under ``counter``; unchanged when not JSON or no cheaper."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return text
    try:
        value = json.loads(stripped)
    except (ValueError, RecursionError):
        return text
    try:
        best = cheapest(value, counter)
    except Exception:  # a value no format can hold (e.g. too deep to serialise): leave the text as it is
        return text
    return best.text if best.tokens < counter.count(text) else text
