"""Fakes and checks that the tests, benchmarks and users share.

- :func:`agent_transcript`: a reproducible conversation with chat turns and
  agent steps (parallel tool calls included), the core's transcript as
  LangChain messages (:func:`~tokenbox_langchain.history.from_neutral`);
- :func:`sequence_problems`: what a provider would reject in a message list
  (orphan tool results, tool calls without results, misplaced system messages,
  a history that does not start on a human message).
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage

from tokenbox_core.chat import transcripts
from tokenbox_langchain.history import from_neutral

__all__ = ["agent_transcript", "from_neutral", "sequence_problems"]


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
