"""pydantic-ai and the OpenAI Agents SDK: TokenBox beside each framework's own option, in its real agent loop.

Run on purpose (not a test):

    PYTHONPATH=. .venv/bin/python benchmarks/bench_agent_frameworks.py            # 220 steps, window 8,000
    PYTHONPATH=. .venv/bin/python benchmarks/bench_agent_frameworks.py --steps 40  # a smoke run
    # the pydantic-ai-harness rows, in a venv holding the harness (see Managers); that venv has no llama-index-core,
    # whose tiktoken files the counter reads offline, so point TIKTOKEN_CACHE_DIR at them:
    TIKTOKEN_CACHE_DIR=.venv/lib/python3.11/site-packages/llama_index/core/_static/tiktoken_cache PYTHONPATH=. \
        /tmp/harness-venv/bin/python benchmarks/bench_agent_frameworks.py --only pydantic-ai

One long scripted run per framework, offline (a ``FunctionModel`` for pydantic-ai, a scripted agents ``Model``
for the SDK, as in the adapters' tests): three facts are planted in turns of their own, then four audit tasks of
``steps / 4`` tool calls each read pages of real prose that does not repeat (``_prose.py``, ~700 tokens a page);
after each task the three facts are asked for, one question a run.  Per manager:

- requests: model calls; over: those larger than the window, counted independently of every adapter (the text,
  tool arguments and outputs, instructions and tool schemas of what the model receives, with the core counter);
- unpaired: requests with a tool call lacking its result or a result lacking its call (a provider rejects them);
- peak: the largest request in tokens;
- facts: of the 12 questions (4 checkpoints x 3 facts), those whose fact's text is in what the model receives
  when it is asked; in window: those of them whose request also fits the window (a provider would refuse the rest);
- CPU ms/call: process time of the whole run over the model calls, the scripted model's own counting excluded.

Managers.  pydantic-ai 2.78: ``TokenBoxCapability(window, session=path)``; nothing; pydantic-ai's own history
processor (the ``ProcessHistory`` capability) keeping the task and the newest 8 messages (a pair-safe cut).
pydantic-ai-harness (rows only where it is installed: it pins the pydantic-ai-slim it was released with, so it
runs in a venv of its own, ``python3 -m venv /tmp/harness-venv && /tmp/harness-venv/bin/pip install -e .
pydantic-ai-harness``, which resolved 0.75.0 with pydantic-ai-slim 2.75.0): ``ClearToolResults(keep_pairs=3)``,
``SlidingWindowCompaction(keep_tokens=window / 2)`` and ``TieredCompaction`` of the two, each triggered at 80 %
of the window (``max_fraction=0.8, context_window=window``, the harness's own tokenizer hook given the o200k
counter; the scripted model reports its request's size as the provider's ``input_tokens``, which the harness
anchors on), and two of them with its README's recall pairing, ``StepPersistence`` on SQLite + the BM25
``ConversationSearch`` tool, which the scripted model calls with the question's topic whenever the fact is not in
its request (a model that always knows to search: the tool's best case).  Its ``SummarizingCompaction`` needs a
summarising model and is not measured (a scripted summary would decide the facts column by itself).  Agents SDK
0.25: ``TokenBoxInputFilter(TokenBoxSession(...))``; nothing (``SQLiteSession``); the SDK's ``ToolOutputTrimmer()``
(defaults: the newest 2 user turns untouched, older outputs over 500 characters cut to a 200-character preview);
``SQLiteSession(session_settings=SessionSettings(limit=24))`` (the newest 24 items read back at each run's start).

Measured (220 steps, window 8,000, o200k; this project's 2-core machine shared with other jobs, 2026-12-07;
CPU ms/call moves by up to ~20 % between runs under that load).  The Agents SDK and the first three pydantic-ai
rows in the project venv (pydantic-ai-slim 2.78); the pydantic-ai rows below them in the harness venv
(``--only pydantic-ai``, pydantic-ai-slim 2.75, where TokenBox measured 47.4 ms/call, nothing 25.5, ProcessHistory
4.2, the other columns identical):

    framework   manager                                   requests  over unpaired    peak  facts  in window  CPU ms
    pydantic-ai TokenBoxCapability                             239     0        0   7,835  12/12      12/12    39.7
    pydantic-ai nothing                                        239   225        0 156,056  12/12       0/12    37.5
    pydantic-ai ProcessHistory (keep task + 8)                 239     0        0   3,511   0/12       0/12     5.1
    pydantic-ai harness ClearToolResults(keep_pairs=3)         239     0        0   6,401  12/12      12/12    15.7
    pydantic-ai harness SlidingWindowCompaction                239     0        0   6,403   4/12       4/12     5.3
    pydantic-ai harness TieredCompaction(clear, slide)         239     0        0   6,401  10/12      10/12    16.5
    pydantic-ai harness SlidingWindow + ConversationSearch     247    13        0  11,624  12/12       9/12    40.7
    pydantic-ai harness Tiered + ConversationSearch            239     0        0   6,380  12/12      12/12    98.9
    Agents SDK  TokenBoxInputFilter                            239     0        0   7,835  12/12      12/12    30.1
    Agents SDK  nothing                                        239   225        0 158,483  12/12       0/12    13.5
    Agents SDK  ToolOutputTrimmer()                            239   219        0  55,774  12/12       2/12    13.9
    Agents SDK  SQLiteSession(limit=24)                        239   196        0  45,200   0/12       0/12     6.1

and at 360 steps (``--steps 360``, the most the distinct prose allows; harness venv):

    pydantic-ai TokenBoxCapability                             379     0        0   7,911  12/12      12/12    57.3
    pydantic-ai harness ClearToolResults(keep_pairs=3)         379    36        0   8,769  12/12       9/12    26.2
    pydantic-ai harness TieredCompaction(clear, slide)         379     0        0   6,404   8/12       8/12    14.0
    pydantic-ai harness Tiered + ConversationSearch            379     0        0   6,402  12/12      12/12    89.2

Read: without management the facts are there but 225 of 239 requests exceed the window (a provider refuses them).
pydantic-ai's history processor fits but forgets the planted facts at once.  The SDK's ``ToolOutputTrimmer`` only
trims outputs older than the newest two user turns, so a single long task is never trimmed; a session ``limit``
bounds only what a run starts from, not the items the run itself adds.  pydantic-ai-harness's ``ClearToolResults``
is the strong peer on this workload (the facts are short turns, the tool outputs are what is large): at 220 steps
it fits every request and keeps every fact for a third of TokenBox's CPU, but it keeps every call and a
placeholder per result, so the history still grows ~18 tokens a step and at 360 steps 36 requests exceed the
window.  Its sliding window fits but loses what it slides past (the first user message is kept: 4/12); tiering the
two fits and loses some facts (10/12, 8/12 at 360 steps).  Its search tool: after the sliding window the model
called it 8 times (the 8 extra requests) and got every fact back, but 13 requests went over the window (peak 11,624)
once search results joined the history; beside the tiered compaction it was never called — the facts were in the
requests already (the tool's schema and instructions move when compaction fires, and so what it keeps; not
investigated further) — and ``StepPersistence``, which snapshots the history at every step, brought the CPU to
89-99 ms a call.  TokenBox fits every request at both lengths and keeps every fact
in front of the model without a tool call, for ~40-57 ms of CPU a call (its archive on SQLite, recall and the
layout; pydantic-ai with no management pays 25-37 ms, replaying a 150k-token history each call).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _prose import prose

from tokenbox_core import get_counter
from tokenbox_core.tokens import canonical_json

WINDOW = 8000
COUNTER = get_counter("o200k_base")
PAGE_BYTES = 3000
FACTS = [
    ("vault code", "The vault code is 4417-QX.", "4417-QX"),
    ("on-call engineer", "The on-call engineer this week is Marisol Etxeberria.", "Marisol Etxeberria"),
    ("backup bucket", "The backup bucket is s3://tbx-cold-archive-93.", "tbx-cold-archive-93"),
]
CHECKPOINTS = 4


class Pages:
    """Non-repeating tool outputs: page n is the n-th 3,000 bytes of real prose."""

    def __init__(self, steps: int) -> None:
        self.text = prose(PAGE_BYTES * (steps + 2))

    def __call__(self, n: int) -> str:
        return f"page {n}: " + self.text[n * PAGE_BYTES : (n + 1) * PAGE_BYTES]


class Meter:
    """What the model receives per call: tokens (independent count), the asked fact's presence, own CPU."""

    def __init__(self) -> None:
        self.tokens: list[int] = []
        self.asked = 0
        self.found = 0
        self.found_within = 0
        self.own_cpu = 0.0
        self.unpaired = 0

    def record(self, texts: list[str], question: str | None, calls: list[str], outputs: list[str]) -> None:
        start = time.process_time()
        self.unpaired += set(calls) != set(outputs)
        self.tokens.append(sum(COUNTER.count(t) for t in texts))
        if question is not None:
            needle = next(n for topic, _, n in FACTS if topic in question)
            self.asked += 1
            found = any(needle in t for t in texts)
            self.found += found
            self.found_within += found and self.tokens[-1] <= WINDOW
        self.own_cpu += time.process_time() - start

    def row(self, framework: str, manager: str, cpu: float) -> dict[str, Any]:
        calls = len(self.tokens)
        return {
            "framework": framework,
            "manager": manager,
            "requests": calls,
            "over": sum(t > WINDOW for t in self.tokens),
            "unpaired": self.unpaired,
            "peak": max(self.tokens),
            "facts": f"{self.found}/{self.asked}",
            "facts_within": f"{self.found_within}/{self.asked}",
            "cpu_ms": round((cpu - self.own_cpu) * 1000 / calls, 2),
        }


