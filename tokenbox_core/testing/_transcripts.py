"""Deterministic agent transcripts for tests, notebooks and benchmarks (no randomness, no clock)."""

from __future__ import annotations

import hashlib
from typing import Any

from tokenbox_core.errors import ConfigError

__all__ = ["agent_session"]

_WORDS = (
    "deploy service region latency error budget cache replica shard queue worker retry timeout config "
    "rollback metric alert owner ticket build image node pod volume quota index schema migration token "
    "request response header payload batch window threshold incident runbook dashboard trace span log"
).split()


def _words(seed: str, n: int) -> str:
    out: list[str] = []
    counter = 0
    while len(out) < n:
        digest = hashlib.sha256(f"{seed}:{counter}".encode()).digest()
        out.extend(_WORDS[b % len(_WORDS)] for b in digest)
        counter += 1
    return " ".join(out[:n])


def agent_session(
    turns: int = 300, *, words_per_turn: int = 535, system: str | None = None, tool_every: int = 1
) -> list[dict[str, Any]]:
    """A ``turns``-turn agent session in the neutral chat shape, with tool calls.

    Each turn is a user question, an assistant tool call, the tool's result and
    the assistant's answer (about ``words_per_turn`` words: ~600 o200k tokens at
    the default).  Every ``tool_every``-th turn calls a tool.  Message ids are
    stable (``u12``, ``a12``, ``t12``, ``r12``); the same arguments always give
    the same transcript.
    """
    if turns < 1:
        raise ConfigError(f"turns must be >= 1, got {turns}")
    messages: list[dict[str, Any]] = [
        {
            "id": "sys",
            "role": "system",
            "content": system
            or "You are an on-call operations agent. Use the tools to inspect the system before answering. "
            + _words("policy", 1200),
        }
    ]
    user_n, tool_n, answer_n = words_per_turn // 8, words_per_turn * 5 // 8, words_per_turn // 4
    for t in range(turns):
        messages.append({"id": f"u{t}", "role": "user", "content": f"Turn {t}: " + _words(f"u{t}", user_n)})
        if t % tool_every == 0:
            call = {
                "id": f"call_{t}",
                "type": "function",
                "function": {"name": "inspect", "arguments": f'{{"target": "svc-{t % 17}", "turn": {t}}}'},
            }
            messages.append({"id": f"a{t}", "role": "assistant", "content": "", "tool_calls": [call]})
            messages.append(
                {"id": f"t{t}", "role": "tool", "tool_call_id": f"call_{t}", "content": _words(f"t{t}", tool_n)}
            )
        messages.append({"id": f"r{t}", "role": "assistant", "content": _words(f"r{t}", answer_n)})
    return messages
