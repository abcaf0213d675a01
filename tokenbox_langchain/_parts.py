"""The named inputs of a :class:`~tokenbox_langchain.TokenBoxLayout` as the core sees them, and back.

A :class:`Part` is one input (a string, a Document, a message, or a list of
them) with its kind, its values, their item ids and tool groups; it becomes
one :class:`~tokenbox_core.Section` (:meth:`Part.section`).  An
:class:`Outcome` is what one fit produced, with its report.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.documents import Document
from langchain_core.messages import BaseMessage, get_buffer_string

from tokenbox_core import ContextBudget, Item, Layout, Section, SectionError
from tokenbox_core.chat import MARKER_ID_PREFIX, ToolGroups, tool_groups
from tokenbox_core.lenses import LIST_LENSES, lens_name
from tokenbox_langchain._counting import MessageCounter
from tokenbox_langchain._fit import neutral

__all__ = ["Outcome", "Part", "as_text"]

_NO_GROUPS = ToolGroups({}, {})


def message_item(message: BaseMessage, item_id: str, group: str | None, tokens: int | None) -> Item:
    """A message as the core sees it: its buffer string, with its chat cost as ``tokens`` when vouched."""
    return Item(
        id=item_id, content=get_buffer_string([message]), kind="Message", role=message.type, group=group, tokens=tokens
    )


def _ids(key: str, values: Sequence[Any]) -> list[str]:
    """Item ids: a Document's or message's own id when it has a unique one, else ``key-i``."""
    ids: list[str] = []
    seen: set[str] = set()
    for i, v in enumerate(values):
        own = getattr(v, "id", None)
        item_id = own if isinstance(own, str) and own and own not in seen else f"{key}-{i}"
        seen.add(item_id)
        ids.append(item_id)
    return ids


def _kind(key: str, value: Any) -> str:
    """What an input value is: text, document(s), message(s) or text list."""
    if isinstance(value, str):
        return "text"
    if isinstance(value, Document):
        return "document"
    if isinstance(value, BaseMessage):
        return "message"
    if isinstance(value, Sequence):
        if all(isinstance(v, Document) for v in value):
            return "documents"
        if all(isinstance(v, BaseMessage) for v in value):
            return "messages"
        if all(isinstance(v, str) for v in value):
            return "texts"
    raise SectionError(
        f"input {key!r} is a {type(value).__name__}; each input must be a string, a Document, a message, "
        f"or a list of strings, Documents or messages"
    )


@dataclass(frozen=True)
class Part:
    """One named input as the layout sees it: its kind, its values as a list, their item ids, tool groups."""

    key: str
    value: Any
    kind: str
    values: list[Any]
    ids: list[str]
    groups: ToolGroups

    @classmethod
    def of(cls, key: str, value: Any) -> Part:
        kind = _kind(key, value)
        if kind == "text":
            return cls(key, value, kind, [], [], _NO_GROUPS)
        values = [value] if kind in ("document", "message") else list(value)
        groups = tool_groups(neutral(values)) if kind == "messages" else _NO_GROUPS
        return cls(key, value, kind, values, _ids(key, values), groups)

    def section(self, options: dict[str, Any], chat: MessageCounter | None = None) -> Section:
        """This input as a Section with ``options``; with ``chat``, its messages carry their exact chat cost as
        ``Item.tokens``.  Messages refuse ``partial`` and text lenses: a cut or rewritten buffer string is no
        message."""
        key = self.key
        if self.kind == "text":
            return Section(key, self.value, **options)
        if options.get("partial") and self.kind in ("message", "messages"):
            raise SectionError(
                f"sections[{key!r}] sets partial=True, but {key!r} holds messages: a cut buffer string is no valid "
                f"message, so it would be sent whole, over the budget. Drop 'partial' for {key!r}, or cut "
                f"messages with trim_messages(..., allow_partial=True)"
            )
        if self.kind in ("message", "messages"):
            strategy = options.get("strategy", ())
            lenses = [strategy] if isinstance(strategy, str) or callable(strategy) else list(strategy)
            rewriting = [lens_name(lens) for lens in lenses if not (isinstance(lens, str) and lens in LIST_LENSES)]
            if rewriting:
                raise SectionError(
                    f"sections[{key!r}] sets text lenses {rewriting}, but {key!r} holds messages: a rewritten buffer "
                    f"string is no message, so each message would be sent unchanged, over what was counted. Use "
                    f"{', '.join(repr(n) for n in sorted(LIST_LENSES))} or 'eviction' for {key!r}, or compress the "
                    f"messages before the layout"
                )
        ids = self.ids
        group_of = self.groups.group_of
        items = []
        for i, (item_id, v) in enumerate(zip(ids, self.values, strict=True)):
            if isinstance(v, Document):
                score = v.metadata.get("relevance_score")
                score = score if isinstance(score, int | float) and not isinstance(score, bool) else None
                items.append(Item(id=item_id, content=v.page_content, kind="Document", score=score))
            elif isinstance(v, BaseMessage):
                a = group_of.get(i)
                group = None if a is None else f"tools:{ids[a]}"
                items.append(message_item(v, item_id, group, None if chat is None else chat.size(v)))
            else:
                items.append(Item(id=item_id, content=v))
        if "item_separator" not in options:
            options["item_separator"] = "\n\n" if self.kind in ("document", "documents") else "\n"
        return Section(key, items, **options)


@dataclass
class Outcome:
    """What one :meth:`TokenBoxLayout.fit` produced, with what the report needs beyond the layout."""

    fitted: dict[str, Any]
    prompt: Any
    layout: Layout
    budget: ContextBudget
    template_tokens: int = 0
    prompt_tokens: int | None = None
    start_on_removed: dict[str, list[str]] = field(default_factory=dict)

    def report(self) -> dict[str, Any]:
        """The layout report sent to the callbacks (see :meth:`TokenBoxLayout.report`)."""
        layout, budget = self.layout, self.budget
        effective = layout.max_tokens if self.prompt is None else budget.room
        return {
            "total_tokens": layout.total_tokens,
            "prompt_tokens": self.prompt_tokens,
            "max_tokens": budget.max_tokens,
            "output_reserve": budget.output_reserve,
            "reserved_tokens": budget.reserved_tokens,
            "template_tokens": self.template_tokens,
            "effective_max_tokens": effective,
            "counter": layout.counter_name,
            "fingerprint": layout.fingerprint,
            "start_on_removed": {k: list(v) for k, v in self.start_on_removed.items()},
            "kept": sum(len(s.content) for s in layout.sections if isinstance(s.content, tuple)),
            "removed": len(layout.removed) + sum(len(v) for v in self.start_on_removed.values()),
            "sections": [s.decisions() for s in layout.sections],
        }


def as_text(value: Any, key: str) -> str:
    """A fitted list element as the core counted it: a Document's text, a message's buffer string (an omission
    marker's bare text), a string as it is."""
    if isinstance(value, Document):
        return value.page_content
    if isinstance(value, BaseMessage):
        if value.id == f"{MARKER_ID_PREFIX}{key}" and isinstance(value.content, str):
            return value.content
        return get_buffer_string([value])
    return str(value)
