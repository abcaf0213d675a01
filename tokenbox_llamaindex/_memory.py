"""``TokenBoxMemory``: a chat memory whose ``get`` is a Token Box layout of the history.

It has the surface of LlamaIndex's ``ChatMemoryBuffer`` (``from_defaults``,
``get``, ``get_all``, ``put``, ``set``, ``reset`` and their async variants,
chat-store backed), but ``get`` maps the history onto Sections and lets the
core decide what is sent:

- system messages and the latest user message are critical sections (never
  dropped; if they alone exceed ``token_limit``, ``ContextCriticalOverflow``);
- the runs of messages between them are list sections evicted oldest first,
  an assistant tool call and all its results as one atomic group;
- optional memory blocks (``BaseMemoryBlock``, e.g. ``StaticMemoryBlock``)
  become system messages after the leading system messages.  A block's
  LlamaIndex ``priority`` keeps its documented meaning: 0 is never dropped,
  1 is the most important, larger numbers are dropped first (LlamaIndex's
  ``Memory`` drops priority 1 first, run-llama/llama_index#23090).

Sizes include the chat format's overhead and tool-call payloads, and the result
(plus ``initial_token_count``) never exceeds ``token_limit``.

What ``token_limit`` covers: the messages :meth:`~TokenBoxMemory.get` returns
(and ``initial_token_count``, which chat engines pass for their prefix), not
the request an agent sends.  A LlamaIndex agent (``FunctionAgent``,
``AgentWorkflow``) adds its system prompt before the memory's messages, the
run's in-flight tool calls and results after them, and the tool definitions
beside them, so its requests exceed ``token_limit`` by that much (measured:
a ``FunctionAgent`` with a 246-token system prompt and tool definition, two
tool rounds of about 120 tokens per question, ``token_limit=3000``: 96 of 300
requests over, the largest 3,171 tokens).  For agents, use
:class:`~tokenbox_llamaindex.TokenBoxSessionMemory`, which reserves what the
agent adds so the whole request stays within its ``token_limit``.

The conversation rules are the core's, the same as for LangChain
(:func:`tokenbox_core.chat.fit_conversation`, called once per ``get`` with the
memory blocks as extra sections): every system (and developer) message and the
latest user message are critical; a tool call and all its results are kept or
removed together, even when a message stands between them; messages that can
never fit are not counted (the horizon).  Like ``ChatMemoryBuffer``'s, a
trimmed history never starts on an assistant or tool message
(``start_on_user=True``, the default): when something was removed, the
messages left before the first kept user message are removed too, a tool call
with all its results at a time; system messages between them stay.  A history
that fits whole is returned as stored.  This never empties an agent loop: a
history with no user message is left as laid out, and so is one whose first
reply is critical.  Messages from memory blocks are not history and are not
touched.  The removals are listed in
:attr:`TokenBoxMemory.last_start_on_removed` and subtracted in
:attr:`TokenBoxMemory.last_total_tokens`; :attr:`TokenBoxMemory.last_layout`
is the core's layout before them.

>>> from llama_index.core.llms import ChatMessage
>>> memory = TokenBoxMemory.from_defaults(token_limit=40, counter="whitespace")
>>> memory.set([
...     ChatMessage(role="system", content="Be brief."),
...     ChatMessage(role="user", content="old question " * 10),
...     ChatMessage(role="assistant", content="old answer " * 10),
...     ChatMessage(role="user", content="What now?"),
... ])
>>> [m.role.value for m in memory.get()]
['system', 'user']
>>> memory.last_layout.total_tokens <= 40
True
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from llama_index.core.base.llms.types import ChatMessage, ContentBlock, MessageRole, TextBlock
from llama_index.core.bridge.pydantic import ConfigDict, Field, PrivateAttr, field_validator
from llama_index.core.llms.llm import LLM
from llama_index.core.memory.memory import BaseMemoryBlock
from llama_index.core.memory.types import DEFAULT_CHAT_STORE_KEY, BaseChatStoreMemory
from llama_index.core.storage.chat_store import BaseChatStore, SimpleChatStore

from tokenbox_core import ContextBudget, ContextCriticalOverflow, Item, Layout, Section, TokenCounter
from tokenbox_core.arguments import StrictArguments, check_arguments
from tokenbox_core.chat import (
    FRAMEWORK_ROLES,
    ChatCounter,
    ConversationOverflow,
    check_on_invalid,
    checked_conversation,
    fit_conversation,
)
from tokenbox_core.errors import ConfigError
from tokenbox_core.layout import RemovedItem
from tokenbox_core.tokens import content_text
from tokenbox_llamaindex._blocks import restored_values
from tokenbox_llamaindex._counting import counter_name, resolve_counter
from tokenbox_llamaindex._events import emit_layout
from tokenbox_llamaindex._messages import DEFAULT_MEDIA_TOKENS, neutral, plain_message
from tokenbox_llamaindex._sync import run_sync

__all__ = ["DEFAULT_TOKEN_LIMIT", "DEFAULT_TOKEN_LIMIT_RATIO", "MemoryOverflow", "TokenBoxMemory"]

DEFAULT_TOKEN_LIMIT = 3000
"""``ChatMemoryBuffer``'s default limit when neither ``token_limit`` nor ``llm`` is given."""
DEFAULT_TOKEN_LIMIT_RATIO = 0.75
"""Share of an LLM's context window used as the limit when only ``llm`` is given (as ``ChatMemoryBuffer``)."""


