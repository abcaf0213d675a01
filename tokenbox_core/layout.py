"""The result of a Token Box layout: content, decisions, fingerprint and trace.

``Layout.fingerprint`` is the sha256 of the canonical output and decisions;
the trace's run id, timestamp and latency live outside it, so two runs over
the same input have the same fingerprint and differing traces.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tokenbox_core._records import Action, LaidOutSection, RemovedItem, Status
from tokenbox_core.errors import OutputFormError
from tokenbox_core.tokens import canonical_json

if TYPE_CHECKING:
    from tokenbox_core._budget import ContextBudget

__all__ = [
    "CHAT_ROLES",
    "Action",
    "LaidOutSection",
    "Layout",
    "RemovedItem",
    "Status",
    "check_plain_messages",
    "plain_messages",
    "section_messages",
]


@dataclass(frozen=True)
class Layout:
    """What a :class:`~tokenbox_core.box.TokenBox` produced."""

    sections: tuple[LaidOutSection, ...]
    total_tokens: int
    budget: ContextBudget
    max_tokens: int
    target_tokens: int
    fixed_tokens: int
    counter_name: str
    separator: str
    mode: str
    config_version: str
    input_hasher: Callable[[], str | tuple[str, tuple[str, ...]]] = field(repr=False, compare=False)
    latency_ms: float = 0.0
    trace_id: str = ""
    timestamp: str = ""
    _cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle with the input hash computed, so layouts cross process boundaries."""
        fields = {f: getattr(self, f) for f in self.__dataclass_fields__ if f != "_cache"}
        fields["input_hasher"] = functools.partial(_known_hash, self.input_hash, self.input_hash_notes)
        return (_rebuild_layout, (fields,))

    # ------------------------------------------------------------------ content

    def __getitem__(self, section_id: str) -> LaidOutSection:
        for section in self.sections:
            if section.id == section_id:
                return section
        raise KeyError(section_id)

    @property
    def text(self) -> str:
        """Kept sections in declaration order, joined by the separator."""
        if "text" not in self._cache:
            self._cache["text"] = self.separator.join(s.text for s in self.sections if s.text)
        return str(self._cache["text"])

    @property
    def messages(self) -> list[dict[str, str]]:
        """The layout as plain chat messages: one per text section, one per kept item of a list section.

        Each is ``{"role", "content"}``, in declaration order; roles come from
        the item, then the section, then ``"user"`` (an omission marker speaks
        with its section's role, else ``"user"``).  Exact: the total is what
        these messages cost.  This is the rendering for contexts whose parts
        are texts — instructions, documents, memories, plain turns.  It never
        returns what a chat provider rejects, and raises
        :class:`~tokenbox_core.errors.OutputFormError` naming the fix instead
        (:func:`plain_messages`): for a tool result (it must answer its call by
        ``tool_call_id``, which an Item does not carry), a role providers do
        not know, a system or developer message after the conversation started,
        or a conversation (user and assistant items) in a section a cut can
        shorten.  Conversations go through the conversation engine
        (:func:`tokenbox_core.chat.conversation_sections`, then
        ``ConversationSections.render(layout)``, or :func:`~tokenbox_core.fit_conversation`),
        which keeps tool calls structured with their results and restarts a cut
        history on a user message.

        Only a layout sized as messages (``TokenBox(..., mode="messages")``) has
        them: a text-mode layout counted no chat overhead (4 tokens a message
        plus the role, 3 priming), so its messages could exceed the budget
        (``docs/concepts.md#budgets``: nothing a layout emits exceeds it, counted the way
        it is sent); asking raises :class:`~tokenbox_core.errors.OutputFormError`.
        """
        if self.mode != "messages":
            n = sum(
                (len(s.content) + bool(s.marker)) if isinstance(s.content, tuple) else bool(s.text)
                for s in self.sections
                if s.status != "dropped"
            )
            raise OutputFormError(
                f"this layout was sized as text (mode={self.mode!r}): its {self.total_tokens:,} tokens count no "
                f"chat overhead, and as {n} {'message' if n == 1 else 'messages'} it would cost about "
                f"{self.total_tokens + 4 * n + 3:,} of the {self.max_tokens:,} allowed; lay the sections out with "
                f"TokenBox(..., mode='messages') to send them as chat messages, or send layout.text"
            )
        if "messages" not in self._cache:
            self._cache["messages"] = plain_messages(self.sections)
        return [dict(m) for m in self._cache["messages"]]

    @property
    def utilisation(self) -> float:
        return 0.0 if self.max_tokens == 0 else self.total_tokens / self.max_tokens

    @property
    def removed(self) -> tuple[RemovedItem, ...]:
        return tuple(r for s in self.sections for r in s.removed)

    # ------------------------------------------------------------------ identity

    def _output(self) -> Any:
        if self.mode == "messages":  # what the sections render to, whether or not a provider would take it
            return [m for s in self.sections for m in section_messages(s)]
        return self.text

    @property
    def input_hash(self) -> str:
        """sha256 of a canonical encoding of every input that can change this layout (``tokenbox_core.box._inputs``).

        Stable across processes unless :attr:`input_hash_notes` names an input
        without a stable identity (a lambda counter, for example).
        """
        if "input_hash" not in self._cache:
            value = self.input_hasher()
            digest, notes = value if isinstance(value, tuple) else (value, ())
            self._cache["input_hash"], self._cache["input_hash_notes"] = digest, tuple(notes)
        return str(self._cache["input_hash"])

    @property
    def input_hash_notes(self) -> tuple[str, ...]:
        """Inputs with no stable identity (hashed by their identity in this process); empty when none."""
        _ = self.input_hash
        return tuple(self._cache["input_hash_notes"])

    @property
    def output_hash(self) -> str:
        return hashlib.sha256(canonical_json(self._output()).encode("utf-8", "surrogatepass")).hexdigest()

    @property
    def fingerprint(self) -> str:
        """sha256 of the canonical output and every decision (no ids, times or latencies)."""
        if "fingerprint" not in self._cache:
            payload = {
                "output": self._output(),
                "total_tokens": self.total_tokens,
                "budget": self.budget.to_dict(),
                "counter": self.counter_name,
                "mode": self.mode,
                "sections": [s.decisions() for s in self.sections],
            }
            self._cache["fingerprint"] = hashlib.sha256(
                canonical_json(payload).encode("utf-8", "surrogatepass")
            ).hexdigest()
        return str(self._cache["fingerprint"])

    @property
    def trace(self) -> dict[str, Any]:
        """The compilation trace (context-engineering chapter §6.4.2)."""
        return {
            "trace_id": self.trace_id,
            "timestamp": self.timestamp,
            "config_version": self.config_version,
            "input_hash": self.input_hash,
            "input_hash_stable": not self.input_hash_notes,
            **({"input_hash_notes": list(self.input_hash_notes)} if self.input_hash_notes else {}),
            "output_hash": self.output_hash,
            "fingerprint": self.fingerprint,
            "counter": self.counter_name,
            "budget": self.budget.to_dict(),
            "effective_max_tokens": self.max_tokens,
            "effective_target_tokens": self.target_tokens,
            "total_tokens": self.total_tokens,
            "section_allocations": {
                s.id: {
                    "allocated": s.allocated_tokens,
                    "used": s.final_tokens,
                    "overflow": s.full_tokens > s.final_tokens,
                    "status": s.status,
                }
                for s in self.sections
            },
            "excluded_items": [
                {"item_id": r.id, "section": r.section, "reason": r.reason, "score": r.score, "tokens": r.tokens}
                for r in self.removed
            ],
            "compression_ratios": {s.id: round(s.compression_ratio, 6) for s in self.sections},
            "selection": {s.id: dict(s.selection) for s in self.sections if s.selection is not None},
            "refilled": [s.id for s in self.sections if s.refilled],
            "latency_ms": round(self.latency_ms, 3),
        }

    # ------------------------------------------------------------------ export

    def to_dict(self) -> dict[str, Any]:
        """Canonical, JSON-ready description (no run id, time or latency)."""
        return {
            "fingerprint": self.fingerprint,
            "total_tokens": self.total_tokens,
            "max_tokens": self.max_tokens,
            "target_tokens": self.target_tokens,
            "fixed_tokens": self.fixed_tokens,
            "budget": self.budget.to_dict(),
            "counter": self.counter_name,
            "mode": self.mode,
            "separator": self.separator,
            "input_hash": self.input_hash,
            "output_hash": self.output_hash,
            "sections": [s.to_dict() for s in self.sections],
        }

    def to_json(self, *, indent: int | None = None) -> str:
        if indent is None:
            return canonical_json(self.to_dict())
        return json.dumps(self.to_dict(), sort_keys=True, indent=indent, ensure_ascii=False)

    # ------------------------------------------------------------------ reports

    def explain(self, *, all: bool = False) -> str:
        """A readable table of every section and decision (:func:`tokenbox_core.report.explain`);
        ``all=True`` lists every removed item instead of the first few lines."""
        from tokenbox_core.report import explain

        return explain(self, all=all)

    def __str__(self) -> str:
        return self.explain()

    def _repr_html_(self) -> str:
        from tokenbox_core.report import layout_html

        return layout_html(self)

    def to_html(self, path: str | None = None) -> str:
        """A self-contained HTML report; written to ``path`` when given."""
        from tokenbox_core.report import layout_html

        page = layout_html(self, standalone=True)
        if path is not None:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(page)
        return page

    def diff(self, other: Layout) -> Any:
        """Compare with another layout (this is *a*, ``other`` is *b*)."""
        from tokenbox_core.report import diff_layouts

        return diff_layouts(self, other)


