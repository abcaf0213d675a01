"""The layout's ``input_hash``: sha256 over everything that determines a layout."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tokenbox_core.lenses import lens_name
from tokenbox_core.sections import Section

if TYPE_CHECKING:
    from .core import TokenBox

__all__ = ["input_hash"]


def input_hash(sections: Sequence[Section], box: TokenBox) -> str:
    """sha256 over everything that determines a layout (computed on demand)."""
    h = hashlib.sha256()
    h.update(repr((box.budget.to_dict(), box.counter.name, box.separator, box.mode)).encode())
    for s in sections:
        h.update(
            repr(
                (
                    s.id,
                    s.priority,
                    s.min_tokens,
                    s.max_tokens,
                    s.basis,
                    s.grow,
                    s.shrink,
                    tuple(lens_name(x) for x in s.strategy),
                    s.keep,
                    s.role,
                    s.eviction,
                    s.partial,
                    s.omission_marker,
                    s.item_separator,
                )
            ).encode()
        )
        if isinstance(s.content, str):
            h.update(s.content.encode("utf-8", "surrogatepass"))
        else:
            for it in s.content:
                h.update(
                    repr((it.id, it.role, it.kind, it.score, it.priority, it.group, it.pinned, it.tokens)).encode()
                )
                h.update(it.content.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()