def _block_messages(block: BaseMemoryBlock[Any], content: Any) -> list[ChatMessage]:
    """A memory block's content as the messages it contributes."""
    if not content:
        return []
    if isinstance(content, str):
        return [ChatMessage(role=MessageRole.SYSTEM, content=f"<{block.name}>\n{content}\n</{block.name}>")]
    if isinstance(content, list) and all(isinstance(m, ChatMessage) for m in content):
        return list(content)
    if isinstance(content, list):
        blocks: list[ContentBlock] = [TextBlock(text=f"<{block.name}>"), *content, TextBlock(text=f"</{block.name}>")]
        return [ChatMessage(role=MessageRole.SYSTEM, blocks=blocks)]
    raise TypeError(
        f"memory block {block.name!r} returned {type(content).__name__}; a memory block must return text, "
        f"a list of content blocks or a list of ChatMessage"
    )


def _store_dict(store: BaseChatStore) -> dict[str, Any]:
    """A chat store as ``load_chat_store`` reads it.  ``SimpleChatStore.model_dump`` fails on messages with
    pydantic >= 2.12 (LlamaIndex's wrap serializer passes ``info`` where pydantic expects an index), so its
    messages are dumped one by one."""
    if isinstance(store, SimpleChatStore):
        messages = {key: [m.model_dump(mode="json") for m in values] for key, values in store.store.items()}
        return {"store": messages, "class_name": store.class_name()}
    return {**store.model_dump(), "class_name": store.class_name()}


class MemoryOverflow(ConversationOverflow, ValueError):
    """The messages the memory must keep (system messages, the latest user message, priority-0 blocks) alone
    exceed ``token_limit``; a ``ValueError`` as ``ChatMemoryBuffer``'s errors are (issue 10 item 12)."""

    limit_name = "token_limit"
    hint = (
        "Raise token_limit, shorten them, or give a memory block a priority above 0 so it may be dropped "
        "(TokenBoxMemory: or lower initial_token_count; TokenBoxSessionMemory: or lower reserve_tokens / "
        "in_flight_tokens)."
    )


def unique_block_names(blocks: list[BaseMemoryBlock[Any]]) -> list[BaseMemoryBlock[Any]]:
    """``blocks`` when their names are unique, else a ValueError naming the repeats (shared by the memories)."""
    names = [block.name for block in blocks]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ConfigError(f"memory block names must be unique; repeated: {', '.join(duplicates)}")
    return blocks