def schedule(steps: int) -> list[tuple[str, str | None]]:
    """The user turns: the facts, then per checkpoint an audit task and the three questions."""
    turns: list[tuple[str, str | None]] = [(f"Note this for later: {fact}", None) for _, fact, _ in FACTS]
    per = steps // CHECKPOINTS
    for c in range(CHECKPOINTS):
        turns.append((f"Task: audit log pages {c * per + 1} to {(c + 1) * per}, one read per page.", None))
        turns += [(f"Question: what is the {topic}?", topic) for topic, _, _ in FACTS]
    return turns


# ---------------------------------------------------------------- pydantic-ai


def run_pydantic_ai(steps: int, manager: str, tmp: Path) -> dict[str, Any]:
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import ProcessHistory
    from pydantic_ai.messages import (
        ModelMessage,
        ModelRequest,
        ModelResponse,
        SystemPromptPart,
        TextPart,
        ThinkingPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import RequestUsage, UsageLimits

    from tokenbox_pydantic_ai import TokenBoxCapability

    pages = Pages(steps)
    meter = Meter()
    per = steps // CHECKPOINTS
    state = {"page": 0, "left": 0}
    asking: dict[str, str] = {}
    searching = manager.endswith("+ ConversationSearch")

    def texts_of(messages: list[ModelMessage], info: AgentInfo) -> list[str]:
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
        return texts

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1].parts[-1]
        content = ""
        if isinstance(last, UserPromptPart):
            content = last.content if isinstance(last.content, str) else "\n".join(map(str, last.content))
        text = content.rstrip().splitlines()[-1] if content.strip() else ""  # the turn's own text (recall goes before)
        question = next((topic for topic, _, _ in FACTS if text.startswith("Question") and topic in text), None)
        texts = texts_of(messages, info)
        searched = isinstance(last, ToolReturnPart) and last.tool_name == SEARCH_TOOL
        if searched:  # the search this model asked for answered: the question is asked now
            question = asking.pop("topic")
        needle = next((n for topic, _, n in FACTS if topic == question), "")
        # a model that searches the harness's history tool whenever the fact it is asked for is not in front of it
        search = searching and question is not None and not searched and not any(needle in t for t in texts)
        calls = [p.tool_call_id for m in messages for p in m.parts if isinstance(p, ToolCallPart)]
        outputs = [p.tool_call_id for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
        meter.record(texts, None if search else question, calls, outputs)
        # the usage a provider reports (the request's size, as counted above): the harness's triggers anchor on it
        usage = RequestUsage(input_tokens=meter.tokens[-1], output_tokens=8)
        if search:
            assert question is not None
            asking["topic"] = question
            call = ToolCallPart(SEARCH_TOOL, {"query": question}, tool_call_id=f"s{len(meter.tokens)}")
            return ModelResponse(parts=[call], usage=usage)
        if question is not None:
            answer = needle if any(needle in t for t in texts) else "unknown"
            return ModelResponse(parts=[TextPart(answer)], usage=usage)
        if text.startswith("Task"):
            state["left"] = per
        if state["left"] <= 0:
            return ModelResponse(parts=[TextPart("noted" if text.startswith("Note") else "done")], usage=usage)
        state["left"] -= 1
        state["page"] += 1
        n = state["page"]
        return ModelResponse(
            parts=[ThinkingPart(f"next: page {n}"), ToolCallPart("read_page", {"n": n}, tool_call_id=f"c{n}")],
            usage=usage,
        )

    def keep_recent(messages):  # type: ignore[no-untyped-def]  # pydantic-ai resolves annotations at runtime
        """pydantic-ai's history processor: the newest user prompt and the newest 8 messages, cut on a response."""
        task = max(i for i, m in enumerate(messages) if any(isinstance(p, UserPromptPart) for p in m.parts))
        tail = messages[max(task + 1, len(messages) - 8) :]
        while tail and isinstance(tail[0], ModelRequest):
            tail = tail[1:]
        return [messages[task], *tail] if tail or task == len(messages) - 1 else [messages[task]]

    capabilities: list[Any] = []
    if manager == "TokenBoxCapability":
        capabilities = [TokenBoxCapability(WINDOW, session=str(tmp / "pai.db"), session_id="bench")]
    elif manager == "ProcessHistory (keep task + 8)":
        capabilities = [ProcessHistory(keep_recent)]
    elif manager in HARNESS:
        capabilities = harness_capabilities(manager, tmp)
    agent: Agent[None, str] = Agent(
        FunctionModel(model), instructions="You audit documents page by page.", capabilities=capabilities
    )

    @agent.tool_plain
    def read_page(n: int) -> str:
        """Read one page of the document."""
        return pages(n)

    history: list[ModelMessage] = []
    start = time.process_time()
    for text, _ in schedule(steps):
        result = agent.run_sync(text, message_history=history, usage_limits=UsageLimits(request_limit=None))
        history = result.all_messages()
    return meter.row("pydantic-ai", manager, time.process_time() - start)


# ---------------------------------------------------------------- OpenAI Agents SDK


def run_agents(steps: int, manager: str, tmp: Path) -> dict[str, Any]:
    from agents import (
        Agent,
        ModelResponse,
        RunConfig,
        Runner,
        SQLiteSession,
        Usage,
        function_tool,
        set_tracing_disabled,
    )
    from agents.extensions import ToolOutputTrimmer
    from agents.memory import SessionSettings
    from agents.models.interface import Model
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
        ResponseReasoningItem,
    )

    from tokenbox_openai_agents import TokenBoxInputFilter, TokenBoxSession

    set_tracing_disabled(True)
    pages = Pages(steps)
    meter = Meter()
    per = steps // CHECKPOINTS
    state = {"page": 0, "left": 0, "k": 0}

    def texts_of(instructions: str | None, items: list[dict[str, Any]], tools: list[Any]) -> list[str]:
        texts = [instructions or ""]
        for item in items:
            if item.get("type") == "function_call":
                texts.append(item["name"] + item["arguments"])
            elif item.get("type") == "function_call_output":
                texts.append(str(item["output"]))
            elif item.get("role") is not None and item.get("type", "message") == "message":
                content = item["content"]
                parts = [content] if isinstance(content, str) else [p.get("text") or json.dumps(p) for p in content]
                texts.append("\n".join(parts))
            else:
                texts.append(json.dumps(item, sort_keys=True, separators=(",", ":")))
        for tool in tools:
            schema = {"name": tool.name, "description": tool.description, "parameters": tool.params_json_schema}
            texts.append(json.dumps(schema, sort_keys=True, separators=(",", ":")))
        return texts

    class Scripted(Model):
        async def get_response(  # type: ignore[no-untyped-def]
            self, system_instructions, input, model_settings, tools, output_schema, handoffs, tracing, **kwargs
        ):
            items = [dict(i) for i in input] if isinstance(input, list) else [{"role": "user", "content": input}]
            users = [i for i in items if i.get("role") == "user"]
            text = json.dumps(users[-1]["content"]) if users else ""
            last_is_user = bool(items) and items[-1].get("role") == "user"
            question = next((t for t, _, _ in FACTS if "Question" in text and t in text and last_is_user), None)
            texts = texts_of(system_instructions, items, list(tools))
            calls = [i["call_id"] for i in items if i.get("type") == "function_call"]
            outputs = [i["call_id"] for i in items if i.get("type") == "function_call_output"]
            meter.record(texts, question, calls, outputs)
            state["k"] += 1
            k = state["k"]
            if last_is_user and "Task" in text:
                state["left"] = per
            answer: str | None = None
            if question is not None:
                needle = next(n for t, _, n in FACTS if t == question)
                answer = needle if any(needle in t for t in texts) else "unknown"
            elif state["left"] <= 0 or "Task" not in text:
                answer = "done"
            if answer is not None:
                output: list[Any] = [
                    ResponseOutputMessage(
                        id=f"msg_{k}",
                        type="message",
                        role="assistant",
                        status="completed",
                        content=[ResponseOutputText(type="output_text", text=answer, annotations=[])],
                    )
                ]
            else:
                state["left"] -= 1
                state["page"] += 1
                n = state["page"]
                output = [
                    ResponseReasoningItem(id=f"rs_{k}", type="reasoning", summary=[]),
                    ResponseFunctionToolCall(
                        id=f"fc_{k}",
                        call_id=f"call_{k}",
                        type="function_call",
                        name="read_page",
                        arguments=json.dumps({"n": n}),
                    ),
                ]
            return ModelResponse(output=output, usage=Usage(), response_id=None)

        def stream_response(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            raise NotImplementedError

    @function_tool
    def read_page(n: int) -> str:
        """Read one page of the document."""
        return pages(n)

    session: Any
    run_filter: Callable[..., Any] | None = None
    if manager == "TokenBoxInputFilter":
        session = TokenBoxSession("bench", store=tmp / "agents-tb.db", window=WINDOW)
        run_filter = TokenBoxInputFilter(session)
    elif manager == "SQLiteSession(limit=24)":
        session = SQLiteSession("bench", str(tmp / "agents-limit.db"), session_settings=SessionSettings(limit=24))
    else:
        session = SQLiteSession("bench", str(tmp / f"agents-{len(manager)}.db"))
        if manager == "ToolOutputTrimmer()":
            run_filter = ToolOutputTrimmer()
    agent = Agent(name="auditor", instructions="You audit documents page by page.", tools=[read_page], model=Scripted())
    config = RunConfig(call_model_input_filter=run_filter, tracing_disabled=True)

    async def go() -> None:
        for text, _ in schedule(steps):
            await Runner.run(agent, text, session=session, run_config=config, max_turns=steps + 10)

    start = time.process_time()
    asyncio.run(go())
    return meter.row("Agents SDK", manager, time.process_time() - start)


SEARCH_TOOL = "search_conversation_history"  # pydantic-ai-harness's ConversationSearch tool


def harness_capabilities(manager: str, tmp: Path) -> list[Any]:
    """pydantic-ai-harness's zero-LLM compaction, as its README configures it: a trigger at 80 % of the window
    (``max_fraction`` / ``target_fraction`` with ``context_window=WINDOW``), counted with the same o200k
    tokenizer the meter uses (the harness anchors on the provider-reported input tokens, which the scripted model
    reports exactly, and estimates only what was added since); ``+ ConversationSearch``: its README's pairing of
    ``StepPersistence`` (every step snapshotted in SQLite) with the BM25 history-search tool, which the scripted
    model calls with the question's topic whenever the fact asked for is not in its request."""
    from pydantic_ai_harness.compaction import ClearToolResults, SlidingWindowCompaction, TieredCompaction

    exact = {"tokenizer": COUNTER.count, "context_window": WINDOW}
    compaction: Any
    if manager == "harness ClearToolResults(keep_pairs=3)":
        compaction = ClearToolResults(max_fraction=0.8, keep_pairs=3, **exact)
    elif manager.startswith("harness SlidingWindowCompaction"):
        compaction = SlidingWindowCompaction(max_fraction=0.8, keep_tokens=WINDOW // 2, **exact)
    else:
        tiers = [ClearToolResults(keep_pairs=3), SlidingWindowCompaction(keep_tokens=WINDOW // 2)]
        compaction = TieredCompaction(tiers=tiers, target_fraction=0.8, **exact)
    if not manager.endswith("+ ConversationSearch"):
        return [compaction]
    from pydantic_ai_harness.conversation_search import ConversationSearch, SnapshotHistorySource
    from pydantic_ai_harness.step_persistence import SqliteStepStore, StepPersistence

    store = SqliteStepStore(database=str(tmp / f"harness-{len(manager)}.db"))
    return [
        StepPersistence(store=store),
        ConversationSearch(SnapshotHistorySource(store), scope="conversation"),
        compaction,
    ]


# pydantic-ai-harness pins the pydantic-ai-slim it was released with: measured where it installs (a venv of its own)
HARNESS = (
    [
        "harness ClearToolResults(keep_pairs=3)",
        "harness SlidingWindowCompaction",
        "harness TieredCompaction(clear, slide)",
        "harness SlidingWindowCompaction + ConversationSearch",
        "harness TieredCompaction(clear, slide) + ConversationSearch",
    ]
    if importlib.util.find_spec("pydantic_ai_harness") is not None
    else []
)
PYDANTIC_AI = ["TokenBoxCapability", "nothing", "ProcessHistory (keep task + 8)", *HARNESS]
AGENTS = ["TokenBoxInputFilter", "nothing", "ToolOutputTrimmer()", "SQLiteSession(limit=24)"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=220)
    parser.add_argument("--only", choices=["pydantic-ai", "agents"])
    parser.add_argument("--managers", help="semicolon-separated manager names to run (default: all)")
    args = parser.parse_args()
    chosen = set(args.managers.split(";")) if args.managers else None
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        if args.only != "agents":
            rows += [run_pydantic_ai(args.steps, m, Path(tmp)) for m in PYDANTIC_AI if not chosen or m in chosen]
        if args.only != "pydantic-ai":
            rows += [run_agents(args.steps, m, Path(tmp)) for m in AGENTS if not chosen or m in chosen]
    print(f"{args.steps} tool steps, window {WINDOW:,} tokens (o200k), {CHECKPOINTS} x {len(FACTS)} questions\n")
    header = ("requests", 9), ("over", 6), ("unpaired", 10), ("peak", 9), ("facts", 7), ("in window", 11)
    print(f"{'framework':12}{'manager':60}" + "".join(f"{h:>{w}}" for h, w in header) + f"{'CPU ms/call':>13}")
    for r in rows:
        print(
            f"{r['framework']:12}{r['manager']:60}{r['requests']:>9}{r['over']:>6}{r['unpaired']:>10}{r['peak']:>9,}"
            f"{r['facts']:>7}{r['facts_within']:>11}{r['cpu_ms']:>13}"
        )


if __name__ == "__main__":
    main()
