"""What a LlamaIndex agent adds to each request around its memory's messages, measured.

A ``FunctionAgent`` sends ``[system prompt, *memory.aget(), *in-flight tool
calls and results]`` with its tool definitions beside them; an
``AgentWorkflow`` does the same with the current agent's prompt and tools
(plus the handoff tool when it has several agents), and, with an
``initial_state``, writes the state into the last message once per run.
:func:`agent_tokens` measures the fixed part (the largest over a workflow's
agents) as the core counts a request's system text and tool schemas
(:meth:`tokenbox_core.request.ModelRequest.budget`); the in-flight part grows
during a run and is reserved separately (:func:`run_steps_tokens`).  Tools
found by a ``tool_retriever`` are not known in advance and are not counted.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tokenbox_core import TokenCounter
from tokenbox_core.chat import ChatCounter
from tokenbox_core.request import ModelRequest
from tokenbox_llamaindex._sync import run_sync

__all__ = ["agent_tokens", "run_steps_tokens", "tool_schemas"]


def tool_schemas(tools: Iterable[Any]) -> list[dict[str, Any]]:
    """The tool definitions a request carries, in OpenAI's shape (LlamaIndex's own conversion)."""
    return [tool.metadata.to_openai_tool() for tool in tools]


def _fixed(system_prompt: str | None, tools: Iterable[Any], counter: TokenCounter) -> int:
    request = ModelRequest((), system=system_prompt or None, tools=tool_schemas(tools), window=1)
    return request.budget(counter).reserved_tokens


async def _atokens(agent: Any, counter: TokenCounter) -> int:
    agents = getattr(agent, "agents", None)
    if isinstance(agents, dict):  # an AgentWorkflow: the largest of its agents, with their handoff tools
        sizes = []
        for name, member in agents.items():
            tools = await agent.get_tools(name, None) if member.tool_retriever is None else member.tools or []
            sizes.append(_fixed(member.system_prompt, tools, counter))
        return max(sizes, default=0) + _state(agent, counter)
    tools = await agent.get_tools(None) if getattr(agent, "tool_retriever", None) is None else agent.tools or []
    return _fixed(getattr(agent, "system_prompt", None), tools, counter) + _state(agent, counter)


def _state(agent: Any, counter: TokenCounter) -> int:
    """The initial state's prompt, written into the last message once per run."""
    state = getattr(agent, "initial_state", None)
    if not state:
        return 0
    prompt = agent.state_prompt
    return counter.count(prompt.format(state=state, msg=""))


def agent_tokens(agent: Any, counter: TokenCounter) -> int:
    """The fixed part an agent (or ``AgentWorkflow``) adds to every request (module docstring)."""
    if not hasattr(agent, "get_tools"):
        raise TypeError(
            f"agent= must be a LlamaIndex agent (FunctionAgent, ReActAgent, ...) or an AgentWorkflow, got "
            f"{type(agent).__name__}; or give reserve_tokens= yourself"
        )
    return run_sync(_atokens(agent, counter))


def run_steps_tokens(batch: list[dict[str, Any]], chat: ChatCounter) -> int:
    """What an agent run's steps cost — its tool calls and results, which the agent sent after the memory's
    messages on its last LLM call — when ``batch`` (neutral messages put at once, as a ``FunctionAgent`` puts its
    scratchpad when a run ends) holds them; else 0.  The final answer is not a step."""
    last = batch[-1] if batch else None
    end = len(batch) - 1 if last and last["role"] == "assistant" and not last.get("tool_calls") else len(batch)
    if not any(m.get("tool_calls") for m in batch[:end]):
        return 0
    return sum(chat.size(m) for m in batch[:end] if m["role"] in ("assistant", "tool"))
