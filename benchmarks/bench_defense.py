"""Defence benchmark: sanitise + detect 1 MB of English prose that does not repeat, beside one tiktoken pass.

Run on purpose: ``PYTHONPATH=. .venv/bin/python benchmarks/bench_defense.py [--runs N]``.  Prints a table;
asserts nothing.

The text is real documentation, not a small vocabulary: Python's own reference topics (``pydoc_data``, shipped
with every CPython), this repository's Markdown, then the stdlib's longer docstrings (200+ characters) until
1 MB, cut into inputs of about 2 KB (the way a compile sees tool results and retrieved documents).
Deterministic for a given Python.

Both sides run in the same process, alternating, in CPU time (``time.process_time``: steadier than wall clock
on a shared machine); reported are the median and the spread of the per-run ratios.  Goal (issue 22): at most
3x one tiktoken ``o200k_base`` encode pass.  A model call takes hundreds of milliseconds to seconds; the
last line puts the figure beside 500 ms for scale.
"""

from __future__ import annotations

import argparse
import ast
import gc
import statistics
import sys
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path

from tokenbox_core.defense import HeuristicDetector, sanitize
from tokenbox_core.defense.prefilter import native_available
from tokenbox_core.tokens import get_counter

ROOT = Path(__file__).resolve().parent.parent
TARGET = 1_000_000
CHUNK = 2_000
MODEL_CALL_MS = 500.0


def prose() -> str:
    """About 1 MB of English documentation prose that does not repeat (see the module docstring)."""
    from pydoc_data.topics import topics

    parts = [topics[k] for k in sorted(topics)]
    parts += [p.read_text(encoding="utf-8") for p in sorted(ROOT.glob("*.md")) + sorted((ROOT / "docs").rglob("*.md"))]
    size = sum(len(p.encode("utf-8")) for p in parts)
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for path in sorted(stdlib.rglob("*.py")):
        if size >= TARGET:
            break
        if {"site-packages", "test", "tests", "idle_test"} & set(path.relative_to(stdlib).parts):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node)
                if doc and len(doc) >= 200:  # prose, not one-line summaries
                    parts.append(doc)
                    size += len(doc.encode("utf-8"))
    return "\n\n".join(parts)


def inputs() -> list[str]:
    """:func:`prose` cut into inputs of about :data:`CHUNK` characters, at line ends."""
    text = prose()
    out: list[str] = []
    start = 0
    while start < len(text):
        end = text.find("\n", start + CHUNK)
        end = len(text) if end < 0 else end + 1
        out.append(text[start:end])
        start = end
    return out


def _cpu(fn: Callable[[], object]) -> float:
    gc.collect()
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    parts = inputs()
    megabytes = sum(len(p.encode("utf-8")) for p in parts) / 1e6
    encoding = get_counter("o200k_base").encoding  # type: ignore[attr-defined]
    detector = HeuristicDetector()
    flagged = sum(detector.detect(p, "retrieval").score >= 0.5 for p in parts)

    def defence() -> None:
        for p in parts:
            detector.detect(sanitize(p), "retrieval")

    def tiktoken_pass() -> None:
        for p in parts:
            encoding.encode_ordinary(p)

    defence()
    tiktoken_pass()
    ours: list[float] = []
    floor: list[float] = []
    for _ in range(args.runs):
        ours.append(_cpu(defence))
        floor.append(_cpu(tiktoken_pass))
    ratios = [a / b for a, b in zip(ours, floor, strict=True)]
    print(
        f"python {sys.version.split()[0]}; {len(parts)} inputs, {megabytes:.2f} MB of documentation prose; "
        f"{flagged} inputs flagged at 0.5; Aho-Corasick prefilter: {'yes' if native_available() else 'no'}"
    )
    print(f"{'CPU ms':<28}{'median':>10}{'min':>10}{'max':>10}")
    for name, xs in (("sanitize + detect", ours), ("tiktoken o200k encode", floor)):
        print(f"{name:<28}{statistics.median(xs) * 1e3:>10.1f}{min(xs) * 1e3:>10.1f}{max(xs) * 1e3:>10.1f}")
    print(
        f"ratio defence / tiktoken: median {statistics.median(ratios):.2f}x, spread {min(ratios):.2f}x-"
        f"{max(ratios):.2f}x over {args.runs} alternating runs (goal <= 3x)"
    )
    per_input = statistics.median(ours) * 1e3 / len(parts)
    print(f"per 2 KB input: {per_input:.3f} ms, beside a {MODEL_CALL_MS:.0f} ms model call")


if __name__ == "__main__":
    main()
