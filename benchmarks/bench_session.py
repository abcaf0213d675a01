"""Session benchmark: managed history (checkpoints + recent window) against a plain sliding-window fit.

Run on purpose: ``PYTHONPATH=. .venv/bin/python benchmarks/bench_session.py [--turns 2000] [--counter o200k_base]``.
Prints figures; asserts nothing.

Measures (issue 13 "Done when"):
- a 2,000-turn agent session (user questions, tool calls, tool results, answers) archived in SQLite; at every
  turn, the managed compile (Checkpointer update + fit of summary section and recent window) against a plain
  sliding-window fit of the same turn (``fit_conversation`` over every message so far, same budget and
  counter).  Compiles that generated a summary are reported apart: the target is for cached summaries.
  Both run in the same loop, interleaved, so machine noise hits both alike; the ratio is per turn.  The
  garbage collector runs between turns, not inside the timed calls.  The machine is shared: a compile can
  be descheduled for 10–15 ms, so the session is run ``--repeats`` times and each turn's fastest time kept.
- the SQLite store's append latency (median, p90) for the same turns.
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import tempfile
import time
from pathlib import Path

from corpus import WORDS

from tokenbox_core.chat import fit_conversation
from tokenbox_core.session import ManagedHistory, SQLiteSessionStore


def session(n: int, seed: int = 13) -> list[dict[str, object]]:
    """n turns of a tool-using agent: user → assistant tool call → tool result → assistant answer, repeated."""
    rng = random.Random(seed)
    out: list[dict[str, object]] = []
    k = 0
    while len(out) < n:
        k += 1
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 30)))
        call = {"id": f"c{k}", "type": "function", "function": {"name": "search", "arguments": f'{{"q": "{k}"}}'}}
        result = " ".join(rng.choice(WORDS) for _ in range(rng.randint(30, 120)))
        out += [
            {"role": "user", "content": f"Question {k}: {words}?"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "content": result, "tool_call_id": f"c{k}"},
            {"role": "assistant", "content": f"Answer {k}: " + " ".join(rng.choice(WORDS) for _ in range(25))},
        ]
    return out[:n]


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def run(
    turns: list[dict[str, object]], budget: int, counter: str
) -> tuple[dict[int, tuple[float, float]], set[int], list[float]]:
    """One pass over the session: per compiled turn (managed, plain) seconds; turns that generated a summary;
    append latencies."""
    times: dict[int, tuple[float, float]] = {}
    generating: set[int] = set()
    appends: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteSessionStore(Path(tmp) / "bench.db")
        history = ManagedHistory(store, "bench", budget=budget, counter=counter, window=20, interval=10)
        for i, message in enumerate(turns):
            t0 = time.perf_counter()
            store.append("bench", message)
            appends.append(time.perf_counter() - t0)
            if message["role"] != "user" and i != len(turns) - 1:
                continue  # compile where an agent would call the model: after each user message
            gc.collect()
            gc.disable()  # no collector pause inside either timed call (collected between turns instead)
            t0 = time.perf_counter()
            ctx = history.compile()
            t1 = time.perf_counter()
            plain = fit_conversation(turns[: i + 1], budget, counter=counter)
            t2 = time.perf_counter()
            gc.enable()
            assert ctx.total_tokens <= budget and plain.total_tokens <= budget
            if ctx.checkpoints.created:
                generating.add(i)
            times[i] = (t1 - t0, t2 - t1)
        store.close()
    return times, generating, appends


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--budget", type=int, default=6000)
    parser.add_argument("--counter", default="o200k_base")
    parser.add_argument("--repeats", type=int, default=3, help="whole-session passes; per turn the fastest is kept")
    args = parser.parse_args()
    turns = session(args.turns)
    passes = [run(turns, args.budget, args.counter) for _ in range(args.repeats)]
    generating = set().union(*(p[1] for p in passes))
    cached = sorted(i for i in passes[0][0] if i not in generating)
    managed_t = [min(p[0][i][0] for p in passes) for i in cached]
    plain_t = [min(p[0][i][1] for p in passes) for i in cached]
    ratios = [m / p for m, p in zip(managed_t, plain_t, strict=True)]
    single = [p[0][i][0] / p[0][i][1] for p in passes for i in cached]
    appends = [a for p in passes for a in p[2]]
    n = len(ratios)
    print(
        f"session: {args.turns} turns, budget {args.budget}, counter {args.counter}, {args.repeats} passes; "
        f"{n} compiles with cached summaries ({len(generating)} compiles generated a summary, not in the ratio)"
    )
    print(
        f"managed compile    median {statistics.median(managed_t) * 1e3:7.2f} ms  "
        f"p90 {pct(managed_t, 0.9) * 1e3:7.2f} ms"
    )
    print(
        f"sliding-window fit median {statistics.median(plain_t) * 1e3:7.2f} ms  p90 {pct(plain_t, 0.9) * 1e3:7.2f} ms"
    )
    print(
        f"ratio managed/plain per turn (fastest of {args.repeats}): median {statistics.median(ratios):.2f}  "
        f"p10 {pct(ratios, 0.1):.2f}  p90 {pct(ratios, 0.9):.2f}  max {max(ratios):.2f}; "
        f"turns over 2x: {sum(r > 2 for r in ratios)}/{n}"
    )
    print(
        f"ratio per single pass (spread from noise): median {statistics.median(single):.2f}  p90 {pct(single, 0.9):.2f}"
    )
    gen = [min(p[0][i][0] for p in passes) for i in sorted(generating)]
    print(f"compiles that generated summaries (extractive): median {statistics.median(gen) * 1e3:.2f} ms  "
          f"p90 {pct(gen, 0.9) * 1e3:.2f} ms")  # fmt: skip
    over = [f"{i}: {r:.1f}x of {p * 1e3:.2f} ms" for i, r, p in zip(cached, ratios, plain_t, strict=True) if r > 2]
    print("turns over 2x (turn index: ratio of the plain fit's time):", ", ".join(over) or "none")
    last = ratios[-max(1, n // 10) :]
    print(
        f"ratio over the last 10% of the session (longest histories): median {statistics.median(last):.2f}  "
        f"max {max(last):.2f}"
    )
    print(
        f"SQLite append: median {statistics.median(appends) * 1e3:.3f} ms  p90 {pct(appends, 0.9) * 1e3:.3f} ms  "
        f"max {max(appends) * 1e3:.3f} ms over {len(appends)} appends"
    )


if __name__ == "__main__":
    main()
