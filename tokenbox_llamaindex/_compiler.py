"""The prefill compiler behind a LlamaIndex query engine and chat engine (chapter §6.4).

A node postprocessor for the evidence plus a memory for the history is not
the compiler: here the whole prompt — policy, developer instructions, task
state, tools, retrieved evidence with provenance, memories, the conversation
and the question — is compiled by :class:`~tokenbox_core.ContextCompiler`
in one layout, and the result is shown: every response carries the compiled
messages and the :class:`~tokenbox_core.CompiledContext` in its metadata
(``"tokenbox_compiled"``), its headline numbers (``"tokenbox"``), and the
source nodes that made it into the context.

- :class:`TokenBoxQueryEngine`: ``retriever`` + ``llm`` → ``Response``;
- :class:`TokenBoxChatEngine`: a chat engine keeping the conversation,
  retrieving for each message, compiling, then calling the LLM (``chat``,
  ``stream_chat`` and their async forms).

Nodes become evidence with provenance: ``id`` = node id, ``source`` from
metadata ``source``/``url``/``file_path``/``file_name`` or the node's
``ref_doc_id`` (a node with none is rejected), ``retrieved_at`` from
metadata or the time of the query (``clock``), ``authority`` from metadata
or ``default_authority``, ``relevance`` = the retrieval score clamped to
[0, 1] (by rank when the retriever gives none), ``span`` from the node's
character offsets, ``lineage`` = the retriever's class name.

Both engines take the window as ``budget`` (an int or a
:class:`~tokenbox_core.ContextBudget`; default: the LLM's context window with
its ``num_output`` as the output reserve) or a ready ``compiler``, and
``llm`` defaults to ``Settings.llm``.  The compiler's default configuration
requires a policy section, so an engine built without ``policy=`` fails at
construction with an error that says so (pass ``policy=``, or a
``CompilerConfig(required_sections=())``).  Misspelt keyword arguments fail at
construction with a did-you-mean.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, Callable, Generator, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.llms.types import ChatMessage, ChatResponse, MessageRole
from llama_index.core.base.response.schema import Response
from llama_index.core.chat_engine.types import AgentChatResponse, BaseChatEngine, StreamingAgentChatResponse
from llama_index.core.llms import LLM
from llama_index.core.query_engine import CustomQueryEngine
from llama_index.core.schema import NodeWithScore
from llama_index.core.settings import Settings
from pydantic import ConfigDict, Field, PrivateAttr

from tokenbox_core import CompiledContext, CompilerConfig, ContextBudget, ContextCompiler, Evidence
from tokenbox_core.arguments import StrictArguments, check_arguments, no_bool
from tokenbox_core.errors import CompilerInputError
from tokenbox_llamaindex._counting import resolve_counter
from tokenbox_llamaindex._messages import neutral, plain_message

__all__ = ["TokenBoxChatEngine", "TokenBoxQueryEngine", "nodes_to_evidence", "to_chat_messages"]

_SOURCE_KEYS = ("source", "url", "file_path", "file_name")


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


def nodes_to_evidence(
    nodes: Sequence[NodeWithScore], *, retrieved_at: datetime, default_authority: float, lineage: str | None
) -> list[Evidence]:
    """Retrieved nodes as provenance-tagged :class:`Evidence` (rules in the module docstring)."""
    out = []
    n = len(nodes)
    for rank, scored in enumerate(nodes):
        node = scored.node
        meta = dict(node.metadata or {})
        source = next((str(meta[k]) for k in _SOURCE_KEYS if meta.get(k)), None) or node.ref_doc_id
        if not source:
            raise CompilerInputError(
                f"node {node.node_id!r} has no source (metadata 'source', 'url', 'file_path' or 'file_name', or a "
                f"ref_doc_id); evidence without provenance is rejected (chapter §6.3.3)"
            )
        score = scored.score
        relevance = min(1.0, max(0.0, float(score))) if score is not None else 1.0 - rank / n
        moment = meta.get("retrieved_at")
        if isinstance(moment, str):
            moment = datetime.fromisoformat(moment)
        if not isinstance(moment, datetime):
            moment = retrieved_at
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)
        start, end = getattr(node, "start_char_idx", None), getattr(node, "end_char_idx", None)
        out.append(
            Evidence(
                node.node_id,
                node.get_content(),
                source=source,
                retrieved_at=moment,
                authority=float(meta.get("authority", default_authority)),
                relevance=relevance,
                span=(start, end) if isinstance(start, int) and isinstance(end, int) and start <= end else None,
                lineage=lineage,
            )
        )
    return out


def to_chat_messages(messages: Sequence[Mapping[str, Any]]) -> list[ChatMessage]:
    """Compiled (OpenAI-shaped) messages as LlamaIndex ``ChatMessage`` (tool calls in ``additional_kwargs``)."""
    return [plain_message(m) for m in messages]


def _default_llm() -> LLM:
    llm: LLM = Settings.llm
    return llm


def engine_compiler(
    owner: str,
    llm: LLM,
    *,
    compiler: ContextCompiler | None,
    budget: int | ContextBudget | None,
    counter: Any,
    config: CompilerConfig | None,
    policy: str | None,
) -> ContextCompiler:
    """The compiler an engine uses: ``compiler`` as given, or one built from ``budget`` (default: the LLM's
    context window, its ``num_output`` reserved), ``counter`` and ``config``; a missing required policy is
    reported here, at construction, rather than on every query."""
    if compiler is not None:
        given = [name for name, value in (("budget", budget), ("counter", counter), ("config", config)) if value]
        if given:
            raise CompilerInputError(
                f"{owner} got compiler= and {', '.join(given)}=; the compiler already holds its budget, counter and "
                f"config: pass either compiler=ContextCompiler(...) or budget=/counter=/config="
            )
        if not isinstance(compiler, ContextCompiler):
            raise CompilerInputError(f"{owner}: compiler must be a ContextCompiler, got {type(compiler).__name__}")
    else:
        if budget is None:
            meta = llm.metadata
            budget = ContextBudget(max_tokens=meta.context_window, output_reserve=meta.num_output)
        elif not isinstance(budget, ContextBudget | int):
            raise CompilerInputError(f"{owner}: budget must be an int or a ContextBudget, got {type(budget).__name__}")
        spec = counter if counter is not None else resolve_counter(None, model_name=llm.metadata.model_name)
        compiler = ContextCompiler(no_bool("budget", budget), counter=spec, config=config)  # type: ignore[arg-type]
    if policy is None and "policy" in compiler.config.required_sections:
        raise CompilerInputError(
            f"{owner} needs policy=: the compiler's required_sections include 'policy', so every query would "
            f'fail validation. Pass policy="Answer from the evidence only." (your system instructions), or '
            f"config=CompilerConfig(required_sections=()) to compile without one"
        )
    return compiler


def _kept_nodes(nodes: Sequence[NodeWithScore], compiled: CompiledContext) -> list[NodeWithScore]:
    sections = {s.id: s for s in compiled.layout.sections}
    laid = sections.get("evidence")
    if laid is None or laid.status == "dropped" or not isinstance(laid.content, tuple):
        return []
    kept = {item.id for item in laid.content}
    return [n for n in nodes if n.node.node_id in kept]


def _metadata(compiled: CompiledContext) -> dict[str, Any]:
    return {
        "tokenbox": {"total_tokens": compiled.total_tokens, **compiled.metrics.to_dict()},
        "tokenbox_compiled": compiled,
        "tokenbox_messages": [dict(m) for m in compiled.messages],
    }


class _Sources:
    """The fixed sources of an engine and the compile call both engines share."""

    def __init__(
        self,
        compiler: ContextCompiler,
        retriever: BaseRetriever | None,
        fixed: Mapping[str, Any],
        default_authority: float,
        clock: Callable[[], datetime],
    ) -> None:
        self.compiler = compiler
        self.retriever = retriever
        self.fixed = {k: v for k, v in fixed.items() if v is not None}
        self.default_authority = default_authority
        self.clock = clock

    def evidence(self, nodes: Sequence[NodeWithScore]) -> list[Evidence]:
        lineage = type(self.retriever).__name__ if self.retriever is not None else None
        return nodes_to_evidence(
            nodes, retrieved_at=self.clock(), default_authority=self.default_authority, lineage=lineage
        )

    def compile(self, question: str, nodes: Sequence[NodeWithScore], history: Sequence[ChatMessage]) -> CompiledContext:
        return self.compiler.compile(
            **self.fixed, evidence=self.evidence(nodes), history=neutral(list(history)), user=question
        )


class TokenBoxQueryEngine(StrictArguments, CustomQueryEngine):
    """A query engine whose prompt is compiled: ``retriever`` → evidence, plus every fixed tier → ``llm``.

    The response's ``metadata["tokenbox_messages"]`` is the whole prompt that was sent.
    """

    retriever: BaseRetriever
    llm: LLM = Field(default_factory=_default_llm, description="The LLM (default: Settings.llm).")
    compiler: ContextCompiler | None = Field(
        default=None, description="A ready ContextCompiler; or give budget= (and counter=, config=)."
    )
    budget: int | ContextBudget | None = Field(
        default=None, description="The window: an int or a ContextBudget (default: the LLM's context window)."
    )
    counter: Any = Field(default=None, description="Counter spec (default: Settings.tokenizer or the LLM's model).")
    config: CompilerConfig | None = Field(default=None, description="Compiler settings (default CompilerConfig()).")
    policy: str | None = None
    developer: str | None = None
    task: dict[str, Any] | None = None
    tools: list[Any] = Field(default_factory=list)
    memory: list[Any] = Field(default_factory=list)
    default_authority: float = 0.5
    clock: Callable[[], datetime] = Field(default=_utc_now)

    model_config = ConfigDict(arbitrary_types_allowed=True)

    _last: CompiledContext | None = PrivateAttr(default=None)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.compiler = engine_compiler(
            "TokenBoxQueryEngine",
            self.llm,
            compiler=self.compiler,
            budget=self.budget,
            counter=self.counter,
            config=self.config,
            policy=self.policy,
        )
        self.budget, self.counter, self.config = None, None, None

    @classmethod
    def class_name(cls) -> str:
        return "TokenBoxQueryEngine"

    @property
    def last_compiled(self) -> CompiledContext | None:
        """The context compiled for the latest query."""
        return self._last

    def _sources(self) -> _Sources:
        fixed = {"policy": self.policy, "developer": self.developer, "task": self.task, "tools": self.tools}
        assert self.compiler is not None  # built by __init__
        return _Sources(
            self.compiler, self.retriever, {**fixed, "memory": self.memory}, self.default_authority, self.clock
        )

    def _respond(self, nodes: list[NodeWithScore], compiled: CompiledContext, answer: ChatResponse) -> Response:
        self._last = compiled
        return Response(
            response=answer.message.content or "",
            source_nodes=_kept_nodes(nodes, compiled),
            metadata=_metadata(compiled),
        )

    def custom_query(self, query_str: str) -> Response:
        """Retrieve, compile, ask the LLM."""
        nodes = self.retriever.retrieve(query_str)
        compiled = self._sources().compile(query_str, nodes, ())
        return self._respond(nodes, compiled, self.llm.chat(to_chat_messages(compiled.messages)))

    async def acustom_query(self, query_str: str) -> Response:
        """Async retrieve and LLM call around the same compile."""
        nodes = await self.retriever.aretrieve(query_str)
        compiled = self._sources().compile(query_str, nodes, ())
        return self._respond(nodes, compiled, await self.llm.achat(to_chat_messages(compiled.messages)))


class TokenBoxChatEngine(BaseChatEngine):
    """A chat engine compiling every turn: the conversation so far, fresh evidence, and the fixed tiers.

    The conversation is kept in the engine (``chat_history``); the compiler decides, turn by turn, which of
    it fits, with the core conversation engine's rules.  ``last_compiled`` is the latest compiled context.
    """

    def __init__(
        self,
        *,
        llm: LLM | None = None,
        compiler: ContextCompiler | None = None,
        budget: int | ContextBudget | None = None,
        counter: Any = None,
        config: CompilerConfig | None = None,
        retriever: BaseRetriever | None = None,
        policy: str | None = None,
        developer: str | None = None,
        task: dict[str, Any] | None = None,
        tools: Sequence[Any] = (),
        memory: Sequence[Any] = (),
        chat_history: Sequence[ChatMessage] = (),
        default_authority: float = 0.5,
        clock: Callable[[], datetime] = _utc_now,
        **kwargs: Any,
    ) -> None:
        known = [p for p in inspect.signature(TokenBoxChatEngine.__init__).parameters if p not in ("self", "kwargs")]
        check_arguments("TokenBoxChatEngine", sorted(kwargs), known, budget="budget")
        self._llm = llm = llm if llm is not None else _default_llm()
        compiler = engine_compiler(
            "TokenBoxChatEngine", llm, compiler=compiler, budget=budget, counter=counter, config=config, policy=policy
        )
        fixed = {"policy": policy, "developer": developer, "task": task, "tools": list(tools), "memory": list(memory)}
        self._sources = _Sources(compiler, retriever, fixed, default_authority, clock)
        self._history: list[ChatMessage] = list(chat_history)
        self.last_compiled: CompiledContext | None = None

    @classmethod
    def class_name(cls) -> str:
        return "TokenBoxChatEngine"

    @property
    def chat_history(self) -> list[ChatMessage]:
        return list(self._history)

    def reset(self) -> None:
        """Forget the conversation."""
        self._history = []
        self.last_compiled = None

    def _prepare(
        self, message: str, nodes: list[NodeWithScore], history: Sequence[ChatMessage] | None
    ) -> list[ChatMessage]:
        if history is not None:
            self._history = list(history)
        compiled = self._sources.compile(message, nodes, self._history)
        self.last_compiled = compiled
        return to_chat_messages(compiled.messages)

    def _record(self, message: str, answer: str) -> None:
        self._history += [
            ChatMessage(role=MessageRole.USER, content=message),
            ChatMessage(role=MessageRole.ASSISTANT, content=answer),
        ]

    def _retrieve(self, message: str) -> list[NodeWithScore]:
        retriever = self._sources.retriever
        return retriever.retrieve(message) if retriever is not None else []

    def _response(self, answer: str, nodes: list[NodeWithScore]) -> AgentChatResponse:
        assert self.last_compiled is not None
        return AgentChatResponse(
            response=answer, source_nodes=_kept_nodes(nodes, self.last_compiled), metadata=_metadata(self.last_compiled)
        )

    def chat(self, message: str, chat_history: list[ChatMessage] | None = None) -> AgentChatResponse:
        """One turn: retrieve, compile (history included), ask the LLM, remember the exchange."""
        nodes = self._retrieve(message)
        answer = self._llm.chat(self._prepare(message, nodes, chat_history)).message.content or ""
        self._record(message, answer)
        return self._response(answer, nodes)

    async def achat(self, message: str, chat_history: list[ChatMessage] | None = None) -> AgentChatResponse:
        """Async :meth:`chat` (async retrieval and LLM call)."""
        retriever = self._sources.retriever
        nodes = await retriever.aretrieve(message) if retriever is not None else []
        answer = (await self._llm.achat(self._prepare(message, nodes, chat_history))).message.content or ""
        self._record(message, answer)
        return self._response(answer, nodes)

    def stream_chat(self, message: str, chat_history: list[ChatMessage] | None = None) -> StreamingAgentChatResponse:
        """One streamed turn; the exchange is remembered when the stream is consumed."""
        nodes = self._retrieve(message)
        prompt = self._prepare(message, nodes, chat_history)

        def stream() -> Generator[ChatResponse, None, None]:
            text = ""
            for chunk in self._llm.stream_chat(prompt):
                text += chunk.delta or ""
                yield chunk
            self._record(message, text.strip())

        assert self.last_compiled is not None
        return StreamingAgentChatResponse(
            chat_stream=stream(), source_nodes=_kept_nodes(nodes, self.last_compiled), is_writing_to_memory=False
        )

    async def astream_chat(
        self, message: str, chat_history: list[ChatMessage] | None = None
    ) -> StreamingAgentChatResponse:
        """Async :meth:`stream_chat`."""
        retriever = self._sources.retriever
        nodes = await retriever.aretrieve(message) if retriever is not None else []
        prompt = self._prepare(message, nodes, chat_history)
        chunks = await self._llm.astream_chat(prompt)

        async def stream() -> AsyncGenerator[ChatResponse, None]:
            text = ""
            async for chunk in chunks:
                text += chunk.delta or ""
                yield chunk
            self._record(message, text.strip())

        assert self.last_compiled is not None
        return StreamingAgentChatResponse(
            achat_stream=stream(), source_nodes=_kept_nodes(nodes, self.last_compiled), is_writing_to_memory=False
        )
