"""LlamaIndex adapter benchmark: TokenBox side by side with LlamaIndex's own PromptHelper and ChatMemoryBuffer.

Run on purpose: ``.venv/bin/python benchmarks/bench_llamaindex.py`` (about half a minute, most of it
ChatMemoryBuffer).  Prints a table; asserts nothing.  Times are the best of several runs.

Measures (issue 5 §6):
- ``PromptHelper.truncate`` vs ``TokenBoxPromptHelper.truncate``: 200 chunks (about 52k tokens) into a 16k
  window (target: at least 20x faster); and ``repack`` of the same chunks;
- ``ChatMemoryBuffer.get`` vs ``TokenBoxMemory.get``: 2,000 messages at an 8k limit (target: at least 100x
  faster, and at most 2x one tiktoken pass over the history).

"Cold" clears TokenBox's count cache first, so every text is tokenised; "warm" is the same call again
(counts memoised by text digest, nothing re-tokenised).  Both sides count with cl100k_base, LlamaIndex's
default tokenizer.
"""

from __future__ import annotations

import gc
import json
import random
import time
from collections.abc import Callable
from typing import Any

from llama_index.core.indices.prompt_helper import PromptHelper
from llama_index.core.llms import ChatMessage
from llama_index.core.memory import ChatMemoryBuffer
from llama_index.core.prompts.default_prompts import DEFAULT_TEXT_QA_PROMPT

from tokenbox_core import get_counter
from tokenbox_core.tokens import COUNT_CACHE
from tokenbox_llamaindex import TokenBoxMemory, TokenBoxPromptHelper

WORDS = [
    "context", "budget", "token", "layout", "section", "priority", "evidence", "history", "retrieval", "model",
    "window", "policy", "tool", "schema", "memory", "summary", "agent", "request", "response", "careful",
    "deterministic", "compile", "trace", "allocation", "overflow", "the", "a", "of", "and", "to", "in", "is",
    "that", "for", "on", "with", "as", "by", "at", "from", "it", "be", "this", "an", "are", "or",
]  # fmt: skip


def sentence_text(rng: random.Random, n_words: int) -> str:
    words = [rng.choice(WORDS) for _ in range(n_words)]
    return " ".join(w + ("." if i % 15 == 14 else "") for i, w in enumerate(words))


def best(fn: Callable[[], Any], repeat: int = 5, before: Callable[[], None] | None = None) -> float:
    """Best wall time of ``repeat`` runs, in seconds (``before`` runs untimed ahead of each)."""
    times = []
    for _ in range(repeat):
        if before is not None:
            before()
        gc.collect()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:10.1f} ms"


def bench_prompt_helper(rows: list[tuple[str, str]]) -> None:
    rng = random.Random(5)
    counter = get_counter("cl100k_base")
    encoding = counter.encoding  # type: ignore[attr-defined]
    chunks = [sentence_text(rng, 245) for _ in range(200)]
    tokens = sum(len(encoding.encode_ordinary(c)) for c in chunks)
    prompt = DEFAULT_TEXT_QA_PROMPT.partial_format(query_str="What does the evidence say about the budget?")
    stock = PromptHelper(context_window=16_384, num_output=256)
    tokenbox = TokenBoxPromptHelper(context_window=16_384, num_output=256)

    one_pass = best(lambda: [encoding.encode_ordinary(c) for c in chunks])
    stock_s = best(lambda: stock.truncate(prompt, chunks), repeat=3)
    cold_s = best(lambda: tokenbox.truncate(prompt, chunks), before=COUNT_CACHE.clear)
    warm_s = best(lambda: tokenbox.truncate(prompt, chunks))
    kept = tokenbox.truncate(prompt, chunks)
    layout = tokenbox.last_layout
    assert layout is not None
    stock_kept = stock.truncate(prompt, chunks)
    rows += [
        ("PromptHelper.truncate", f"200 chunks, {tokens:,} tokens, into a 16,384 window (num_output 256)"),
        ("  tokenise every chunk once", ms(one_pass)),
        ("  PromptHelper.truncate", f"{ms(stock_s)}  every chunk cut to {len(encoding.encode(stock_kept[0]))} tokens"),
        (
            "  TokenBoxPromptHelper, cold",
            f"{ms(cold_s)}  = {stock_s / cold_s:5.1f}x faster (target ≥ 20x); {len(kept) - 1} chunks whole + 1 cut, "
            f"{len(layout.removed)} dropped, {layout.total_tokens:,}/{layout.max_tokens:,} tokens",
        ),
        ("  TokenBoxPromptHelper, warm", f"{ms(warm_s)}  = {stock_s / warm_s:5.1f}x faster"),
    ]

    stock_packs = stock.repack(prompt, chunks)
    packs = tokenbox.repack(prompt, chunks)
    stock_r = best(lambda: stock.repack(prompt, chunks), repeat=3)
    cold_r = best(lambda: tokenbox.repack(prompt, chunks), before=COUNT_CACHE.clear)
    warm_r = best(lambda: tokenbox.repack(prompt, chunks))
    rows += [
        ("PromptHelper.repack", "the same chunks"),
        ("  PromptHelper.repack", f"{ms(stock_r)}  {len(stock_packs)} packs (with 10% overlap)"),
        ("  TokenBoxPromptHelper, cold", f"{ms(cold_r)}  = {stock_r / cold_r:5.1f}x faster; {len(packs)} packs"),
        ("  TokenBoxPromptHelper, warm", f"{ms(warm_r)}  = {stock_r / warm_r:5.1f}x faster"),
    ]


