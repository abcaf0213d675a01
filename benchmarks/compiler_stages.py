"""The compiler's cost by step, in CPU time, cold / warm / next turn (issue 11) — run on purpose, asserts nothing.

``PYTHONPATH=.:benchmarks .venv/bin/python benchmarks/compiler_stages.py [--trials N]``

``bench_compiler.py``'s stage table comes from the trace's wall-clock laps, which mean little on a busy
machine; this one wraps the functions ``compiler.py`` calls (and a few inside them) and adds up the CPU time
(``time.process_time``) spent in each, on the bench's material.  Nested entries are part of their parent
(``history_sections`` of ``build_plan``, ``finish`` of ``_conversation`` of ``assemble``, ``_segments`` and
``find_duplicates`` of ``compress_references``, ``_shingled_many`` — words, ids, sketches — of ``find_duplicates``,
``sketches`` — numpy — of ``_shingled_many``).  Phases as in ``bench_compiler.py``: cold (fresh material, every
memo cleared, a new compiler), warm (the same compile again), next (the following turn).  Prints the median of
each.  To compare two trees, run it with each on ``PYTHONPATH``, alternating.
"""

from __future__ import annotations

import argparse
import functools
import gc
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_compiler as bench

from tokenbox_core import CompilerConfig, ContextCompiler
from tokenbox_core.compiler import assemble as assemble_module
from tokenbox_core.compiler import build as build_module
from tokenbox_core.compiler import compiler as compiler_module
from tokenbox_core.compiler import refs as refs_module
from tokenbox_core.compiler import shingles as shingles_module
from tokenbox_core.compiler.refs import clear_caches
from tokenbox_core.tokens import COUNT_CACHE, get_counter

_SPENT: dict[str, float] = {}
_STEPS = {
    compiler_module: (
        "collect",
        "input_hash",
        "filter_candidates",
        "rank_candidates",
        "build_plan",
        "compress_references",
        "compress",
        "assemble",
        "compute_metrics",
        "output_hash",
        "check_invariants",
    ),
    build_module: ("history_sections",),
    assemble_module: ("_conversation",),
    refs_module: ("_segments", "find_duplicates"),
    shingles_module: ("_shingled_many", "sketches"),
}


def _wrap(owner: Any, name: str) -> None:
    inner = getattr(owner, name)

    @functools.wraps(inner)
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            _SPENT[name] = _SPENT.get(name, 0.0) + time.process_time() - start

    setattr(owner, name, timed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5)
    args = parser.parse_args()
    for owner, names in _STEPS.items():
        for name in names:
            _wrap(owner, name)
    _wrap(assemble_module.ConversationSections, "finish")
    _wrap(compiler_module.ContextCompiler, "_count")
    counter = get_counter("o200k_base")
    config = CompilerConfig(clock=bench.NOW, constraint_density_limit=None)
    phases = ("cold", "warm", "next")
    spent: dict[str, dict[str, list[float]]] = {phase: {} for phase in phases}
    for _ in range(args.trials):
        data = bench.material()
        COUNT_CACHE.clear()
        clear_caches()
        compiler = ContextCompiler(bench.BUDGET, counter=counter, config=config)
        for phase in phases:
            turn = bench.next_turn(data) if phase == "next" else data
            _SPENT.clear()
            gc.collect()
            start = time.process_time()
            compiler.compile(**turn)
            _SPENT["TOTAL"] = time.process_time() - start
            for name, seconds in _SPENT.items():
                spent[phase].setdefault(name, []).append(seconds * 1000)
    for phase, steps in spent.items():
        print(f"{phase} (median CPU ms): " + ", ".join(f"{k} {statistics.median(v):.1f}" for k, v in steps.items()))


if __name__ == "__main__":
    main()
