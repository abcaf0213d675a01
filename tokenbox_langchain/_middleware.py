"""``TokenBoxMiddleware``: TokenBox in charge of a LangChain 1.x agent's context (``create_agent``, deepagents).

>>> from langchain.agents import create_agent
>>> from langchain_core.messages import HumanMessage
>>> from tokenbox_langchain.testing import FakeToolModel, lookup_tool
>>> model = FakeToolModel(steps=40)
>>> agent = create_agent(model, [lookup_tool()], system_prompt="Research.", middleware=[TokenBoxMiddleware(600)])
>>> state = agent.invoke({"messages": [HumanMessage("find everything", id="task")]}, {"recursion_limit": 200})
>>> len(state["messages"]), max(len(r) for r in model.requests) < 20   # the state keeps all; requests fit
(82, True)

Before every model call (``wrap_model_call`` and its async twin), the request's
system message (critical), its tool schemas (counted as the provider receives
them, reserved, never re-sent as text) and its messages are laid out into the
window by the core's conversation engine (:func:`tokenbox_core.chat.fit_conversation`):
the system message first, the latest human message (the task) kept, history
evicted oldest first by whole tool groups, tool-call ids never rewritten, the
original message objects passed on (ids and ``additional_kwargs`` intact).
The model receives ``request.override(messages=fitted)``; the graph state keeps
every message.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from tokenbox_core import ContextBudget
from tokenbox_core.arguments import check_arguments, no_bool
from tokenbox_core.chat import check_on_invalid
from tokenbox_core.errors import BudgetError
from tokenbox_core.request import ContextSize, RequestWindow, check_size, check_trigger, resolve_window
from tokenbox_core.request import ModelRequest as NeutralRequest
from tokenbox_langchain._agent_window import model_window, output_reserve, request_schemas, tool_tokens
from tokenbox_langchain._counting import MessageCounter
from tokenbox_langchain._fit import MARKER_ID_PREFIX, FitOptions, FitResult, fit_messages, neutral

__all__ = ["TokenBoxMiddleware"]

_ARGUMENTS = (
    "budget", "token_counter", "output_reserve", "trigger", "keep", "cache_aware", "omission_marker",
    "summarizer", "persistent", "defense", "on_leak", "name", "session", "session_id", "recall", "masking",
    "offload", "on_invalid",
)  # fmt: skip
_PLACEHOLDER_WINDOW = 128_000
"""A thread's session is opened with this window when a tool call comes first; every compile passes its own."""


