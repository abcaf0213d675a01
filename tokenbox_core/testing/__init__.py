"""Fakes that the tests, notebooks and users share.

- a fake counter needs no class here: ``get_counter("whitespace")`` counts one unit per word (exact, fast,
  no tokenizer files) and ``get_counter(len)`` one unit per character.
- :func:`make_sections`: a reproducible set of sections for examples and benchmarks.
- :func:`openai_chat_problems` / :func:`assert_openai_chat`: what OpenAI's chat API would reject in a message
  list, checked offline against the ``openai`` package's types (imported on first use; the ``dev`` extra).
- :func:`agent_transcript`: a reproducible agent conversation (parallel tool calls) as neutral messages, and
  :func:`sequence_problems`: what a provider would reject in a message list (the adapters' ``testing``
  modules give both in their framework's types).
"""

from __future__ import annotations

from tokenbox_core._sections import Item, Section
from tokenbox_core.chat._transcripts import agent_transcript, sequence_problems
from tokenbox_core.testing._openai_chat import assert_openai_chat, openai_chat_problems

__all__ = ["agent_transcript", "assert_openai_chat", "make_sections", "openai_chat_problems", "sequence_problems"]


def make_sections(n_docs: int = 5, n_turns: int = 6) -> list[Section]:
    """Policy (critical), task (critical), evidence (list, lowest score first) and history (oldest first)."""
    docs = [
        Item(
            id=f"doc-{i}",
            content=f"Document {i} says fact number {i} about the topic in some detail.",
            score=1.0 - i / max(1, n_docs),
            kind="Document",
        )
        for i in range(n_docs)
    ]
    turns = [
        Item(
            id=f"turn-{i}",
            content=f"{'user' if i % 2 == 0 else 'assistant'} turn {i}: some words here.",
            role="user" if i % 2 == 0 else "assistant",
            kind="Message",
        )
        for i in range(n_turns)
    ]
    return [
        Section("policy", "You are a careful assistant. Cite your sources.", role="system"),
        Section("task", "Answer the user's question using the evidence.", role="system"),
        Section("evidence", docs, priority=2, shrink=1, eviction="lowest_score", omission_marker=True),
        Section("history", turns, priority=1, shrink=1, eviction="oldest", omission_marker=True),
    ]
