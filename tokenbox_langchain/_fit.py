"""LangChain messages through the core's conversation engine, and back.

The adapter only translates (the core decides): each message becomes the neutral
OpenAI-shaped dict (``langchain_core.messages.convert_to_openai_messages``,
plus its ``id`` and the per-message overrides of
``additional_kwargs["tokenbox"]``), sizes come from a
:class:`~tokenbox_langchain._counting.MessageCounter` over the *original*
message, and :func:`tokenbox_core.chat.fit_conversation` decides, once.  The
kept indices are mapped back to the original message objects (lossless); an
omission marker becomes a message of ``marker_type``, a partial cut a copy of
its message with the cut content.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    convert_to_openai_messages,
)

from tokenbox_core import ContextBudget, Layout
from tokenbox_core.chat import (
    FRAMEWORK_ROLES,
    MARKER_ID_PREFIX,
    ChatCounter,
    ConversationFit,
    ConversationOverflow,
    Marker,
    RemovedMessage,
    check_on_invalid,
    checked_conversation,
    fit_conversation,
)
from tokenbox_core.tokens import content_text
from tokenbox_langchain._counting import MessageCounter, openai_role

if TYPE_CHECKING:
    from tokenbox_langchain._converted import ConvertedMessages

__all__ = [
    "MARKER_ID_PREFIX",
    "METADATA_KEY",
    "CriticalMessagesOverflow",
    "FitOptions",
    "FitResult",
    "MessageTypes",
    "RemovedMessage",
    "fit_messages",
    "matches",
    "neutral",
    "omission_message",
]

METADATA_KEY = "tokenbox"
"""Per-message overrides live in ``message.additional_kwargs["tokenbox"]``: ``{"priority": int}`` (lower is
evicted first among the history messages of its run) and ``{"critical": bool}``."""

MessageTypes = str | type[BaseMessage] | Sequence[str | type[BaseMessage]]
"""Message types as LangChain names them: ``"human"``, ``"ai"``, ``"tool"``, ... or classes, or a list of them."""

MarkerType = Literal["system", "human", "ai"]
_MARKER_CLASSES: dict[str, type[BaseMessage]] = {"system": SystemMessage, "human": HumanMessage, "ai": AIMessage}
_MARKER_ROLES: dict[str, Literal["system", "user", "assistant"]] = {
    "system": "system",
    "human": "user",
    "ai": "assistant",
}
_ROLE_CLASSES: dict[str, type[BaseMessage]] = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}


class CriticalMessagesOverflow(ConversationOverflow):
    """The messages that must be kept (system, anchor, overrides) alone exceed the budget."""

    limit_name = "max_tokens"
    hint = (
        "Raise max_tokens, shorten them, or let them go: keep_system=False / keep_last_human=False "
        "(TokenBoxMessages), include_system=False / start_on=None (trim_messages), or "
        f"additional_kwargs['{METADATA_KEY}'] = {{'critical': False}} on a message."
    )


def matches(message: BaseMessage, types: MessageTypes) -> bool:
    """LangChain's rule: the type name is listed, or the message is an instance of a listed class."""
    if isinstance(types, str | type):
        types = [types]
    for t in types:
        if isinstance(t, str):
            if message.type == t:
                return True
        elif isinstance(message, t):
            return True
    return False


def omission_message(text: str, section_id: str, marker_type: MarkerType) -> BaseMessage:
    """The omission marker the core counted for ``section_id``, as a message of ``marker_type``."""
    return _MARKER_CLASSES[marker_type](content=text, id=f"{MARKER_ID_PREFIX}{section_id}")


def neutral(messages: Sequence[BaseMessage]) -> list[dict[str, Any]]:
    """Each message as the core's neutral dict: LangChain's OpenAI conversion, its id, its overrides.

    One ``convert_to_openai_messages`` call over the list; a message it
    refuses (or a list it merges or splits) is converted one by one, falling
    back to its role and text.  A message's own content blocks are kept (a
    partial cut drops whole blocks), as are its ``id`` and the overrides of
    ``additional_kwargs["tokenbox"]``.
    """
    msgs = list(messages)
    try:
        out: list[dict[str, Any]] = convert_to_openai_messages(msgs)
    except Exception:  # some message the converter refuses: convert one by one, falling back to role and text
        out = [_one(m) for m in msgs]
    if len(out) != len(msgs):  # the converter merged or split something: one by one keeps the positions
        out = [_one(m) for m in msgs]
    for m, d in zip(msgs, out, strict=True):
        if isinstance(m.content, list):  # keep the message's own blocks: a partial cut drops whole blocks
            d["content"] = list(m.content)
        if m.id:
            d["id"] = m.id
        kwargs = m.additional_kwargs
        if kwargs and METADATA_KEY in kwargs:
            d[METADATA_KEY] = kwargs[METADATA_KEY]
    return out


