"""``TokenBoxLayout``: fit the named parts of a prompt together, as one Runnable.

>>> from langchain_core.documents import Document
>>> box = TokenBoxLayout(
...     sections={"context": {"shrink": 1, "eviction": "newest"}},
...     budget=10,
...     counter="whitespace",
... )
>>> out = box.invoke({"question": "what is new", "context": [Document("alpha " * 5), Document("beta " * 5)]})
>>> out["question"], [d.page_content.split()[0] for d in out["context"]]
('what is new', ['alpha'])
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForChainRun, CallbackManagerForChainRun
from langchain_core.documents import Document
from langchain_core.messages import BaseMessage, get_buffer_string
from langchain_core.prompt_values import ChatPromptValue, PromptValue
from langchain_core.prompts import BasePromptTemplate, ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import RunnableConfig, RunnableSerializable
from pydantic import ConfigDict, Field

from tokenbox_core import ContextBudget, Item, Layout, Section, SectionError, TokenBox, get_counter
from tokenbox_langchain.counting import MessageCounter
from tokenbox_langchain.messages import LAYOUT_EVENT, budget_from

__all__ = ["SECTION_OPTIONS", "TokenBoxLayout"]

SECTION_OPTIONS = frozenset(
    {
        "priority",
        "min_tokens",
        "max_tokens",
        "basis",
        "grow",
        "shrink",
        "strategy",
        "keep",
        "eviction",
        "partial",
        "omission_marker",
        "item_separator",
    }
)
"""The :class:`~tokenbox_core.Section` options a named input may set."""

_MAX_ATTEMPTS = 3


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


class TokenBoxLayout(RunnableSerializable[dict[str, Any], Any]):
    """Lays out named prompt parts into one budget; returns the fitted parts or the rendered prompt.

    ``{"context": retriever, "history": ..., "question": RunnablePassthrough()}
    | TokenBoxLayout(sections={...}, budget=..., template=prompt) | model``

    Every input key becomes a :class:`~tokenbox_core.Section` (in input
    order): a string is text; a Document, a message, or a list of strings,
    Documents or messages is a list of items (Documents are joined by
    ``"\\n\\n"`` and messages as LangChain's buffer string, one per line,
    unless ``item_separator`` says otherwise).  ``sections`` sets each key's
    Section options (``priority``, ``shrink``, ``eviction`` ...); a key it does
    not mention is critical.  The output is the dict of fitted values (same
    types; a dropped single Document or message becomes ``None``), or, with a
    ``template``, the rendered prompt: the template's own tokens are reserved
    from the budget, the rendered prompt is re-counted, and any excess from
    joins or chat overhead is reserved in a new layout (at most three).
    """

    sections: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Section options per input key (see :data:`SECTION_OPTIONS`); unlisted keys are critical."""

    budget: int | ContextBudget | None = None
    """Token budget: an int or a ``ContextBudget``."""

    max_tokens: int | None = None
    """Overrides the budget's ``max_tokens``; meant for ``configurable_fields``."""

    counter: Any = "o200k_base"
    """A TokenBox counter name (``"gpt-4o"``, ``"o200k_base"``, ``"whitespace"`` ...), a TokenCounter or a
    callable over text."""

    template: BasePromptTemplate | None = None  # type: ignore[type-arg]  # pydantic re-validates a parametrised one
    """A prompt template rendered with the fitted values; its own tokens count against the budget."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    @classmethod
    def is_lc_serializable(cls) -> bool:
        return False

    # ------------------------------------------------------------------ mapping

    def _section(self, key: str, value: Any) -> Section:
        options = dict(self.sections.get(key, {}))
        unknown = sorted(set(options) - SECTION_OPTIONS)
        if unknown:
            raise SectionError(
                f"sections[{key!r}] has unknown options {unknown}; allowed: {', '.join(sorted(SECTION_OPTIONS))}"
            )
        kind = _kind(key, value)
        if kind == "text":
            return Section(key, value, **options)
        values = [value] if kind in ("document", "message") else list(value)
        items = []
        for item_id, v in zip(_ids(key, values), values, strict=True):
            if isinstance(v, Document):
                score = v.metadata.get("relevance_score")
                score = score if isinstance(score, int | float) and not isinstance(score, bool) else None
                items.append(Item(id=item_id, content=v.page_content, kind="Document", score=score))
            elif isinstance(v, BaseMessage):
                items.append(Item(id=item_id, content=get_buffer_string([v]), kind="Message", role=v.type))
            else:
                items.append(Item(id=item_id, content=v))
        if "item_separator" not in options:
            options["item_separator"] = "\n\n" if kind in ("document", "documents") else "\n"
        return Section(key, items, **options)

    def _fitted(self, key: str, value: Any, layout: Layout) -> Any:
        laid = layout[key]
        if isinstance(value, str):
            return laid.text
        kind = _kind(key, value)
        values = [value] if kind in ("document", "message") else list(value)
        by_id = dict(zip(_ids(key, values), values, strict=True))
        kept = []
        for item in laid.content if isinstance(laid.content, tuple) else ():
            original = by_id[item.id]
            if isinstance(original, Document) and item.content != original.page_content:
                original = Document(
                    item.content, metadata={**original.metadata, "tokenbox_truncated": True}, id=original.id
                )
            elif isinstance(original, str):
                original = item.content
            kept.append(original)
        if kind in ("document", "message"):
            return kept[0] if kept else None
        return kept

    # ------------------------------------------------------------------ template

    def _placeholders(self) -> set[str]:
        if isinstance(self.template, ChatPromptTemplate):
            return {m.variable_name for m in self.template.messages if isinstance(m, MessagesPlaceholder)}
        return set()

    def _render_values(self, fitted: Mapping[str, Any], sections: Sequence[Section]) -> dict[str, Any]:
        placeholders = self._placeholders()
        separators = {s.id: s.item_separator for s in sections}
        values: dict[str, Any] = {}
        for key, value in fitted.items():
            if key in placeholders:
                values[key] = [value] if isinstance(value, BaseMessage) else list(value or [])
            elif isinstance(value, str):
                values[key] = value
            elif value is None:
                values[key] = ""
            else:
                parts = value if isinstance(value, list) else [value]
                values[key] = separators[key].join(
                    p.page_content
                    if isinstance(p, Document)
                    else get_buffer_string([p])
                    if isinstance(p, BaseMessage)
                    else str(p)
                    for p in parts
                )
        return values

    def _prompt_tokens(self, prompt: PromptValue) -> int:
        if isinstance(prompt, ChatPromptValue):
            return MessageCounter(self.counter).count(prompt.messages)
        return get_counter(self.counter).count(prompt.to_string())

    # ------------------------------------------------------------------ run

    def fit(self, inputs: Mapping[str, Any]) -> tuple[dict[str, Any], Any, Layout]:
        """The fitted values, the rendered prompt (``None`` without a template) and the core's layout."""
        if not isinstance(inputs, Mapping):
            raise SectionError(f"TokenBoxLayout takes a dict of named inputs, got {type(inputs).__name__}")
        unknown = sorted(set(self.sections) - set(inputs))
        if unknown:
            raise SectionError(f"sections configured for {unknown} but the input has no such keys: {sorted(inputs)}")
        budget = budget_from(self.budget, self.max_tokens, None)
        sections = [self._section(key, value) for key, value in inputs.items()]
        extra = 0
        if self.template is not None:
            empty = {k: ([] if k in self._placeholders() else "") for k in inputs}
            extra = self._prompt_tokens(self.template.invoke(empty))
        prompt = None
        for _ in range(_MAX_ATTEMPTS):
            slots = {**budget.reserved_slots, "template": extra} if extra else dict(budget.reserved_slots)
            box_budget = dataclasses.replace(budget, reserved_slots=slots)
            layout = TokenBox(box_budget, counter=self.counter).layout(sections)
            fitted = {key: self._fitted(key, value, layout) for key, value in inputs.items()}
            if self.template is None:
                return fitted, None, layout
            prompt = self.template.invoke(self._render_values(fitted, sections))
            used = self._prompt_tokens(prompt)
            limit = budget.max_tokens - budget.output_reserve - budget.reserved_tokens
            if used <= limit:
                return fitted, prompt, layout
            # what the rendering costs beyond the layout's own count (template, joins, chat overhead)
            extra = max(extra + 1, used - layout.total_tokens)
        raise SectionError(
            f"the rendered prompt still exceeds the budget after {_MAX_ATTEMPTS} layouts; reserve more with a "
            f"ContextBudget(output_reserve=...) or shorten the template"
        )

    def _run(self, inputs: dict[str, Any], run_manager: CallbackManagerForChainRun) -> Any:
        fitted, prompt, layout = self.fit(inputs)
        child = run_manager.get_child()
        if child.handlers:
            child.on_custom_event(LAYOUT_EVENT, _report(layout), run_id=run_manager.run_id)
        return fitted if prompt is None else prompt

    async def _arun(self, inputs: dict[str, Any], run_manager: AsyncCallbackManagerForChainRun) -> Any:
        fitted, prompt, layout = self.fit(inputs)
        child = run_manager.get_child()
        if child.handlers:
            await child.on_custom_event(LAYOUT_EVENT, _report(layout), run_id=run_manager.run_id)
        return fitted if prompt is None else prompt

    def invoke(self, input: dict[str, Any], config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """Fit the named inputs (and render the template)."""
        return self._call_with_config(self._run, input, config, **kwargs)

    async def ainvoke(self, input: dict[str, Any], config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """Fit the named inputs (and render the template), async."""
        return await self._acall_with_config(self._arun, input, config, **kwargs)


def _report(layout: Layout) -> dict[str, Any]:
    return {
        "total_tokens": layout.total_tokens,
        "max_tokens": layout.max_tokens,
        "counter": layout.counter_name,
        "fingerprint": layout.fingerprint,
        "sections": [s.decisions() for s in layout.sections],
    }
