"""The same conversations through the LangChain and the LlamaIndex adapters keep the same messages (issue 9 §1):
both translate to the core's neutral messages and let fit_conversation decide."""

from __future__ import annotations

import json
from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage, TextBlock, ToolCallBlock

from tokenbox_core import ContextCriticalOverflow, count_message_tokens
from tokenbox_core.chat._transcripts import agent_transcript, sequence_problems
from tokenbox_langchain import TokenBoxMessages
from tokenbox_langchain.testing import from_neutral
from tokenbox_llamaindex import TokenBoxMemory

TRANSCRIPTS = [
    agent_transcript(turns=1 + seed % 7, seed=seed, max_parallel=1 + seed % 4, tool_rate=0.3 + (seed % 5) / 7)
    for seed in range(40)
]


def to_llamaindex(messages: list[dict[str, Any]]) -> list[ChatMessage]:
    out: list[ChatMessage] = []
    for m in messages:
        if m["role"] == "tool":
            out.append(
                ChatMessage(role="tool", content=m["content"], additional_kwargs={"tool_call_id": m["tool_call_id"]})
            )
            continue
        blocks: list[Any] = [TextBlock(text=m["content"])]
        for c in m.get("tool_calls") or ():
            kwargs = json.loads(c["function"]["arguments"])
            blocks.append(ToolCallBlock(tool_call_id=c["id"], tool_name=c["function"]["name"], tool_kwargs=kwargs))
        out.append(ChatMessage(role=m["role"], blocks=blocks))
    return out


def kept_indices(kept: list[Any], originals: list[Any]) -> list[int]:
    return [next(i for i, o in enumerate(originals) if o is k) for k in kept]


@pytest.mark.parametrize("seed", range(40))
def test_same_messages_kept_by_both_adapters(seed: int) -> None:
    """40 agent transcripts (parallel tool calls included), each at a range of budgets: the LangChain Runnable
    and the LlamaIndex memory keep exactly the same messages, or both report the same overflow."""
    neutral = TRANSCRIPTS[seed]
    lc, li = from_neutral(neutral), to_llamaindex(neutral)
    full = count_message_tokens(neutral, "whitespace")
    checked = 0
    for budget in range(20, full + 10, max(1, full // 12)):
        try:
            ours = TokenBoxMessages(budget=budget, counter="whitespace").invoke(lc)
        except ContextCriticalOverflow as exc:
            with pytest.raises(ContextCriticalOverflow) as other:
                TokenBoxMemory.from_defaults(chat_history=li, token_limit=budget, counter="whitespace").get()
            assert (other.value.budget, other.value.required) == (exc.budget, exc.required)
            continue
        memory = TokenBoxMemory.from_defaults(chat_history=li, token_limit=budget, counter="whitespace")
        theirs = memory.get()
        assert kept_indices(ours, lc) == kept_indices(theirs, li), budget
        assert sequence_problems([neutral[i] for i in kept_indices(ours, lc)]) == []
        checked += 1
    assert checked


def test_transcripts_cover_parallel_tool_calls() -> None:
    assert sum(any(len(m.get("tool_calls") or ()) > 1 for m in t) for t in TRANSCRIPTS) >= 10
