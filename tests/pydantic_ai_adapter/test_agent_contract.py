"""The agent-adapter contract on TokenBoxCapability under pydantic-ai's ``Agent`` with a ``FunctionModel``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import UsageLimits

from tests.contract.agent_contract import AgentAdapterContract, Script, Sent, call_id, chat_tokens, page_text
from tokenbox_core.tokens import canonical_json
from tokenbox_pydantic_ai import TokenBoxCapability


def _content(part: UserPromptPart | SystemPromptPart | TextPart | ThinkingPart) -> str:
    content = part.content
    return content if isinstance(content, str) else "\n".join(c for c in content if isinstance(c, str))


def sent(messages: list[ModelMessage], info: AgentInfo) -> Sent:
    """What the model receives, part by part (each part its own provider message, as OpenAI's mapping sends it)."""
    texts: list[str] = [info.instructions or ""]
    user: list[str] = []
    calls: list[str] = []
    results: list[str] = []
    count = 1 if info.instructions else 0
    for m in messages:
        if isinstance(m, ModelResponse):
            count += 1
        for p in m.parts:
            if isinstance(p, UserPromptPart | SystemPromptPart | TextPart | ThinkingPart):
                texts.append(_content(p))
                if isinstance(p, UserPromptPart):
                    user.append(_content(p))
                count += not isinstance(m, ModelResponse)
            elif isinstance(p, ToolReturnPart):
                texts.append(p.model_response_str())
                results.append(p.tool_call_id)
                count += 1
            elif isinstance(p, ToolCallPart):
                texts.append(p.tool_name + p.args_as_json_str())
                calls.append(p.tool_call_id)
    for t in [*info.function_tools, *info.output_tools]:
        schema = {"name": t.name, "description": t.description, "parameters": t.parameters_json_schema}
        texts.append(canonical_json({"type": "function", "function": schema}))
    return Sent(chat_tokens(texts, count), tuple(user), tuple(calls), tuple(results), tuple(texts))


class TestPydanticAIContract(AgentAdapterContract):
    def drive(self, script: Script, store: Path, *, window: int, defense: Any = None) -> None:
        def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            last = messages[-1].parts[-1]
            reply = script.reply(sent(messages, info), _content(last) if isinstance(last, UserPromptPart) else None)
            if isinstance(reply, str):
                return ModelResponse(parts=[TextPart(reply)])
            return ModelResponse(
                parts=[ThinkingPart(f"next: page {reply}"), ToolCallPart("read_log", {"page": reply}, call_id(reply))]
            )

        capability = TokenBoxCapability(window, session=str(store), session_id=self.SESSION_ID, defense=defense)
        agent: Agent[None, str] = Agent(
            FunctionModel(model), instructions="You audit service logs.", capabilities=[capability]
        )

        @agent.tool_plain
        def read_log(page: int) -> str:
            """Read one page of the service log."""
            return page_text(page)

        history: list[ModelMessage] = []
        for text in script.turns:
            result = agent.run_sync(text, message_history=history, usage_limits=UsageLimits(request_limit=None))
            history = result.all_messages()
