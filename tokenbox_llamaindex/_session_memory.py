"""``TokenBoxSessionMemory``: LlamaIndex ``Memory`` for agents, on a TokenBox context session (see the class)."""

from __future__ import annotations

import asyncio
import json
import uuid
import warnings
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, TypeVar

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.bridge.pydantic import ConfigDict, Field, PrivateAttr, field_validator
from llama_index.core.memory.memory import DEFAULT_MEMORY_BLOCKS_TEMPLATE, BaseMemoryBlock, InsertMethod
from llama_index.core.memory.types import BaseMemory
from llama_index.core.prompts import RichPromptTemplate
from llama_index.core.storage.chat_store.base_db import MessageStatus

from tokenbox_core import ContextBudget, ContextCriticalOverflow, TokenCounter
from tokenbox_core.arguments import StrictArguments
from tokenbox_core.chat import ChatCounter
from tokenbox_core.errors import BudgetError, ConfigTypeError, TokenBoxWarning
from tokenbox_core.request import ModelRequest
from tokenbox_core.session import SessionStore
from tokenbox_llamaindex._blocks import block_contents, format_blocks, insert_blocks, place_blocks, restored_values
from tokenbox_llamaindex._counting import resolve_counter
from tokenbox_llamaindex._memory import unique_block_names
from tokenbox_llamaindex._messages import archived, restore
from tokenbox_llamaindex._reserve import agent_tokens, run_steps_tokens
from tokenbox_llamaindex._session import HistorySession, ShareOverflow, chat_store_of, store_of
from tokenbox_llamaindex._sync import in_worker, run_sync

__all__ = ["DEFAULT_IN_FLIGHT_RATIO", "DEFAULT_TOKEN_LIMIT", "TokenBoxSessionMemory"]

_T = TypeVar("_T")

DEFAULT_TOKEN_LIMIT = 30_000
"""``Memory``'s default limit."""
DEFAULT_FLUSH_RATIO = 0.1
"""``token_flush_size`` defaults to this share of ``token_limit`` (as ``Memory``)."""
DEFAULT_IN_FLIGHT_RATIO = 0.1
"""``in_flight_tokens`` defaults to this share of ``token_limit``."""


