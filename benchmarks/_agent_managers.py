"""The context managers the agent-loop benchmark replays a session through, one protocol for all.

A manager is built for one session and one budget, and is then called once per
model call with the messages that arrived since the previous call (the previous
scripted assistant reply, then the new user message or tool results).  It
returns the request the model would get, as neutral (OpenAI-shaped) dicts.
Every peer keeps its framework's own state the way an agent loop would — a list
of framework messages it appends to — and counts with the same exact counter:
o200k (``gpt-4o``) per message, the sum plus the chat priming tokens, each
message counted once and remembered for its (type, id, content).

Peers:

- ``trim_messages``: LangChain's ``trim_messages(strategy="last", include_system=True, start_on="human")``.
- ``SummarizationMiddleware``: LangChain 1.x's middleware, its ``before_model`` hook
  run before every call with ``trigger=("tokens", budget - system prompt)`` and
  ``keep=("tokens", half of that)``; the summaries come from
  :class:`ExtractiveFakeChat`, a deterministic fake chat model (see there).
- ``ContextEditingMiddleware``: LangChain 1.x's middleware with
  ``ClearToolUsesEdit(trigger=budget - system prompt)`` (keep the 3 newest tool
  results, ``[cleared]`` for the others), run through its ``wrap_model_call``.
  It only clears tool output: it never drops a message, so it can exceed the budget.
- ``LlamaIndex Memory``: ``Memory.from_defaults(token_limit=budget, tokenizer_fn=o200k)``
  (its default chat-history ratio and flush size), fed with ``put_messages``.
- ``full history``: every message, unmanaged (a reference row, not a manager).
- ``ContextSession``: TokenBox's session, default options, archiving to a SQLite file in a
  temporary directory: ``add`` the new messages, ``compile()``, Anthropic breakpoints placed from
  ``stable_messages`` (:func:`anthropic_breakpoints`; the other managers get the simulator's default
  placement, after the system prompt and on the last message).
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tokenbox_core.cache import with_cache_control
from tokenbox_core.tokens import PRIMING_TOKENS, get_counter
from tokenbox_core.tokens._messages import message_token_count

COUNTER = get_counter("gpt-4o")
Message = dict[str, Any]
Manager = Callable[[list[Message]], list[Message]]


def count(messages: Sequence[Message]) -> int:
    """The exact prompt size of neutral messages (o200k, chat overhead included)."""
    return PRIMING_TOKENS + sum(message_token_count(m, COUNTER) for m in messages)


class FullHistory:
    """Sends every message: the unmanaged reference (not a manager)."""

    name = "full history (unmanaged)"

    def __init__(self, budget: int) -> None:
        self.history: list[Message] = []

    def __call__(self, new: list[Message]) -> list[Message]:
        self.history += new
        return list(self.history)


class _LangChain:
    """Shared by the LangChain peers: framework messages kept in order, an exact memoised counter, and the map
    back to the session's own dicts for the messages the framework did not rewrite."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.system: Any = None
        self.state: list[Any] = []
        self.originals: dict[str, Message] = {}
        self.sizes: dict[tuple[str, str | None, str], int] = {}

    def add(self, new: list[Message]) -> None:
        from langchain_core.messages import convert_to_messages

        for m in new:
            self.originals[m["id"]] = m
        converted = convert_to_messages(new)
        for m in converted:
            if m.type == "system":
                self.system = m
            else:
                self.state.append(m)

    def tokens(self, messages: Any) -> int:
        """LangChain ``token_counter``: exact o200k, each (type, id, content) counted once."""
        from langchain_core.messages import convert_to_openai_messages

        total = PRIMING_TOKENS
        for m in messages:
            key = (m.type, m.id, m.content if isinstance(m.content, str) else repr(m.content))
            size = self.sizes.get(key)
            if size is None:
                size = self.sizes[key] = message_token_count(convert_to_openai_messages([m])[0], COUNTER)
            total += size
        return total

    def neutral(self, messages: list[Any]) -> list[Message]:
        """The session's dicts for messages passed through unchanged; a conversion for rewritten ones."""
        from langchain_core.messages import convert_to_openai_messages

        out = []
        for m in messages:
            original = self.originals.get(m.id) if m.id else None
            if original is not None and original.get("content") == m.content:
                out.append(original)
            else:
                out.append({**convert_to_openai_messages([m])[0], "id": m.id})
        return out


