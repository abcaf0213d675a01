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
from typing import Any, Literal

from langchain_core.documents import Document
from langchain_core.messages import BaseMessage
from langchain_core.prompt_values import ChatPromptValue, PromptValue
from langchain_core.prompts import BasePromptTemplate, ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import RunnableSerializable
from pydantic import ConfigDict, Field, PrivateAttr, ValidationInfo, field_validator

from tokenbox_core import ContextBudget, Layout, Section, SectionError, TokenBox, TokenCounter, get_counter
from tokenbox_core.arguments import StrictArguments, no_bool
from tokenbox_core.chat import MARKER_ID_PREFIX, place_markers, start_on_fixup
from tokenbox_langchain._counting import MessageCounter
from tokenbox_langchain._fit import MessageTypes, matches, omission_message
from tokenbox_langchain._messages import budget_from
from tokenbox_langchain._parts import Outcome, Part, as_text
from tokenbox_langchain._runs import TracedFit

__all__ = ["OMITTED_KEY", "SECTION_OPTIONS", "TokenBoxLayout"]

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
"""Layouts tried before giving up: the first, then at most two safety re-layouts (see :meth:`TokenBoxLayout._fit`)."""

OMITTED_KEY = "tokenbox_omitted"
"""Metadata key of an omission-marker Document: the ids of the documents it stands for."""


