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
        found = _new_item(item_id, content, role, kind, priority, group, tokens)
        if _items_held[0] + len(content) > _ITEMS_CHARS:
            _ITEMS.clear()
            _items_held[0] = 0
        _ITEMS[key] = found
        _items_held[0] += len(content)
    return found


_FIELDS = Item(id="prototype").__dict__  # every field as the constructor leaves it (metadata: an empty FrozenDict)
_new, _set = object.__new__, object.__setattr__


def _new_item(item_id: str, content: str, role: Any, kind: str, priority: Any, group: str | None, tokens: int) -> Item:
    """``Item(id=..., content=..., ...)`` without its checks where the engine's fields cannot fail them (an ASCII
    id, text content, an int priority or none, an int size: what ``Item.__post_init__`` accepts as is), about
    6x cheaper; anything else through the constructor.  The same fields, field for field (the empty
    metadata shared: it is read-only); ``tests/core/chat/test_items_memo.py`` compares both ways."""
    if not (
        type(item_id) is str
        and item_id
        and item_id.isascii()
        and type(content) is str
        and type(tokens) is int
        and (priority is None or type(priority) is int)
        and (group is None or type(group) is str)
    ):
        return Item(id=item_id, content=content, role=role, kind=kind, priority=priority, group=group, tokens=tokens)
    item = _new(Item)
    fields = _FIELDS.copy()
    fields["id"] = item_id
    fields["content"] = content
    fields["role"] = role
    fields["kind"] = kind
    fields["priority"] = priority
    fields["group"] = group
    fields["tokens"] = tokens
    _set(item, "__dict__", fields)
    return item


def clear_caches() -> None:
    """Forget the remembered message Items."""
    _ITEMS.clear()
    _items_held[0] = 0
