"""LangChain adapter benchmark: ``tokenbox_langchain.trim_messages`` against LangChain's ``trim_messages``.

Run on purpose: ``.venv/bin/python benchmarks/bench_langchain.py``.  Prints a table; asserts nothing.

Workload (issue 4 §6): 2,000 messages (~165k o200k tokens), strategy "last", include_system,
start_on "human", the same tiktoken list counter for both.  Budgets 8k and 64k:

- cold: every count cache empty (TokenBox's message sizes and text counts);
- warm: the same history plus one new message, after a run over the history.

A third row runs TokenBox with its own chat counter (``token_counter="o200k_base"``: chat overhead,
names and tool-call payloads) for reference.  Both results are checked to be within budget.

Old against new, side by side: ``bench_langchain.py --ab OLD_TREE [TRIALS]`` runs this workload
alternately with ``OLD_TREE`` (e.g. ``git archive dc6c5c6 | tar -x -C /tmp/old``) and with this tree
first on ``PYTHONPATH``, in fresh processes, measuring CPU time (``time.process_time``), and prints
the median new/old ratio with its min–max over the trials, and LangChain's own time beside.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("TOKENBOX_OFFLINE", "1")

from _ab import alternate
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


def measure() -> dict[str, float]:
    """CPU ms (median of REPEATS) of each case: TokenBox cold/warm at each budget, and LangChain's own."""
    history = make_history()
    newer = [*history, HumanMessage("one more question about the budget", id="new")]
    kwargs: dict[str, Any] = {"strategy": "last", "include_system": True, "start_on": "human"}
    holder: dict[str, Any] = {}

    def fresh() -> None:
        cold()
        holder["counter"] = make_counter()

    def cpu(fn: Callable[[], Any], setup: Callable[[], None] | None = None) -> float:
        times = []
        for _ in range(REPEATS):
            if setup is not None:
                setup()
            start = time.process_time()
            fn()
            times.append((time.process_time() - start) * 1000.0)
        return statistics.median(times)

    out: dict[str, float] = {}
    for b in BUDGETS:
        out[f"{b} cold"] = cpu(
            lambda b=b: trim_messages(history, max_tokens=b, token_counter=holder["counter"], **kwargs), fresh
        )
        counter = make_counter()
        trim_messages(history, max_tokens=b, token_counter=counter, **kwargs)
        out[f"{b} warm"] = cpu(lambda b=b, c=counter: trim_messages(newer, max_tokens=b, token_counter=c, **kwargs))
        out[f"{b} langchain"] = cpu(
            lambda b=b, c=counter: lc_trim_messages(history, max_tokens=b, token_counter=c, **kwargs)
        )
    return out


def ab(old_tree: str, trials: int) -> None:
    """Alternate fresh processes on ``old_tree`` and this tree; print median ratios with min-max."""
    runs = alternate(__file__, old_tree, trials)
    print(f"{trials} alternating trials, CPU ms (median of {REPEATS} per trial); ratio new/old median (min-max)\n")
    print(
        f"{'case':<12} {'old ms':>8} {'new ms':>8} {'new/old':>8} {'(min-max)':>13} {'langchain ms':>13} {'lc/new':>7}"
    )
    for case in runs["new"][0]:
        if case.endswith("langchain"):
            continue
        old = [r[case] for r in runs["old"]]
        new = [r[case] for r in runs["new"]]
        ratios = [n / o for n, o in zip(new, old, strict=True)]
        lc = statistics.median(r[case.split()[0] + " langchain"] for r in runs["new"] + runs["old"])
        mid_old, mid_new = statistics.median(old), statistics.median(new)
        print(
            f"{case:<12} {mid_old:>8.2f} {mid_new:>8.2f} {statistics.median(ratios):>8.2f} "
            f"{f'({min(ratios):.2f}-{max(ratios):.2f})':>13} {lc:>13.1f} {lc / mid_new:>6.1f}x"
        )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--json"]:
        print(json.dumps(measure()))
    elif sys.argv[1:2] == ["--ab"]:
        ab(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 5)
    else:
        main()
