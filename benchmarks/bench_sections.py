"""Construction cost of 10,000 Sections and 10,000 Items: this tree against a baseline tree, side by side.

Run on purpose (not a test):

    PYTHONPATH=. python benchmarks/bench_sections.py --baseline /path/to/other/checkout [--rounds 9]

Each round times both trees in fresh subprocesses, alternating which goes first,
and the report gives per-tree medians, the spread (min-max) and the ratio of
medians (this tree / baseline), because the machine is noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

WORKLOAD = r"""
import json, time
from tokenbox_core import Item, Section
def sections():
    t = time.perf_counter()
    for i in range(10_000):
        Section(f"s{i}", "some text here", priority=i % 5, shrink=1, strategy=("whitespace", "truncate_tail"),
                omission_marker="[{count} omitted: {ids}]")
    return time.perf_counter() - t
def items():
    t = time.perf_counter()
    for i in range(10_000):
        Item(f"i{i}", "x", score=0.5, tags=("a",), kind="Document")
    return time.perf_counter() - t
sections(); items()  # warm up
print(json.dumps({"sections": min(sections() for _ in range(3)), "items": min(items() for _ in range(3))}))
"""


def _run(tree: str) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=tree)
    out = subprocess.run([sys.executable, "-c", WORKLOAD], env=env, capture_output=True, text=True, check=True)
    result: dict[str, float] = json.loads(out.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="a checkout of the baseline (e.g. the main branch)")
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    runs: dict[str, list[dict[str, float]]] = {"this": [], "baseline": []}
    for r in range(args.rounds):
        order = [("this", here), ("baseline", args.baseline)]
        for name, tree in order if r % 2 == 0 else reversed(order):
            runs[name].append(_run(tree))
    for what in ("sections", "items"):
        med = {k: statistics.median(x[what] for x in v) * 1000 for k, v in runs.items()}
        spread = {k: (min(x[what] for x in v) * 1000, max(x[what] for x in v) * 1000) for k, v in runs.items()}
        print(
            f"10,000 {what:<8}  this {med['this']:7.1f} ms ({spread['this'][0]:.1f}-{spread['this'][1]:.1f})   "
            f"baseline {med['baseline']:7.1f} ms ({spread['baseline'][0]:.1f}-{spread['baseline'][1]:.1f})   "
            f"ratio {med['this'] / med['baseline']:.2f}"
        )


if __name__ == "__main__":
    main()
