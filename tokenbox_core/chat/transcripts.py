"""Reproducible agent transcripts as neutral message dicts (tests, benchmarks and the cross-adapter check).

:func:`agent_transcript` builds a system message, then turns of a user message
answered directly or through agent steps: an assistant message with 1..n
parallel tool calls followed by one tool result per call.  The same seed gives
the same transcript.  :func:`sequence_problems` lists what a provider would
reject in a message list.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["agent_transcript", "sequence_problems"]

_WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu"]


def _text(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(low, high)))


def agent_transcript(
    turns: int = 6, *, seed: int = 0, max_parallel: int = 3, tool_rate: float = 0.5, words: tuple[int, int] = (2, 12)
) -> list[dict[str, Any]]:
    """A system message, then ``turns`` user turns, each answered directly or through agent steps."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = [{"role": "system", "content": _text(rng, *words), "id": "sys"}]
    call = 0
    for t in range(turns):
        out.append({"role": "user", "content": _text(rng, *words), "id": f"h{t}"})
        steps = rng.randint(1, 3) if rng.random() < tool_rate else 0
        for s in range(steps):
            calls = []
            for _ in range(rng.randint(1, max_parallel)):
                arguments = json.dumps({"q": _text(rng, 1, 3)})
                name = rng.choice(["search", "lookup", "math"])
                calls.append(
                    {"id": f"call{call}", "type": "function", "function": {"name": name, "arguments": arguments}}
                )
                call += 1
            out.append({"role": "assistant", "content": _text(rng, 0, 4), "tool_calls": calls, "id": f"a{t}.{s}"})
            for c in calls:
                out.append(
                    {"role": "tool", "content": _text(rng, *words), "tool_call_id": c["id"], "id": f"t{c['id']}"}
                )
        out.append({"role": "assistant", "content": _text(rng, *words), "id": f"a{t}"})
    return out


def sequence_problems(messages: Sequence[Mapping[str, Any]], *, start_on_user: bool = True) -> list[str]:
    """Everything a chat provider would reject in ``messages`` (an empty list means valid)."""
    problems: list[str] = []
    calls: dict[str, int] = {}
    answered: set[str] = set()
    seen_other = False
    first_other: Mapping[str, Any] | None = None
    for i, m in enumerate(messages):
        role = m.get("role")
        if role in ("system", "developer"):
            if seen_other:
                problems.append(f"system message at {i} after the conversation started")
            continue
        if not seen_other:
            first_other = m
        seen_other = True
        if role == "assistant":
            for c in m.get("tool_calls") or ():
                calls[str(c["id"])] = i
        elif role == "tool":
            if m.get("tool_call_id") not in calls:
                problems.append(f"tool message {m.get('id')} at {i} answers no earlier tool call")
            answered.add(str(m.get("tool_call_id")))
    for call_id, at in calls.items():
        if call_id not in answered:
            problems.append(f"tool call {call_id} at {at} has no result")
    has_user = any(m.get("role") == "user" for m in messages)
    if start_on_user and has_user and first_other is not None and first_other.get("role") != "user":
        problems.append(f"history starts on {first_other.get('role')}, not user")
    return problems