class TokenBoxLayout(StrictArguments, TracedFit, RunnableSerializable[dict[str, Any], Any]):
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
    ``template``, the rendered prompt: the template's own tokens (its
    messages and their chat overhead, rendered with empty values) are
    reserved from the budget.  Messages bound for a ``MessagesPlaceholder``
    of a chat template are laid out at their exact chat cost (``Item.tokens``:
    per-message overhead, role, name, tool-call payloads, as
    :class:`~tokenbox_langchain.TokenBoxMessages` counts them), so one core
    layout gives the prompt; strings and Documents are counted by the core.
    The rendered prompt is then re-counted as a safety check: only if it
    exceeds the budget (a BPE merge where a string joins the template's
    text, or the message overhead of an omission marker in a placeholder,
    which the core counts as text) is the excess reserved in a new layout
    (at most three layouts in all).  A prompt that fits is returned as laid
    out.

    Message lists follow the rules of
    :class:`~tokenbox_langchain.TokenBoxMessages`:

    - an ``AIMessage`` with ``tool_calls`` and all its ``ToolMessage`` results
      are one atomic ``Item.group``: the core keeps or removes them together
      (never an orphan result, never a call without its results);
    - a flexible message list then starts on a ``start_on`` message (default
      ``"human"``, as ``TokenBoxMessages``): leading messages after any leading
      system messages are dropped, whole tool groups at a time, until one of
      that type; when no kept message is of that type nothing is dropped (an
      agent loop is never emptied).  ``start_on=None`` turns this off; a
      critical message list (not in ``sections``) is never touched.  This
      post-validation only removes, so the result stays within the budget;
      the messages it removes are listed in the report's
      ``start_on_removed`` (an omission marker names the layout's removals);
    - ``partial`` is refused for messages: a cut message would not be valid;
      so are text lenses in ``strategy`` (only the list lenses ``drop_oldest``
      and ``drop_lowest_score`` apply): a message is sent whole or not at all.

    An ``omission_marker`` is part of the fitted value, so what the core
    counted is what is sent: the leading string of a text list, a leading
    Document (``metadata["tokenbox_omitted"]`` lists the removed ids) for
    documents, a leading message of ``marker_type`` for messages (rendered
    bare, without a ``"System: "`` prefix, when a message list is pasted into
    a string variable).  A message list sent as messages keeps a valid
    sequence, as in ``TokenBoxMessages`` (:func:`~tokenbox_core.chat.place_markers`):
    a ``"human"`` or ``"ai"`` marker follows the list's leading system
    messages, and one not of a ``start_on`` type follows the first message
    (and its tool group) rather than open the conversation; the marker costs
    the same wherever it stands.  A single Document or message that was
    removed becomes its marker.
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

    start_on: MessageTypes | None = "human"
    """Message type(s) a flexible message list must start on after its leading system message(s), as in
    ``TokenBoxMessages``; ``None`` to allow any."""

    marker_type: Literal["system", "human", "ai"] = "system"
    """Message type of the omission marker of a message list.  A ``"system"`` marker leads the list; a
    ``"human"`` or ``"ai"`` one is moved where the sequence stays valid (see the class docstring)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    _chat: tuple[Any, MessageCounter] | None = PrivateAttr(default=None)

    @field_validator("budget", "max_tokens", mode="before")
    @classmethod
    def _not_bool(cls, value: Any, info: ValidationInfo) -> Any:
        return no_bool(str(info.field_name), value)

    @classmethod
    def is_lc_serializable(cls) -> bool:
        return False

    # ------------------------------------------------------------------ mapping

    def _chat_counter(self) -> MessageCounter:
        """Chat-message sizes in the layout's units (memoised per counter spec).

        A counter name or ``TokenCounter`` counts as ``TokenBoxMessages`` does;
        a callable over text becomes a core counter first, so that messages
        are sized in the same units as the text around them.
        """
        spec = self.counter
        if self._chat is None or self._chat[0] is not spec:
            chat = MessageCounter(spec if isinstance(spec, str | TokenCounter) else get_counter(spec))
            self._chat = (spec, chat)
        return self._chat[1]

    def _section(self, part: Part, chat: MessageCounter | None = None) -> Section:
        """``part`` as a Section; with ``chat``, its messages carry their exact chat cost as ``Item.tokens``."""
        options = dict(self.sections.get(part.key, {}))
        unknown = sorted(set(options) - SECTION_OPTIONS)
        if unknown:
            raise SectionError(
                f"sections[{part.key!r}] has unknown options {unknown}; allowed: {', '.join(sorted(SECTION_OPTIONS))}"
            )
        return part.section(options, chat)

    def _marker(self, part: Part, text: str, removed: Sequence[str]) -> Any:
        """The omission marker the core counted, as a value of the part's type."""
        if part.kind in ("document", "documents"):
            return Document(text, id=f"{MARKER_ID_PREFIX}{part.key}", metadata={OMITTED_KEY: list(removed)})
        if part.kind in ("message", "messages"):
            return omission_message(text, part.key, self.marker_type)
        return text

    def _fitted(self, part: Part, layout: Layout) -> tuple[Any, list[str]]:
        """The fitted value of ``part`` and the ids the ``start_on`` fix-up removed from it."""
        laid = layout[part.key]
        if part.kind == "text":
            return laid.text, []
        values = part.values
        index = {item_id: i for i, item_id in enumerate(part.ids)}
        entries: list[Any] = []  # indices into values, or the marker
        if laid.marker:
            removed = sorted(index[r.id] for r in laid.removed)
            entries.append(self._marker(part, laid.marker, [part.ids[i] for i in removed]))
        cut: dict[int, Any] = {}
        for item in laid.content if isinstance(laid.content, tuple) else ():
            i = index[item.id]
            original = values[i]
            if isinstance(original, Document) and item.content != original.page_content:
                cut[i] = Document(
                    item.content, metadata={**original.metadata, "tokenbox_truncated": True}, id=original.id
                )
            elif isinstance(original, str) and item.content != original:
                cut[i] = item.content
            entries.append(i)
        dropped: list[int] = []
        if part.kind == "messages" and self.start_on is not None and not laid.critical:
            system_end = 0
            while system_end < len(values) and values[system_end].type == "system":
                system_end += 1
            start_on = self.start_on
            dropped = start_on_fixup(
                entries,
                is_start=lambda i: matches(values[i], start_on),
                is_system=lambda i: values[i].type == "system",
                critical=frozenset(),
                system_end=system_end,
                groups=part.groups,
            )
        if part.kind == "messages" and laid.marker and (self.template is None or part.key in self._placeholders()):
            marker_start_on = self.start_on
            place_markers(  # sent as messages: a valid sequence
                entries,
                is_system=lambda i: values[i].type == "system",
                is_start=None if marker_start_on is None else (lambda i: matches(values[i], marker_start_on)),
                marker_is_system=lambda m: m.type == "system",
                marker_is_start=lambda m: marker_start_on is not None and matches(m, marker_start_on),
                groups=part.groups,
            )
        kept = [cut.get(e, values[e]) if isinstance(e, int) else e for e in entries]
        if part.kind in ("document", "message"):
            return (kept[0] if kept else None), []
        return kept, [part.ids[j] for j in dropped]

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
                values[key] = separators[key].join(as_text(p, key) for p in parts)
        return values

    def _prompt_tokens(self, prompt: PromptValue) -> int:
        if isinstance(prompt, ChatPromptValue):
            return self._chat_counter().count(prompt.messages)
        return get_counter(self.counter).count(prompt.to_string())

    # ------------------------------------------------------------------ run

    def fit(self, inputs: Mapping[str, Any]) -> tuple[dict[str, Any], Any, Layout]:
        """The fitted values, the rendered prompt (``None`` without a template) and the core's layout."""
        outcome = self._fit(inputs)
        return outcome.fitted, outcome.prompt, outcome.layout

    def report(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        """Fit ``inputs`` and return the layout report the callbacks receive: ``total_tokens`` (the layout's),
        ``prompt_tokens`` (the rendered prompt's, with a template), ``max_tokens`` (the budget's),
        ``output_reserve``, ``reserved_tokens``, ``template_tokens`` (what the template and its chat overhead
        were given), ``effective_max_tokens`` (the limit actually fitted to), the counter, the fingerprint,
        ``start_on_removed`` (per key, the message ids the ``start_on`` fix-up removed) and the section
        decisions."""
        return self._fit(inputs).report()

    def _fit(self, inputs: Mapping[str, Any]) -> Outcome:
        if not isinstance(inputs, Mapping):
            raise SectionError(f"TokenBoxLayout takes a dict of named inputs, got {type(inputs).__name__}")
        unknown = sorted(set(self.sections) - set(inputs))
        if unknown:
            raise SectionError(f"sections configured for {unknown} but the input has no such keys: {sorted(inputs)}")
        budget = budget_from(self.budget, self.max_tokens, None)
        parts = [Part.of(key, value) for key, value in inputs.items()]
        placeholders = self._placeholders()
        chat = self._chat_counter() if placeholders else None
        sections = [self._section(part, chat if part.key in placeholders else None) for part in parts]
        extra = 0
        if self.template is not None:
            empty = {k: ([] if k in placeholders else "") for k in inputs}
            extra = self._prompt_tokens(self.template.invoke(empty))
        prompt = None
        # One layout gives the prompt: placeholder messages carry their chat cost, the template's own tokens are
        # reserved.  The re-count below is a safety check that only acts on a prompt over the budget (see the
        # class docstring); a prompt within the budget is returned from the first layout, unchanged.
        for _ in range(_MAX_ATTEMPTS):
            slots = {**budget.reserved_slots, "template": extra} if extra else dict(budget.reserved_slots)
            box_budget = dataclasses.replace(budget, reserved_slots=slots)
            layout = TokenBox(box_budget, counter=self.counter).layout(sections)
            fitted: dict[str, Any] = {}
            start_on_removed: dict[str, list[str]] = {}
            for part in parts:
                fitted[part.key], dropped = self._fitted(part, layout)
                if dropped:
                    start_on_removed[part.key] = dropped
            if self.template is None:
                return Outcome(fitted, None, layout, budget, start_on_removed=start_on_removed)
            prompt = self.template.invoke(self._render_values(fitted, sections))
            used = self._prompt_tokens(prompt)
            limit = budget.room
            if used <= limit:
                return Outcome(fitted, prompt, layout, budget, extra, used, start_on_removed)
            # what the rendering costs beyond the layout's own count (template, joins, chat overhead)
            extra = max(extra + 1, used - layout.total_tokens)
        raise SectionError(
            f"the rendered prompt still exceeds the budget after {_MAX_ATTEMPTS} layouts; reserve more with a "
            f"ContextBudget(output_reserve=...) or shorten the template"
        )

    def _compute(self, input: Any) -> tuple[Any, dict[str, Any]]:
        outcome = self._fit(input)
        return (outcome.fitted if outcome.prompt is None else outcome.prompt), outcome.report()
