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

Like ``ChatMemoryBuffer``'s, a trimmed history never starts on an assistant or
tool message (``start_on_user=True``, the default).  When the layout removed
history messages, the replies (``REPLY_ROLES``: assistant, tool, ...) left
before the first kept user message are removed too, a tool call with all its
results at a time; system messages between them stay.  A history that fits
whole is returned as stored, as ``ChatMemoryBuffer`` returns it.  The fix-up
only ever removes messages, and never empties an agent loop: the latest user
message is critical, a history with no user message is left as laid out, and
so is one whose first reply is critical (a tool group around a system
message), since removing the replies before it could not make the history
start on a user message.  Messages from memory blocks are not history and are
not touched.  The removals are listed in
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

import asyncio
import contextvars
from collections.abc import Callable, Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from llama_index.core.base.llms.types import ChatMessage, ContentBlock, MessageRole, TextBlock
from llama_index.core.bridge.pydantic import ConfigDict, Field, PrivateAttr, field_validator
from llama_index.core.llms.llm import LLM
from llama_index.core.memory.memory import BaseMemoryBlock
from llama_index.core.memory.types import DEFAULT_CHAT_STORE_KEY, BaseChatStoreMemory
from llama_index.core.storage.chat_store import BaseChatStore, SimpleChatStore

from tokenbox_core import ContextBudget, Item, Layout, RemovedItem, Section, TokenBox, TokenCounter
from tokenbox_core.tokens import message_token_count
from tokenbox_llamaindex._counting import resolve_counter
from tokenbox_llamaindex._messages import DEFAULT_MEDIA_TOKENS, Parsed, message_groups, parse, to_item

__all__ = ["DEFAULT_TOKEN_LIMIT", "DEFAULT_TOKEN_LIMIT_RATIO", "REPLY_ROLES", "TokenBoxMemory"]

DEFAULT_TOKEN_LIMIT = 3000
"""``ChatMemoryBuffer``'s default limit when neither ``token_limit`` nor ``llm`` is given."""
DEFAULT_TOKEN_LIMIT_RATIO = 0.75
"""Share of an LLM's context window used as the limit when only ``llm`` is given (as ``ChatMemoryBuffer``)."""

REPLY_ROLES = frozenset({"assistant", "tool", "function", "chatbot", "model"})
"""Roles of messages a model or a tool wrote; with ``start_on_user`` the history never starts on one."""

_T = TypeVar("_T")


