"""The batch runner: ``run_tasks`` on an engine, and ``compile_batch`` from a spec file to a records file."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tokenbox_core.batch._files import SpecTask, read_specs, write_records
from tokenbox_core.batch._local import TaskFn, run_local
from tokenbox_core.batch._records import SpecCompiler
from tokenbox_core.errors import TokenBoxError

__all__ = ["BatchError", "BatchSummary", "Engine", "compile_batch", "run_tasks"]

Engine = Literal["local", "ray"]
ENGINES: tuple[str, ...] = ("local", "ray")


class BatchError(TokenBoxError, ValueError):
    """A batch request that cannot run as asked (an unknown engine, an address without Ray)."""


@dataclass(frozen=True)
class BatchSummary:
    """What a batch did: how many specs, how many laid out, how many failed, the tokens laid out in total."""

    records: int
    ok: int
    failed: int
    total_tokens: int


def run_tasks(
    tasks: Sequence[SpecTask], fn: TaskFn, *, engine: Engine = "local", jobs: int = 1, address: str | None = None
) -> Iterator[dict[str, Any]]:
    """``fn`` over ``tasks``, results in input order, on the chosen engine (``fn`` must be picklable)."""
    if engine == "local":
        if address:
            raise BatchError(f"address {address!r} names a Ray cluster: use it with engine 'ray' (--engine ray)")
        return run_local(tasks, fn, jobs)
    if engine == "ray":
        from tokenbox_core.batch._ray_engine import run_ray

        return run_ray(tasks, fn, jobs=jobs, address=address)
    raise BatchError(f"unknown engine {engine!r}; expected one of {', '.join(ENGINES)}")


def compile_batch(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    engine: Engine = "local",
    jobs: int = 1,
    address: str | None = None,
) -> BatchSummary:
    """Compile every spec in ``source`` (JSONL or Parquet) and write one record each to ``output``.

    Records are in input order and identical, byte for byte, whatever the
    engine and the number of workers.  A spec that fails is an error record
    (``ok: false``, ``line``, ``error``, ``input``), never a lost one.

    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> src, out = folder / "specs.jsonl", folder / "out.jsonl"
    >>> _ = src.write_text('{"budget": 9, "counter": "whitespace", "sections": '
    ...     '[{"id": "a", "content": "one two"}]}\\nnot json\\n')
    >>> compile_batch(src, out)
    BatchSummary(records=2, ok=1, failed=1, total_tokens=2)
    """
    tasks = read_specs(source)
    counts = {"ok": 0, "failed": 0, "tokens": 0}

    def tally(results: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for record in results:
            if record.get("ok"):
                counts["ok"] += 1
                counts["tokens"] += int(record["total_tokens"])
            else:
                counts["failed"] += 1
            yield record

    written = write_records(tally(run_tasks(tasks, SpecCompiler, engine=engine, jobs=jobs, address=address)), output)
    if written != len(tasks):
        raise RuntimeError(f"wrote {written} records for {len(tasks)} specs")
    return BatchSummary(records=written, ok=counts["ok"], failed=counts["failed"], total_tokens=counts["tokens"])
