"""Batches on Ray Data: a stateful callable class per worker, results streamed back in input order (issue 16 §2).

The driver reads the specs (so every spec keeps its line number, and a line
that is not even JSON becomes an error record rather than a failed read),
hands them to Ray Data in blocks, and ``map_batches`` runs them on a pool of
actors, each holding one per-worker callable (``SpecCompiler``: one counter
and box per worker, nothing re-loaded per record).  Each result travels back
as a JSON string, so records of any shape cross Arrow blocks unchanged;
the driver restores input order and checks that every task came back.

Without ``address`` a local Ray instance is started (``num_cpus=jobs``) and
shut down afterwards; with one (``ray://head:10001`` or ``auto``) the batch
runs on that cluster, whose workers need ``tokenbox-context`` installed.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from tokenbox_core.batch._local import TaskFn, instantiate
from tokenbox_core.errors import TokenBoxError

__all__ = ["RayUnavailable", "run_ray"]

TASKS_PER_BLOCK = 256


class RayUnavailable(TokenBoxError, ImportError):
    """Ray (the optional extra ``ray``) is not installed."""


def _ray() -> Any:
    try:
        import ray
        import ray.data
    except ImportError as exc:
        raise RayUnavailable(
            "batch compilation on Ray needs the optional extra 'ray': pip install \"tokenbox-context[ray]\""
        ) from exc
    return ray


class _Worker:
    """The Ray Data callable class: built once per actor, then called once per block of tasks."""

    def __init__(self, fn: TaskFn) -> None:
        self.call: Callable[[tuple[int, str, str]], dict[str, Any]] = instantiate(fn)

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        out = [
            json.dumps(self.call((int(line), str(text), str(source))), ensure_ascii=False)
            for line, text, source in zip(batch["line"], batch["text"], batch["source"], strict=True)
        ]
        return {"i": batch["i"], "out": out}


def run_ray(
    tasks: Sequence[tuple[int, str, str]], fn: TaskFn, *, jobs: int = 2, address: str | None = None
) -> Iterator[dict[str, Any]]:
    """Results of ``fn`` over ``tasks`` in input order, computed by ``jobs`` Ray actors.

    Raises:
        RayUnavailable: the ``ray`` extra is not installed.
        RuntimeError: a task came back twice or not at all (never silently lost).
    """
    ray = _ray()
    started_here = False
    if not ray.is_initialized():
        quiet = {"log_to_driver": False, "logging_level": logging.WARNING}
        if address:
            ray.init(address=address, **quiet)
        else:
            ray.init(num_cpus=jobs, include_dashboard=False, **quiet)
        started_here = True
    try:
        yield from _run(ray, tasks, fn, jobs)
    finally:
        if started_here:
            ray.shutdown()


def _run(ray: Any, tasks: Sequence[tuple[int, str, str]], fn: TaskFn, jobs: int) -> Iterator[dict[str, Any]]:
    import numpy as np

    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    context.execution_options.preserve_order = True
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    items = [{"i": i, "line": t[0], "text": t[1], "source": t[2]} for i, t in enumerate(tasks)]
    per_block = max(1, min(TASKS_PER_BLOCK, math.ceil(len(items) / (4 * max(1, jobs)))))  # >= 4 blocks per actor
    blocks = max(1, math.ceil(len(items) / per_block))
    dataset = ray.data.from_items(items, override_num_blocks=blocks)
    dataset = dataset.map_batches(
        _Worker,
        fn_constructor_args=(fn,),
        batch_size=per_block,
        batch_format="numpy",
        compute=ray.data.ActorPoolStrategy(size=max(1, min(jobs, blocks))),
        num_cpus=1,
    )
    pending: dict[int, str] = {}
    expected = 0
    for batch in dataset.iter_batches(batch_size=per_block, batch_format="numpy"):
        for i, out in zip(np.asarray(batch["i"]).tolist(), batch["out"], strict=True):
            if i in pending or i < expected:
                raise RuntimeError(f"Ray returned task {i} (line {tasks[i][0]}) twice")
            pending[i] = str(out)
        while expected in pending:
            yield json.loads(pending.pop(expected))
            expected += 1
    if expected != len(tasks) or pending:
        missing = len(tasks) - expected
        raise RuntimeError(f"Ray returned {expected} of {len(tasks)} results in order ({missing} missing)")