class TrimMessages(_LangChain):
    """trim_messages(strategy="last", include_system=True, start_on="human"), the exact counter."""

    name = "LangChain trim_messages"

    def __call__(self, new: list[Message]) -> list[Message]:
        from langchain_core.messages import trim_messages

        self.add(new)
        kept = trim_messages(
            [self.system, *self.state],
            max_tokens=self.budget,
            token_counter=self.tokens,
            strategy="last",
            include_system=True,
            start_on="human",
        )
        return self.neutral(kept)


def ExtractiveFakeChat(words: int = 25, max_tokens: int = 1000) -> Any:  # noqa: N802 - a model class factory
    """A deterministic fake chat model for ``SummarizationMiddleware``.

    Given the middleware's summary prompt, it returns the first ``words`` words of
    every user and assistant message in the prompt's ``<messages>`` block, oldest
    first, one line each, keeping the newest lines that fit ``max_tokens`` (o200k).
    Tool results are not summarised.  No randomness, no network.
    """
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    class _Extractive(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "extractive-fake"

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
            prompt = messages[-1].text
            block = prompt[prompt.rfind("<messages>") :]
            lines: list[str] = []
            for kind, body in re.findall(r'<message type="(human|ai)">(.*?)</message>', block, flags=re.S):
                head = " ".join(re.sub(r"<tool_call.*?</tool_call>", "", body, flags=re.S).split()[:words])
                if head:
                    lines.append(f"{'user' if kind == 'human' else 'assistant'}: {head}")
            kept: list[str] = []
            used = 0
            for line in reversed(lines):
                used += COUNTER.count(line) + 1
                if used > max_tokens:
                    break
                kept.append(line)
            text = "\n".join(reversed(kept)) or "(nothing to summarise)"
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])

    return _Extractive()


