"""The Items of conversation messages, remembered (the conversation engine, :mod:`tokenbox_core.chat.sections`).

A conversation's next turn re-translates every earlier message into the same Item; Items are frozen, so
the same fields can share one object — which also lets the Token Box compare them by identity first.
"""

from __future__ import annotations

from typing import Any

from tokenbox_core.sections import Item

__all__ = ["clear_caches", "message_item"]

_ITEMS: dict[tuple[Any, ...], Item] = {}
_ITEMS_CHARS = 8 * 1024 * 1024  # the memo is emptied past this many characters of content
_items_held = [0]


def message_item(
    item_id: str, content: str, role: Any, kind: str, priority: Any, group: str | None, tokens: int
) -> Item:
    """The Item of one message, the same object for the same fields (a conversation's next turn re-makes
    the Items of all its earlier messages; Items are frozen, and the Token Box compares identical ones
    first).  Keyed on every field and the priority's type (``1`` and ``True`` are equal keys, not equal
    Items); bounded by characters."""
    key = (item_id, content, role, kind, type(priority), priority, group, tokens)
    found = _ITEMS.get(key)
    if found is None:
        found = Item(id=item_id, content=content, role=role, kind=kind, priority=priority, group=group, tokens=tokens)
        if _items_held[0] + len(content) > _ITEMS_CHARS:
            _ITEMS.clear()
            _items_held[0] = 0
        _ITEMS[key] = found
        _items_held[0] += len(content)
    return found


def clear_caches() -> None:
    """Forget the remembered message Items."""
    _ITEMS.clear()
    _items_held[0] = 0