class TokenBoxMiddleware(AgentMiddleware):
    """Fits every model request of an agent into its window, exactly; the graph state stays whole.

    Args:
        budget: the window (an int, or a ``ContextBudget`` with its reserves and target); ``None`` takes
            ``max_input_tokens`` from the model's profile.
        token_counter: how messages are counted: a counter or model name (``"o200k_base"``, ``"gpt-4o"``),
            ``"approximate"``, a ``TokenCounter``, a chat model or a callable (as ``trim_messages`` takes).
        output_reserve: tokens kept for the answer; ``None`` reads the request's max tokens, else the profile's
            ``max_output_tokens``.
        trigger: fit only once the system message and the messages reach this (``("tokens", n)``,
            ``("fraction", f)`` of the window, ``("messages", n)``; a dict of these that must all be reached, or
            a list of which any one suffices, as ``SummarizationMiddleware`` takes); a request over the window is
            fitted whatever the trigger.  ``None``: whenever over the window.
        keep: what a fitted request keeps: ``("tokens", n)``, ``("fraction", f)`` (the layout's target) or
            ``("messages", n)`` (the newest ``n``, fewer when that would split a tool group);
            ``None``: as much as fits.
        cache_aware: ``True`` or a :class:`~tokenbox_core.cache.CacheWindow`: evict in prefix-stable blocks so
            the provider's prompt cache keeps serving the request.
        omission_marker: leave a counted note where messages were removed (``True`` or a template with
            ``{count}`` and ``{ids}``); it joins the system message.
        summarizer: a chat model (or a ``"provider:model"`` name for ``init_chat_model``), a Runnable or a
            callable over the removed messages returning their summary;
            it stands where they were (with ``cache_aware`` so it is written once per cut).
        persistent: also compact the graph state itself before each model call (``before_model``:
            ``RemoveMessage(REMOVE_ALL_MESSAGES)`` and the kept messages, a summary first when a summarizer is
            given) once ``trigger`` (default: the window) is reached, to ``keep`` (default ``("fraction", 0.5)``
            of the budget less its output reserve, the window's rule); the newest tool step stays whole in the
            state; needs ``budget``.
        defense: a :class:`~tokenbox_core.defense.DefensePolicy`: tool results are screened as they are
            produced (injections quarantined in boundaries, or withheld under a ``reject`` policy), the
            instruction-hierarchy statement and the canary join the system message, and every response is
            checked for leaks (:func:`~tokenbox_core.defense.check_output`; see
            :mod:`tokenbox_langchain._agent_tools`).
        on_leak: with ``defense``, what a response that leaks the canary, the system prompt or a secret does:
            ``"flag"`` (the default: the verdict in ``response_metadata["tokenbox_defense"]["output"]``, a
            warning on the ``tokenbox.security`` logger) or ``"raise"`` (:class:`~tokenbox_core.errors.SecurityError`).
        name: the middleware's name (``create_agent`` and deepagents match middleware by name).
        session: ``True`` (in memory), a path (a SQLite file), a PostgreSQL URI (``postgresql://…``: workers
            share one archive) or a ``SessionStore``: one
            :class:`~tokenbox_core.ContextSession` per thread archives every message and compiles each request
            (recall, masking, offload; see :mod:`tokenbox_langchain._agent_session`), and the ``rehydrate`` tool
            is offered to the model.  ``None``: no session, the conversation engine fits the request.
        session_id: one fixed session id instead of the run's thread id.
        recall, masking, offload: the session's options (``True``/``False``, a ``RecallConfig``/``MaskingConfig``/
            ``OffloadConfig`` or a dict of its fields); with offload on, a tool result over its threshold is
            archived whole when it is produced and the state keeps its preview.
        on_invalid: messages a provider would reject (a tool result without its call, a call without results):
            ``"raise"`` a :class:`~tokenbox_core.errors.ConversationError` naming the message and the fix, or
            ``"repair"``: leave them out of the request (the state keeps them).
    """

    def __new__(cls, *args: Any, persistent: bool = False, **kwargs: Any) -> TokenBoxMiddleware:
        # create_agent adds a graph node for before_model only when the class defines it: the persistent mode
        # is a subclass, so the default mode costs no extra node per model call.
        target = _PersistentTokenBoxMiddleware if persistent and cls is TokenBoxMiddleware else cls
        return super().__new__(target)

    def __init__(
        self,
        budget: int | ContextBudget | None = None,
        *,
        token_counter: Any = "o200k_base",
        output_reserve: int | None = None,
        trigger: ContextSize | Mapping[str, float] | list[ContextSize | Mapping[str, float]] | None = None,
        keep: ContextSize | None = None,
        cache_aware: Any = False,
        omission_marker: bool | str = False,
        summarizer: Any = None,
        persistent: bool = False,
        defense: Any = None,
        on_leak: str = "flag",
        name: str = "TokenBoxMiddleware",
        session: Any = None,
        session_id: str | None = None,
        recall: Any = True,
        masking: Any = True,
        offload: Any = True,
        on_invalid: str = "raise",
        **unknown: Any,
    ) -> None:
        check_arguments(type(self).__name__, unknown, _ARGUMENTS, budget="budget")
        super().__init__()
        no_bool("budget", budget)
        self.budget = None if budget is None else ContextBudget.coerce(budget)
        if output_reserve is not None and (
            isinstance(output_reserve, bool) or not isinstance(output_reserve, int) or output_reserve < 0
        ):
            raise BudgetError(f"output_reserve must be an integer >= 0 or None, got {output_reserve!r}")
        self.output_reserve = output_reserve
        self.trigger = None if trigger is None else check_trigger(trigger)
        self.keep = None if keep is None else check_size("keep", keep)
        self.counter = MessageCounter(token_counter)
        self._text_counter = self.counter.text_counter()
        from tokenbox_langchain._converted import ConvertedMessages

        self.converted = ConvertedMessages(self.counter)
        from tokenbox_langchain._agent_summary import cache_window, core_summarizer

        self.summarizer = None if summarizer is None else core_summarizer(summarizer)
        self.options = FitOptions(
            system="leading",
            anchor="human",
            start_on="human",
            omission_marker=omission_marker,
            marker_type="system",
            cache_aware=cache_window(cache_aware, self.summarizer),
            on_invalid=check_on_invalid(on_invalid),
        )
        self.defense = defense
        self._defended: Any = None
        from tokenbox_langchain._agent_tools import LEAK_ACTIONS, SystemDefense, check_defense

        if on_leak not in LEAK_ACTIONS:
            raise ValueError(f"on_leak must be one of {', '.join(map(repr, LEAK_ACTIONS))}, got {on_leak!r}")
        if defense is not None:
            check_defense(defense)
            self._defended = SystemDefense(defense, self._text_counter, on_leak)
        self._joined_system: tuple[SystemMessage | None, str, SystemMessage] | None = None
        if persistent and self.budget is None:
            raise BudgetError(
                "persistent=True compacts the graph state before the model call, where the model's profile is "
                "not known: pass TokenBoxMiddleware(budget=...)"
            )
        self.persistent = persistent
        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty string, got {name!r}")
        self._name = name
        self.tools = []
        self.sessions: Any = None
        if session is not None and session is not False:
            self._open_sessions(session, session_id, recall=recall, masking=masking, offload=offload)

    def _open_sessions(self, store: Any, session_id: str | None, **options: Any) -> None:
        from tokenbox_langchain._agent_session import ThreadSessions, rehydrate_tool

        if self.counter.core is None:
            raise TypeError(
                f"session=... needs a counter the core can use (a name such as 'o200k_base' or a TokenCounter), "
                f"got token_counter={self.counter.name!r}"
            )
        if self.summarizer is not None:
            raise TypeError(
                "summarizer= applies without a session; with session=... the omitted history is named by a "
                "pointer and recalled when needed: drop one of them"
            )
        options["cache_aware"] = self.options.cache_aware
        options["on_invalid"] = self.options.on_invalid  # the session validates what it archives and sends
        if self.defense is not None:  # results are screened as produced; the session screens what it recalls
            options["defense"] = self.defense
        self.sessions = ThreadSessions(store, session_id=session_id, counter=self.counter.core, options=options)
        self.tools = [rehydrate_tool()]

    def session(self, thread_id: str) -> Any:
        """The :class:`~tokenbox_core.ContextSession` of ``thread_id`` (the archive, ``search``, ``rehydrate``);
        needs ``session=...``."""
        if self.sessions is None:
            raise TypeError("this TokenBoxMiddleware has no session: construct it with session=True or a path")
        return self.sessions.open(thread_id, self._placeholder_budget()).session

    @property
    def name(self) -> str:
        """The name ``create_agent`` and deepagents know this middleware by (stable, ``"TokenBoxMiddleware"``)."""
        return self._name

    def __repr__(self) -> str:
        return f"TokenBoxMiddleware(budget={self.budget!r}, token_counter={self.counter.name!r}, name={self._name!r})"

    # ------------------------------------------------------------------ the model call

    def window(self, request: ModelRequest) -> RequestWindow:
        """The window of ``request`` (:func:`tokenbox_core.request.resolve_window`) from what LangChain says: the
        budget or the model's profile, the output reserve, the tokens of the tool schemas (with the
        structured-output tools or schema ``create_agent`` adds for a ``response_format``), trigger and keep."""
        sent = request.tools or request.response_format is not None
        reserve = self.output_reserve
        return resolve_window(
            model_window(self.budget, request.model),
            output_reserve=reserve if reserve is not None else output_reserve(request.model, request.model_settings),
            tools=tool_tokens(request_schemas(request), self._text_counter) if sent else 0,
            trigger=self.trigger,
            keep=self._keep(request.system_message, request.messages),
        )

    def _keep(self, system: SystemMessage | None, messages: Sequence[BaseMessage]) -> ContextSize | None:
        """``keep`` in tokens: ``("messages", n)`` is what the newest ``n`` messages (and the system message) count
        now, so the core keeps them, fewer when the oldest of them opens a tool group it cannot keep whole."""
        if self.keep is None or self.keep[0] != "messages":
            return self.keep
        tail = list(messages[-int(self.keep[1]) :])
        return ("tokens", max(1, self.converted.count([system, *tail] if system is not None else tail)))

    def fit(self, request: ModelRequest) -> ModelRequest:
        """``request`` with its messages (and, for a marker, summary or defence statement, its system message)
        fitted into its window; ``request`` itself when nothing needs to change."""
        system = self._system_message(request.system_message)
        window = self.window(request)
        messages = request.messages
        thread = None
        if self.sessions is not None:
            thread = self.sessions.thread(request.runtime, window.budget)
            thread.archive(messages)
        if not self._triggered(window, system, messages):
            return request if system is request.system_message else request.override(system_message=system)
        if thread is not None:
            return self._compiled(request, system, window, thread)
        head = [system] if system is not None else []
        result = fit_messages([*head, *messages], self.counter, window.budget, self.options, self.converted)
        return self._fitted(request, system, result)

    def _compiled(
        self, request: ModelRequest, system: SystemMessage | None, window: RequestWindow, thread: Any
    ) -> ModelRequest:
        """The request prepared by the thread's session (:meth:`~tokenbox_core.ContextSession.prepare`): the
        neutral request — system text, tool schemas, messages, the window — in, the messages to send out."""
        budget = window.budget
        neutral_request = NeutralRequest(
            neutral(request.messages),
            system=system.text if system is not None else None,
            tools=request_schemas(request) if request.tools or request.response_format is not None else (),
            window=ContextBudget(  # the schemas' slot is the neutral request's to reserve; the user's slots kept
                max_tokens=budget.max_tokens,
                target_tokens=budget.target_tokens,
                output_reserve=budget.output_reserve,
                reserved_slots={k: v for k, v in budget.reserved_slots.items() if k != "tools"},
                estimation_safety_margin_percent=budget.estimation_safety_margin_percent,
            ),
        )
        lead, messages = thread.prepare(request.messages, neutral_request)
        held = system.text if system is not None else ""
        lead = [m for m in lead if m.text not in held]  # the defence statement the system message holds already
        if lead:
            system = _joined(system, lead)
        return request.override(messages=messages, system_message=system)

    def _triggered(self, window: RequestWindow, system: SystemMessage | None, messages: Sequence[BaseMessage]) -> bool:
        """True when the messages must be fitted (:meth:`~tokenbox_core.request.RequestWindow.due`)."""
        size = functools.cache(lambda: self.converted.count([system, *messages] if system is not None else messages))
        return window.due(len(messages), size)

    def _fitted(self, request: ModelRequest, system: SystemMessage | None, result: FitResult) -> ModelRequest:
        out = result.messages
        start = 1 if system is not None and out and out[0] is system else 0
        extra = start
        while (
            extra < len(out)
            and isinstance(out[extra], SystemMessage)
            and (out[extra].id or "").startswith(MARKER_ID_PREFIX)
        ):
            extra += 1  # markers and summaries the core placed after the system message: they join it
        if extra > start:
            system = _joined(system, out[start:extra])
        messages = out[extra:]
        if system is request.system_message:
            return request.override(messages=messages)  # type: ignore[arg-type]  # messages of the request
        return request.override(messages=messages, system_message=system)  # type: ignore[arg-type]

    def _system_message(self, system: SystemMessage | None) -> SystemMessage | None:
        """The system message with the defence statement and canary (the same object while neither changes)."""
        if self._defended is None:
            return system
        statement = self._defended.report(system.text if system is not None else "").statement
        if statement is None:
            return system
        last = self._joined_system
        if last is not None and last[0] is system and last[1] == statement:
            return last[2]
        joined = _joined(system, [SystemMessage(statement)])
        self._joined_system = (system, statement, joined)
        return joined

    def _checked(self, request: ModelRequest, response: Any) -> Any:
        """``response`` with its output check (see :mod:`tokenbox_langchain._agent_tools`) when defence is on."""
        if self._defended is None:
            return response
        system = request.system_message
        report = self._defended.report(system.text if system is not None else "")
        if isinstance(response, AIMessage):
            return self._defended.checked([response], report)[0]
        inner = getattr(response, "model_response", None)  # an ExtendedModelResponse
        if isinstance(inner, ModelResponse):
            return dataclasses.replace(response, model_response=self._checked(request, inner))
        if isinstance(response, ModelResponse):
            return dataclasses.replace(response, result=self._defended.checked(list(response.result), report))
        return response

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> ModelResponse:
        """Calls the model with the fitted request (see the module docstring); with ``defense``, checks the
        response for leaks."""
        return self._checked(request, handler(self.fit(request)))  # type: ignore[no-any-return]

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        """The async twin of :meth:`wrap_model_call`; a summarizer with an async API (``ainvoke``) is awaited.

        With a session, the fit (archive appends, recall queries, the compile: a database round trip each) runs
        in a worker thread, one call at a time per session (:meth:`ThreadSessions.run
        <tokenbox_langchain._agent_session.ThreadSessions.run>`), so the event loop serves other runs
        meanwhile; without one, the fit is CPU-bound and fast and runs here."""
        if self.sessions is not None:
            fitted = await self.sessions.run(request.runtime, lambda: self.fit(request))
            return self._checked(request, await handler(fitted))  # type: ignore[no-any-return]
        if self.summarizer is None:
            return self._checked(request, await handler(self.fit(request)))  # type: ignore[no-any-return]
        from tokenbox_langchain._agent_summary import run_awaiting

        fitted = await run_awaiting(lambda: self.fit(request))
        return self._checked(request, await handler(fitted))  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ tool results

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]]
    ) -> ToolMessage | Command[Any]:
        """Runs the tool (answers ``rehydrate`` from the session); with ``defense``, screens its result (see
        :mod:`tokenbox_langchain._agent_tools`); with a session and offload, offloads an oversized result."""
        answered = self._rehydrated(request)
        return answered if answered is not None else self._after_tool(request, handler(request))

    def _rehydrated(self, request: ToolCallRequest) -> ToolMessage | None:
        """The answer to a ``rehydrate`` call, read from the thread's session (None for any other tool)."""
        from tokenbox_langchain._agent_session import REHYDRATE_TOOL

        call = request.tool_call
        if self.sessions is None or call.get("name") != REHYDRATE_TOOL:
            return None
        args = call.get("args") or {}
        thread = self.sessions.thread(request.runtime, self._placeholder_budget())
        try:
            text = thread.session.rehydrate(str(args.get("id")), int(args.get("offset", 0)), args.get("limit", 4000))
        except (IndexError, KeyError, ValueError, TypeError) as exc:
            text = f"rehydrate failed: {exc}; pass an archived id such as t_17, as named in the context"
            return ToolMessage(text, tool_call_id=call["id"], name=REHYDRATE_TOOL, status="error")
        return ToolMessage(text, tool_call_id=call["id"], name=REHYDRATE_TOOL)

    def _placeholder_budget(self) -> ContextBudget:
        return self.budget if self.budget is not None else ContextBudget(max_tokens=_PLACEHOLDER_WINDOW)

    def _after_tool(self, request: ToolCallRequest, result: ToolMessage | Command[Any]) -> ToolMessage | Command[Any]:
        if not isinstance(result, ToolMessage):
            return result
        if self.defense is not None:
            from tokenbox_langchain._agent_tools import screen_result

            result = screen_result(result, self.defense, self._text_counter)
        if self.sessions is not None:
            config = self.sessions.offload_config()
            if config is not None:
                thread = self.sessions.thread(request.runtime, self._placeholder_budget())
                result = thread.offload(list(request.state.get("messages", ())), result)
        return result

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        """The async twin of :meth:`wrap_tool_call`; with a session, the ``rehydrate`` read and the offload
        (archive reads and writes) run in a worker thread, one at a time per session, as in
        :meth:`awrap_model_call`."""
        if self.sessions is None:
            return self._after_tool(request, await handler(request))
        answered: ToolMessage | None = await self.sessions.run(request.runtime, lambda: self._rehydrated(request))
        if answered is not None:
            return answered
        result = await handler(request)
        after: ToolMessage | Command[Any] = await self.sessions.run(
            request.runtime, lambda: self._after_tool(request, result)
        )
        return after


