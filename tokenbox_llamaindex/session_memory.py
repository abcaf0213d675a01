"""``TokenBoxSessionMemory``: LlamaIndex ``Memory``'s surface on the TokenBox session archive (issue 13 §5).

Like ``llama_index.core.memory.Memory``: the chat history gets ``token_limit × chat_history_token_ratio``
tokens; when it grows past that, the oldest messages are *flushed* in chunks of at least ``token_flush_size``
tokens (whole tool groups, the kept history starting on a user message — decided by the core's conversation
engine) and handed to the ``memory_blocks`` (``block.aput(messages, from_short_term_memory=True,
session_id=...)``).  Unlike ``Memory``, nothing is lost: flushed turns stay in the archive, complete blocks
of them are summarised into checkpoints (Algorithm 6.7), the rest are named by a rehydration pointer, and
:func:`~tokenbox_core.session.rehydrate` brings any of them back for one ``get``.

``get``/``aget`` return: rehydrated turns, memory-block contents, the summary section and the pointer (system
messages), then the active history — fitted to ``token_limit`` by the core (blocks with a priority above 0
and the summaries give way before the history).
"""

from __future__ import annotations

import asyncio
import contextvars
import json
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import ConfigDict, Field, PrivateAttr, field_validator
from llama_index.core.memory.memory import BaseMemoryBlock
from llama_index.core.memory.types import BaseMemory

from tokenbox_core.chat import ChatCounter, ConversationOverflow, fit_conversation
from tokenbox_core.session import (
    Checkpointer,
    MemorySessionStore,
    SessionStore,
    SQLiteSessionStore,
    Turn,
    rehydration_pointer,
)
from tokenbox_core.session.managed import REHYDRATED_HEADER, summary_section
from tokenbox_core.session.summarize import turn_line
from tokenbox_llamaindex.chat_store import from_neutral, to_neutral
from tokenbox_llamaindex.memory import unique_block_names

__all__ = ["TokenBoxSessionMemory"]

_T = TypeVar("_T")
FLUSHED = "flushed"
"""Reason of the eviction events that record flushes (the memory's state lives in the archive)."""


def _run_sync(coro: Coroutine[Any, Any, _T]) -> _T:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    context = contextvars.copy_context()
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(context.run, asyncio.run, coro).result()


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(getattr(c, "text", c)) for c in content)
    return str(content)


