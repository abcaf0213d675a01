"""Fakes and checks that the tests, benchmarks and users share.

- :func:`agent_transcript`: a reproducible conversation with chat turns and
  agent steps (parallel tool calls included), the core's transcript as
  LangChain messages (:func:`~tokenbox_langchain._history.from_neutral`);
- :func:`sequence_problems`: what a provider would reject in a message list
  (orphan tool results, tool calls without results, misplaced system messages,
  a history that does not start on a human message);
- :class:`FakeToolModel`: a tool-calling chat model for agents (``create_agent``)
  that follows a script and records every request it receives;
- :func:`lookup_tool`: a deterministic tool whose results have a chosen length;
- :func:`tool_tokens`: what tool schemas cost as the provider receives them (to measure a request the
  fake model recorded: its messages, counted with ``MessageCounter``, plus its tools).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool, StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import PrivateAttr

from tokenbox_core import testing as core_testing
from tokenbox_langchain._agent_window import tool_tokens
from tokenbox_langchain._history import from_neutral

__all__ = ["FakeToolModel", "agent_transcript", "from_neutral", "lookup_tool", "sequence_problems", "tool_tokens"]


def agent_transcript(
    turns: int = 6, *, seed: int = 0, max_parallel: int = 3, tool_rate: float = 0.5, words: tuple[int, int] = (2, 12)
) -> list[BaseMessage]:
    """A system message, then ``turns`` human turns, each answered directly or through agent steps:
    :func:`tokenbox_core.testing.agent_transcript` as LangChain messages.

    An agent step is an ``AIMessage`` with 1..``max_parallel`` tool calls followed by one
    ``ToolMessage`` per call.  Every message has an id; the same seed gives the same transcript.
    """
    neutral = core_testing.agent_transcript(
        turns, seed=seed, max_parallel=max_parallel, tool_rate=tool_rate, words=words
    )
    return from_neutral(neutral)


def sequence_problems(messages: Sequence[BaseMessage], *, start_on_human: bool = True) -> list[str]:
    """Everything a chat provider would reject in ``messages`` (an empty list means valid): the core's check
    (:func:`tokenbox_core.testing.sequence_problems`) on the messages' neutral form."""
    from tokenbox_langchain._fit import neutral

    return core_testing.sequence_problems(neutral(messages), start_on_user=start_on_human)


class FakeToolModel(BaseChatModel):
    """A chat model for agent tests: it calls a tool ``steps`` times per human turn, then answers.

    The decision reads only the newest message it receives (a human message
    starts a turn), so a fitted request drives it exactly as the full one
    would.  A request without tools bound (a summarisation call, an agent
    without tools) is answered with :attr:`summary` and is no step.  Every
    call ``n`` (from 1) with tools makes ``parallel`` calls of ``tool``
    with ids ``call_<n>_<k>`` and the arguments ``args(n, k)``; ids of its
    messages are ``ai-<n>``.  Every request is recorded: :attr:`requests` (the
    messages, system message included), :attr:`tool_schemas` (the tools as the
    provider receives them, from ``bind_tools``) and :attr:`settings` (the
    other bound keyword arguments).

    >>> from langchain_core.messages import ToolMessage
    >>> model = FakeToolModel(steps=1)
    >>> agent_model = model.bind_tools([lookup_tool()])
    >>> agent_model.invoke([HumanMessage("find x")]).tool_calls[0]["id"]
    'call_1_0'
    >>> agent_model.invoke([HumanMessage("find x"), ToolMessage("x is 1", tool_call_id="call_1_0")]).content
    'Done.'
    >>> model.invoke([HumanMessage("summarise this")]).content
    'Summary: the earlier steps looked items up.'
    """

    steps: int = 3
    """Tool steps per human turn before the final answer."""

    parallel: int = 1
    """Tool calls per step."""

    tool: str = "lookup"
    """The name of the tool it calls."""

    args: Callable[[int, int], dict[str, Any]] = lambda n, k: {"query": f"item {n}.{k}"}
    """The arguments of call ``k`` of model call ``n``."""

    answer: str = "Done."
    """The final answer's text."""

    step_text: str = ""
    """The text content of a tool-calling message."""

    summary: str = "Summary: the earlier steps looked items up."
    """The reply to a request without tools bound."""

    _requests: list[list[BaseMessage]] = PrivateAttr(default_factory=list)
    _tools: list[list[dict[str, Any]]] = PrivateAttr(default_factory=list)
    _settings: list[dict[str, Any]] = PrivateAttr(default_factory=list)
    _turn: int = PrivateAttr(default=0)

    @property
    def _llm_type(self) -> str:
        return "tokenbox-fake-tools"

    @property
    def requests(self) -> list[list[BaseMessage]]:
        """Every request received, in order (the messages as the provider would receive them)."""
        return self._requests

    @property
    def tool_schemas(self) -> list[list[dict[str, Any]]]:
        """The tool schemas bound for each request (OpenAI shape), in order."""
        return self._tools

    @property
    def settings(self) -> list[dict[str, Any]]:
        """The other keyword arguments bound for each request (``tool_choice``, ``max_tokens`` ...)."""
        return self._settings

    def bind_tools(
        self, tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool], **kwargs: Any
    ) -> Runnable[Any, AIMessage]:
        """Binds the tools in the shape providers receive (``convert_to_openai_tool``)."""
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self._requests.append(list(messages))
        tools = list(kwargs.pop("tools", None) or ())
        self._tools.append(tools)
        self._settings.append(kwargs)
        n = len(self._requests)
        if not tools:
            return ChatResult(generations=[ChatGeneration(message=AIMessage(self.summary, id=f"ai-{n}"))])
        if messages and isinstance(messages[-1], HumanMessage):
            self._turn = 0
        if self._turn < self.steps:
            self._turn += 1
            calls = [
                {"name": self.tool, "args": self.args(n, k), "id": f"call_{n}_{k}", "type": "tool_call"}
                for k in range(self.parallel)
            ]
            reply = AIMessage(self.step_text, tool_calls=calls, id=f"ai-{n}")
        else:
            self._turn = 0
            reply = AIMessage(self.answer, id=f"ai-{n}")
        return ChatResult(generations=[ChatGeneration(message=reply)])


def lookup_tool(name: str = "lookup", *, words: int = 30, description: str = "Look something up.") -> BaseTool:
    """A tool answering ``query`` with ``words`` deterministic words about it.

    >>> lookup_tool(words=4).invoke({"query": "x"})
    'x: fact 0 about x'
    """

    def lookup(query: str) -> str:
        facts = " ".join(f"fact {i} about {query}" for i in range(max(1, words // 4)))
        return f"{query}: {facts}"

    return StructuredTool.from_function(lookup, name=name, description=description)
