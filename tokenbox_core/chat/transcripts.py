"""Reproducible agent transcripts as neutral message dicts (tests, benchmarks and the cross-adapter check).

:func:`agent_transcript` builds a system message, then turns of a user message
answered directly or through agent steps: an assistant message with 1..n
parallel tool calls followed by one tool result per call.  The same seed gives
the same transcript.  :func:`sequence_problems` (from :mod:`tokenbox_core.chat.validate`)
lists what a provider would reject in a message list.
"""

from __future__ import annotations

import json
import random
from typing import Any

from tokenbox_core.chat.validate import sequence_problems

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
                name = rng.choice(["search", "lookup", "math"])
                arguments = json.dumps({"q": _text(rng, 1, 3)})
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
