"""The agent-adapter contract on TokenBoxSession + TokenBoxInputFilter under the Agents SDK's ``Runner`` with a
scripted ``Model``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, ModelResponse, RunConfig, Runner, Usage, function_tool, set_tracing_disabled
from agents.models.interface import Model
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseReasoningItem,
)

from tests.contract.agent_contract import AgentAdapterContract, Script, Sent, call_id, chat_tokens, page_text
from tokenbox_core.tokens import canonical_json
from tokenbox_openai_agents import TokenBoxInputFilter, TokenBoxSession

set_tracing_disabled(True)


def _message_text(item: dict[str, Any]) -> str:
    content = item["content"]
    return content if isinstance(content, str) else "\n".join(p.get("text") or json.dumps(p) for p in content)


def sent(instructions: str | None, items: list[dict[str, Any]], tools: list[Any]) -> Sent:
    """What the model receives, item by item as the Responses API takes them (other items as their JSON)."""
    texts = [instructions or ""]
    user: list[str] = []
    calls: list[str] = []
    results: list[str] = []
    for item in items:
        if item.get("type") == "function_call":
            texts.append(item["name"] + item["arguments"])
            calls.append(item["call_id"])
        elif item.get("type") == "function_call_output":
            texts.append(str(item["output"]))
            results.append(item["call_id"])
        elif item.get("role") is not None and item.get("type", "message") == "message":
            texts.append(_message_text(item))
            if item["role"] == "user":
                user.append(texts[-1])
        else:
            texts.append(json.dumps(item, sort_keys=True, separators=(",", ":")))
    for tool in tools:
        schema = {"name": tool.name, "description": tool.description, "parameters": tool.params_json_schema}
        texts.append(canonical_json({"type": "function", "function": schema}))
    return Sent(chat_tokens(texts, len(items) + 1), tuple(user), tuple(calls), tuple(results), tuple(texts))


class Scripted(Model):
    """An Agents SDK model that asks the contract's script what to do (a reasoning item before each call)."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.k = 0

    async def get_response(  # type: ignore[no-untyped-def]
        self, system_instructions, input, model_settings, tools, output_schema, handoffs, tracing, **kwargs
    ):
        items = [dict(i) for i in input] if isinstance(input, list) else [{"role": "user", "content": input}]
        last = items[-1] if items else {}
        user = _message_text(last) if last.get("role") == "user" else None
        reply = self.script.reply(sent(system_instructions, items, list(tools)), user)
        self.k += 1
        output: list[Any]
        if isinstance(reply, str):
            text = ResponseOutputText(type="output_text", text=reply, annotations=[])
            output = [
                ResponseOutputMessage(
                    id=f"msg_{self.k}", type="message", role="assistant", status="completed", content=[text]
                )
            ]
        else:
            output = [
                ResponseReasoningItem(id=f"rs_{self.k}", type="reasoning", summary=[]),
                ResponseFunctionToolCall(
                    id=f"fc_{self.k}",
                    call_id=call_id(reply),
                    type="function_call",
                    name="read_log",
                    arguments=json.dumps({"page": reply}),
                ),
            ]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise NotImplementedError("the contract runs Runner.run, not streaming")


@function_tool
def read_log(page: int) -> str:
    """Read one page of the service log."""
    return page_text(page)


class TestOpenAIAgentsContract(AgentAdapterContract):
    def drive(self, script: Script, store: Path, *, window: int, defense: Any = None) -> None:
        session = TokenBoxSession(self.SESSION_ID, store=store, window=window, defense=defense)
        agent = Agent(name="auditor", instructions="You audit service logs.", tools=[read_log], model=Scripted(script))
        config = RunConfig(call_model_input_filter=TokenBoxInputFilter(session), tracing_disabled=True)

        async def go() -> None:
            for text in script.turns:
                await Runner.run(agent, text, session=session, run_config=config, max_turns=script.steps + 10)

        try:
            asyncio.run(go())
        finally:
            session.close()
