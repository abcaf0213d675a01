"""``tokenbox layout FILE.jsonl``: many specs, one per line, in parallel, reported in input order."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator
from typing import Any, TextIO

from tokenbox_core.cli._commands import EXIT_BAD_INPUT, EXIT_OK, one_line, status_counts
from tokenbox_core.cli._parser import UsageError
from tokenbox_core.errors import SpecError, TokenBoxError
from tokenbox_core.spec import loads_spec, read_text

__all__ = ["cmd_layout_batch"]


def _layout_one(task: tuple[int, str, str]) -> dict[str, Any]:
    """Lay out one spec of a batch (runs in a worker process; returns plain data, never raises).

    Every failure is reported against its line, whatever raised it, so that one
    bad record never stops the batch.
    """
    line_no, text, source = task
    where = f"{source} line {line_no}"
    try:
        spec = loads_spec(text, fmt="json", source=where)
        layout = spec.layout()
        summary = (
            f"{layout.total_tokens:,} / {layout.max_tokens:,} tokens ({layout.utilisation:.1%}) · "
            f"{status_counts(layout.sections)} · {len(layout.removed)} items removed · fingerprint "
            f"{layout.fingerprint[:12]}"
        )
        rendered = layout.to_json()
    except Exception as exc:
        message = (
            one_line(str(exc)) if isinstance(exc, TokenBoxError) else f"{type(exc).__name__}: {one_line(str(exc))}"
        )
        if not message.startswith(where):
            message = f"{where}: {message}"
        return {"line": line_no, "ok": False, "error": message}
    return {
        "line": line_no,
        "ok": True,
        "name": spec.name,
        "summary": summary,
        "total_tokens": layout.total_tokens,
        "json": rendered,
    }


def _batch_tasks(path: str) -> list[tuple[int, str, str]]:
    text = read_text(path)
    tasks = [(n, line, path) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if not tasks:
        raise SpecError(f"{path}: no specs in the file (expected one JSON spec per line)")
    return tasks


def _run_batch(tasks: list[tuple[int, str, str]], args: argparse.Namespace) -> Iterator[dict[str, Any]]:
    """Local processes in chunks (serial when the batch is small) or Ray Data (tokenbox_core.batch)."""
    from tokenbox_core.batch import run_tasks

    return run_tasks(tasks, _layout_one, engine=args.engine, jobs=args.jobs, address=args.address)


def cmd_layout_batch(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Lay out every spec of a JSON-lines file; results in input order, a tqdm progress bar on a terminal."""
    from tqdm import tqdm

    if args.html:
        raise UsageError("--html works with one spec, not a batch; run tokenbox layout on one spec for a report")
    tasks = _batch_tasks(args.spec)
    # tqdm draws rate and ETA on stderr, only when stderr is a terminal (never into piped output)
    progress = tqdm(total=len(tasks), file=err, unit="spec", disable=not err.isatty(), dynamic_ncols=True)
    started = time.perf_counter()
    ok = failed = tokens = 0
    try:
        for result in _run_batch(tasks, args):
            progress.update()
            if result["ok"]:
                ok += 1
                tokens += result["total_tokens"]
                if args.json:
                    out.write(
                        f'{{"line":{result["line"]},"name":{json.dumps(result["name"])},"ok":true,'
                        f'"layout":{result["json"]}}}\n'
                    )
                else:
                    label = f" {result['name']}" if result["name"] else ""
                    out.write(f"line {result['line']}{label}: {result['summary']}\n")
            else:
                failed += 1
                if args.json:
                    out.write(json.dumps({"line": result["line"], "ok": False, "error": result["error"]}) + "\n")
                progress.write(f"tokenbox: error: {result['error']}", file=err)
    finally:
        progress.close()
    elapsed = time.perf_counter() - started
    err.write(
        f"summary: {len(tasks)} specs, {ok} laid out, {failed} failed, {tokens:,} tokens in total "
        f"({args.jobs} job{'s' if args.jobs != 1 else ''}, {elapsed:.2f} s)\n"
    )
    return EXIT_BAD_INPUT if failed else EXIT_OK
