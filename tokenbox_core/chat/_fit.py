"""``fit_conversation``: a chat conversation fitted into a token budget by one Token Box layout.

>>> from tokenbox_core.chat import fit_conversation
>>> messages = [{"role": "system", "content": "be brief"}]
>>> for i in range(6):
...     messages += [{"role": "user", "content": f"question {i} about things"},
...                  {"role": "assistant", "content": f"answer {i} with some words"}]
>>> messages.append({"role": "user", "content": "final question"})
>>> fit = fit_conversation(messages, 60, counter="whitespace")
>>> [m["content"] for m in fit.messages]
['be brief', 'question 4 about things', 'answer 4 with some words', 'question 5 about things', \
'answer 5 with some words', 'final question']
>>> fit.total_tokens <= 60
True
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from tokenbox_core._budget import ContextBudget
from tokenbox_core._sections import Section
from tokenbox_core.box import TokenBox
from tokenbox_core.chat._messages import Roles
from tokenbox_core.chat._read import ReadMessages
from tokenbox_core.chat._sections import (
    ConversationSections,
    Finished,
    Marker,
    RemovedMessage,
    SystemRule,
    conversation_sections,
)
from tokenbox_core.chat._validate import (
    FRAMEWORK_ROLES,
    OnInvalid,
    check_conversation,
    check_on_invalid,
    role_problem,
)
from tokenbox_core.errors import ContextCriticalOverflow, SectionError
from tokenbox_core.layout import Layout
from tokenbox_core.tokens import PRIMING_TOKENS

__all__ = ["ConversationFit", "ConversationOverflow", "fit_conversation", "shift_budget"]


class ConversationOverflow(ContextCriticalOverflow):
    """The messages that must be kept (system, the latest user message, overrides, their tool groups) alone
    exceed the budget; ``budget`` and ``required`` are in the counter's units.  Adapters subclass it to name
    their own budget argument (``limit_name``) and options (``hint``)."""

    limit_name = "the budget"
    hint = (
        "Raise the budget, shorten them, or let them go: include_system=False, keep_last=None, or "
        "{'tokenbox': {'critical': False}} on a message."
    )

    def __init__(self, budget: int, required: int, section_ids: Sequence[str]) -> None:
        super().__init__(budget, required, section_ids)
        ids = ", ".join(repr(s) for s in self.section_ids) or "(none)"
        Exception.__init__(
            self,
            f"the messages that must be kept need {required:,} tokens but {self.limit_name} is {budget:,} "
            f"(over by {required - budget:,}); they are: {ids}. {self.hint}",
        )


def shift_budget(budget: ContextBudget, delta: int) -> ContextBudget:
    """The same budget in core units: ``delta`` (core priming minus the counter's own empty-list cost) added to
    max and target.  A budget below what an empty list costs keeps room for the priming only, so nothing
    flexible fits and critical messages overflow."""
    if delta == 0 and budget.max_tokens >= PRIMING_TOKENS:
        return budget
    target = budget.target_tokens
    return ContextBudget(
        max_tokens=max(PRIMING_TOKENS, budget.max_tokens + delta),
        target_tokens=None if target is None else max(PRIMING_TOKENS, target + delta),
        output_reserve=min(budget.output_reserve, max(0, budget.max_tokens + delta - PRIMING_TOKENS)),
        reserved_slots=budget.reserved_slots,
        estimation_safety_margin_percent=budget.estimation_safety_margin_percent,
    )


@dataclass
class ConversationFit:
    """A fitted conversation (chapter §6.2.4).

    ``messages``: the kept messages in order, omission markers included
    (``{"role", "content"}``); ``kept``: the input index of each kept message,
    in order (markers have none); ``entries``: ``messages`` as input indices
    or :class:`~tokenbox_core.chat._sections.Marker`; ``removed``: every
    message left out, by index, with its reason; ``layout``: the core's layout;
    ``total_tokens``: what ``messages`` cost in the counter's units;
    ``effective_max_tokens``: the limit they were fitted to (max less reserves
    and margin); ``partial``: the index of a message cut by ``allow_partial``.
    """

    conversation: ConversationSections = field(repr=False)
    finished: Finished = field(repr=False)
    layout: Layout
    total_tokens: int
    max_tokens: int
    effective_max_tokens: int

    @property
    def entries(self) -> list[int | Marker]:
        return self.finished.entries

    @cached_property
    def messages(self) -> list[Mapping[str, Any]]:
        return [self.conversation.output(e, self.finished) for e in self.finished.entries]

    @property
    def kept(self) -> list[int]:
        return [e for e in self.finished.entries if isinstance(e, int)]

    @property
    def partial(self) -> int | None:
        return self.finished.partial

    @property
    def previewed(self) -> list[int]:
        """The input indices of the newest step's results shown as previews (:mod:`~tokenbox_core.chat._step`)."""
        return sorted(j for j in self.finished.replaced if j != self.finished.partial)

    @property
    def counter(self) -> str:
        return self.conversation.counter.name

    @cached_property
    def removed(self) -> list[RemovedMessage]:
        return sorted([*self.finished.removed, *self.conversation.beyond_horizon()], key=lambda r: r.index)

    def kept_ids(self) -> list[str]:
        """The item ids of the kept messages (their own ``id``, else ``m<index>``)."""
        return [self.conversation.ids[i] for i in self.kept]

    def report(self) -> dict[str, Any]:
        """A JSON-ready summary: totals, kept and removed messages, the core's section decisions."""
        removed = self.removed
        budget = self.layout.budget
        return {
            "total_tokens": self.total_tokens,
            "max_tokens": self.max_tokens,
            "output_reserve": budget.output_reserve,
            "reserved_tokens": budget.reserved_tokens,
            "effective_max_tokens": self.effective_max_tokens,
            "counter": self.counter,
            "fingerprint": self.layout.fingerprint,
            "kept": len(self.kept),
            "removed": len(removed),
            "kept_ids": self.kept_ids(),
            "removed_messages": [r.to_dict() for r in removed],
            "partial": self.partial,
            "sections": [{k: v for k, v in s.decisions().items() if k != "removed"} for s in self.layout.sections],
        }


def _check_roles(name: str, roles: Any) -> None:
    """A :class:`SectionError` for a ``start_on``/``keep_last`` role that is not a chat role (with a did-you-mean)."""
    if roles is None or callable(roles):
        return
    names = [roles] if isinstance(roles, str) else roles
    if not isinstance(names, Iterable):
        raise SectionError(f"{name} must be a role, a list of roles or a predicate over a message, got {roles!r}")
    for role in names:
        wrong = role_problem(role, f"{name} names a role that", FRAMEWORK_ROLES) if isinstance(role, str) else None
        if wrong is not None:
            raise SectionError(wrong.replace(" that has role", "") + f" (in {name}=)")


def _valid(
    messages: Iterable[Mapping[str, Any]] | ReadMessages, on_invalid: OnInvalid
) -> Iterable[Mapping[str, Any]] | ReadMessages:
    """The messages, checked (:func:`~tokenbox_core.chat._validate.check_conversation`); an adapter's lazily made
    messages (``read_messages(only=...)``) are the adapter's to check."""
    check_on_invalid(on_invalid)
    if isinstance(messages, Mapping | str | bytes):
        raise SectionError(
            f"messages must be a list of message dicts, got a {type(messages).__name__}; wrap one message in a list: "
            f"[{{'role': 'user', 'content': 'hi'}}]"
        )
    if isinstance(messages, ReadMessages):
        if not isinstance(messages.messages, list):
            return messages
        checked = check_conversation(messages.messages, on_invalid=on_invalid, roles=FRAMEWORK_ROLES)
        return messages if len(checked) == len(messages.messages) and checked == messages.messages else checked
    return check_conversation(list(messages), on_invalid=on_invalid, roles=FRAMEWORK_ROLES)


def _default_splitter(text: str) -> list[str]:
    """LangChain's default: split on newlines, keeping them."""
    splits = text.split("\n")
    return [s + "\n" for s in splits[:-1]] + splits[-1:]


def fit_conversation(
    messages: Iterable[Mapping[str, Any]] | ReadMessages,
    budget: int | ContextBudget,
    *,
    counter: Any = "gpt-4o",
    start_on: Roles | None = "user",
    include_system: bool | SystemRule = True,
    keep_last: Roles | None = "user",
    strategy: Literal["last", "first"] = "last",
    omission_marker: bool | str = False,
    marker_role: Literal["system", "user", "assistant"] = "system",
    allow_partial: bool = False,
    text_splitter: Callable[[str], list[str]] | None = None,
    start_on_if_trimmed: bool = False,
    extra_sections: Sequence[Section] = (),
    history_priority: int = 0,
    media_tokens: int | None = None,
    horizon: bool = True,
    cache_aware: bool | Any = False,
    on_invalid: OnInvalid = "raise",
) -> ConversationFit:
    """Fit a conversation of OpenAI-shaped message dicts into ``budget`` with one core layout.

    Args:
        messages: dicts with ``role``, ``content`` and optionally ``name``, ``tool_calls``, ``tool_call_id``,
            ``id`` and the reserved ``"tokenbox"`` options (``{"critical": bool, "priority": int}``); or a
            :class:`~tokenbox_core.chat._read.ReadMessages` (an adapter's lazily made messages).
        budget: an int or a ``ContextBudget`` (reserves, target, safety margin), in the counter's units.
        counter: a counter or model name (``"gpt-4o"``, ``"o200k_base"``, ``"whitespace"``), a
            ``TokenCounter`` — exact chat counts as billed (priming, per-message overhead, names, tool-call
            payloads) —, a callable over one message dict, or a
            :class:`~tokenbox_core.chat._messages.ChatCounter`.
        start_on: the conversation after the leading system messages starts on a message of these roles:
            leading messages are dropped, whole tool groups at a time, but never when no kept message has
            such a role (an agent loop is never emptied). ``None``: no constraint.
        include_system: which system/developer messages are critical: ``True``/``"leading"`` (the leading
            run), ``"first"``, ``"all"``, ``False``/``"none"``.
        keep_last: the latest message of these roles is critical (``None``: none).
        strategy: ``"last"`` keeps the newest history (evicts oldest first), ``"first"`` the oldest.
        omission_marker: leave a counted message per history run saying what went (``True`` or a template
            with ``{count}`` and ``{ids}``), placed where providers accept it.
        marker_role: the marker's role.
        allow_partial: cut the boundary message into the room left (content parts, then text splits).
        text_splitter: how ``allow_partial`` splits text (default: by lines).
        start_on_if_trimmed: apply ``start_on`` only when something was removed (a conversation that fits
            is returned as given, as LlamaIndex's ``ChatMemoryBuffer`` does).
        extra_sections: other Sections laid out together, after the leading system messages (memory blocks).
        history_priority: layout priority of the history sections (lower is lost first).
        media_tokens: the cost of each non-text content part with a core counter (``None``: its JSON).
        horizon: skip counting messages that can never fit (see :mod:`tokenbox_core.chat._sections`).
        cache_aware: ``True`` or a :class:`~tokenbox_core.cache.CacheWindow`: evict history in prefix-stable
            blocks so providers' prompt caches keep serving the prefix (see :mod:`tokenbox_core.cache._window`).
        on_invalid: what to do with a conversation a provider would reject (a tool result without its call, apart
            from it or twice, a call without results, an unknown role, content that cannot be sent —
            :func:`~tokenbox_core.chat._validate.conversation_problems`): ``"raise"`` a
            :class:`~tokenbox_core.errors.ConversationError` naming the index and the fix, or ``"repair"``: move
            separated tool results next to their call, drop duplicates and what cannot be sent, close unanswered
            calls, each change named by a :class:`~tokenbox_core.errors.ConversationRepairWarning`
            (:mod:`tokenbox_core.chat._repair`); indices in the result are then positions in the repaired list.

    Raises:
        ConversationError: the conversation is invalid (``on_invalid="raise"``).
        ConversationOverflow: the critical messages alone exceed the budget (a ``ContextCriticalOverflow``).
        SectionError: malformed messages or overrides, ``allow_partial`` with an omission marker.
        CounterError: a counter that raises or returns something else than a count.
    """
    _check_roles("start_on", start_on)
    _check_roles("keep_last", keep_last)
    messages = _valid(messages, on_invalid)
    if cache_aware is not False and cache_aware is not None:
        from tokenbox_core.cache._window import fit_cache_aware

        return fit_cache_aware(
            messages.messages if isinstance(messages, ReadMessages) else messages,
            budget,
            cache_aware,
            counter=counter,
            start_on=start_on,
            include_system=include_system,
            keep_last=keep_last,
            strategy=strategy,
            omission_marker=omission_marker,
            marker_role=marker_role,
            allow_partial=allow_partial,
            text_splitter=text_splitter,
            start_on_if_trimmed=start_on_if_trimmed,
            extra_sections=extra_sections,
            history_priority=history_priority,
            media_tokens=media_tokens,
            horizon=horizon,
        )
    if allow_partial and omission_marker:
        raise SectionError("allow_partial and omission_marker cannot be combined: a cut message has no marker")
    if isinstance(budget, bool):
        raise SectionError(f"budget must be an int or a ContextBudget, got {budget!r}")
    resolved = ContextBudget.coerce(budget)
    from tokenbox_core.chat._messages import ChatCounter

    chat = ChatCounter.of(counter, media_tokens=media_tokens)
    delta = PRIMING_TOKENS - chat.base
    core_budget = shift_budget(resolved, delta)
    room = core_budget.room - PRIMING_TOKENS
    splitter = (text_splitter or _default_splitter) if allow_partial else None
    conversation = conversation_sections(
        messages,
        counter=chat,
        include_system=include_system,
        keep_last=keep_last,
        start_on=start_on,
        start_on_if_trimmed=start_on_if_trimmed,
        strategy=strategy,
        omission_marker=omission_marker,
        marker_role=marker_role,
        text_splitter=splitter,
        horizon=room if horizon else None,
        history_priority=history_priority,
        step_room=room,
    )
    sections = list(conversation.sections)
    if extra_sections:
        at = 1 if sections and sections[0].id == "system" else 0
        sections[at:at] = extra_sections
    core_counter = chat.text_counter(marker_role) if omission_marker else (chat.core or "approximate")
    box = TokenBox(core_budget, counter=core_counter, mode="messages")
    try:
        layout = box.layout(sections)
    except ContextCriticalOverflow as exc:
        raise ConversationOverflow(max(0, exc.budget - delta), max(0, exc.required - delta), exc.section_ids) from exc
    finished = conversation.finish(layout)
    return ConversationFit(
        conversation=conversation,
        finished=finished,
        layout=layout,
        total_tokens=layout.total_tokens - delta + finished.delta,
        max_tokens=resolved.max_tokens,
        effective_max_tokens=max(0, layout.max_tokens - delta),
    )