def _run_sync(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run a coroutine from sync code, in a worker thread when an event loop is already running here."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    context = contextvars.copy_context()
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(context.run, asyncio.run, coro).result()


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


def _message_size(message: Parsed, counter: TokenCounter) -> int:
    """The tokens the layout charged for a message: its vouched size, else overhead + role + text."""
    if message.tokens is not None:
        return message.tokens
    return message_token_count({"role": message.role, "content": message.text}, counter)


def _critical_flags(history: Sequence[Parsed], groups: Sequence[str | None]) -> list[bool]:
    """System messages, the latest user message, and any tool group that straddles one of them."""
    critical = [m.role == "system" for m in history]
    for index in range(len(history) - 1, -1, -1):
        if history[index].role == "user":
            critical[index] = True
            break
    members: dict[str, list[int]] = {}
    for index, group in enumerate(groups):
        if group is not None:
            members.setdefault(group, []).append(index)
    changed = True
    while changed:  # a group cut in two by a critical message is kept whole, so no result loses its call
        changed = False
        for indices in members.values():
            if all(critical[i] for i in indices):
                continue
            if any(critical[i] for i in range(indices[0], indices[-1] + 1)):
                for i in indices:
                    critical[i] = True
                changed = True
    return critical


def _start_on_user(
    kept: Sequence[int], history: Sequence[Parsed], groups: Sequence[str | None], critical: Sequence[bool]
) -> list[int]:
    """The kept history messages to remove so that the history starts on a user message (see the module doc).

    ``kept`` are the indices of the kept history messages, in order.  Replies
    before the first user message go with every kept member of their tool
    group; other roles (system, developer) are passed over and stay.
    """
    if not any(history[i].role == "user" for i in kept):
        return []  # nothing to start on: removing the replies would empty an agent loop
    members: dict[str, list[int]] = {}
    for i in kept:
        group = groups[i]
        if group is not None:
            members.setdefault(group, []).append(i)
    dropped: set[int] = set()
    for i in kept:
        role = history[i].role
        if role == "user":
            break
        if role not in REPLY_ROLES or i in dropped:
            continue
        if critical[i]:
            return []  # a critical reply comes first whatever is removed before it
        group = groups[i]
        dropped.update(members[group] if group is not None else (i,))
    return sorted(dropped)


class TokenBoxMemory(BaseChatStoreMemory):
    """Chat memory whose ``get`` returns a deterministic Token Box layout of the history.

    Use it wherever LlamaIndex takes a ``memory`` (``SimpleChatEngine``,
    ``ContextChatEngine``, ``CondensePlusContextChatEngine``, agents).  The
    layout of the last ``get`` is :attr:`last_layout`.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

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
        default=DEFAULT_MEDIA_TOKENS, ge=0, description="Tokens charged per image, audio, video or document block."
    )
    start_on_user: bool = Field(
        default=True,
        description=(
            "As ChatMemoryBuffer, never start a trimmed history on an assistant or tool message: the replies "
            "before the first kept user message are removed (whole tool groups). False returns the layout as is."
        ),
    )

    _last_layout: Layout | None = PrivateAttr(default=None)
    _last_start_on_removed: tuple[RemovedItem, ...] = PrivateAttr(default=())

    @field_validator("memory_blocks")
    @classmethod
    def _unique_block_names(cls, blocks: list[BaseMemoryBlock[Any]]) -> list[BaseMemoryBlock[Any]]:
        names = [block.name for block in blocks]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"memory block names must be unique; repeated: {', '.join(duplicates)}")
        return blocks

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
        **kwargs: Any,
    ) -> TokenBoxMemory:
        """Build from ``ChatMemoryBuffer``'s arguments.

        ``token_limit`` defaults to 75% of ``llm``'s context window, else
        3,000; ``llm`` also names the model whose encoding counts.
        ``tokenizer_fn`` (a LlamaIndex tokenizer) is used when ``counter`` is
        not given.
        """
        if kwargs:
            raise ValueError(f"Unexpected kwargs: {sorted(kwargs)}")
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
            chat_store=store,
            chat_store_key=chat_store_key,
        )

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
        if self._last_layout is None:
            return None
        return self._last_layout.total_tokens - sum(r.tokens for r in self._last_start_on_removed)

    # ------------------------------------------------------------------ get

    def get(self, input: str | None = None, initial_token_count: int = 0, **kwargs: Any) -> list[ChatMessage]:
        """The history laid out into ``token_limit - initial_token_count`` tokens."""
        history = self.get_all()
        blocks = _run_sync(self._ablock_messages(history, input, **kwargs)) if self.memory_blocks else []
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
        if not history and not blocks:
            self._last_layout, self._last_start_on_removed = None, ()
            return []
        counter = self.resolve_counter()
        parsed = parse(history, counter, media_tokens=self.media_tokens)
        groups = message_groups(parsed)
        critical = _critical_flags(parsed, groups)
        by_id: dict[str, ChatMessage] = {f"m{i}": message for i, message in enumerate(history)}
        lead = 0
        while lead < len(parsed) and parsed[lead].role == "system":
            lead += 1

        sections: list[Section] = [
            Section(f"message-{i}", [to_item(f"m{i}", parsed[i])], role="system") for i in range(lead)
        ]
        for block, messages in blocks:
            items = []
            for k, (message, record) in enumerate(
                zip(messages, parse(messages, counter, media_tokens=self.media_tokens), strict=True)
            ):
                key = f"{block.name}/{k}"
                by_id[key] = message
                items.append(to_item(key, record))
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
        run: list[Item] = []
        for i in range(lead, len(parsed)):
            item = to_item(f"m{i}", parsed[i], groups[i])
            if critical[i]:
                if run:
                    sections.append(self._history_section(run))
                    run = []
                sections.append(Section(f"message-{i}", [item]))
            else:
                run.append(item)
        if run:
            sections.append(self._history_section(run))

        budget: int | ContextBudget = self.token_limit
        if initial_token_count:
            budget = ContextBudget(max_tokens=self.token_limit, reserved_slots={"initial": initial_token_count})
        layout = TokenBox(budget, counter=counter, mode="messages").layout(sections)
        kept = [(section.id, item) for section in layout.sections for item in section.content if isinstance(item, Item)]
        index = {f"m{i}": i for i in range(len(history))}
        start_on: tuple[RemovedItem, ...] = ()
        if self.start_on_user and any(removed.id in index for removed in layout.removed):  # the history was trimmed
            in_history = [index[item.id] for _, item in kept if item.id in index]
            gone = {f"m{i}" for i in _start_on_user(in_history, parsed, groups, critical)}
            start_on = tuple(
                RemovedItem(
                    id=item.id,
                    section=section_id,
                    reason="start_on",
                    tokens=_message_size(parsed[index[item.id]], counter),
                    group=item.group,
                )
                for section_id, item in kept
                if item.id in gone
            )
            kept = [(section_id, item) for section_id, item in kept if item.id not in gone]
        self._last_layout, self._last_start_on_removed = layout, start_on
        return [by_id[item.id] for _, item in kept]

    def _history_section(self, run: list[Item]) -> Section:
        return Section(f"history-{run[0].id}", run, priority=self.history_priority, shrink=1.0, eviction="oldest")
