"""Fakes and checks that the tests, benchmarks and users share.

- :func:`agent_transcript`: a reproducible conversation with chat turns and
  agent steps (parallel tool calls included);
- :func:`sequence_problems`: what a provider would reject in a message list
  (orphan tool results, tool calls without results, misplaced system messages,
  a history that does not start on a human message).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

__all__ = ["agent_transcript", "sequence_problems"]

_WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu"]


def _text(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(low, high)))


def agent_transcript(
    turns: int = 6, *, seed: int = 0, max_parallel: int = 3, tool_rate: float = 0.5, words: tuple[int, int] = (2, 12)
) -> list[BaseMessage]:
    """A system message, then ``turns`` human turns, each answered directly or through agent steps.

    An agent step is an ``AIMessage`` with 1..``max_parallel`` tool calls followed by one
    ``ToolMessage`` per call.  Every message has an id; the same seed gives the same transcript.
    """
    rng = random.Random(seed)
    out: list[BaseMessage] = [SystemMessage(_text(rng, *words), id="sys")]
    call = 0
    for t in range(turns):
        out.append(HumanMessage(_text(rng, *words), id=f"h{t}"))
        steps = rng.randint(1, 3) if rng.random() < tool_rate else 0
        for s in range(steps):
            calls = []
            for _ in range(rng.randint(1, max_parallel)):
                calls.append(
                    {
                        "name": rng.choice(["search", "lookup", "math"]),
                        "args": {"q": _text(rng, 1, 3)},
                        "id": f"call{call}",
                        "type": "tool_call",
                    }
                )
                call += 1
            out.append(AIMessage(_text(rng, 0, 4), tool_calls=calls, id=f"a{t}.{s}"))
            for c in calls:
                out.append(ToolMessage(_text(rng, *words), tool_call_id=c["id"], id=f"t{c['id']}"))
        out.append(AIMessage(_text(rng, *words), id=f"a{t}"))
    return out


def sequence_problems(messages: Sequence[BaseMessage], *, start_on_human: bool = True) -> list[str]:
    """Everything a chat provider would reject in ``messages`` (an empty list means valid)."""
    problems: list[str] = []
    calls: dict[str, int] = {}
    answered: set[str] = set()
    seen_other = False
    first_other: BaseMessage | None = None
    for i, m in enumerate(messages):
        if isinstance(m, SystemMessage):
            if seen_other:
                problems.append(f"system message at {i} after the conversation started")
            continue
        if not seen_other:
            first_other = m
        seen_other = True
        if isinstance(m, AIMessage):
            for c in m.tool_calls:
                calls[str(c["id"])] = i
        elif isinstance(m, ToolMessage):
            if m.tool_call_id not in calls:
                problems.append(f"tool message {m.id} at {i} answers no earlier tool call")
            answered.add(m.tool_call_id)
    for call_id, at in calls.items():
        if call_id not in answered:
            problems.append(f"tool call {call_id} at {at} has no result")
    has_human = any(isinstance(m, HumanMessage) for m in messages)
    if start_on_human and has_human and first_other is not None and not isinstance(first_other, HumanMessage):
        problems.append(f"history starts on {first_other.type}, not human")
    return problems