class Summarization(_LangChain):
    """before_model with trigger=("tokens", budget - system), keep=("tokens", half that); summaries by
    ExtractiveFakeChat: the first 25 words of each user/assistant message, newest lines within budget/8 tokens."""

    name = "LangChain SummarizationMiddleware"

    def __init__(self, budget: int) -> None:
        super().__init__(budget)
        self.middleware: Any = None

    def __call__(self, new: list[Message]) -> list[Message]:
        from langchain.agents.middleware import SummarizationMiddleware

        self.add(new)
        if self.middleware is None:
            room = max(1, self.budget - self.tokens([self.system]))
            self.middleware = SummarizationMiddleware(
                model=ExtractiveFakeChat(max_tokens=max(64, room // 8)),
                trigger=("tokens", room),
                keep=("tokens", max(1, room // 2)),
                token_counter=self.tokens,
            )
        update = self.middleware.before_model({"messages": self.state}, None)
        if update is not None:
            self.state = [m for m in update["messages"] if m.type != "remove"]
        return self.neutral([self.system, *self.state])


class ContextEditing(_LangChain):
    """wrap_model_call with ClearToolUsesEdit(trigger=budget - system, keep=3); clears, never drops."""

    name = "LangChain ContextEditing(ClearToolUses)"

    def __init__(self, budget: int) -> None:
        super().__init__(budget)
        self.middleware: Any = None

    def __call__(self, new: list[Message]) -> list[Message]:
        from langchain.agents.middleware import ClearToolUsesEdit, ContextEditingMiddleware, ModelRequest

        self.add(new)
        if self.middleware is None:
            room = max(1, self.budget - self.tokens([self.system]))
            edit = ClearToolUsesEdit(trigger=room)
            self.middleware = ContextEditingMiddleware(edits=[edit], token_counter=self.tokens)
        sent: list[Any] = []

        def handler(request: Any) -> Any:
            sent.extend(request.messages)
            return None

        request = ModelRequest(model=_MODEL, messages=self.state, system_message=self.system)
        self.middleware.wrap_model_call(request, handler)
        return self.neutral([self.system, *sent])


class _NoModel:
    """Stands where a ``ModelRequest`` names its model; the benchmark never calls it."""


_MODEL: Any = _NoModel()


class LlamaIndexMemory:
    """Memory.from_defaults(token_limit=budget, tokenizer_fn=o200k, each text encoded once), put_messages, get()."""

    name = "LlamaIndex Memory"

    def __init__(self, budget: int) -> None:
        from llama_index.core.memory import Memory

        self.encoded: dict[str, list[int]] = {}  # text -> its tokens: the same once-per-text counting as the others
        self.memory = Memory.from_defaults(session_id="bench", token_limit=budget, tokenizer_fn=self.encode)
        self.system: Message | None = None
        self.originals: dict[str, Message] = {}

    def encode(self, text: str) -> list[int]:
        ids = self.encoded.get(text)
        if ids is None:
            ids = self.encoded[text] = COUNTER.encode(text)
        return ids

    def __call__(self, new: list[Message]) -> list[Message]:
        from llama_index.core.llms import ChatMessage

        batch = []
        for m in new:
            if m["role"] == "system":
                self.system = m
                continue
            self.originals[m["id"]] = m
            extra: dict[str, Any] = {"tb_id": m["id"]}
            if m.get("tool_calls"):
                extra["tool_calls"] = m["tool_calls"]
            if m.get("tool_call_id"):
                extra["tool_call_id"] = m["tool_call_id"]
            batch.append(ChatMessage(role=m["role"], content=m.get("content") or "", additional_kwargs=extra))
        if batch:
            self.memory.put_messages(batch)
        kept = [self.originals[m.additional_kwargs["tb_id"]] for m in self.memory.get()]
        return ([self.system] if self.system else []) + kept


def anthropic_breakpoints(compiled: Any) -> list[Message]:
    """The compiled messages with Anthropic ``cache_control`` breakpoints where the library says to put them:
    after the leading system messages, at the end of the stable prefix (``stable_messages - 1``: the message
    before the one carrying the session block) and on the last message — as a user sending to Claude would
    (``tokenbox_core.cache.with_cache_control``).  Without the middle one Anthropic never reads past the
    system prompt: it reads only prefixes that end at a breakpoint written by an earlier request, and the
    previous request's last message carried that turn's recall, which the next request does not repeat.
    OpenAI's simulation ignores the marker (it keys on the content without it)."""
    messages = list(compiled.messages)
    lead = next((i for i, m in enumerate(messages) if m.get("role") not in ("system", "developer")), len(messages))
    stable = compiled.stable_messages
    marks = {lead - 1, len(messages) - 1} | ({stable - 1} if stable else set())
    return with_cache_control(messages, sorted(m for m in marks if m >= 0))


class TokenBoxSession:
    """ContextSession(a SQLite file, budget=budget, counter="gpt-4o"), default options: add(new), compile()."""

    name = "TokenBox ContextSession"

    def __init__(self, budget: int, **options: Any) -> None:
        from tokenbox_core import ContextSession

        self.directory = tempfile.TemporaryDirectory(prefix="bench-agent-loop-")
        path = Path(self.directory.name) / "archive.db"
        self.session = ContextSession(path, "bench", budget=budget, counter="gpt-4o", **options)

    def __call__(self, new: list[Message]) -> list[Message]:
        self.session.add(new)
        return anthropic_breakpoints(self.session.compile())

    def close(self) -> None:
        self.session.close()
        self.directory.cleanup()


class TokenBoxSessionCacheAware(TokenBoxSession):
    """The same with cache_aware=True: the window moves in blocks at tool-group boundaries (prompt caching)."""

    name = "TokenBox ContextSession cache_aware"

    def __init__(self, budget: int) -> None:
        super().__init__(budget, cache_aware=True)


def with_embedder(spec: str) -> Callable[[int], Manager]:
    """A ContextSession maker whose recall fuses BM25 with an embedding model: ``spec`` is ``module:name``,
    where ``name`` is a ``text -> vector`` callable, or a factory (a class or function taking no argument)
    that returns one."""
    import importlib

    from tokenbox_core.session import RecallConfig

    module, _, attr = spec.partition(":")
    if not module or not attr:
        raise SystemExit(f"--embedder takes module:name, got {spec!r}")
    target = getattr(importlib.import_module(module), attr)
    embedder = target() if isinstance(target, type) else target

    class Embedded(TokenBoxSession):
        name = f"TokenBox ContextSession + {attr}"

        def __init__(self, budget: int) -> None:
            super().__init__(budget, recall=RecallConfig(embedder=embedder))

    Embedded.__doc__ = f"ContextSession, default options, recall fusing BM25 with {spec} by reciprocal rank."
    return Embedded


def managers() -> dict[str, Callable[[int], Manager]]:
    """Every manager by name, TokenBox's first (frameworks are imported on first use)."""
    classes: list[Any] = [
        TokenBoxSession,
        TokenBoxSessionCacheAware,
        TrimMessages,
        Summarization,
        ContextEditing,
        LlamaIndexMemory,
        FullHistory,
    ]
    return {cls.name: cls for cls in classes}
