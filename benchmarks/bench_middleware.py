"""Agent middleware benchmark: what each context manager adds per model call in a ``create_agent`` loop.

Run on purpose: ``.venv/bin/python benchmarks/bench_middleware.py [TRIALS]``.  Prints a table; asserts nothing.

Workload (issue 24): one task, 300 tool steps (``FakeToolModel``, a lookup tool returning ~30 words),
a 4,000-token window, the same exact counter everywhere (TokenBox's per-message o200k chat counter,
``MessageCounter("o200k_base").count``, memoised per message).  Variants:

- ``none``: no middleware (the request grows past the window: the baseline's CPU only);
- ``langchain-trim``: LangChain's documented idiom, ``@before_model`` + ``trim_messages`` (strategy
  ``"last"``, ``start_on=("human", "ai")`` since ``"human"`` empties a single-task loop) rewriting the state
  with ``RemoveMessage(REMOVE_ALL_MESSAGES)``, the budget less the system message and tool schemas;
- ``langchain-summary``: ``SummarizationMiddleware(trigger=("tokens", 3_500), keep=("tokens", 2_000))``
  with a fake summariser (a callable returning a fixed line);
- ``langchain-trim-view``: the same ``trim_messages`` in ``@wrap_model_call`` on the request's messages (the
  state untouched, as TokenBox's default);
- ``tokenbox``: ``TokenBoxMiddleware(4_000)`` (the state untouched, every request fitted);
- ``tokenbox-persistent``: ``TokenBoxMiddleware(4_000, persistent=True)`` (the state compacted to half the
  window once it reaches the window, every request fitted).

The ``before_model`` variants shrink the graph state itself, so every later step (the graph's own work
included) handles ~80 messages instead of up to 600: compare them with each other, and the view variants
with each other.

Each variant runs in a fresh process, ``TRIALS`` times (default 3), the variants alternated; the table
gives the median CPU time (``time.process_time``) of the whole run, the CPU each variant adds per model call
against ``none`` (median, and the range over the trials: each trial against the ``none`` run of the same
round), and the largest request each sent (counted with the same counter, tool schemas included).  The
checkout the script is in is measured (its directory is put first on ``sys.path``), not an installed copy.
Pass variant names after ``TRIALS`` to run only those (``none`` is always run).  ``--baseline PATH`` (another
checkout of this repository) also runs the ``tokenbox`` variants against that tree, alternated with this one's
in the same rounds, so "before" and "after" come from the same minutes on the same machine; they appear as
``<variant>@baseline`` rows.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[1])
sys.path.insert(0, os.environ.get("TOKENBOX_BENCH_TREE", ROOT))  # the measured checkout, not an installed copy
os.environ.setdefault("TOKENBOX_OFFLINE", "1")

STEPS = 300
WINDOW = 4_000
SYSTEM = "You are a careful researcher. Use the lookup tool, one step at a time, then answer."
VARIANTS = ("none", "langchain-trim", "langchain-summary", "tokenbox-persistent", "langchain-trim-view", "tokenbox")


def middleware(variant: str, counter, tools_tokens: int) -> list:
    """The middleware list of ``variant`` (see the module docstring)."""
    from langchain.agents.middleware import SummarizationMiddleware, before_model, wrap_model_call
    from langchain_core.messages import RemoveMessage, SystemMessage, trim_messages
    from langgraph.graph.message import REMOVE_ALL_MESSAGES

    from tokenbox_langchain import TokenBoxMiddleware

    if variant == "none":
        return []
    if variant == "tokenbox":
        return [TokenBoxMiddleware(WINDOW, token_counter="o200k_base")]
    if variant == "tokenbox-persistent":
        return [TokenBoxMiddleware(WINDOW, token_counter="o200k_base", persistent=True)]
    if variant == "langchain-summary":
        return [
            SummarizationMiddleware(
                model=_model(),
                trigger=("tokens", WINDOW - 500),
                keep=("tokens", WINDOW // 2),
                token_counter=counter,
                summarizer=lambda messages: "Summary: earlier lookups done.",
            )
        ]
    limit = WINDOW - counter([SystemMessage(SYSTEM)]) - tools_tokens

    @before_model
    def trim(state, runtime):
        kept = trim_messages(
            state["messages"], max_tokens=limit, token_counter=counter, strategy="last", start_on=("human", "ai")
        )
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *kept]}

    @wrap_model_call
    def trim_view(request, handler):
        kept = trim_messages(
            request.messages, max_tokens=limit, token_counter=counter, strategy="last", start_on=("human", "ai")
        )
        return handler(request.override(messages=kept))

    return [trim_view] if variant == "langchain-trim-view" else [trim]


def _model():
    from tokenbox_langchain.testing import FakeToolModel

    return FakeToolModel(steps=STEPS)


def run_one(variant: str) -> dict:
    """One run of ``variant`` in this process: CPU seconds, model calls, largest request."""
    from langchain.agents import create_agent
    from langchain_core.messages import HumanMessage

    from tokenbox_core import get_counter
    from tokenbox_langchain._agent_window import tool_tokens
    from tokenbox_langchain._counting import MessageCounter
    from tokenbox_langchain.testing import lookup_tool

    counter = MessageCounter("o200k_base").count
    tool = lookup_tool()
    model = _model()
    text = get_counter("o200k_base")
    schemas = tool_tokens([tool], text)
    agent = create_agent(model, [tool], system_prompt=SYSTEM, middleware=middleware(variant, counter, schemas))
    task = {"messages": [HumanMessage("Research the whole catalogue.", id="task")]}
    start = time.process_time()
    agent.invoke(task, {"recursion_limit": 4 * STEPS + 20})
    cpu = time.process_time() - start
    agent_calls = [i for i, tools in enumerate(model.tool_schemas) if tools]
    largest = max(counter(model.requests[i]) + tool_tokens(model.tool_schemas[i], text) for i in agent_calls)
    return {"variant": variant, "cpu": cpu, "calls": len(agent_calls), "largest": largest}


def _run(tree: str, variant: str) -> dict:
    """``run_one(variant)`` in a fresh process importing the packages of ``tree``."""
    env = {**os.environ, "TOKENBOX_BENCH_TREE": tree}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (tree, os.environ.get("PYTHONPATH")) if p)
    out = subprocess.run(
        [sys.executable, __file__, "--one", variant], capture_output=True, text=True, check=True, env=env, cwd=tree
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(trials: int, variants: tuple[str, ...] = VARIANTS, baseline: str | None = None) -> None:
    variants = ("none", *(v for v in variants if v != "none"))
    jobs = [(ROOT, v, v) for v in variants]
    if baseline is not None:
        jobs += [(baseline, v, f"{v}@baseline") for v in variants if v.startswith("tokenbox")]
    results: dict[str, list[dict]] = {label: [] for _, _, label in jobs}
    for _ in range(trials):
        for tree, variant, label in jobs:  # alternated, each in a fresh process: no warm cache crosses variants
            results[label].append(_run(tree, variant))
    base = statistics.median(r["cpu"] for r in results["none"])
    print(f"create_agent, one task, {STEPS} tool steps, window {WINDOW:,}, o200k chat counter; median of {trials}")
    print(f"{'variant':<29}{'CPU s':>9}{'model calls':>13}{'added ms/call':>15}{'range':>15}{'largest request':>17}")
    for label, rows in results.items():
        cpu = statistics.median(r["cpu"] for r in rows)
        calls = rows[0]["calls"]
        if label == "none":
            added, spread = 0.0, ""
        else:
            added = (cpu - base) / calls * 1_000
            paired = [(r["cpu"] - b["cpu"]) / calls * 1_000 for r, b in zip(rows, results["none"], strict=True)]
            spread = f"{min(paired):.2f}..{max(paired):.2f}"
        print(f"{label:<29}{cpu:>9.2f}{calls:>13}{added:>15.2f}{spread:>15}{rows[0]['largest']:>17,}")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--one":
        print(json.dumps(run_one(sys.argv[2])))
    else:
        args = sys.argv[1:]
        tree = None
        if "--baseline" in args:
            at = args.index("--baseline")
            tree = str(Path(args[at + 1]).resolve())
            del args[at : at + 2]
        main(int(args[0]) if args else 3, tuple(args[1:]) or VARIANTS, tree)
