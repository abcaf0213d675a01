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
import hashlib
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_compiler as bench

from tokenbox_core import CompilerConfig, ContextCompiler, TokenBox
from tokenbox_core.compiler import assemble as assemble_module
from tokenbox_core.compiler import build as build_module
from tokenbox_core.compiler import compiler as compiler_module
from tokenbox_core.compiler import refs as refs_module
from tokenbox_core.compiler import shingles as shingles_module
from tokenbox_core.compiler import trace as trace_module
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


def _captured(counter: Any, config: CompilerConfig) -> tuple[list[str], list[bytes]]:
    """The texts one cold compile gives the duplicate finder, and the bytes of its two hash streams."""
    texts: list[str] = []
    streams: list[bytes] = []
    find, digest = shingles_module.find_duplicates, trace_module.digest

    def spy_find(batch: Any, *args: Any) -> Any:
        texts.extend(batch)
        return find(batch, *args)

    def spy_digest(chunks: list[bytes]) -> str:
        streams.append(b"".join(chunks))
        return digest(chunks)

    refs_module.find_duplicates, trace_module.digest = spy_find, spy_digest
    try:
        COUNT_CACHE.clear()
        clear_caches()
        ContextCompiler(bench.BUDGET, counter=counter, config=config).compile(**bench.material())
    finally:
        refs_module.find_duplicates, trace_module.digest = find, digest
    return texts, streams


def floor(trials: int) -> None:
    """Cold CPU ms of the layout peer, the compile (default and exact-only) and the parts of the compile's own
    work that no implementation of it can skip: one pass over the duplicate finder's texts for words, their
    word ids, the numpy shingle sketches, and sha256 over the input and output hash streams.  The compile's
    counting, conversation build and Token Box are the layout's own work (the peer does them too)."""
    counter = get_counter("o200k_base")
    config = CompilerConfig(clock=bench.NOW, constraint_density_limit=None)
    exact = CompilerConfig(clock=bench.NOW, constraint_density_limit=None, near_duplicates=False)
    texts, streams = _captured(counter, config)
    # a text's word ids: packed bytes on this tree, int tuples on older ones
    pack = getattr(shingles_module, "_packed", None) or shingles_module._word_ids
    words = shingles_module._words
    rows: dict[str, list[float]] = {}

    runs: dict[str, Any] = {  # each run starts with every cache cleared (untimed)
        "layout (peer)": lambda data, _: TokenBox(bench.BUDGET, counter=counter).layout(bench.peer_sections(data)),
        "compile": lambda data, _: ContextCompiler(bench.BUDGET, counter=counter, config=config).compile(**data),
        "compile, exact-only": lambda data, _: ContextCompiler(bench.BUDGET, counter=counter, config=exact).compile(
            **data
        ),
        "words (split)": lambda _, fresh: [words(t) for t in fresh],
        "words + ids": lambda _, fresh: [pack(words(t)) for t in fresh],
        "words + ids + sketches": lambda _, fresh: shingles_module._shingled_many(fresh, 3),
        "duplicate scan (all)": lambda _, fresh: shingles_module.find_duplicates(fresh, 0.9, 3),
        "sha256 of the hash streams": lambda *_: [hashlib.sha256(s).hexdigest() for s in streams],
    }
    for trial in range(trials):
        for name in list(runs) if trial % 2 == 0 else list(reversed(runs)):
            data = bench.material()  # fresh objects and strings (no kept renderings, no cached hashes)
            fresh = [t.encode().decode() for t in texts]
            COUNT_CACHE.clear()
            clear_caches()
            rows.setdefault(name, []).append(bench.timed(lambda r=runs[name], d=data, f=fresh: r(d, f))[0] * 1000)
    layout = statistics.median(rows["layout (peer)"])
    print(
        f"{len(texts)} texts, {sum(map(len, texts)):,} characters to the duplicate finder; hash streams "
        + " + ".join(f"{len(s):,}" for s in streams)
        + " bytes"
    )
    print(f"{'cold, CPU ms':<30}{'median':>8}{'min':>8}{'max':>8}{'x layout':>10}")
    for name, values in rows.items():
        mid = statistics.median(values)
        print(f"{name:<30}{mid:>8.1f}{min(values):>8.1f}{max(values):>8.1f}{mid / layout:>10.2f}")
    floor_ms = (
        layout
        + statistics.median(rows["words + ids + sketches"])
        + statistics.median(rows["sha256 of the hash streams"])
    )
    print(
        f"floor with near-duplicates (layout + words, ids, sketches + sha256): {floor_ms:.1f} ms, "
        f"{floor_ms / layout:.2f}x the layout"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--floor", action="store_true", help="the unavoidable parts of a cold compile (see floor())")
    args = parser.parse_args()
    if args.floor:
        floor(args.trials)
        return
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
