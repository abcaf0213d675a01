"""LlamaIndex instrumentation: every TokenBox component reports its layout as an event (issue 10 item 25).

LlamaIndex users observe components through the instrumentation dispatcher
(``llama_index.core.instrumentation``): an event handler added to the root
dispatcher receives a :class:`TokenBoxLayoutEvent` from
:class:`~tokenbox_llamaindex.TokenBoxNodePostprocessor`,
:class:`~tokenbox_llamaindex.TokenBoxPromptHelper` and
:class:`~tokenbox_llamaindex.TokenBoxMemory` after each layout, inside the
span of the call that made it.  Unlike ``last_layout`` (an instance attribute
that concurrent requests overwrite, a convenience for single-threaded use),
each event belongs to its own call.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.instrumentation import get_dispatcher  # type: ignore[attr-defined]
from llama_index.core.instrumentation.events import BaseEvent

from tokenbox_core import Layout

__all__ = ["TokenBoxLayoutEvent", "emit_layout"]

dispatcher = get_dispatcher(__name__)


class TokenBoxLayoutEvent(BaseEvent):
    """A TokenBox component laid out its input.

    ``component``: the class name; ``operation``: ``postprocess``,
    ``truncate``, ``repack`` or ``get``; the headline numbers (``budget``,
    ``total_tokens``, ``kept``, ``removed``, ``fingerprint``); ``layout``: the
    core's :class:`~tokenbox_core.Layout` (its ``explain()``, ``to_dict()``...).
    """

    component: str
    operation: str
    budget: int
    total_tokens: int
    kept: int
    removed: int
    fingerprint: str
    layout: Any = None

    @classmethod
    def class_name(cls) -> str:
        return "TokenBoxLayoutEvent"


def emit_layout(
    component: str,
    operation: str,
    layout: Layout,
    *,
    total_tokens: int | None = None,
    kept: int | None = None,
    removed: int | None = None,
) -> None:
    """Send ``layout`` to the instrumentation dispatcher as a :class:`TokenBoxLayoutEvent` (counts of kept and
    removed items from the layout unless given)."""
    if kept is None:
        kept = sum(len(s.content) for s in layout.sections if isinstance(s.content, tuple))
    dispatcher.event(
        TokenBoxLayoutEvent(
            component=component,
            operation=operation,
            budget=layout.max_tokens,
            total_tokens=layout.total_tokens if total_tokens is None else total_tokens,
            kept=kept,
            removed=len(layout.removed) if removed is None else removed,
            fingerprint=layout.fingerprint,
            layout=layout,
        )
    )
