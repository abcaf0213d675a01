"""LangChain adapter benchmark: ``tokenbox_langchain.trim_messages`` against LangChain's ``trim_messages``.

Run on purpose: ``.venv/bin/python benchmarks/bench_langchain.py``.  Prints a table; asserts nothing.

Workload (issue 4 §6): 2,000 messages (~165k o200k tokens), strategy "last", include_system,
start_on "human", the same tiktoken list counter for both.  Budgets 8k and 64k:

- cold: every count cache empty (TokenBox's message sizes and text counts);
- warm: the same history plus one new message, after a run over the history.

A third row runs TokenBox with its own chat counter (``token_counter="o200k_base"``: chat overhead,
names and tool-call payloads) for reference.  Both results are checked to be within budget.
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("TOKENBOX_OFFLINE", "1")

from corpus import WORDS
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.messages import trim_messages as lc_trim_messages

from tokenbox_core import get_counter
from tokenbox_core.tokens import COUNT_CACHE
from tokenbox_langchain import trim_messages
from tokenbox_langchain.counting import clear_caches

N_MESSAGES = 2_000
BUDGETS = (8_000, 64_000)
REPEATS = 7


def make_history(n: int = N_MESSAGES, seed: int = 11) -> list[BaseMessage]:
    rng = random.Random(seed)
    history: list[BaseMessage] = [SystemMessage("You are a careful assistant. Answer briefly and cite sources.")]
    for i in range(n - 1):
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(50, 105)))
        history.append(HumanMessage(words, id=f"h{i}") if i % 2 == 0 else AIMessage(words, id=f"a{i}"))
    return history


def make_counter() -> Callable[[list[BaseMessage]], int]:
    """A fresh tiktoken list counter (a new object, so no cache keyed on it survives)."""
    encoding = get_counter("o200k_base").encoding  # type: ignore[attr-defined]

    def count(messages: list[BaseMessage]) -> int:
        return sum(4 + len(encoding.encode_ordinary(m.text)) for m in messages)

    return count


def timed(fn: Callable[[], Any], setup: Callable[[], None] | None = None) -> tuple[float, Any]:
    times = []
    result = None
    for _ in range(REPEATS):
        if setup is not None:
            setup()
        start = time.perf_counter()
        result = fn()
        times.append((time.perf_counter() - start) * 1000.0)
    return statistics.median(times), result


def cold() -> None:
    clear_caches()
    COUNT_CACHE.clear()


def main() -> None:
    history = make_history()
    newer = [*history, HumanMessage("one more question about the budget", id="new")]
    counter = make_counter()
    total = counter(history)
    kwargs: dict[str, Any] = {"strategy": "last", "include_system": True, "start_on": "human"}
    encode_ms, _ = timed(lambda: counter(history))
    print(f"{len(history):,} messages, {total:,} tokens; encoding every message once: {encode_ms:.1f} ms")
    print(f"python {sys.version.split()[0]}, median of {REPEATS} runs\n")
    header = (
        f"{'budget':>7}  {'run':<5}  {'langchain ms':>12}  {'tokenbox ms':>11}  {'speed-up':>8}  "
        f"{'tokenbox o200k ms':>17}"
    )
    print(header)
    print("-" * len(header))
    holder: dict[str, Any] = {}

    def fresh() -> None:
        cold()
        holder["counter"] = make_counter()

    for budget in BUDGETS:
        lc_ms, lc_out = timed(lambda b=budget: lc_trim_messages(history, max_tokens=b, token_counter=counter, **kwargs))
        tb_ms, tb_out = timed(
            lambda b=budget: trim_messages(history, max_tokens=b, token_counter=holder["counter"], **kwargs), fresh
        )
        own_ms, _ = timed(
            lambda b=budget: trim_messages(history, max_tokens=b, token_counter="o200k_base", **kwargs), cold
        )
        assert counter(tb_out) <= budget and counter(lc_out) <= budget
        print(f"{budget:>7,}  {'cold':<5}  {lc_ms:>12.1f}  {tb_ms:>11.1f}  {lc_ms / tb_ms:>7.1f}x  {own_ms:>17.1f}")

        lcw_ms, _ = timed(lambda b=budget: lc_trim_messages(newer, max_tokens=b, token_counter=counter, **kwargs))
        trim_messages(history, max_tokens=budget, token_counter=counter, **kwargs)  # warm the caches
        trim_messages(history, max_tokens=budget, token_counter="o200k_base", **kwargs)
        tbw_ms, tbw_out = timed(lambda b=budget: trim_messages(newer, max_tokens=b, token_counter=counter, **kwargs))
        ownw_ms, _ = timed(lambda b=budget: trim_messages(newer, max_tokens=b, token_counter="o200k_base", **kwargs))
        assert counter(tbw_out) <= budget
        print(
            f"{budget:>7,}  {'warm':<5}  {lcw_ms:>12.1f}  {tbw_ms:>11.1f}  {lcw_ms / tbw_ms:>7.1f}x  {ownw_ms:>17.1f}"
        )


if __name__ == "__main__":
    main()