def history(n: int, rng: random.Random) -> list[ChatMessage]:
    """A system prompt, then user/assistant turns with a tool call and two results every 20 messages."""
    messages = [ChatMessage(role="system", content="You are a careful assistant. " + sentence_text(rng, 40))]
    while len(messages) < n:
        k = len(messages)
        if k % 20 == 10:
            call_id = f"call-{k}"
            arguments = json.dumps({"query": sentence_text(rng, 8)})
            tool_calls = [{"id": call_id, "type": "function", "function": {"name": "search", "arguments": arguments}}]
            messages.append(ChatMessage(role="assistant", content="", additional_kwargs={"tool_calls": tool_calls}))
            for _ in range(2):
                messages.append(
                    ChatMessage(
                        role="tool", content=sentence_text(rng, 80), additional_kwargs={"tool_call_id": call_id}
                    )
                )
        else:
            role = "user" if k % 2 else "assistant"
            messages.append(ChatMessage(role=role, content=sentence_text(rng, rng.randint(20, 100))))
    return messages[:n]


def bench_memory(rows: list[tuple[str, str]], n: int = 2000) -> None:
    rng = random.Random(11)
    counter = get_counter("cl100k_base")
    encoding = counter.encoding  # type: ignore[attr-defined]
    messages = history(n, rng)
    tokens = sum(len(encoding.encode_ordinary(m.content or "")) for m in messages)
    stock = ChatMemoryBuffer.from_defaults(chat_history=messages, token_limit=8000)
    tokenbox = TokenBoxMemory.from_defaults(chat_history=messages, token_limit=8000)

    one_pass = best(lambda: [encoding.encode_ordinary(m.content or "") for m in messages])
    stock_s = best(stock.get, repeat=1)
    cold_s = best(tokenbox.get, repeat=7, before=COUNT_CACHE.clear)
    warm_s = best(tokenbox.get, repeat=7)
    kept = tokenbox.get()
    layout = tokenbox.last_layout
    assert layout is not None
    stock_kept = stock.get()
    rows += [
        ("ChatMemoryBuffer.get", f"{n:,} messages, {tokens:,} tokens of text, token_limit 8,000"),
        ("  one tiktoken pass over the history", ms(one_pass)),
        (
            "  ChatMemoryBuffer.get",
            f"{ms(stock_s)}  {len(stock_kept)} messages, system prompt kept: {messages[0] in stock_kept}",
        ),
        (
            "  TokenBoxMemory.get, cold",
            f"{ms(cold_s)}  = {stock_s / cold_s:6.0f}x faster (target ≥ 100x), {cold_s / one_pass:.2f}x one pass "
            f"(target ≤ 2x); {len(kept)} messages, {tokenbox.last_total_tokens:,} tokens with overhead",
        ),
        (
            "  TokenBoxMemory.get, warm",
            f"{ms(warm_s)}  = {stock_s / warm_s:6.0f}x faster, {warm_s / one_pass:.2f}x one pass",
        ),
    ]


def main() -> None:
    rows: list[tuple[str, str]] = []
    bench_prompt_helper(rows)
    for n in (1000, 2000):
        bench_memory(rows, n)
    width = max(len(name) for name, _ in rows)
    print("TokenBox LlamaIndex adapter benchmark (best of several runs)")
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")


if __name__ == "__main__":
    main()
