"""Fakes for testing LlamaIndex agents with TokenBox memories, offline (the tests and notebooks use them).

- :class:`RecordingFunctionLLM`: a function-calling LLM that emits tool calls from a script and records every
  request it receives (the messages and the tools, as sent);
- :func:`request_tokens`: what one recorded request costs, counted as it is sent — the chat format's priming
  and per-message overhead, every message's content and tool-call payloads, and each tool's definition.

>>> from llama_index.core.tools import FunctionTool
>>> def lookup(query: str) -> str:
...     '''Look something up.'''
...     return f"found {query}"
>>> llm = RecordingFunctionLLM()
>>> tools = [FunctionTool.from_defaults(lookup)]
>>> reply = llm.chat_with_tools(tools, user_msg="the invoice total")
>>> [(c.tool_name, c.tool_kwargs) for c in llm.get_tool_calls_from_response(reply)]
[('lookup', {'query': 'the invoice total'})]
>>> request_tokens(llm.requests[-1], "cl100k_base")
63

With an agent: ``FunctionAgent(tools=[lookup], llm=llm).run("...")`` calls the tool, then answers
``"Done: found ..."``; ``llm.requests`` holds every request the agent sent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole, TextBlock, ToolCallBlock
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.llms.mock import MockFunctionCallingLLM

from tokenbox_core.request import ModelRequest
from tokenbox_core.session import BLOCK_END
from tokenbox_llamaindex._messages import neutral
from tokenbox_llamaindex._reserve import tool_schemas

__all__ = ["RecordedRequest", "RecordingFunctionLLM", "Script", "request_tokens"]

Script = Callable[[Sequence[ChatMessage], Sequence[Any], int], ChatMessage]
"""A script: (the request's messages, its tools, the request's number from 1) → the assistant's reply."""


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the LLM received it: copies of the messages, and the tools offered."""

    messages: tuple[ChatMessage, ...]
    tools: tuple[Any, ...]


def _text(message: ChatMessage) -> str:
    return "\n".join(b.text for b in message.blocks if isinstance(b, TextBlock))


def default_script(tool_rounds: int) -> Script:
    """Call the tools in turn (an ``AgentWorkflow``'s ``handoff`` tool never) with ``{"query": <the latest user
    text>}`` for ``tool_rounds`` rounds after each user message, then answer ``"Done: <the last tool result>"``
    (or the user's text when there were no tools).  The user text is the user's own words: what follows the
    session block's end line when the memory put recalled context in front of them, as a model reads it."""

    def script(messages: Sequence[ChatMessage], tools: Sequence[Any], number: int) -> ChatMessage:
        users = [i for i, m in enumerate(messages) if m.role == MessageRole.USER]
        start = users[-1] if users else 0
        asked = _text(messages[start]).rpartition(BLOCK_END)[2].strip() if users else ""
        rounds = sum(1 for m in messages[start:] if any(isinstance(b, ToolCallBlock) for b in m.blocks))
        callable_tools = [t for t in tools if t.metadata.name != "handoff"]
        if callable_tools and rounds < tool_rounds:
            tool = callable_tools[rounds % len(callable_tools)]
            name, kwargs = tool.metadata.name, {"query": asked}
            call = ToolCallBlock(tool_call_id=f"call_{number}", tool_name=name, tool_kwargs=kwargs)
            return ChatMessage(role=MessageRole.ASSISTANT, blocks=[call])
        results = [m for m in messages[start:] if m.role == MessageRole.TOOL]
        return ChatMessage(role=MessageRole.ASSISTANT, content=f"Done: {_text(results[-1]) if results else asked}")

    return script


class RecordingFunctionLLM(MockFunctionCallingLLM):
    """A function-calling LLM for tests: replies from ``script`` and records each request in :attr:`requests`.

    ``script`` defaults to :func:`default_script` with ``tool_rounds`` rounds of tool calls per user message.
    Works with ``FunctionAgent`` and ``AgentWorkflow``, streaming or not.
    """

    _script: Script = PrivateAttr()
    _requests: list[RecordedRequest] = PrivateAttr(default_factory=list)

    def __init__(self, script: Script | None = None, *, tool_rounds: int = 1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._script = script or default_script(tool_rounds)

    @classmethod
    def class_name(cls) -> str:
        return "RecordingFunctionLLM"

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received, oldest first."""
        return self._requests

    def _get_response_generator(self) -> Callable[..., ChatMessage]:
        def respond(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
            tools = tuple(kwargs.get("tools") or ())
            self._requests.append(RecordedRequest(tuple(m.model_copy(deep=True) for m in messages), tools))
            return self._script(messages, tools, len(self._requests))

        return respond


def request_tokens(request: RecordedRequest, counter: Any = "cl100k_base") -> int:
    """What ``request`` costs as sent: the chat format (priming, per-message overhead, content, tool-call payloads,
    media by the model's rules) plus each tool's definition (its OpenAI schema as compact JSON)."""
    return ModelRequest(neutral(list(request.messages)), tools=tool_schemas(request.tools), window=1).tokens(counter)
