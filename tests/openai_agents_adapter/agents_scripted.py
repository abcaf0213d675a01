"""A scripted Agents SDK model and the agent loop it drives, offline (no network, no tracing)."""

from __future__ import annotations

import json
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

set_tracing_disabled(True)

FACT = "The deploy key is K-7731."


def tool_output(n: int) -> str:
    """A large tool result (about 1,300 tokens) that names its step."""
    return f"step {n} log: " + " ".join(f"line{n}-{i} ok" for i in range(250))


@function_tool
def lookup(n: int) -> str:
    """Read the log of step n."""
    return tool_output(n)


class ScriptedModel(Model):
    """Calls ``lookup`` ``steps`` times (a reasoning item before each call), then answers; records its inputs."""

    def __init__(self, steps: int, prefix: str = "") -> None:
        self.steps = steps
        self.prefix = prefix  # item ids are unique across a session's runs, as the provider's are
        self.calls = 0
        self.inputs: list[tuple[str | None, list[dict[str, Any]], list[Any]]] = []

    def _answer(self, items: list[dict[str, Any]]) -> str:
        text = json.dumps(items)
        return "the key is K-7731" if "K-7731" in text else "I do not know"

    async def get_response(
        self, system_instructions, input, model_settings, tools, output_schema, handoffs, tracing, **kwargs
    ):  # type: ignore[no-untyped-def]
        items = [dict(i) for i in input] if isinstance(input, list) else [{"role": "user", "content": input}]
        self.inputs.append((system_instructions, items, list(tools)))
        self.calls += 1
        k = f"{self.prefix}{self.calls}"
        last_user = next(i for i in reversed(items) if i.get("role") == "user")
        asks = "deploy key" in json.dumps(last_user) and "?" in json.dumps(last_user)
        done = sum(1 for i in items if i.get("type") == "function_call_output")
        if not asks and self.steps > 0:
            self.steps -= 1
            output: list[Any] = [
                ResponseReasoningItem(id=f"rs_{k}", type="reasoning", summary=[]),
                ResponseFunctionToolCall(
                    id=f"fc_{k}",
                    call_id=f"call_{k}",
                    type="function_call",
                    name="lookup",
                    arguments=json.dumps({"n": k}),
                ),
            ]
        else:
            text = self._answer(items) if asks else f"done after {done} results"
            output = [
                ResponseOutputMessage(
                    id=f"msg_{k}",
                    type="message",
                    role="assistant",
                    status="completed",
                    content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
                )
            ]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        raise NotImplementedError("the tests run Runner.run, not streaming")


def agent(model: ScriptedModel) -> Agent:
    """The agent under test: one tool, the scripted model."""
    return Agent(name="worker", instructions="Work through the logs.", tools=[lookup], model=model)


async def run(model: ScriptedModel, text: str, session: Any, run_filter: Any) -> Any:
    """One ``Runner.run`` with the session and the input filter."""
    config = RunConfig(call_model_input_filter=run_filter, tracing_disabled=True)
    return await Runner.run(agent(model), text, session=session, run_config=config, max_turns=400)
