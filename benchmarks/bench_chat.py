"""The conversation engine's cold cost (``tokenbox_core.chat``), old tree against this one.

Run on purpose: ``.venv/bin/python benchmarks/bench_chat.py`` prints this tree's CPU ms per case;
``bench_chat.py --ab OLD_TREE [TRIALS]`` runs the cases alternately in fresh processes with ``OLD_TREE``
(e.g. ``git archive fb91a8a | tar -x -C /tmp/old``) and with this tree first on ``PYTHONPATH``, and prints
median new/old ratios with min–max.  Asserts nothing.  Cold: the count cache and the remembered Items
emptied before every run.

Cases:

- ``400 history``: the compiler's conversation build (``history_sections``' call of
  ``conversation_sections``: the 400-message history of ``bench_compiler.py`` with tool calls, o200k_base,
  every message counted);
- ``2000 sections``: ``conversation_sections`` over the 2,000 messages of ``bench_langchain.py`` as neutral
  dicts, every message counted;
- ``2000 fit 8k``: ``fit_conversation`` of the same into 8,000 tokens (the horizon counts only the newest);
- ``... count floor``: tiktoken-exact counting of every message text once with the counter's native call, no
  cache (what the engine cannot avoid when it counts everything).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("TOKENBOX_OFFLINE", "1")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _ab import alternate

REPEATS = 9


def measure() -> dict[str, float]:
    import bench_compiler
    import bench_langchain

    from tokenbox_core.chat import conversation_sections, fit_conversation
    from tokenbox_core.tokens import COUNT_CACHE, get_counter
    from tokenbox_langchain.fit import neutral

    data = bench_compiler.material()
    history = [*data["history"], {"role": "user", "content": data["user"]}]
    long = neutral(bench_langchain.make_history())
    counter = get_counter("o200k_base")
    raw: Callable[[str], Any] = getattr(counter, "_fast", counter).count if hasattr(counter, "_fast") else None  # type: ignore[assignment]
    if raw is None:
        encode = counter.encoding.encode_ordinary  # type: ignore[attr-defined]
        raw = lambda text: len(encode(text))  # noqa: E731

    def cold() -> None:
        COUNT_CACHE.clear()

    def cpu(fn: Callable[[], Any]) -> float:
        times = []
        for _ in range(REPEATS):
            cold()
            start = time.process_time()
            fn()
            times.append((time.process_time() - start) * 1000.0)
        return statistics.median(times)

    def floor(messages: list[Any]) -> Callable[[], Any]:
        texts = [m["content"] for m in messages if isinstance(m.get("content"), str)]
        return lambda: [raw(t) for t in texts]

    return {
        "400 history": cpu(
            lambda: conversation_sections(
                history, counter=counter, keep_last="user", start_on="user", history_priority=1, prefix="history/"
            )
        ),
        "400 count floor": cpu(floor(history)),
        "2000 sections": cpu(lambda: conversation_sections(long, counter=counter)),
        "2000 count floor": cpu(floor(long)),
        "2000 fit 8k": cpu(lambda: fit_conversation(long, 8_000, counter=counter, include_system=True)),
    }


def ab(old_tree: str, trials: int) -> None:
    """Alternate fresh processes on ``old_tree`` and this tree; print median ratios with min-max."""
    runs = alternate(__file__, old_tree, trials)
    print(f"{trials} alternating trials, CPU ms (median of {REPEATS} per trial); ratio new/old median (min-max)\n")
    print(f"{'case':<18} {'old ms':>8} {'new ms':>8} {'new/old':>8} {'(min-max)':>13}")
    for case in runs["new"][0]:
        old = [r[case] for r in runs["old"]]
        new = [r[case] for r in runs["new"]]
        ratios = [n / o for n, o in zip(new, old, strict=True)]
        print(
            f"{case:<18} {statistics.median(old):>8.2f} {statistics.median(new):>8.2f} "
            f"{statistics.median(ratios):>8.2f} {f'({min(ratios):.2f}-{max(ratios):.2f})':>13}"
        )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--json"]:
        print(json.dumps(measure()))
    elif sys.argv[1:2] == ["--ab"]:
        ab(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 5)
    else:
        for case, ms in measure().items():
            print(f"{case:<18} {ms:8.2f} ms")
