"""The Agents SDK's real Runner loop, 200+ steps of large tool outputs, prepared by TokenBoxInputFilter."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.openai_agents_adapter.agents_scripted import FACT, ScriptedModel, run, tool_output
from tokenbox_core import get_counter
from tokenbox_openai_agents import TokenBoxInputFilter, TokenBoxSession

WINDOW = 8000
STEPS = 210
COUNTER = get_counter("o200k_base")


def independent_tokens(instructions: str | None, items: list[dict[str, Any]], tools: list[Any]) -> int:
    """What the model received, counted directly: instructions, each item's text, arguments and output (other
    items as their JSON), 4 tokens per item, the tool schemas as JSON."""
    total = COUNTER.count(instructions or "") + 3
    for item in items:
        total += 4
        if item.get("type") == "function_call":
            total += COUNTER.count(item["name"] + item["arguments"])
        elif item.get("type") == "function_call_output":
            total += COUNTER.count(str(item["output"]))
        elif item.get("role") is not None and item.get("type", "message") == "message":
            content = item["content"]
            texts = [content] if isinstance(content, str) else [p.get("text") or json.dumps(p) for p in content]
            total += COUNTER.count("\n".join(texts))
        else:
            total += COUNTER.count(json.dumps(item, sort_keys=True, separators=(",", ":")))
    for tool in tools:
        schema = {"name": tool.name, "description": tool.description, "parameters": tool.params_json_schema}
        total += COUNTER.count(json.dumps(schema, sort_keys=True, separators=(",", ":")))
    return total


def check_input(items: list[dict[str, Any]]) -> None:
    """No orphan output, every call answered, the task kept."""
    calls = [i["call_id"] for i in items if i.get("type") == "function_call"]
    outputs = [i["call_id"] for i in items if i.get("type") == "function_call_output"]
    assert calls == outputs, "function calls and outputs must be paired, in order"
    assert any("Task: read the logs" in json.dumps(i) for i in items), "the task is kept"


def test_long_loop_within_window_paired_and_recalled(tmp_path: Path) -> None:
    """210 steps: every input within the window (independent count), paired, task and newest step kept, the
    early fact recalled when asked, and the SQLite session continued in a new process."""
    path = tmp_path / "agents.db"
    session = TokenBoxSession("user-1", store=path, window=WINDOW)
    run_filter = TokenBoxInputFilter(session)
    note = ScriptedModel(0, "note")
    asyncio.run(run(note, "Note this. " + FACT, session, run_filter))  # the early fact, in a turn of its own
    model = ScriptedModel(STEPS)
    result = asyncio.run(run(model, "Task: read the logs of every step.", session, run_filter))
    assert result.final_output == f"done after {STEPS} results" or result.final_output.startswith("done after")
    assert len(model.inputs) == STEPS + 1
    peak = 0
    for k, (instructions, items, tools) in enumerate(model.inputs):
        assert instructions == "Work through the logs."
        tokens = independent_tokens(instructions, items, tools)
        peak = max(peak, tokens)
        assert tokens <= WINDOW, f"call {k + 1}: {tokens} tokens"
        check_input(items)
        if k:  # the newest step: the previous call and its output end the input
            assert [i.get("call_id") for i in items[-2:]] == [f"call_{k}", f"call_{k}"]
            assert items[-3] == {"id": f"rs_{k}", "type": "reasoning", "summary": []}
            assert items[-1]["output"] == tool_output(k)
    assert peak > WINDOW * 3 // 4, peak  # the window was used, not just the newest step
    stored = asyncio.run(session.get_items())
    assert len(stored) == 2 + 1 + 3 * STEPS + 1  # each item archived once
    assert not any("K-7731" in json.dumps(i) for i in model.inputs[-1][1])  # the fact had left the window
    asker = ScriptedModel(0, "ask")
    asked = asyncio.run(run(asker, "What is the deploy key?", session, run_filter))
    assert asked.final_output == "the key is K-7731"
    instructions, items, tools = asker.inputs[-1]
    assert independent_tokens(instructions, items, tools) <= WINDOW
    session.close()

    script = f"""
import asyncio, sys
sys.path.insert(0, {str(Path(__file__).parents[2])!r})
from tests.openai_agents_adapter.agents_scripted import ScriptedModel, run
from tokenbox_openai_agents import TokenBoxInputFilter, TokenBoxSession
session = TokenBoxSession("user-1", store={str(path)!r}, window={WINDOW})
before = len(asyncio.run(session.get_items()))
model = ScriptedModel(0, "again")
result = asyncio.run(run(model, "Once more: what is the deploy key?", session, TokenBoxInputFilter(session)))
print(before, len(asyncio.run(session.get_items())), result.final_output)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=600)
    before, after, answer = done.stdout.split(maxsplit=2)
    assert int(before) == len(stored) + 2 and int(after) == int(before) + 2
    assert answer.strip() == "the key is K-7731"


def test_repeated_input_archived_once_per_turn() -> None:
    """The same user text sent in two runs is archived twice, each item once, whichever of the filter and the
    runner's session write comes first."""
    session = TokenBoxSession("s", window=WINDOW)
    run_filter = TokenBoxInputFilter(session)
    for prefix in ("a", "b"):
        asyncio.run(run(ScriptedModel(1, prefix), "continue", session, run_filter))
    items = asyncio.run(session.get_items())
    assert [i.get("type") or i.get("role") for i in items] == [
        "user",
        "reasoning",
        "function_call",
        "function_call_output",
        "message",
    ] * 2
    assert [i["content"] for i in items if i.get("role") == "user"] == ["continue", "continue"]
