"""The capability that puts TokenBox's session in front of every model request of a pydantic-ai agent.

``Agent(model, capabilities=[TokenBoxCapability(budget=...)])``.  Before each
attempt at a model request (``prepare_model_request``: the serving model is
known, so its profile's window can be read) the conversation is converted to
neutral messages (:mod:`tokenbox_pydantic_ai._messages`), the system text (the
instructions and system prompt parts), the tool definitions (function and
output tools, in OpenAI's shape) and the native output schema go into one
:class:`tokenbox_core.request.ModelRequest`, and the session's
:meth:`~tokenbox_core.ContextSession.prepare` decides what is sent: everything
it has not archived yet is archived, old tool results are masked, oversized
ones previewed, what was left out is named by a pointer and recalled when the
current question needs it.  The answer is mapped back to the run's own part
objects (request-only: the agent's history is not rewritten).  Tool results
are offloaded as they are produced (``after_tool_execute``): the run keeps the
preview, the archive the whole result, which the ``rehydrate`` tool reads back.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass, replace
from typing import Any

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ModelRetry
from pydantic_ai.messages import InstructionPart, ToolCallPart
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.tools import RunContext, ToolDefinition
from pydantic_ai.toolsets import FunctionToolset

from tokenbox_core import ContextBudget, ContextSession, Section, get_counter
from tokenbox_core.defense import DefensePolicy, defend_sections, hierarchy_statement
from tokenbox_core.errors import ConfigError, ConfigTypeError, SecurityError, SessionError
from tokenbox_core.request import ModelRequest
from tokenbox_core.session import SessionStore, open_store
from tokenbox_pydantic_ai._messages import converted, rebuilt, tool_schema

__all__ = ["REHYDRATE_TOOL", "TokenBoxCapability"]

REHYDRATE_TOOL = "rehydrate"


def _store(session: Any) -> SessionStore:
    return open_store(session, argument="TokenBoxCapability(session=...)")


@dataclass
class TokenBoxCapability(AbstractCapability[Any]):
    """Fits every model request of the agent into the model's window through a TokenBox session.

    Args:
        budget: the window in tokens (or a :class:`~tokenbox_core.ContextBudget`); ``None`` reads the serving
            model's profile (``context_window``).
        session: where the archive lives: ``True`` (memory), a SQLite path, a PostgreSQL URI or a ``SessionStore``.
        session_id: the archive's session; ``None`` is the run's ``conversation_id``.
        token_counter: the counter (a tiktoken encoding name or a ``TokenCounter``).
        recall, masking, offload, defense: as :class:`~tokenbox_core.ContextSession` takes them.
    """

    budget: int | ContextBudget | None = None
    _: KW_ONLY
    session: Any = True
    session_id: str | None = None
    token_counter: Any = "o200k_base"
    recall: Any = True
    masking: Any = True
    offload: Any = True
    defense: Any = None

    def __post_init__(self) -> None:
        budget = self.budget
        wrong = isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0
        if budget is not None and not isinstance(budget, ContextBudget) and wrong:
            raise ConfigTypeError(
                f"TokenBoxCapability(budget=...) must be a positive number of tokens or a ContextBudget, got {budget!r}"
            )
        if self.defense is not None and not isinstance(self.defense, DefensePolicy):
            raise ConfigTypeError(
                f"TokenBoxCapability(defense=...) must be a tokenbox_core.defense.DefensePolicy, got "
                f"{type(self.defense).__name__}; e.g. defense=DefensePolicy()"
            )
        self._store = _store(self.session)
        self._sessions: dict[str, tuple[ContextSession, dict[str, str]]] = {}

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # holds a live store

    def _window(self, request_context: ModelRequestContext) -> int | ContextBudget:
        if self.budget is not None:
            return self.budget
        window = request_context.model.profile.get("context_window")
        if not window:
            raise ConfigError(
                f"the model {request_context.model.model_name!r} has no context_window in its profile: pass "
                "TokenBoxCapability(budget=...) with its window in tokens, e.g. budget=128_000"
            )
        return int(window)

    def session_for(self, session_id: str, window: int | ContextBudget = 8000) -> ContextSession:
        """The session ``session_id`` (opened on first use)."""
        return self._open(session_id, window)[0]

    def _open(self, session_id: str, window: int | ContextBudget) -> tuple[ContextSession, dict[str, str]]:
        found = self._sessions.get(session_id)
        if found is None:
            options = {"recall": self.recall, "masking": self.masking, "offload": self.offload}
            session = ContextSession(
                self._store, session_id, budget=window, counter=self.token_counter, defense=self.defense, **options
            )
            found = self._sessions[session_id] = (session, {})
        return found

    def _id(self, ctx: RunContext[Any]) -> str:
        return self.session_id or str(ctx.conversation_id or "default")

    @staticmethod
    def _ids(session: ContextSession, neutral_id: dict[str, str]) -> dict[str, str]:
        """archived id -> neutral id, brought up to date with the archive."""
        turns = session.archive.turns()
        for turn in turns[len(neutral_id) :]:
            neutral_id[turn.turn_id] = str(turn.message.get("id") or "")
        return neutral_id

    async def prepare_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        window = self._window(request_context)
        session, neutral_id = self._open(self._id(ctx), window)
        conversation = converted(request_context.messages)
        params = request_context.model_request_parameters
        parts = params.instruction_parts or []
        policy = self.defense
        if policy is not None and policy.hierarchy:  # the instruction-hierarchy statement joins the instructions
            statement = hierarchy_statement(policy.spotlight, marker=policy.datamark)
            if all(p.content != statement for p in parts):
                parts = [*parts, InstructionPart(statement)]
                params = request_context.model_request_parameters = replace(params, instruction_parts=parts)
        system = "\n\n".join([*conversation.system, *(p.content for p in parts)]) or None
        tools = [tool_schema(t) for t in [*params.declared_function_tools, *params.output_tools]]  # as sent
        schema = params.output_object
        response_format = (
            {"type": "json_schema", "json_schema": {"name": schema.name or "output", "schema": schema.json_schema}}
            if schema is not None and params.output_mode == "native"
            else None
        )
        settings = request_context.model_settings or {}
        request = ModelRequest(
            conversation.messages,
            system=system,
            tools=tools,
            response_format=response_format,
            window=window,
            output_reserve=int(settings.get("max_tokens") or 0),
        )
        prepared = session.prepare(request)
        ids = self._ids(session, neutral_id)
        request_context.messages = rebuilt(prepared.messages, prepared.sources, ids, conversation)
        return request_context

    async def after_tool_execute(
        self, ctx: RunContext[Any], *, call: ToolCallPart, tool_def: ToolDefinition, args: Any, result: Any
    ) -> Any:
        if not isinstance(result, str) or tool_def.kind != "function" or tool_def.name == REHYDRATE_TOOL:
            return result
        if self.defense is not None:
            result = self._screened(call, result)
        session, neutral_id = self._open(self._id(ctx), self.budget or 8000)
        session.sync(converted(ctx.messages).messages)  # the call is archived before its result
        message = {"role": "tool", "tool_call_id": call.tool_call_id, "content": result}
        kept = session.offload({**message, "id": f"pai-r-{call.tool_call_id}"})
        self._ids(session, neutral_id)
        return kept["content"]

    def _screened(self, call: ToolCallPart, result: str) -> str:
        """A tool result screened by the defence policy as untrusted tool output (withheld when it rejects it)."""
        assert self.defense is not None
        quiet = replace(self.defense, hierarchy=False, canary=False)  # the statement is in the instructions
        section = Section(call.tool_call_id, result, role="tool", metadata={"source_type": "tool"})
        try:
            defended = defend_sections([section], quiet, counter=get_counter(self.token_counter))
        except SecurityError as exc:
            return (
                f"The result of this tool call was withheld: it scored {exc.score:.2f} as a likely prompt "
                "injection, and the policy for tool results is 'reject'."
            )
        return "\n".join(s.content for s in defended.sections if isinstance(s.content, str))

    def get_toolset(self) -> FunctionToolset[Any]:
        toolset: FunctionToolset[Any] = FunctionToolset()

        @toolset.tool(name=REHYDRATE_TOOL)
        def rehydrate(ctx: RunContext[Any], id: str, offset: int = 0, limit: int = 4000) -> str:
            """Read an archived message or an offloaded tool result back by its id (such as t_17), as named in an
            omission pointer, a masked result or an offload preview; offset and limit are in characters."""
            try:
                return self.session_for(self._id(ctx), self.budget or 8000).rehydrate(id, offset, limit)
            except SessionError as exc:  # an id the archive does not hold, an offset past the end: the model retries
                raise ModelRetry(str(exc)) from exc

        return toolset