class TokenBoxSessionMemory(BaseMemory):
    """A LlamaIndex memory with ``Memory``'s surface whose short-term queue and archive are a TokenBox session.

    >>> from llama_index.core.llms import ChatMessage
    >>> memory = TokenBoxSessionMemory(token_limit=60, token_flush_size=10, counter="whitespace", session_id="s")
    >>> for i in range(8):
    ...     memory.put(ChatMessage(role="user", content=f"question {i} about the invoice"))
    ...     memory.put(ChatMessage(role="assistant", content=f"answer {i} with the total"))
    >>> memory.flushed_count > 0, len(memory.get_all())
    (True, 16)
    >>> memory.get()[0].content.startswith("[OMITTED:")
    True
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    token_limit: int = Field(default=30_000, gt=0, description="The overall token limit of the memory.")
    token_flush_size: int = Field(default=3_000, gt=0, description="Tokens flushed at least at once.")
    chat_history_token_ratio: float = Field(
        default=0.7, gt=0, le=1, description="Share of token_limit for the active chat history."
    )
    memory_blocks: list[BaseMemoryBlock] = Field(  # type: ignore[type-arg]
        default_factory=list, description="Blocks fed the flushed messages; their content precedes the history."
    )
    session_id: str = Field(default="chat_history", description="The session in the archive.")
    counter: Any = Field(default="gpt-4o", description="Counter name (or a TokenCounter, not serialised).")
    path: str | None = Field(default=None, description="SQLite session archive; None keeps turns in memory.")
    checkpoint_interval: int = Field(default=10, ge=1, description="Flushed turns per checkpoint summary.")
    store: Any = Field(default=None, exclude=True, description="The SessionStore (built from path when None).")

    _checkpointer: Checkpointer | None = PrivateAttr(default=None)
    _flushed: int | None = PrivateAttr(default=None)

    @field_validator("memory_blocks")
    @classmethod
    def _unique_names(cls, blocks: list[BaseMemoryBlock[Any]]) -> list[BaseMemoryBlock[Any]]:
        return unique_block_names(blocks)

    def model_post_init(self, context: Any, /) -> None:
        if self.store is None:
            self.store = SQLiteSessionStore(self.path) if self.path else MemorySessionStore()
        elif not isinstance(self.store, SessionStore):
            raise TypeError(f"store must be a SessionStore, got {type(self.store).__name__}")
        if self.token_flush_size > self.token_limit:
            raise ValueError(
                f"token_flush_size ({self.token_flush_size:,}) must not exceed token_limit ({self.token_limit:,})"
            )

    @classmethod
    def class_name(cls) -> str:
        return "TokenBoxSessionMemory"

    @classmethod
    def from_defaults(cls, **kwargs: Any) -> TokenBoxSessionMemory:
        """Build from ``Memory.from_defaults``'s keyword arguments (``chat_history`` is stored first)."""
        history = kwargs.pop("chat_history", None)
        memory = cls(**kwargs)
        if history:
            memory.put_messages(history)
        return memory

    # -- serialisation ----------------------------------------------------------------------------------------

    def to_dict(self, **kwargs: Any) -> dict[str, Any]:
        """The configuration, plus every turn when the archive is in memory (a file archive is referenced)."""
        data = super().to_dict(**kwargs)
        data["memory_blocks"] = []
        if not isinstance(self.counter, str):
            data.pop("counter", None)
        if self.path is None:
            data["messages"] = [dict(t.message) for t in self.session_store.turns(self.session_id)]
            data["flushed"] = self.flushed_count
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any], **kwargs: Any) -> TokenBoxSessionMemory:
        """Rebuild from :meth:`to_dict` (memory blocks are passed again as keyword arguments)."""
        data = {**data, **kwargs}
        data.pop("class_name", None)
        messages, flushed = data.pop("messages", None), data.pop("flushed", 0)
        memory = cls(**data)
        if messages:
            memory.session_store.extend(memory.session_id, messages)
            if flushed:
                ids = [f"t_{i}" for i in range(1, flushed + 1)]
                memory.session_store.record_eviction(memory.session_id, ids, FLUSHED)
        return memory

    def to_string(self) -> str:
        """:meth:`to_dict` as JSON."""
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_string(cls, json_str: str, **kwargs: Any) -> TokenBoxSessionMemory:
        """Rebuild from :meth:`to_string`."""
        return cls.from_dict(json.loads(json_str), **kwargs)

    # -- state ------------------------------------------------------------------------------------------------

    @property
    def session_store(self) -> SessionStore:
        """The archive."""
        store: SessionStore = self.store
        return store

    @property
    def flushed_count(self) -> int:
        """How many of the session's first turns were flushed out of the active history."""
        if self._flushed is None:
            events = self.session_store.evictions(self.session_id)
            self._flushed = sum(len(e.turn_ids) for e in events if e.reason == FLUSHED)
        return self._flushed

    def _chat(self) -> ChatCounter:
        return ChatCounter.of(self.counter)

    def _active(self) -> list[Turn]:
        return self.session_store.turns(self.session_id, start=self.flushed_count)

    # -- put --------------------------------------------------------------------------------------------------

    async def aput(self, message: ChatMessage) -> None:
        """Archive a message, then flush the oldest active messages when over the history's share."""
        await self.aput_messages([message])

    async def aput_messages(self, messages: list[ChatMessage]) -> None:
        """Archive messages, then flush when over the history's share."""
        self.session_store.extend(self.session_id, to_neutral(messages))
        await self._manage_queue()

    def put(self, message: ChatMessage) -> None:
        _run_sync(self.aput(message))

    def put_messages(self, messages: list[ChatMessage]) -> None:
        _run_sync(self.aput_messages(messages))

    async def _manage_queue(self) -> None:
        active = self._active()
        chat = self._chat()
        messages = [t.as_message() for t in active]
        limit = int(self.token_limit * self.chat_history_token_ratio)
        if sum(chat.size(m, None) for m in messages) <= limit:
            return
        target = max(1, limit - self.token_flush_size)
        try:
            fit = fit_conversation(messages, target, counter=chat, include_system=False, start_on="user")
            boundary = fit.kept[0] if fit.kept else len(messages)
        except ConversationOverflow:  # the latest user message alone is over: keep it only
            boundary = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=len(messages))
        flushed = active[:boundary]
        if not flushed:
            return
        self.session_store.record_eviction(self.session_id, [t.turn_id for t in flushed], FLUSHED)
        self._flushed = self.flushed_count + len(flushed)
        payload = from_neutral([t.as_message() for t in flushed])
        for block in self.memory_blocks:
            await block.aput(payload, from_short_term_memory=True, session_id=self.session_id)

    # -- get --------------------------------------------------------------------------------------------------

    async def aget(self, input: str | None = None, **block_kwargs: Any) -> list[ChatMessage]:
        """Rehydrated turns, block contents, summaries and pointer, then the active history, within token_limit."""
        active = self._active()
        active_messages = from_neutral([t.as_message() for t in active])
        head: list[dict[str, Any]] = []
        pinned = self.session_store.take_rehydration(self.session_id)
        old = [t for t in self.session_store.get_turns(self.session_id, pinned) if t.seq <= self.flushed_count]
        if old:
            body = "\n".join(turn_line(t.as_message()) for t in old)
            text = f"{REHYDRATED_HEADER} (archived turns restored for this step):\n{body}"
            head.append({"role": "system", "content": text, "tokenbox": {"critical": True}})
        block_input = active_messages if input is None else [*active_messages, ChatMessage(role="user", content=input)]
        block_kwargs.setdefault("session_id", self.session_id)
        for block in self.memory_blocks:
            content = await block.aget(block_input, **block_kwargs)
            if content:
                text = f"<{block.name}>\n{_text(content)}\n</{block.name}>"
                override = (
                    {"critical": True} if block.priority == 0 else {"critical": False, "priority": -block.priority}
                )
                head.append({"role": "system", "content": text, "tokenbox": override})
        if self.flushed_count:
            if self._checkpointer is None:
                self._checkpointer = Checkpointer(
                    self.session_store, self.session_id, counter=self.counter, interval=self.checkpoint_interval
                )
            cp = self._checkpointer.update(window=len(active))
            section = summary_section(cp)
            if section is not None:
                head.append({"role": "system", "content": section, "tokenbox": {"critical": False, "priority": 10}})
            start = len(cp.system) + len(cp.archived_turn_ids)
            flushed_rest = self.session_store.turns(self.session_id, start=start, stop=self.flushed_count)
            unsummarised = [t.turn_id for t in flushed_rest]
            if unsummarised:
                pointer = rehydration_pointer(unsummarised, "flushed from the chat history")
                head.append({"role": "system", "content": pointer, "tokenbox": {"critical": False, "priority": 15}})
        fit = fit_conversation(
            head + [t.as_message() for t in active],
            self.token_limit,
            counter=self._chat(),
            include_system="none",
            start_on=None,
            history_priority=20,
        )
        return from_neutral(fit.messages)

    def get(self, input: str | None = None, **block_kwargs: Any) -> list[ChatMessage]:
        return _run_sync(self.aget(input=input, **block_kwargs))

    async def aget_all(self) -> list[ChatMessage]:
        """Every archived message of the session (flushed ones included)."""
        return from_neutral([t.as_message() for t in self.session_store.turns(self.session_id)])

    def get_all(self) -> list[ChatMessage]:
        return _run_sync(self.aget_all())

    async def aset(self, messages: list[ChatMessage]) -> None:
        """Replace the session's messages (flush state reset)."""
        await self.areset()
        self.session_store.extend(self.session_id, to_neutral(messages))

    def set(self, messages: list[ChatMessage]) -> None:
        _run_sync(self.aset(messages))

    async def areset(self) -> None:
        """Delete the session from the archive."""
        self.session_store.clear(self.session_id)
        self._flushed, self._checkpointer = 0, None

    def reset(self) -> None:
        _run_sync(self.areset())