def _joined(system: SystemMessage | None, extra: Sequence[BaseMessage]) -> SystemMessage:
    """``system`` with the text of ``extra`` appended (one system message: every provider accepts it)."""
    texts = [m.text for m in extra]
    if system is None:
        return SystemMessage("\n\n".join(texts))
    content = system.content
    if isinstance(content, str):
        return system.model_copy(update={"content": "\n\n".join([content, *texts])})
    blocks = list(content) + [{"type": "text", "text": t} for t in texts]  # the caller's blocks (cache_control) kept
    return system.model_copy(update={"content": blocks})


class _PersistentTokenBoxMiddleware(TokenBoxMiddleware):
    """``TokenBoxMiddleware(persistent=True)``: also compacts the graph state in ``before_model``."""

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """Compacts ``state["messages"]`` once the trigger (or the budget) is reached: LangChain's idiom,
        ``RemoveMessage(id=REMOVE_ALL_MESSAGES)`` then the kept messages (a summary first with a summarizer)."""
        from tokenbox_langchain._agent_summary import compact_state

        return compact_state(self, state["messages"])

    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        """The async twin of :meth:`before_model`; a summarizer with an async API (``ainvoke``) is awaited."""
        from tokenbox_langchain._agent_summary import run_awaiting

        return await run_awaiting(lambda: self.before_model(state, runtime))
