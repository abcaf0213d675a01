"""Batches on this machine: serially, or in worker processes that start once and take chunks (issue 16 §2).

Spawning a worker costs about a second here (it imports the engine and loads
a tokenizer), more than laying out hundreds of small specs; ``--jobs`` used
to be slower than serial on this 2-core machine.  So work is cut into a few
contiguous chunks per worker (start-up and the per-call overhead are paid per
worker and per chunk, not per spec), each worker keeps its own stateful
callable for the whole run, and a batch too small to repay the start-up
(:func:`plan_workers`) stays serial whatever ``jobs`` says.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

__all__ = ["MIN_PARALLEL_CHARS", "TaskFn", "plan_workers", "run_local"]

TaskFn = Callable[[tuple[int, str, str]], dict[str, Any]] | type
"""A function of one task, or a class whose instances are (made once per worker, e.g. ``SpecCompiler``)."""

MIN_PARALLEL_CHARS = 16_000_000
"""Below this much spec text (~4M tokens, ~9 s of serial work here) a batch runs serially: start-up would dominate."""
CHUNKS_PER_WORKER = 4

_worker_fn: Callable[[tuple[int, str, str]], dict[str, Any]] | None = None


def instantiate(fn: TaskFn) -> Callable[[tuple[int, str, str]], dict[str, Any]]:
    """The per-worker callable: a class is instantiated once, a function is used as it is."""
    made: Callable[[tuple[int, str, str]], dict[str, Any]] = fn() if isinstance(fn, type) else fn
    return made


def plan_workers(tasks: Sequence[tuple[int, str, str]], jobs: int) -> int:
    """How many worker processes a batch gets: 1 (serial) unless it is big enough to repay their start-up.

    >>> plan_workers([(1, "{}", "x")] * 10, jobs=4)
    1
    >>> plan_workers([(1, "x" * 1_000_000, "x")] * 40, jobs=4)
    4
    """
    if jobs <= 1 or len(tasks) < 2:
        return 1
    chars = sum(len(t[1]) for t in tasks)
    if chars < MIN_PARALLEL_CHARS:
        return 1
    return min(jobs, len(tasks), max(2, chars // max(1, MIN_PARALLEL_CHARS // 4)))  # >= a quarter of it each


def _init_worker(fn: TaskFn) -> None:
    global _worker_fn
    _worker_fn = instantiate(fn)


def _run_chunk(chunk: Sequence[tuple[int, str, str]]) -> list[dict[str, Any]]:
    assert _worker_fn is not None
    return [_worker_fn(task) for task in chunk]


def run_local(tasks: Sequence[tuple[int, str, str]], fn: TaskFn, jobs: int = 1) -> Iterator[dict[str, Any]]:
    """Results of ``fn`` over ``tasks`` in input order, serially or on up to ``jobs`` worker processes."""
    workers = plan_workers(tasks, jobs)
    if workers == 1:
        call = instantiate(fn)
        for task in tasks:
            yield call(task)
        return
    import multiprocessing

    size = math.ceil(len(tasks) / (workers * CHUNKS_PER_WORKER))
    chunks = [tasks[i : i + size] for i in range(0, len(tasks), size)]
    # spawn, not fork: forking a process that may hold threads (tokenizer pools) is unsafe.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_init_worker, initargs=(fn,)) as pool:
        for results in pool.map(_run_chunk, chunks):  # in input order
            yield from results
