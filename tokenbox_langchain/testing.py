"""Fakes and checks that the tests, benchmarks and users share.

- :func:`agent_transcript`: a reproducible conversation with chat turns and
  agent steps (parallel tool calls included), the core's transcript as
  LangChain messages (:func:`from_neutral`);
- :func:`sequence_problems`: what a provider would reject in a message list
  (orphan tool results, tool calls without results, misplaced system messages,
  a history that does not start on a human message).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from tokenbox_core.chat import transcripts

__all__ = ["agent_transcript", "from_neutral", "sequence_problems"]


def from_neutral(messages: Sequence[Mapping[str, Any]]) -> list[BaseMessage]:
    """LangChain messages for neutral message dicts (system, user, assistant with tool calls, tool), ids kept."""
    out: list[BaseMessage] = []
    for m in messages:
        role, content, mid = m["role"], m["content"], m.get("id")
        if role == "system":
            out.append(SystemMessage(content, id=mid))
        elif role == "user":
            out.append(HumanMessage(content, id=mid))
        elif role == "tool":
            out.append(ToolMessage(content, tool_call_id=m["tool_call_id"], id=mid))
        else:
            calls = [
                {
                    "name": c["function"]["name"],
                    "args": json.loads(c["function"]["arguments"]),
                    "id": c["id"],
                    "type": "tool_call",
                }
                for c in m.get("tool_calls") or ()
            ]
            out.append(AIMessage(content, tool_calls=calls, id=mid))
    return out


def agent_transcript(
    turns: int = 6, *, seed: int = 0, max_parallel: int = 3, tool_rate: float = 0.5, words: tuple[int, int] = (2, 12)
) -> list[BaseMessage]:
    """A system message, then ``turns`` human turns, each answered directly or through agent steps:
    :func:`tokenbox_core.chat.transcripts.agent_transcript` as LangChain messages.

    An agent step is an ``AIMessage`` with 1..``max_parallel`` tool calls followed by one
    ``ToolMessage`` per call.  Every message has an id; the same seed gives the same transcript.
    """
    neutral = transcripts.agent_transcript(
        turns, seed=seed, max_parallel=max_parallel, tool_rate=tool_rate, words=words
    )
    return from_neutral(neutral)


def sequence_problems(messages: Sequence[BaseMessage], *, start_on_human: bool = True) -> list[str]:
    """Everything a chat provider would reject in ``messages`` (an empty list means valid): the core's check
    (:func:`tokenbox_core.chat.transcripts.sequence_problems`) on the messages' neutral form."""
    from tokenbox_langchain.fit import neutral

    return transcripts.sequence_problems(neutral(messages), start_on_user=start_on_human)
