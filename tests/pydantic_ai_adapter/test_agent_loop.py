"""TokenBoxCapability in pydantic-ai's real agent loop, offline (FunctionModel scripting a long tool loop)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
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

from tokenbox_core import get_counter
from tokenbox_core.tokens import canonical_json
from tokenbox_pydantic_ai import TokenBoxCapability

WINDOW = 6000
STEPS = 210
COUNTER = get_counter("o200k_base")


def independent_tokens(messages: list[ModelMessage], info: AgentInfo) -> int:
    """What the model receives, counted part by part with the core counter (not through the adapter's converter)."""
    texts: list[str] = [info.instructions or ""]
    for m in messages:
        for p in m.parts:
            if isinstance(p, UserPromptPart | SystemPromptPart | TextPart | ThinkingPart):
                texts.append(p.content if isinstance(p.content, str) else " ".join(map(str, p.content)))
            elif isinstance(p, ToolReturnPart):
                texts.append(p.model_response_str())
            elif isinstance(p, ToolCallPart):
                texts.append(p.tool_name + p.args_as_json_str())
    for t in [*info.function_tools, *info.output_tools]:
        texts.append(canonical_json({"name": t.name, "description": t.description, "p": t.parameters_json_schema}))
    return sum(COUNTER.count(t) for t in texts)


class Script:
    """A FunctionModel script: STEPS tool calls, then the answer the question asks for."""

    def __init__(self) -> None:
        self.seen: list[list[ModelMessage]] = []
        self.tokens: list[int] = []
        self.calls = 0

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.append(list(messages))
        self.tokens.append(independent_tokens(messages, info))
        last = messages[-1].parts[-1]
        if isinstance(last, UserPromptPart):
            text = last.content if isinstance(last.content, str) else " ".join(map(str, last.content))
            if "What is the vault code" in text:
                seen = " ".join(str(p.content) for m in messages for p in m.parts if isinstance(p, UserPromptPart))
                return ModelResponse(parts=[TextPart("4417" if "4417" in seen else "unknown")])
            if "Just say ok" in text:
                return ModelResponse(parts=[TextPart("ok")])
        self.calls += 1
        step = self.calls
        if step > STEPS:
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(
            parts=[
                ThinkingPart(f"step {step}: read the next log page"),
                ToolCallPart("read_log", {"page": step}, tool_call_id=f"call_{step}"),
            ]
        )


def log_page(page: int) -> str:
    """One large tool output."""
    return "\n".join(f"page {page} line {i}: service latency {page * 7 + i} ms, status nominal" for i in range(60))


def make_agent(script: Script, capability: TokenBoxCapability) -> Agent[None, str]:
    agent: Agent[None, str] = Agent(
        FunctionModel(script), instructions="You audit service logs.", capabilities=[capability]
    )

    @agent.tool_plain
    def read_log(page: int) -> str:
        """Read one page of the service log."""
        return log_page(page)

    return agent


@pytest.fixture(scope="module")
def long_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Script, Any, Path]:
    path = tmp_path_factory.mktemp("pai") / "agent.db"
    script = Script()
    agent = make_agent(script, TokenBoxCapability(WINDOW, session=str(path), session_id="audit"))
    first = agent.run_sync("Remember: the vault code is 4417. Just say ok.")
    script.seen.clear()
    script.tokens.clear()
    result = agent.run_sync(
        "Audit every log page.", message_history=first.all_messages(), usage_limits=UsageLimits(request_limit=None)
    )
    return script, result, path


def test_every_request_within_the_window(long_run: tuple[Script, Any, Path]) -> None:
    """Each of the 200+ requests the model receives fits the window by an independent part-by-part count."""
    script, _, _ = long_run
    assert len(script.tokens) > STEPS
    assert max(script.tokens) <= WINDOW, max(script.tokens)


def test_no_orphan_tool_return_and_calls_paired(long_run: tuple[Script, Any, Path]) -> None:
    """Tool calls and returns reach the model paired (ids never rewritten), each call with its thinking part."""
    script, _, _ = long_run
    for messages in script.seen:
        for m in messages:
            if isinstance(m, ModelResponse) and any(isinstance(p, ToolCallPart) for p in m.parts):
                assert isinstance(m.parts[0], ThinkingPart)
        calls = {p.tool_call_id for m in messages for p in m.parts if isinstance(p, ToolCallPart)}
        returns = {p.tool_call_id for m in messages for p in m.parts if isinstance(p, ToolReturnPart)}
        assert returns <= calls
        assert calls <= returns


def test_history_not_rewritten(long_run: tuple[Script, Any, Path]) -> None:
    """The run's own history keeps every step (the fitting is request-only)."""
    _, result, _ = long_run
    calls = [p for m in result.all_messages() for p in m.parts if isinstance(p, ToolCallPart)]
    assert len(calls) == STEPS


def test_archive_reopened_in_a_new_process(long_run: tuple[Script, Any, Path]) -> None:
    """A new process with the SQLite path continues the conversation from the archive alone."""
    _, _, path = long_run
    code = textwrap.dedent(
        f"""
        import json
        from pydantic_ai import Agent
        from pydantic_ai.messages import ModelResponse, TextPart, UserPromptPart
        from pydantic_ai.models.function import FunctionModel
        from tokenbox_pydantic_ai import TokenBoxCapability

        def answer(messages, info):
            seen = " ".join(str(p.content) for m in messages for p in m.parts if isinstance(p, UserPromptPart))
            print(json.dumps({{"recalled": "4417" in seen, "pointer": "archived and not shown" in seen}}))
            return ModelResponse(parts=[TextPart("ok")])

        cap = TokenBoxCapability({WINDOW}, session={str(path)!r}, session_id="audit")
        Agent(FunctionModel(answer), capabilities=[cap]).run_sync("What is the vault code?")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=Path.cwd())
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["recalled"] is True
    assert report["pointer"] is True