def repaired(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """``messages`` as the core repairs their neutral form (:func:`~tokenbox_core.chat.check_conversation`:
    separated results moved next to their call, duplicates and what cannot be sent dropped, unanswered calls
    removed), mapped back to the caller's objects; each change named by a ``ConversationRepairWarning``."""
    msgs = list(messages)
    dicts = neutral(msgs)
    kept = checked_conversation(dicts, on_invalid="repair", roles=FRAMEWORK_ROLES)
    if not kept.changes:
        return msgs
    out: list[BaseMessage] = []
    for d, at in zip(kept.messages, kept.sources, strict=True):
        m = msgs[at]
        if d is not dicts[at] and isinstance(m, AIMessage):  # an unanswered call removed
            left = {str(c.get("id")) for c in d.get("tool_calls") or ()}
            m = m.model_copy(update={"tool_calls": [c for c in m.tool_calls if str(c.get("id")) in left]})
        out.append(m)
    return out


def _one(message: BaseMessage) -> dict[str, Any]:
    try:
        (d,) = convert_to_openai_messages([message])
        return d
    except Exception:  # a content block the converter refuses: role and text still describe the message
        return {"role": openai_role(message), "content": content_text(message.content)}


class _Bridge:
    """The neutral dicts of one call and the way back to the original messages."""

    def __init__(self, messages: Sequence[BaseMessage], cache: ConvertedMessages | None = None) -> None:
        self.messages = list(messages)
        self.cache = cache
        if cache is None:
            self.dicts = neutral(self.messages)
        else:  # converted once per message content (an agent loop's history, call after call)
            self.entries = cache.entries(self.messages)
            self.dicts = [e.neutral for e in self.entries]
        self._where = {id(d): i for i, d in enumerate(self.dicts)}  # a dict the engine was given -> its position

    def _position(self, d: Mapping[str, Any]) -> int | None:
        """The position of ``d`` among the dicts (None: a dict the engine made)."""
        i = self._where.get(id(d))
        return i if i is not None and self.dicts[i] is d else None

    def original(self, d: Mapping[str, Any], index: int | None) -> BaseMessage:
        """The LangChain message a dict stands for: the original, a copy with cut content, or a new message."""
        if index is not None:
            return self.messages[index] if self._position(d) == index else self.variant(index, d)
        i = self._position(d)
        if i is not None:
            return self.messages[i]
        return _ROLE_CLASSES.get(str(d.get("role")), HumanMessage)(content=content_text(d.get("content")))

    def variant(self, index: int, d: Mapping[str, Any]) -> BaseMessage:
        """The original message with the cut content of ``d`` (some of its own blocks, or text)."""
        return self.messages[index].model_copy(update={"content": d.get("content")})

    def roles(self, types: MessageTypes | None) -> Callable[[Mapping[str, Any]], bool] | None:
        """The core's role test for ``types``: LangChain's rule on the message a dict stands for.

        The input messages' answers are decided once, by position (the engine asks about a long agent loop
        message by message when it looks for the latest human message); a dict the engine made (a marker) is
        asked about directly.
        """
        if types is None:
            return None
        position = self._position
        if isinstance(types, str):
            hits = {i for i, m in enumerate(self.messages) if m.type == types}
        else:
            hits = {i for i, m in enumerate(self.messages) if matches(m, types)}

        def test(d: Mapping[str, Any]) -> bool:
            i = position(d)
            return i in hits if i is not None else matches(self.original(d, None), types)

        return test

    def counter(self, counter: MessageCounter) -> ChatCounter:
        """Sizes in ``counter``'s units, of the original message a dict stands for (counted once per content
        with the cache of ``counter``)."""
        cache = self.cache
        if cache is None or cache.counter is not counter:
            return ChatCounter(
                lambda d, i: counter.size(self.original(d, i)), base=counter.base, name=counter.name, text=counter.core
            )
        dicts, entries, messages, original = self.dicts, self.entries, self.messages, self.original

        def size(d: Mapping[str, Any], i: int | None) -> int:
            if i is not None and dicts[i] is d:
                return cache.size(entries[i], messages[i])
            return counter.size(original(d, i))

        def size_at(i: int) -> int:
            return cache.size(entries[i], messages[i])

        return ChatCounter(size, base=counter.base, name=counter.name, text=counter.core, size_at=size_at)


@dataclass(frozen=True)
class FitOptions:
    """How a conversation is fitted; see :func:`tokenbox_core.chat.fit_conversation`."""

    system: Literal["none", "first", "leading"] = "leading"
    anchor: MessageTypes | None = "human"
    start_on: MessageTypes | None = "human"
    eviction: Literal["oldest", "newest"] = "oldest"
    omission_marker: bool | str = False
    marker_type: MarkerType = "system"
    partial: Callable[[str], list[str]] | None = None
    cache_aware: Any = False
    on_invalid: Literal["raise", "repair"] = "raise"


@dataclass
class FitResult:
    """The fitted conversation as LangChain messages, with the core's :class:`~tokenbox_core.chat.ConversationFit`.

    ``kept`` lists the original indices of the messages in ``messages`` (an
    omission marker has none); ``removed`` every message left out, with its
    reason; ``max_tokens`` is the budget's max, ``effective_max_tokens`` the
    limit the messages were fitted to.
    """

    messages: list[BaseMessage]
    fit: ConversationFit

    @property
    def layout(self) -> Layout:
        return self.fit.layout

    @property
    def kept(self) -> list[int]:
        return self.fit.kept

    @property
    def kept_ids(self) -> list[str]:
        return self.fit.kept_ids()

    @property
    def removed(self) -> list[RemovedMessage]:
        return self.fit.removed

    @property
    def total_tokens(self) -> int:
        return self.fit.total_tokens

    @property
    def max_tokens(self) -> int:
        return self.fit.max_tokens

    @property
    def effective_max_tokens(self) -> int:
        return self.fit.effective_max_tokens

    @property
    def partial(self) -> int | None:
        return self.fit.partial

    @property
    def counter(self) -> str:
        return self.fit.counter

    def all_removed(self) -> list[RemovedMessage]:
        """Every message left out, beyond-horizon ones included, by index."""
        return self.fit.removed

    def report(self) -> dict[str, Any]:
        """A JSON-ready summary: totals, kept ids, removed messages, the core's section decisions."""
        return self.fit.report()


def fit_messages(
    messages: Sequence[BaseMessage],
    counter: MessageCounter,
    budget: ContextBudget,
    options: FitOptions,
    cache: ConvertedMessages | None = None,
) -> FitResult:
    """Fit ``messages`` into ``budget`` (in ``counter``'s units) with the core's conversation engine; with
    ``cache``, each message is converted and counted once per content across calls; ``options.on_invalid="repair"``
    first leaves out what a provider would reject (:func:`~tokenbox_core.chat.check_conversation`), so the kept
    messages are still the caller's objects (an assistant message that lost an unanswered call: a copy)."""
    check_on_invalid(options.on_invalid)
    if options.on_invalid == "repair":
        messages = repaired(messages)
    bridge = _Bridge(messages, cache)
    conversation: Any = bridge.dicts
    if cache is not None and not options.cache_aware:  # checked and grouped from where the last call stopped
        read = cache.reads.read(bridge.entries)
        conversation = conversation if read is None else read
    try:
        fit = fit_conversation(
            conversation,
            budget,
            counter=bridge.counter(counter),
            include_system=options.system,
            keep_last=bridge.roles(options.anchor),
            start_on=bridge.roles(options.start_on),
            strategy="last" if options.eviction == "oldest" else "first",
            omission_marker=options.omission_marker,
            marker_role=_MARKER_ROLES[options.marker_type],
            allow_partial=options.partial is not None,
            text_splitter=options.partial,
            cache_aware=options.cache_aware,
        )
    except ConversationOverflow as exc:
        raise CriticalMessagesOverflow(exc.budget, exc.required, exc.section_ids) from exc
    out: list[BaseMessage] = []
    replaced = fit.finished.replaced
    for e in fit.entries:
        if isinstance(e, Marker):
            out.append(omission_message(e.text, e.section, options.marker_type))
        elif e in replaced:
            out.append(bridge.variant(e, replaced[e]))
        else:
            out.append(bridge.messages[e])
    return FitResult(out, fit)
