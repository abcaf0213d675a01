"""What every benchmark here shares: CPU-time trials, ratios with their spread, and before/after runs.

A benchmark script defines ``measure(trials) -> Measured``: named *cases*, each a ``prepare()`` that builds
fresh inputs (untimed) and returns the zero-argument call to time.  :func:`trials` times the cases in turn,
in alternating order, ``trials`` times, in CPU time (``time.process_time``: steadier than wall clock when other
processes share the machine).  :func:`main` runs that measurement in fresh subprocesses — alternately against
this checkout and, with ``--baseline PATH``, another checkout (``PYTHONPATH`` and the working directory set to
it), and once per environment *variant* (the ``fast`` counter on and off) — and prints, per case, the median
and min–max in milliseconds, the ratio to its peer or floor measured in the same trial (median and min–max
over the trials) and, with a baseline, this tree's time over the baseline's (per round).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent
"""This checkout (the repository root holding this ``benchmarks/``)."""

MODEL_LATENCY = (
    "For scale (an assumption, not measured here): a hosted model call such as gpt-4o takes roughly 0.2-0.8 s to "
    "its first token on a short prompt and about 1-5 s on a prompt of ~100k tokens, since prefill grows with the "
    "prompt (e.g. ~5 s at 100k tokens for a 70B model on one H100, "
    "https://www.bytebell.ai/blog/prefill-vs-decode-long-context-latency)."
)

Prepare = Callable[[], Callable[[], Any]]
"""Builds a case's inputs (untimed) and returns the call to time."""


@dataclass
class Measured:
    """One process's measurement: CPU milliseconds per case and trial, plus named values (sizes, memory)."""

    ms: dict[str, list[float]]
    values: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Row:
    """A printed row: ``case`` timed, beside ``peer`` (its floor or competitor; None for none)."""

    case: str
    peer: str | None = None


def tiktoken_encoding(name: str = "o200k_base") -> Any:
    """tiktoken's own encoding, loaded offline from the copies llama-index-core ships when no cache is set."""
    if not os.environ.get("TIKTOKEN_CACHE_DIR"):
        for entry in sys.path:
            shipped = Path(entry or ".") / "llama_index" / "core" / "_static" / "tiktoken_cache"
            if shipped.is_dir():
                os.environ["TIKTOKEN_CACHE_DIR"] = str(shipped)
                break
    import tiktoken

    return tiktoken.get_encoding(name)


def cpu_ms(fn: Callable[[], Any]) -> float:
    """CPU milliseconds of one call (after a garbage collection, so the previous case's garbage is not billed)."""
    gc.collect()
    start = time.process_time()
    fn()
    return (time.process_time() - start) * 1000.0


def trials(cases: Mapping[str, Prepare], n: int) -> dict[str, list[float]]:
    """Each case timed ``n`` times, the cases in turn and in reverse order every other trial."""
    out: dict[str, list[float]] = {name: [] for name in cases}
    names = list(cases)
    for trial in range(n):
        for name in names if trial % 2 == 0 else names[::-1]:
            out[name].append(cpu_ms(cases[name]()))
    return out


def _spread(values: Sequence[float], digits: int = 1, unit: str = "") -> str:
    return f"{statistics.median(values):.{digits}f}{unit} [{min(values):.{digits}f}-{max(values):.{digits}f}]"


def _ratios(a: Sequence[float], b: Sequence[float]) -> list[float]:
    return [x / y for x, y in zip(a, b, strict=True) if y > 0]


# --------------------------------------------------------------------------- running in subprocesses


def _measure_in(tree: Path, env: Mapping[str, str], script: str, trials_per_round: int) -> dict[str, Any]:
    """``script --json`` in a fresh process against ``tree``: its parsed output."""
    environment = {**os.environ, **env, "PYTHONPATH": str(tree), "TOKENBOX_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, script, "--json", "--trials", str(trials_per_round)],
        env=environment,
        cwd=tree,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"{script} failed against {tree}:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _merge(runs: list[dict[str, Any]]) -> Measured:
    ms: dict[str, list[float]] = {}
    for run in runs:
        for case, values in run["ms"].items():
            ms.setdefault(case, []).extend(values)
    return Measured(ms, runs[-1]["values"])


def _print_tree(label: str, measured: Measured, rows: Sequence[Row]) -> None:
    print(f"  {label}")
    print(f"    {'case':<38}{'ms median [min-max]':>26}   {'x peer median [min-max]':<28}peer")
    for row in rows:
        values = measured.ms[row.case]
        ratio = ""
        if row.peer is not None:
            ratio = _spread(_ratios(values, measured.ms[row.peer]), 2, "x")
        print(f"    {row.case:<38}{_spread(values):>26}   {ratio:<28}{row.peer or ''}")
    for name, value in measured.values.items():
        shown = f"{value:,.2f}" if isinstance(value, float) else f"{value:,}" if isinstance(value, int) else value
        print(f"    {name}: {shown}")


def main(
    title: str,
    measure: Callable[[int], Measured],
    rows: Sequence[Row],
    *,
    variants: Mapping[str, Mapping[str, str]] | None = None,
    describe: Callable[[], str] | None = None,
) -> None:
    """The command line of a benchmark script (see the module docstring).

    ``variants``: environment settings each measured separately, by label (default: one, unchanged).
    ``describe``: a line about the material, printed once (run in this process).
    """
    parser = argparse.ArgumentParser(description=title)
    parser.add_argument("--baseline", type=Path, help="another checkout of the repository to measure against")
    parser.add_argument("--rounds", type=int, default=3, help="fresh processes per tree and variant (default 3)")
    parser.add_argument("--trials", type=int, default=3, help="trials per process (default 3)")
    parser.add_argument("--json", action="store_true", help="measure in this process and print JSON (internal)")
    args = parser.parse_args()
    if args.json:
        import tokenbox_core

        result = measure(args.trials)
        tree = str(Path(tokenbox_core.__file__).resolve().parent.parent)
        print(json.dumps({"tree": tree, "ms": result.ms, "values": result.values}))
        return
    script = str(Path(sys.argv[0]).resolve())
    trees = {"this tree": HERE}
    if args.baseline is not None:
        trees = {"baseline": args.baseline.resolve(), "this tree": HERE}
    variants = variants or {"": {}}
    print(title)
    if describe is not None:
        print(describe())
    print(
        f"python {sys.version.split()[0]}; {args.rounds} rounds x {args.trials} trials per tree and variant, "
        f"each round a fresh process per tree (alternating which goes first); CPU time (process_time)"
    )
    for variant, env in variants.items():
        runs: dict[str, list[dict[str, Any]]] = {label: [] for label in trees}
        for r in range(args.rounds):
            order = list(trees) if r % 2 == 0 else list(trees)[::-1]
            for label in order:
                runs[label].append(_measure_in(trees[label], env, script, args.trials))
        print()
        print(f"variant: {variant}" if variant else "results:")
        merged = {label: _merge(done) for label, done in runs.items()}
        for label, measured in merged.items():
            _print_tree(f"{label} ({runs[label][0]['tree']})", measured, rows)
        if "baseline" in runs:
            print("  this tree / baseline, per round (median of its trials), median [min-max]:")
            for row in rows:
                per_round = [
                    statistics.median(new["ms"][row.case]) / statistics.median(old["ms"][row.case])
                    for old, new in zip(runs["baseline"], runs["this tree"], strict=True)
                ]
                print(f"    {row.case:<38}{_spread(per_round, 2, 'x'):>26}")
    print()
    print(MODEL_LATENCY)