CHAT_ROLES = ("system", "developer", "user", "assistant")
"""The roles :attr:`Layout.messages` emits; ``tool`` messages need the conversation engine."""

_ENGINE = (
    "lay the conversation out with the conversation engine — tokenbox_core.chat.conversation_sections(messages, "
    "...) and its .render(layout), or fit_conversation — which keeps tool calls structured with their results "
    "and restarts a cut history on a user message"
)


def section_messages(section: LaidOutSection) -> list[dict[str, str]]:
    """One laid-out section as plain chat messages: its marker (the section's role, else ``"user"``) and one
    message per kept item (the item's role, else the section's, else ``"user"``), or one for its text."""
    if section.status == "dropped":
        return []
    if isinstance(section.content, tuple):
        out = [{"role": section.role or "user", "content": section.marker}] if section.marker else []
        out += [{"role": item.role or section.role or "user", "content": item.content} for item in section.content]
        return out
    return [{"role": section.role or "user", "content": section.text}] if section.text else []


def check_plain_messages(placed: Sequence[tuple[LaidOutSection | None, Mapping[str, Any]]]) -> None:
    """Raise :class:`~tokenbox_core.errors.OutputFormError` for the first message a chat provider would reject:
    ``placed`` pairs each message with the section it renders (``None``: the conversation engine's, already in
    the provider's shape).  The rules are :attr:`Layout.messages`'s."""
    started: str | None = None
    for section, message in placed:
        role = message["role"]
        where = f"section {section.id!r}" if section is not None else "the conversation"
        if section is not None and role not in CHAT_ROLES:
            if role == "tool":
                raise OutputFormError(
                    f"{where} holds a tool message: a tool result must answer its call by tool_call_id, which "
                    f"Layout.messages cannot give it; {_ENGINE}"
                )
            raise OutputFormError(
                f"{where} has role {role!r}, which chat providers reject; the roles are "
                f"{', '.join(repr(r) for r in CHAT_ROLES)} (give the section or item one of them)"
            )
        if role in ("system", "developer"):
            if started is not None:
                raise OutputFormError(
                    f"{where} emits a {role} message after the conversation started ({started}): providers take "
                    f"system and developer messages only before it; declare the section before the conversation, "
                    f"or give it role 'user'"
                )
        elif started is None:
            started = where
    for section, _ in placed:
        if section is None or section.critical or not isinstance(section.content, tuple):
            continue
        roles = {item.role or section.role or "user" for item in section.content}
        if {"user", "assistant"} <= roles:
            raise OutputFormError(
                f"section {section.id!r} holds a conversation (user and assistant items) that a cut can shorten: "
                f"Layout.messages renders items one by one and could start it on an assistant reply whose "
                f"question was cut; {_ENGINE}; or make the section critical (shrink=0)"
            )


def plain_messages(sections: Sequence[LaidOutSection]) -> list[dict[str, str]]:
    """The sections as plain chat messages (:func:`section_messages`), checked (:func:`check_plain_messages`)."""
    placed = [(s, m) for s in sections for m in section_messages(s)]
    check_plain_messages(placed)
    return [m for _, m in placed]


def _known_hash(digest: str, notes: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    return digest, notes


def _rebuild_layout(fields: dict[str, Any]) -> Layout:
    return Layout(**fields)
