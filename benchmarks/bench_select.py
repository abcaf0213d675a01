"""Selection pipeline benchmark: composite (recency + priority) -> greedy -> U-shaped.

Run on purpose: ``.venv/bin/python benchmarks/bench_select.py``.  Prints a table; asserts nothing.

The spec writes RecencyScorer and PriorityScorer as O(N^2) loops; ours rank by
sort + binary search (O(N log N)).  For contrast the table also times a
literal O(N^2) transcription of the spec's recency loop where it finishes in
reasonable time (500 and 5,000 items), and checks that both give identical scores.
"""

from __future__ import annotations

import random
import time
from datetime import datetime, timedelta, timezone

from tokenbox_core import ContextBudget, Item
from tokenbox_core.select import (
    CompositeScorer,
    GreedySlicer,
    PriorityScorer,
    RecencyScorer,
    SelectionPolicy,
    UShapedPlacer,
)
from tokenbox_core.testing.cupel import reference_recency

SIZES = (500, 5_000, 50_000)
START = datetime(2024, 1, 1, tzinfo=timezone.utc)


def make_items(n: int, seed: int = 7) -> list[Item]:
    rng = random.Random(seed)
    return [
        Item(
            id=f"item-{i}",
            content=f"item {i} body {rng.random():.6f}",
            tokens=rng.randint(20, 400),
            priority=rng.randint(0, 9),
            timestamp=START + timedelta(minutes=rng.randint(0, 500_000)),
        )
        for i in range(n)
    ]


def best_of(fn: object, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    policy = SelectionPolicy(
        CompositeScorer([(RecencyScorer(), 1.0), (PriorityScorer(), 1.0)]), GreedySlicer(), UShapedPlacer()
    )
    print("composite(recency + priority) -> greedy -> U-shaped; budget = 25% of the candidates' tokens")
    print(f"{'items':>8} {'pipeline s':>11} {'items/s':>12} {'selected':>9} {'spec recency s':>15} {'identical':>10}")
    for n in SIZES:
        items = make_items(n)
        budget = ContextBudget(max_tokens=sum(it.tokens or 0 for it in items) // 4)
        repeat = 5 if n <= 5_000 else 3
        seconds = best_of(lambda items=items, budget=budget: policy.select(items, budget), repeat)
        selected = len(policy.select(items, budget).items)
        if n <= 5_000:
            spec_seconds = best_of(lambda items=items: reference_recency(items), 1)
            same = reference_recency(items) == RecencyScorer().scores(items)
            spec_col, same_col = f"{spec_seconds:15.3f}", str(same)
        else:
            spec_col, same_col = f"{'(skipped)':>15}", "-"
        print(f"{n:>8,} {seconds:11.3f} {n / seconds:12,.0f} {selected:>9,} {spec_col} {same_col:>10}")
    print("best of 3-5 runs per size; the machine is shared, so expect some noise")


if __name__ == "__main__":
    main()