class TokenBoxMemory(StrictArguments, BaseChatStoreMemory):
    """Chat memory whose ``get`` returns a deterministic Token Box layout of the history.

    Use it wherever LlamaIndex takes a ``memory`` (``SimpleChatEngine``,
    ``ContextChatEngine``, ``CondensePlusContextChatEngine``, agents).  The
    layout of the last ``get`` is :attr:`last_layout`.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)
    budget_name: ClassVar[str | None] = "token_limit"

    token_limit: int = Field(
        default=DEFAULT_TOKEN_LIMIT, gt=0, description="Most tokens the returned messages may cost (priming included)."
    )
    counter: Any = Field(
        default=None,
        exclude=True,
        description=(
            "How to count: a TokenBox counter name ('cl100k_base', 'gpt-4o', ...), a TokenCounter, or a "
            "LlamaIndex tokenizer callable. None: Settings.tokenizer if set, else the model's encoding."
        ),
    )
    model_name: str | None = Field(
        default=None,
        description="Model whose tiktoken encoding counts when neither counter nor Settings.tokenizer is set.",
    )
    # Unparametrised, as in LlamaIndex's Memory: with BaseMemoryBlock[Any] pydantic would try to rebuild
    # each block (a StaticMemoryBlock is a BaseMemoryBlock[list[ContentBlock]]) as the abstract base.
    memory_blocks: list[BaseMemoryBlock] = Field(  # type: ignore[type-arg]
        default_factory=list,
        description="Memory blocks added as system messages; priority 0 is never dropped, higher numbers go first.",
    )
    history_priority: int = Field(
        default=0,
        description=(
            "Layout priority of the history runs. A block of priority p >= 1 has layout priority -p, so with the "
            "default 0 blocks are dropped before history; set it below -p to give history up first."
        ),
    )
    media_tokens: int = Field(
        default=DEFAULT_MEDIA_TOKENS,
        ge=0,
        description=(
            "Tokens charged per media block that no published rule can cost (video, document); image and "
            "audio blocks are costed by the model's rule from their data."
        ),
    )
    start_on_user: bool = Field(
        default=True,
        description=(
            "As ChatMemoryBuffer, never start a trimmed history on an assistant or tool message: the replies "
            "before the first kept user message are removed (whole tool groups). False returns the layout as is."
        ),
    )

    on_invalid: str = Field(
        default="raise",
        description=(
            "A history a provider would reject (a tool result apart from its call or twice, an orphan result, an "
            "unanswered call): 'raise' a ConversationError, or 'repair' it (a ConversationRepairWarning names "
            "each change; the chat store is left as it is)."
        ),
    )

    _last_layout: Layout | None = PrivateAttr(default=None)
    _last_start_on_removed: tuple[RemovedItem, ...] = PrivateAttr(default=())
    _last_total: int | None = PrivateAttr(default=None)

    @field_validator("on_invalid")
    @classmethod
    def _known_on_invalid(cls, value: str) -> str:
        return check_on_invalid(value)

    @field_validator("memory_blocks")
    @classmethod
    def _unique_block_names(cls, blocks: list[BaseMemoryBlock[Any]]) -> list[BaseMemoryBlock[Any]]:
        return unique_block_names(blocks)

    @classmethod
    def class_name(cls) -> str:
        return "TokenBoxMemory"

    @classmethod
    def from_defaults(
        cls,
        chat_history: list[ChatMessage] | None = None,
        llm: LLM | None = None,
        chat_store: BaseChatStore | None = None,
        chat_store_key: str = DEFAULT_CHAT_STORE_KEY,
        token_limit: int | None = None,
        tokenizer_fn: Callable[[str], Any] | None = None,
        *,
        counter: Any = None,
        memory_blocks: list[BaseMemoryBlock[Any]] | None = None,
        history_priority: int = 0,
        media_tokens: int = DEFAULT_MEDIA_TOKENS,
        start_on_user: bool = True,
        on_invalid: str = "raise",
        **kwargs: Any,
    ) -> TokenBoxMemory:
        """Build from ``ChatMemoryBuffer``'s arguments.

        ``token_limit`` defaults to 75% of ``llm``'s context window, else
        3,000; ``llm`` also names the model whose encoding counts.
        ``tokenizer_fn`` (a LlamaIndex tokenizer) is used when ``counter`` is
        not given.
        """
        check_arguments(
            "TokenBoxMemory.from_defaults",
            sorted(kwargs),
            [p for p in inspect.signature(cls.from_defaults).parameters if p != "kwargs"],
            budget="token_limit",
        )
        model_name = None
        if llm is not None:
            metadata = llm.metadata
            model_name = metadata.model_name
            token_limit = token_limit or int(metadata.context_window * DEFAULT_TOKEN_LIMIT_RATIO)
        store = chat_store or SimpleChatStore()
        if chat_history is not None:
            store.set_messages(chat_store_key, chat_history)
        return cls(
            token_limit=token_limit or DEFAULT_TOKEN_LIMIT,
            counter=counter if counter is not None else tokenizer_fn,
            model_name=model_name,
            memory_blocks=memory_blocks or [],
            history_priority=history_priority,
            media_tokens=media_tokens,
            start_on_user=start_on_user,
            on_invalid=on_invalid,
            chat_store=store,
            chat_store_key=chat_store_key,
        )

    # ------------------------------------------------------------------ serialisation

    def to_dict(self, **kwargs: Any) -> dict[str, Any]:
        """The memory as a dict :meth:`from_dict` restores: settings, a named counter, the chat store.

        An unnamed counter raises ``ValueError`` (pass it again to
        ``from_dict(data, counter=...)``); memory blocks are objects, listed
        by name, and ``from_dict`` asks for them again.
        """
        data = self.model_dump(exclude={"chat_store", "memory_blocks", "counter"}, **kwargs)
        data["counter"] = counter_name("TokenBoxMemory", self.counter)
        data["memory_block_names"] = [block.name for block in self.memory_blocks]
        data["chat_store"] = _store_dict(self.chat_store)
        data["class_name"] = self.class_name()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any], **kwargs: Any) -> TokenBoxMemory:
        """Restore a memory from :meth:`to_dict` (or ``ChatMemoryBuffer``'s dict); ``kwargs`` override fields
        (``counter=``, ``memory_blocks=``)."""
        from llama_index.core.storage.chat_store.loading import load_chat_store

        values = restored_values("TokenBoxMemory", data, kwargs)
        if "chat_history" in values:  # ChatMemoryBuffer's old format
            values["chat_store"] = SimpleChatStore(store={DEFAULT_CHAT_STORE_KEY: values.pop("chat_history")})
        elif isinstance(values.get("chat_store"), dict):
            values["chat_store"] = load_chat_store(values["chat_store"])
        return cls(**values)

    def to_string(self) -> str:
        """:meth:`to_dict` as JSON (``ChatMemoryBuffer.to_string``'s counterpart)."""
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_string(cls, json_str: str, **kwargs: Any) -> TokenBoxMemory:
        """Restore a memory from :meth:`to_string` (or ``ChatMemoryBuffer.to_string``); ``kwargs`` as in
        :meth:`from_dict`."""
        return cls.from_dict(json.loads(json_str), **kwargs)

    # ------------------------------------------------------------------ counting

    def resolve_counter(self) -> TokenCounter:
        """The counter this memory uses now (resolved on every call, never cached at import)."""
        return resolve_counter(self.counter, model_name=self.model_name)

    @property
    def tokenizer_fn(self) -> Callable[[str], Sequence[int]]:
        """A LlamaIndex-style tokenizer (its result's length is the count).

        ``SimpleChatEngine`` measures its prefix messages with it and passes the
        result to :meth:`get` as ``initial_token_count``.
        """
        counter = self.resolve_counter()
        return lambda text: range(counter.count(text))

    @property
    def last_layout(self) -> Layout | None:
        """The core's layout of the last ``get``/``aget`` (``None`` before the first, or for an empty history).

        A convenience for single-threaded use: concurrent calls overwrite it.
        Each call also sends its layout to LlamaIndex's instrumentation
        dispatcher (:class:`~tokenbox_llamaindex._events.TokenBoxLayoutEvent`).

        With ``start_on_user`` the messages in :attr:`last_start_on_removed`
        were removed after it; :attr:`last_total_tokens` is what was returned.
        """
        return self._last_layout

    @property
    def last_start_on_removed(self) -> tuple[RemovedItem, ...]:
        """Messages the last ``get`` removed after the layout so the history starts on a user message.

        Each has ``reason="start_on"``, the section the layout had kept it in,
        its size in tokens and its tool group.
        """
        return self._last_start_on_removed

    @property
    def last_total_tokens(self) -> int | None:
        """What the messages the last ``get`` returned cost (priming included, ``initial_token_count`` not)."""
        return self._last_total

    # ------------------------------------------------------------------ get

    def get(self, input: str | None = None, initial_token_count: int = 0, **kwargs: Any) -> list[ChatMessage]:
        """The history laid out into ``token_limit - initial_token_count`` tokens."""
        history = self.get_all()
        blocks = run_sync(self._ablock_messages(history, input, **kwargs)) if self.memory_blocks else []
        return self._lay_out(history, blocks, initial_token_count)

    async def aget(self, input: str | None = None, initial_token_count: int = 0, **kwargs: Any) -> list[ChatMessage]:
        """Async :meth:`get`."""
        history = await self.aget_all()
        blocks = await self._ablock_messages(history, input, **kwargs) if self.memory_blocks else []
        return self._lay_out(history, blocks, initial_token_count)

    async def _ablock_messages(
        self, history: list[ChatMessage], input: str | None, **kwargs: Any
    ) -> list[tuple[BaseMemoryBlock[Any], list[ChatMessage]]]:
        block_input = history if input is None else [*history, ChatMessage(role=MessageRole.USER, content=input)]
        kwargs.setdefault("session_id", self.chat_store_key)
        out = []
        for block in self.memory_blocks:
            content = await block.aget(block_input, **kwargs)
            messages = _block_messages(block, content)
            if messages:
                out.append((block, messages))
        return out

    def _lay_out(
        self,
        history: list[ChatMessage],
        blocks: list[tuple[BaseMemoryBlock[Any], list[ChatMessage]]],
        initial_token_count: int,
    ) -> list[ChatMessage]:
        if initial_token_count > self.token_limit:
            raise ValueError(
                f"Initial token count exceeds token limit: initial_token_count is {initial_token_count:,} but "
                f"token_limit is {self.token_limit:,}; raise token_limit or send a shorter prefix"
            )
        if not history and not blocks:
            self._last_layout, self._last_start_on_removed, self._last_total = None, (), None
            return []
        counter = self.resolve_counter()
        chat = ChatCounter.of(counter, media_tokens=self.media_tokens)
        by_id: dict[str, ChatMessage] = {}
        sections: list[Section] = []
        for block, messages in blocks:
            items = []
            for k, (message, d) in enumerate(zip(messages, neutral(messages), strict=True)):
                key = f"{block.name}/{k}"
                by_id[key] = message
                text = content_text(d["content"])
                items.append(Item(id=key, content=text, role=d["role"], kind="Message", tokens=chat.size(d)))
            flexible = block.priority != 0
            sections.append(
                Section(
                    f"memory:{block.name}",
                    items,
                    priority=-block.priority if flexible else 0,
                    shrink=1.0 if flexible else 0.0,
                    role="system",
                )
            )
        dicts = neutral(history)
        checked = checked_conversation(dicts, on_invalid=self.on_invalid, roles=FRAMEWORK_ROLES)
        if checked.changes:  # repaired: the kept messages in their new order (one that lost a call, rebuilt)
            history = [
                history[at] if d is dicts[at] else plain_message(d)
                for d, at in zip(checked.messages, checked.sources, strict=True)
            ]
            dicts = [dict(m) for m in checked.messages]
        budget: int | ContextBudget = self.token_limit
        if initial_token_count:
            budget = ContextBudget(max_tokens=self.token_limit, reserved_slots={"initial": initial_token_count})
        try:
            fit = fit_conversation(
                dicts,
                budget,
                counter=chat,
                include_system="all",
                keep_last="user",
                start_on="user" if self.start_on_user else None,
                start_on_if_trimmed=True,
                extra_sections=sections,
                history_priority=self.history_priority,
            )
        except ContextCriticalOverflow as exc:
            raise MemoryOverflow(exc.budget, exc.required, exc.section_ids) from exc
        layout = fit.layout
        where = {item.id: (s.id, item) for s in layout.sections for item in s.content if isinstance(item, Item)}
        self._last_start_on_removed = tuple(
            RemovedItem(
                id=r.id, section=where[r.id][0], reason="start_on", tokens=r.tokens or 0, group=where[r.id][1].group
            )
            for r in fit.finished.removed
            if r.reason == "start_on"
        )
        self._last_layout, self._last_total = layout, fit.total_tokens
        kept = [history[i] for i in fit.kept]
        lead = sum(1 for i in fit.kept if i < fit.conversation.system_end)
        extra = [by_id[item.id] for s in sections for item in layout[s.id].content if isinstance(item, Item)]
        out = [*kept[:lead], *extra, *kept[lead:]]
        removed = len(history) + len(by_id) - len(out)
        emit_layout("TokenBoxMemory", "get", layout, total_tokens=fit.total_tokens, kept=len(out), removed=removed)
        return out
