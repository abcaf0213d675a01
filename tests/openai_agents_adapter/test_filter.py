"""TokenBoxInputFilter: the neutral request of a model call and the items mapped back; the rehydrate tool."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent
from agents.run_config import CallModelData, ModelInputData
from agents.tool_context import ToolContext
from pydantic import BaseModel

from tests.openai_agents_adapter.agents_scripted import lookup, tool_output
from tokenbox_openai_agents import TokenBoxInputFilter, TokenBoxSession, rehydrate_tool


class Report(BaseModel):
    """A structured output."""

    summary: str
    steps: int


def steps(n: int) -> list[dict[str, Any]]:
    """A task, then ``n`` reasoning + function call + large output steps."""
    items: list[dict[str, Any]] = [{"role": "user", "content": "Task: summarise the logs."}]
    for k in range(1, n + 1):
        items += [
            {"id": f"rs_{k}", "type": "reasoning", "summary": []},
            {"id": f"fc_{k}", "type": "function_call", "call_id": f"c{k}", "name": "lookup", "arguments": "{}"},
            {"type": "function_call_output", "call_id": f"c{k}", "output": tool_output(k)},
        ]
    return items


def call(agent: Agent[Any], items: list[dict[str, Any]]) -> CallModelData[Any]:
    """The data the runner hands the filter."""
    return CallModelData(model_data=ModelInputData(input=items, instructions="Be brief."), agent=agent, context=None)


def test_request_counts_instructions_tools_and_output_schema() -> None:
    """The neutral request carries the instructions, the tool and handoff schemas and the output schema, reserved."""
    helper = Agent(name="helper", handoff_description="Hands the logs over.")
    agent = Agent(name="a", instructions="Be brief.", tools=[lookup], handoffs=[helper], output_type=Report)
    request = TokenBoxInputFilter(TokenBoxSession("s"), window=4000).request(call(agent, steps(1)))
    assert request.system == "Be brief."
    assert [t["function"]["name"] for t in request.tools] == ["lookup", "transfer_to_helper"]
    assert request.response_format is not None
    assert "steps" in json.dumps(request.response_format)
    budget = request.budget("o200k_base")
    plain = TokenBoxInputFilter(TokenBoxSession("s"), window=4000).request(call(Agent(name="a", tools=[lookup]), []))
    assert sorted(budget.reserved_slots) == ["system", "tools"]
    assert budget.reserved_slots["tools"] > plain.budget("o200k_base").reserved_slots["tools"]


def test_outputs_masked_in_place_and_archived_whole() -> None:
    """Over the window, old outputs come back shortened under their own call ids, the newest step whole; the
    archive still holds every output as produced, and rehydrate reads one back."""
    session = TokenBoxSession("s", window=6000)
    run_filter = TokenBoxInputFilter(session)
    items = steps(12)
    prepared = run_filter(call(Agent(name="a", tools=[lookup]), items)).input
    calls = [i["call_id"] for i in prepared if i.get("type") == "function_call"]
    outputs = [i for i in prepared if i.get("type") == "function_call_output"]
    assert calls == [o["call_id"] for o in outputs] and calls[-1] == "c12"
    assert outputs[-1]["output"] == tool_output(12)
    shortened = [o for o in outputs if o["output"] != tool_output(int(o["call_id"][1:]))]
    assert shortened, "some older output is masked or previewed"
    assert run_filter.last is not None and run_filter.last.tokens <= 6000
    assert asyncio.run(session.get_items()) == items
    archived_id = re.search(r"t_\d+", shortened[0]["output"])
    assert archived_id is not None
    tool = rehydrate_tool(session)
    args = json.dumps({"id": archived_id.group(0), "limit": 30})
    context = ToolContext(context=None, tool_name="rehydrate", tool_call_id="r1", tool_arguments=args)
    text = asyncio.run(tool.on_invoke_tool(context, args))
    assert text == tool_output(int(shortened[0]["call_id"][1:]))[:30]


def test_an_oversized_output_is_sent_as_its_preview() -> None:
    """An output over the offload threshold reaches the model as its head/tail preview naming its archived id
    (the newest step included), under its call id; the archive keeps it whole."""
    session = TokenBoxSession("s", window=8000, offload={"threshold_tokens": 600})
    items = steps(2)
    prepared = TokenBoxInputFilter(session)(call(Agent(name="a", tools=[lookup]), items)).input
    newest = prepared[-1]
    assert newest["type"] == "function_call_output" and newest["call_id"] == "c2"
    assert newest["output"] != tool_output(2) and newest["output"].startswith("step 2 log:")
    assert re.search(r'rehydrate\("t_\d+", offset=', newest["output"])
    assert asyncio.run(session.get_items()) == items
