"""``TokenBoxCompiler``: the prefill compiler as a LangChain Runnable (chapter §6.4).

Input: a dict of named sources — ``policy``, ``developer``, ``task``,
``tools``, ``evidence``, ``memory``, ``history``, ``user`` (and ``query``,
the retrieval query, defaulting to ``user``).  Values may be plain data,
LangChain objects, or *retrievers*:

- ``evidence``: a ``BaseRetriever`` (invoked with the query; ``ainvoke``
  concurrently under ``ainvoke``), a list of ``Document`` or
  :class:`~tokenbox_core.Evidence`, or a list mixing retrievers and those;
- ``history``: messages (``BaseMessage`` or message-likes);
- ``tools``: LangChain tools (``BaseTool``) or OpenAI tool dicts;
- ``user``: a string or a ``HumanMessage``.

Sources given at construction (``sources=``) are merged under the input.
Output: a ``ChatPromptValue`` of the compiled messages, in the compiler's
canonical order (chapter §6.4.1):

- the system policy, with the precedence statement that puts system and
  developer instructions above anything a user or a tool says (the instruction
  hierarchy lives in the system message), then developer instructions and task
  state;
- tools: with ``tools_as="schemas"`` (the default) none — pass the same tools to
  ``model.bind_tools(tools)``; the compiler counts them (as their canonical JSON,
  what the API receives) and does not repeat them as text, so they are not paid
  twice.  ``compile(input).tools`` holds the kept ones as OpenAI tool dicts (the
  run metadata names them), to bind exactly those when ``tool_threshold`` filters.
  ``tools_as="text"`` emits them as a labelled system message, for a model
  without tool calling;
- evidence (and memory) as one ``human`` message each, labelled as reference
  material with no directive authority: never a system message, since retrieved
  text must not gain the authority of instructions; before the conversation,
  so the dialogue and then the question come last, where the model attends
  most (with ``CompilerConfig(cache_aware=...)`` it moves after the history, so
  the provider's prefix cache keeps serving the unchanged history);
- the history as the conversation engine keeps it (tool calls with their
  results, a trimmed history restarting on a human turn), and the user's
  message last, as the user wrote it.  The whole
:class:`~tokenbox_core.compiler.CompilationTrace` goes to the callbacks as
the custom event :data:`COMPILE_EVENT`, and the headline numbers (tokens,
budget utilisation, shadow price, exclusions, every §6.11.5 metric) go into
the run's metadata under ``"tokenbox"``, so LangSmith shows them.

Documents become evidence with provenance from their metadata: ``source``
(required — a document without it is rejected, as the chapter requires),
``retrieved_at`` (a datetime or ISO string; else the time of this
invocation, from ``clock``), ``authority`` (else ``default_authority``) and
``relevance_score``/``relevance``/``score`` (else by rank: 1, 1 − 1/n, …).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timezone
from typing import Any, ClassVar, Literal

from langchain_core.callbacks import AsyncCallbackManagerForChainRun, CallbackManagerForChainRun
from langchain_core.documents import Document
from langchain_core.messages import BaseMessage, convert_to_messages, convert_to_openai_messages
from langchain_core.prompt_values import ChatPromptValue
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig, RunnableSerializable, ensure_config
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field

from tokenbox_core import CompilationError, CompiledContext, CompilerConfig, ContextBudget, ContextCompiler, Evidence
from tokenbox_core.errors import CompilerInputError

__all__ = ["COMPILE_EVENT", "TokenBoxCompiler", "documents_to_evidence", "headline"]

COMPILE_EVENT = "tokenbox_compile"
"""Name of the custom callback event carrying the compilation trace (``on_custom_event``)."""

_NAMES = ("policy", "developer", "task", "tools", "evidence", "memory", "history", "user")


def _moment(value: Any, fallback: datetime) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError as exc:
            raise CompilerInputError(f"document metadata retrieved_at {value!r} is not an ISO timestamp") from exc
        return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=timezone.utc)
    return fallback


def documents_to_evidence(
    documents: Sequence[Document], *, retrieved_at: datetime, default_authority: float, lineage: str | None = None
) -> list[Evidence]:
    """LangChain documents as provenance-tagged :class:`Evidence` (rules in the module docstring)."""
    out: list[Evidence] = []
    n = len(documents)
    for rank, doc in enumerate(documents):
        meta = dict(doc.metadata or {})
        source = meta.get("source")
        if not isinstance(source, str) or not source:
            raise CompilerInputError(
                f"document {rank} has no metadata['source']; evidence without provenance is rejected "
                f"(chapter §6.3.3): set metadata['source'] in your loader or retriever"
            )
        relevance = next((meta[k] for k in ("relevance_score", "relevance", "score") if k in meta), None)
        if not isinstance(relevance, int | float) or isinstance(relevance, bool):
            relevance = 1.0 - rank / n
        span = (meta["start_index"], meta["start_index"] + len(doc.page_content)) if "start_index" in meta else None
        out.append(
            Evidence(
                str(doc.id or meta.get("id") or f"{source}#{meta.get('start_index', rank)}"),
                doc.page_content,
                source=source,
                retrieved_at=_moment(meta.get("retrieved_at"), retrieved_at),
                authority=float(meta.get("authority", default_authority)),
                relevance=min(1.0, max(0.0, float(relevance))),
                span=span,
                lineage=meta.get("lineage", lineage),
                metadata={k: v for k, v in meta.items() if isinstance(v, str | int | float | bool)},
            )
        )
    return out


def headline(compiled: CompiledContext) -> dict[str, Any]:
    """The numbers worth a glance in a trace viewer: tokens, utilisation, λ, exclusions and the metrics."""
    return {
        "total_tokens": compiled.total_tokens,
        "allocator": compiled.trace.allocator,
        "overflow_policy": compiled.trace.overflow_policy,
        "shadow_price": compiled.shadow_price,
        "excluded": len(compiled.excluded),
        "retrieval_pending": len(compiled.retrieval_pending),
        "pages": len(compiled.pages) or 1,
        "input_hash": compiled.trace.input_hash,
        "tools": [t["function"]["name"] for t in compiled.tools],
        **compiled.metrics.to_dict(),
    }


class TokenBoxCompiler(RunnableSerializable[dict[str, Any], ChatPromptValue]):
    """Compiles named sources (retrievers allowed) into a ``ChatPromptValue`` (see the module docstring).

    ``{"user": question, "history": messages} | TokenBoxCompiler(budget=128_000, sources={...}) | model``
    """

    budget: int | ContextBudget
    """The window: an int or a ``ContextBudget`` (its ``output_reserve`` is the generation reserve)."""

    counter: Any = "o200k_base"
    """Counter or model name (``"gpt-4o"``), or a ``TokenCounter``."""

    config: CompilerConfig = Field(default_factory=CompilerConfig)
    """The compiler's configuration (allocator, overflow policy, gates ...)."""

    sources: dict[str, Any] = Field(default_factory=dict)
    """Sources fixed at construction (a policy, a retriever ...); the invocation's input overrides them."""

    default_authority: float = 0.5
    """Authority given to documents whose metadata has none."""

    clock: Callable[[], datetime] = Field(default=lambda: datetime.now(timezone.utc))
    """When documents without ``retrieved_at`` were retrieved (called once per invocation)."""

    tools_as: Literal["schemas", "text"] = "schemas"
    """How tools travel: ``"schemas"`` (for ``model.bind_tools``: counted, not emitted) or ``"text"`` (a system
    message of JSON); it sets ``CompilerConfig.tools_as`` for this Runnable."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    event_name: ClassVar[str] = COMPILE_EVENT

    @classmethod
    def is_lc_serializable(cls) -> bool:
        return False

    def compiler(self) -> ContextCompiler:
        """The core compiler this Runnable calls (its config with this Runnable's ``tools_as``)."""
        config = self.config if self.config.tools_as == self.tools_as else replace(self.config, tools_as=self.tools_as)
        return ContextCompiler(self.budget, counter=self.counter, config=config)

    # ------------------------------------------------------------------ translation

    def _merged(self, input: Any) -> dict[str, Any]:
        if not isinstance(input, Mapping):
            raise CompilerInputError(
                f"TokenBoxCompiler takes a dict of named sources {list(_NAMES)}, got {type(input).__name__}"
            )
        merged = {**self.sources, **input}
        unknown = sorted(set(merged) - {*_NAMES, "query"})
        if unknown:
            raise CompilerInputError(f"unknown sources {unknown}; TokenBoxCompiler takes {list(_NAMES)} and 'query'")
        return merged

    @staticmethod
    def _query(merged: Mapping[str, Any]) -> str:
        query = merged.get("query", merged.get("user"))
        if isinstance(query, BaseMessage):
            return query.text
        return "" if query is None else str(query)

    def _evidence_entry(self, value: Any, query: str, now: datetime, use_async: bool) -> Any:
        if isinstance(value, BaseRetriever):
            name = type(value).__name__

            def retrieve() -> list[Evidence]:
                docs = value.invoke(query)
                return documents_to_evidence(
                    docs, retrieved_at=now, default_authority=self.default_authority, lineage=name
                )

            async def aretrieve() -> list[Evidence]:
                docs = await value.ainvoke(query)
                return documents_to_evidence(
                    docs, retrieved_at=now, default_authority=self.default_authority, lineage=name
                )

            return aretrieve if use_async else retrieve
        if isinstance(value, Document):
            return documents_to_evidence([value], retrieved_at=now, default_authority=self.default_authority)
        return value

    def _translate(self, merged: Mapping[str, Any], *, use_async: bool = False) -> dict[str, Any]:
        """The sources as the core compiler takes them; retrievers become (async) callables."""
        now = self.clock()
        query = self._query(merged)
        out: dict[str, Any] = {}
        for name in _NAMES:
            if name not in merged or merged[name] is None:
                continue
            value = merged[name]
            if name == "evidence":
                entries = list(value) if isinstance(value, list | tuple) else [value]
                if entries and all(isinstance(e, Document) for e in entries):
                    value = documents_to_evidence(entries, retrieved_at=now, default_authority=self.default_authority)
                else:
                    value = [self._evidence_entry(e, query, now, use_async) for e in entries]
            elif name == "history":
                value = [dict(m) for m in convert_to_openai_messages(list(value))]
            elif name == "tools":
                value = [convert_to_openai_tool(t) if isinstance(t, BaseTool) else t for t in value]
            elif name == "user" and isinstance(value, BaseMessage):
                value = value.text
            out[name] = value
        return out

    # ------------------------------------------------------------------ running

    def compile(self, input: Mapping[str, Any]) -> CompiledContext:
        """Compile one input dict (retrievers invoked synchronously) and return the whole CompiledContext."""
        return self.compiler().compile(**self._translate(self._merged(input)))

    async def acompile(self, input: Mapping[str, Any]) -> CompiledContext:
        """Compile one input dict, invoking retrievers concurrently with ``ainvoke``."""
        translated = self._translate(self._merged(input), use_async=True)
        return await self.compiler().acompile(**translated)

    @staticmethod
    def _output(compiled: CompiledContext) -> ChatPromptValue:
        return ChatPromptValue(messages=convert_to_messages([dict(m) for m in compiled.messages]))

    def invoke(self, input: dict[str, Any], config: RunnableConfig | None = None, **kwargs: Any) -> ChatPromptValue:
        """Compile and return the prompt; the trace goes to the callbacks, the headline to the run metadata."""
        try:
            compiled: CompiledContext | Exception = self.compile(input)
        except (CompilationError, CompilerInputError) as exc:
            compiled = exc
        config = _with_headline(ensure_config(config), compiled)

        def run(_: Any, run_manager: CallbackManagerForChainRun) -> ChatPromptValue:
            if isinstance(compiled, Exception):
                raise compiled
            child = run_manager.get_child()
            if child.handlers:
                child.on_custom_event(self.event_name, compiled.trace.to_dict(), run_id=run_manager.run_id)
            return self._output(compiled)

        return self._call_with_config(run, input, config, **kwargs)

    async def ainvoke(
        self, input: dict[str, Any], config: RunnableConfig | None = None, **kwargs: Any
    ) -> ChatPromptValue:
        """Like :meth:`invoke`, with retrievers invoked concurrently."""
        try:
            compiled: CompiledContext | Exception = await self.acompile(input)
        except (CompilationError, CompilerInputError) as exc:
            compiled = exc
        config = _with_headline(ensure_config(config), compiled)

        async def run(_: Any, run_manager: AsyncCallbackManagerForChainRun) -> ChatPromptValue:
            if isinstance(compiled, Exception):
                raise compiled
            child = run_manager.get_child()
            if child.handlers:
                await child.on_custom_event(self.event_name, compiled.trace.to_dict(), run_id=run_manager.run_id)
            return self._output(compiled)

        return await self._acall_with_config(run, input, config, **kwargs)


def _with_headline(config: RunnableConfig, compiled: CompiledContext | Exception) -> RunnableConfig:
    if isinstance(compiled, Exception):
        return config
    metadata = dict(config.get("metadata") or {})
    metadata["tokenbox"] = headline(compiled)
    return {**config, "metadata": metadata}