class TokenBoxSessionMemory(StrictArguments, BaseMemory):
    """LlamaIndex ``Memory`` for agents whose requests stay within ``token_limit``.

    Pass it where LlamaIndex 0.14 agents take a memory (``FunctionAgent.run(msg, memory=...)``,
    ``AgentWorkflow.run(...)``).  It accepts ``Memory.from_defaults``'s arguments with their defaults and
    meanings and has ``Memory``'s methods; every message is archived durably (SQLite with a path, else in
    memory) and each ``get`` is a compile of the session (:class:`tokenbox_core.ContextSession`): the newest
    history that fits, tool calls with all their results, turns evicted long ago recalled when the current user
    message asks for them, old tool output masked and oversized output offloaded, memory blocks placed as
    LlamaIndex places them.

    **What ``token_limit`` covers.**  The whole request the agent sends: its system prompt, tool definitions,
    the memory's messages and the run's in-flight tool calls and results.  The memory keeps :attr:`reserve`
    tokens for what the agent adds — ``agent_tokens`` (measured from ``agent=``: system prompt, tool schemas,
    initial state) plus ``in_flight_tokens`` (default 10 % of ``token_limit``) plus the chat format's priming
    — and returns at most ``token_limit - reserve`` (:attr:`memory_budget`).  ``reserve_tokens=`` replaces the
    measurement.  The in-flight part adapts to the run: a ``FunctionAgent`` reads the memory once per run and
    sends its tool calls and results after it, and puts them into the memory when the run ends, so the memory
    measures what each run added beyond what it returned and reserves the largest seen so far
    (:attr:`in_flight_reserve`: at least ``in_flight_tokens``, at most what leaves the memory
    ``token_flush_size``; when the largest run needs more, each later ``get`` compiles into what it leaves, as long
    as the memory's messages fit there).  A run that adds more than was reserved for it can overshoot
    ``token_limit`` by the excess — the first such run cannot be foreseen — and the memory says so with a
    :class:`~tokenbox_core.errors.TokenBoxWarning` naming the numbers (``in_flight_tokens=`` sized for your
    tools' output avoids it from the first run).  Tools found by a ``tool_retriever`` are not measured.

    **Flushing** keeps ``Memory``'s meaning: when the unflushed ("active") history passes
    ``chat_history_token_ratio`` of the memory's share, its oldest messages are flushed — at least
    ``token_flush_size`` tokens, whole tool groups, the rest starting on a user message — and handed to the
    memory blocks (``accept_short_term_memory``).  Unlike ``Memory``, nothing is lost: flushed messages stay in
    the archive, a compile still shows them when there is room, and recall brings them back when the user's
    message asks for them.

    **Differences from LlamaIndex's ``Memory``**, each deliberate (LlamaIndex's own ``Memory`` tests were run
    against this class; those that fail, fail for one of these):

    - storage is a TokenBox session archive: ``chat_store`` is a ``SessionStore``, a SQLite path or a PostgreSQL
      URI and ``async_database_uri`` must be ``sqlite+aiosqlite:///<path>`` (or ``:memory:``) or
      ``postgresql+psycopg://user@host/db`` (a fleet of workers sharing one archive); an ``AsyncDBChatStore``,
      ``async_engine``, ``db_schema`` or another ``table_name`` raise, and there is no ``sql_store``;
    - sizes are counted as the request is sent (message overhead, tool-call payloads; images by their
      dimensions, a URL image at its detail level's maximum; video, document and non-WAV audio at the
      ``*_token_size_estimate``), so they exceed ``Memory``'s text-only estimates, and
      ``_estimate_token_count`` does not exist (use ``tokenizer_fn`` or :attr:`last_total_tokens`);
    - nothing is returned over the memory's share: a priority-0 block or a latest user message that alone
      exceeds it raises :class:`~tokenbox_llamaindex.MemoryOverflow` (``Memory`` returns it and overshoots);
    - messages a provider would reject (a tool result answering no call, a call left without results before
      the next message) raise ``ConversationError`` with the fix; ``on_invalid="repair"`` leaves them out;
    - when history is left out, one user-role message names it (``rehydrate("t_…")`` restores any of it) and
      carries what recall brought back, right before the current user message, so two user messages follow
      each other there;
    - chat messages returned by a memory block follow the leading system messages instead of preceding them;
    - an explicit ``token_flush_size`` above ``token_limit`` raises instead of being replaced;
    - ``memory_blocks_concurrency`` (LlamaIndex after 0.14.25) is not supported: blocks are read one by one.

    >>> from llama_index.core.llms import ChatMessage
    >>> memory = TokenBoxSessionMemory.from_defaults(token_limit=200, tokenizer_fn=str.split, session_id="s")
    >>> for i in range(8):
    ...     memory.put(ChatMessage(role="user", content=f"question {i} about invoice {i}"))
    ...     memory.put(ChatMessage(role="assistant", content=f"answer {i}: total {i * 10} EUR"))
    >>> memory.flushed_count > 0, len(memory.get_all())
    (True, 16)
    >>> memory.get()[-1].content, memory.last_total_tokens <= memory.token_limit - memory.reserve
    ('answer 7: total 70 EUR', True)
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)
    budget_name: ClassVar[str | None] = "token_limit"

    token_limit: int = Field(default=DEFAULT_TOKEN_LIMIT, gt=0, description="Most tokens of each request.")
    token_flush_size: int = Field(default=0, ge=0, description="Least tokens a flush takes (0: 10 % of the limit).")
    chat_history_token_ratio: float = Field(default=0.7, gt=0, le=1, description="Share of the active history.")
    memory_blocks: list[BaseMemoryBlock] = Field(default_factory=list, description="Blocks.")  # type: ignore[type-arg]
    memory_blocks_template: RichPromptTemplate = Field(
        default=DEFAULT_MEMORY_BLOCKS_TEMPLATE, description="Block format."
    )
    insert_method: InsertMethod = Field(default=InsertMethod.SYSTEM, description="Where the blocks go.")
    image_token_size_estimate: int = Field(default=256, ge=0, description="Unused: images are costed by size.")
    audio_token_size_estimate: int = Field(default=256, ge=0, description="Audio the core cannot time.")
    video_token_size_estimate: int = Field(default=256, ge=0, description="Each video block.")
    document_token_size_estimate: int = Field(default=2048, ge=0, description="Each document block.")
    counter: Any = Field(default=None, exclude=True, description="Counter name, TokenCounter or tokenizer callable.")
    session_id: str = Field(default_factory=lambda: str(uuid.uuid4()), description="The session in the archive.")
    chat_store: Any = Field(
        default=None, exclude=True, description="SessionStore, SQLite path, PostgreSQL URI or None (in memory)."
    )
    reserve_tokens: int | None = Field(default=None, ge=0, description="What the agent adds; None: measured.")
    agent_tokens: int = Field(default=0, ge=0, description="Measured system prompt, tool schemas and state.")
    in_flight_tokens: int | None = Field(default=None, ge=0, description="In-flight tool rounds (None: 10 %).")
    recall: Any = Field(default=True, exclude=True, description="ContextSession recall (bool or RecallConfig).")
    masking: Any = Field(default=True, exclude=True, description="ContextSession masking (bool or MaskingConfig).")
    offload: Any = Field(default=True, exclude=True, description="ContextSession offload (bool or OffloadConfig).")
    on_invalid: str = Field(default="raise", description="Messages a provider would reject: 'raise' or 'repair'.")
    defense: Any = Field(default=None, exclude=True, description="A DefensePolicy screening what recall brings back.")

    _history: HistorySession = PrivateAttr()
    _lock: tuple[Any, asyncio.Lock] | None = PrivateAttr(default=None)
    _last: Any = PrivateAttr(default=None)
    _last_total: int | None = PrivateAttr(default=None)
    _in_flight_seen: int = PrivateAttr(default=0)
    _run_base: int | None = PrivateAttr(default=None)

    @field_validator("memory_blocks")
    @classmethod
    def _unique_names(cls, blocks: list[BaseMemoryBlock[Any]]) -> list[BaseMemoryBlock[Any]]:
        return unique_block_names(blocks)

    def __init__(self, **kwargs: Any) -> None:
        if "tokenizer_fn" in kwargs:  # Memory's name for the counter
            kwargs.setdefault("counter", kwargs.pop("tokenizer_fn"))
        super().__init__(**kwargs)
        if not self.token_flush_size:
            self.token_flush_size = max(1, int(self.token_limit * DEFAULT_FLUSH_RATIO))
        elif self.token_flush_size > self.token_limit:
            raise BudgetError(
                f"token_flush_size ({self.token_flush_size:,}) must not exceed token_limit ({self.token_limit:,}); "
                f"leave it out for 10 % of the limit ({int(self.token_limit * DEFAULT_FLUSH_RATIO):,})"
            )
        if self.in_flight_tokens is None:
            self.in_flight_tokens = int(self.token_limit * DEFAULT_IN_FLIGHT_RATIO)
        self._check_room()
        if self.defense is not None:
            from tokenbox_core.defense import DefensePolicy  # loaded by the memories that use it only

            if not isinstance(self.defense, DefensePolicy):
                raise ConfigTypeError(
                    f"TokenBoxSessionMemory(defense=...) must be a tokenbox_core.defense.DefensePolicy, got "
                    f"{type(self.defense).__name__}; e.g. defense=DefensePolicy()"
                )
        store, path = store_of(self.chat_store)
        options = {name: getattr(self, name) for name in ("recall", "masking", "offload", "on_invalid", "defense")}
        self._history = HistorySession(store, self.session_id, path, **options)

    def _check_room(self) -> None:
        if self.memory_budget < 1:
            raise BudgetError(
                f"token_limit ({self.token_limit:,}) leaves no room for the memory: the agent's part is "
                f"{self.reserve:,} tokens (agent_tokens {self.agent_tokens:,} + in_flight_tokens "
                f"{self.in_flight_tokens:,} + priming, or reserve_tokens); raise token_limit or lower them"
            )

    @classmethod
    def class_name(cls) -> str:
        return "TokenBoxSessionMemory"

    @classmethod
    def from_defaults(
        cls,
        session_id: str | None = None,
        chat_history: list[ChatMessage] | None = None,
        token_limit: int = DEFAULT_TOKEN_LIMIT,
        memory_blocks: list[BaseMemoryBlock[Any]] | None = None,
        tokenizer_fn: Callable[[str], Sequence[Any]] | None = None,
        chat_history_token_ratio: float = 0.7,
        token_flush_size: int | None = None,
        memory_blocks_template: RichPromptTemplate = DEFAULT_MEMORY_BLOCKS_TEMPLATE,
        insert_method: InsertMethod = InsertMethod.SYSTEM,
        image_token_size_estimate: int = 256,
        audio_token_size_estimate: int = 256,
        video_token_size_estimate: int = 256,
        chat_store: Any = None,
        table_name: str = "llama_index_memory",
        async_database_uri: str | None = None,
        async_engine: Any = None,
        db_schema: str | None = None,
        *,
        agent: Any = None,
        **kwargs: Any,
    ) -> TokenBoxSessionMemory:
        """Build from ``Memory.from_defaults``'s arguments (same defaults; ``token_flush_size`` is 10 % of the
        limit unless given), plus ``agent=`` (a ``FunctionAgent``/``AgentWorkflow`` whose system prompt, tools
        and initial state are measured into ``agent_tokens``) and this class's fields."""
        chat_store = chat_store_of(chat_store, table_name, async_database_uri, async_engine, db_schema)
        memory = cls(
            session_id=session_id or str(uuid.uuid4()),
            token_limit=token_limit,
            memory_blocks=memory_blocks or [],
            counter=kwargs.pop("counter", tokenizer_fn),
            chat_history_token_ratio=chat_history_token_ratio,
            token_flush_size=token_flush_size or 0,
            memory_blocks_template=memory_blocks_template,
            insert_method=insert_method,
            image_token_size_estimate=image_token_size_estimate,
            audio_token_size_estimate=audio_token_size_estimate,
            video_token_size_estimate=video_token_size_estimate,
            chat_store=chat_store,
            **kwargs,
        )
        if agent is not None:
            memory.reserve_for(agent)
        if chat_history is not None:
            memory.set(chat_history)
        return memory

    # -- budget -----------------------------------------------------------------------------------------------

    def reserve_for(self, agent: Any) -> int:
        """Measure what ``agent`` (a LlamaIndex agent or ``AgentWorkflow``) adds to each request into
        :attr:`agent_tokens`; returns it."""
        self.agent_tokens = agent_tokens(agent, self.resolve_counter())
        self._check_room()
        return self.agent_tokens

    def _request(self, in_flight: int, blocks: int = 0, query: str | None = None) -> ModelRequest:
        """The next model call as the core sees it: no new messages (``put`` archived them), ``token_limit`` as the
        window with what the agent adds, the run's in-flight part and the memory blocks reserved — the core's
        window calculation (:meth:`~tokenbox_core.request.ModelRequest.budget`) leaves the memory's messages the
        rest.  ``reserve_tokens`` covers the chat format's priming, which the capacity includes."""
        if self.reserve_tokens is not None:
            slots = {"agent": max(0, self.reserve_tokens - self._chat().base)}
        else:
            slots = {"agent": self.agent_tokens, "in_flight": in_flight}
        window = ContextBudget(self.token_limit, reserved_slots={**slots, "memory_blocks": blocks})
        return ModelRequest((), window=window, query=query)

    def _share(self, in_flight: int) -> int:
        """What the memory's messages may cost (priming not included) with ``in_flight`` tokens reserved."""
        return self._request(in_flight).budget(self.resolve_counter()).capacity - self._chat().base

    @property
    def reserve(self) -> int:
        """Tokens of each request left to the agent: ``reserve_tokens`` (at least the chat format's priming, which
        every request pays), or the measured ``agent_tokens`` plus :attr:`in_flight_reserve` plus the priming."""
        return self.token_limit - self.memory_budget

    @property
    def in_flight_reserve(self) -> int:
        """What the next request keeps for the run's in-flight tool calls and results: ``in_flight_tokens``, or
        the largest run seen (:attr:`in_flight_seen`) when larger, but never so much that the memory keeps less
        than ``token_flush_size`` (a run that adds more than that leaves cannot fit and warns)."""
        return max(self.in_flight_tokens or 0, min(self._in_flight_seen, self._share(0) - self.token_flush_size))

    @property
    def memory_budget(self) -> int:
        """What the memory's messages may cost: ``token_limit - reserve``."""
        return self._share(self.in_flight_reserve)

    def resolve_counter(self) -> TokenCounter:
        """The counter in use (``counter``/``tokenizer_fn``, else ``Settings.tokenizer``, else cl100k_base)."""
        return resolve_counter(self.counter)

    @property
    def tokenizer_fn(self) -> Callable[[str], Sequence[int]]:
        """A LlamaIndex-style tokenizer for the counter in use (its result's length is the count)."""
        counter = self.resolve_counter()
        return lambda text: range(counter.count(text))

    def _chat(self) -> ChatCounter:
        return ChatCounter.of(self.resolve_counter())

    @property
    def _estimates(self) -> dict[str, int]:
        return {
            "audio": self.audio_token_size_estimate,
            "video": self.video_token_size_estimate,
            "document": self.document_token_size_estimate,
        }

    # -- state ------------------------------------------------------------------------------------------------

    @property
    def session_store(self) -> SessionStore:
        """The archive."""
        return self._history.store

    @property
    def flushed_count(self) -> int:
        """How many of the session's first messages were flushed out of the active history."""
        return self._history.flushed_count

    @property
    def last_compiled(self) -> Any:
        """The session's compile behind the last ``get`` (a single-threaded convenience)."""
        return self._last

    @property
    def last_total_tokens(self) -> int | None:
        """What the messages the last ``get`` returned cost, counted as sent (the request's priming, paid once, not
        included): at most :attr:`memory_budget`."""
        return self._last_total

    @property
    def in_flight_seen(self) -> int:
        """The largest in-flight part put into this memory (in this process): one agent run's tool calls and
        results, which the agent sent after the memory's messages on that run's last LLM call.  Later requests
        reserve it (:attr:`in_flight_reserve`)."""
        return self._in_flight_seen

    def _check_in_flight(self, batch: list[dict[str, Any]]) -> None:
        size = run_steps_tokens(batch, self._chat())
        if not size:
            return
        # The run's last request: what the agent adds (measured), the messages the run's get returned, its steps.
        base = self.memory_budget if self._run_base is None else self._run_base
        sent = self.agent_tokens + self._chat().base + base + size
        self._in_flight_seen = max(self._in_flight_seen, size)
        self._run_base = None
        if sent > self.token_limit and self.reserve_tokens is None:
            warnings.warn(
                f"an agent run's tool calls and results took {size:,} tokens: its last request was about "
                f"{sent:,} tokens, over token_limit ({self.token_limit:,}) by {sent - self.token_limit:,}; later "
                f"requests reserve {self.in_flight_reserve:,} for them (pass in_flight_tokens={size:,} to reserve "
                f"it from the first run)",
                TokenBoxWarning,
                stacklevel=2,
            )

    def _lock_here(self) -> asyncio.Lock:
        """One lock per event loop: the session's work runs in turn (sync calls each run their own loop)."""
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock[0] is not loop:
            self._lock = (loop, asyncio.Lock())
        return self._lock[1]

    async def _locked(self, work: Callable[[], _T]) -> _T:
        """``work()`` on the session in a worker thread, in turn with the memory's other calls.  Why a thread
        rather than an async store: the stores and the archive are locked for threads already (SQLite opens a
        connection per thread, PostgreSQL draws one from its pool), so one code path serves both APIs while
        each archive round trip leaves the event loop free (:func:`~tokenbox_llamaindex._sync.in_worker`)."""
        async with self._lock_here():
            return await in_worker(work)

    # -- put --------------------------------------------------------------------------------------------------

    async def aput(self, message: ChatMessage) -> None:
        """Archive a message, then flush when the active history is over its share."""
        await self.aput_messages([message])

    async def aput_messages(self, messages: list[ChatMessage]) -> None:
        """Archive messages (in one transaction), then flush when the active history is over its share (the
        archive's work in a worker thread: :meth:`_locked`)."""
        async with self._lock_here():
            flushed = await in_worker(lambda: self._put_now(messages))
            blocks = [b for b in self.memory_blocks if b.accept_short_term_memory]
            if flushed and blocks:
                payload = [restore(m) for m in flushed]
                await asyncio.gather(
                    *[b.aput(payload, from_short_term_memory=True, session_id=self.session_id) for b in blocks]
                )

    def _put_now(self, messages: list[ChatMessage]) -> list[dict[str, Any]]:
        batch = archived(messages, estimates=self._estimates)
        self._history.add(batch, self.resolve_counter())
        self._check_in_flight(batch)
        limit = int(self.memory_budget * self.chat_history_token_ratio)
        return self._history.flush(limit, self.token_flush_size, self._chat())

    def put(self, message: ChatMessage) -> None:
        run_sync(self.aput(message))

    def put_messages(self, messages: list[ChatMessage]) -> None:
        run_sync(self.aput_messages(messages))

    # -- get --------------------------------------------------------------------------------------------------

    async def _get_memory_blocks_content(
        self, chat_history: list[ChatMessage], input: str | ChatMessage | None = None, **block_kwargs: Any
    ) -> dict[str, Any]:
        """Each memory block's content by name (``Memory``'s private method, kept for its callers)."""
        return await block_contents(self.memory_blocks, chat_history, input, self.session_id, **block_kwargs)

    async def _format_memory_blocks(self, contents: dict[str, Any]) -> tuple[list[Any], list[ChatMessage]]:
        """(template data, chat messages) of block contents (``Memory``'s private method)."""
        return format_blocks(self.memory_blocks, contents)

    async def aget(self, input: str | ChatMessage | None = None, **block_kwargs: Any) -> list[ChatMessage]:
        """The memory's messages for the next request: the session prepared for one model call within
        :attr:`memory_budget` tokens, with the memory blocks in place (class docstring).  When the largest run
        seen needs more than :attr:`in_flight_reserve` may keep (it leaves the memory ``token_flush_size`` for
        flushing), the request first reserves that run, so it stays within ``token_limit`` as long as the
        memory's messages fit what the run leaves (else the run will warn)."""
        reserves = [self.in_flight_reserve]
        if self.reserve_tokens is None and self._in_flight_seen > reserves[0] and self._share(self._in_flight_seen) > 0:
            reserves.insert(0, self._in_flight_seen)
        for in_flight in reserves[:-1]:
            try:
                return await self._aget(in_flight, input, **block_kwargs)
            except ShareOverflow:
                pass
        return await self._aget(reserves[-1], input, **block_kwargs)

    async def _aget(self, in_flight: int, input: str | ChatMessage | None, **block_kwargs: Any) -> list[ChatMessage]:
        chat, budget = self._chat(), self._share(in_flight)
        data: list[Any] = []
        block_messages: list[ChatMessage] = []
        used = 0
        if self.memory_blocks:
            active = [restore(m) for m in await self._locked(lambda: self._history.turns(start=self.flushed_count))]
            contents = await self._get_memory_blocks_content(active, input, **block_kwargs)
            history = sum(chat.size(m) for m in archived(active, estimates=self._estimates)) if contents else 0
            try:
                data, block_messages, used = await place_blocks(
                    self.memory_blocks, contents, budget - min(history, int(budget * self.chat_history_token_ratio)),
                    limit=budget, template=self.memory_blocks_template, chat=chat, estimates=self._estimates,
                )  # fmt: skip
            except ContextCriticalOverflow as exc:
                raise ShareOverflow(exc.budget, exc.required, exc.section_ids) from exc
        request = self._request(in_flight, used, input if isinstance(input, str) else None)
        conversation, compiled, total = await self._locked(
            lambda: self._history.prepare(request, self.resolve_counter())
        )
        self._last, self._last_total = compiled, total + used
        self._run_base = self._last_total  # what the run's requests carry from the memory (_check_in_flight)
        return insert_blocks(conversation, self.memory_blocks_template, data, block_messages, self.insert_method)

    def get(self, input: str | ChatMessage | None = None, **block_kwargs: Any) -> list[ChatMessage]:
        return run_sync(self.aget(input=input, **block_kwargs))

    async def aget_all(self, status: MessageStatus | None = None) -> list[ChatMessage]:
        """Archived messages: all (``status=None``), the active ones, or the flushed ones (``ARCHIVED``)."""
        if status is None:
            turns = await self._locked(self._history.turns)
        elif MessageStatus(status) == MessageStatus.ACTIVE:
            turns = await self._locked(lambda: self._history.turns(start=self.flushed_count))
        else:
            turns = await self._locked(lambda: self._history.turns(stop=self.flushed_count))
        return [restore(m) for m in turns]

    def get_all(self, status: MessageStatus | None = None) -> list[ChatMessage]:
        return run_sync(self.aget_all(status))

    async def aset(self, messages: list[ChatMessage]) -> None:
        """Replace the session's messages (nothing flushed)."""
        batch = archived(messages, estimates=self._estimates)
        await self._locked(lambda: self._history.replace(batch))

    def set(self, messages: list[ChatMessage]) -> None:
        run_sync(self.aset(messages))

    async def areset(self, status: MessageStatus | None = None) -> None:
        """Delete the session's messages: all, or only the active (``ACTIVE``) or flushed (``ARCHIVED``) ones."""
        await self._locked(lambda: self._reset_now(status))

    def _reset_now(self, status: MessageStatus | None) -> None:
        history, flushed = self._history, self.flushed_count
        if status is None:
            history.replace([])
        elif MessageStatus(status) == MessageStatus.ACTIVE:
            history.replace(history.turns(stop=flushed), flushed=flushed)
        else:
            history.replace(history.turns(start=flushed))

    def reset(self) -> None:
        run_sync(self.areset())

    # -- serialisation ----------------------------------------------------------------------------------------

    def to_dict(self, **kwargs: Any) -> dict[str, Any]:
        """The settings, the SQLite path (or, in memory, every message and the flush mark); memory blocks and
        an unnamed counter are passed again to :meth:`from_dict`."""
        data = self.model_dump(exclude={"memory_blocks", "memory_blocks_template"}, mode="json", **kwargs)
        data["class_name"] = self.class_name()
        data["counter"] = self.counter if isinstance(self.counter, str) else None
        data["memory_block_names"] = [b.name for b in self.memory_blocks]
        if self._history.path is not None:
            data["chat_store"] = self._history.path
        else:
            data["messages"] = [{k: v for k, v in m.items() if k != "id"} for m in self._history.turns()]
            data["flushed"] = self.flushed_count
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any], **kwargs: Any) -> TokenBoxSessionMemory:
        """Rebuild from :meth:`to_dict`; ``kwargs`` override (``memory_blocks=``, ``counter=``, ``chat_store=``)."""
        values = restored_values("TokenBoxSessionMemory", data, kwargs)
        messages, flushed = values.pop("messages", None), values.pop("flushed", 0)
        memory = cls(**values)
        if messages:
            memory._history.replace(messages, flushed=flushed)
        return memory

    def to_string(self) -> str:
        """:meth:`to_dict` as JSON."""
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_string(cls, json_str: str, **kwargs: Any) -> TokenBoxSessionMemory:
        """Rebuild from :meth:`to_string`."""
        return cls.from_dict(json.loads(json_str), **kwargs)
