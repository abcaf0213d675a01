"""Reading batches of specs and writing batches of results: JSON lines or Parquet (issue 16 §2).

A batch is a list of :data:`SpecTask` ``(line, text, source)``: ``line`` is
the 1-based line of a JSONL file (blank lines are skipped but keep their
numbers) or the 1-based row of a Parquet file, ``text`` is the spec as JSON.
Results are written in input order, one JSON object per line (canonical:
sorted keys, no spaces), or as a Parquet table with the same fields.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from typing import Any

from tokenbox_core.spec import SpecError, read_text

__all__ = ["SpecTask", "read_specs", "record_json", "write_records"]

SpecTask = tuple[int, str, str]
"""One spec of a batch: (line or row number, the spec as JSON text, the source file name)."""

JSONL_SUFFIXES = (".jsonl", ".ndjson")
PARQUET_SUFFIXES = (".parquet", ".pq")
RECORD_FIELDS = (
    "line",
    "ok",
    "name",
    "fingerprint",
    "total_tokens",
    "max_tokens",
    "statuses",
    "removed",
    "messages",
    "error",
    "input",
)
"""The Parquet columns of a result record (``messages`` and ``statuses`` hold canonical JSON text there)."""


def _pyarrow(what: str) -> Any:
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError as exc:
        raise SpecError(
            f"{what}: Parquet needs pyarrow, which the optional extra 'ray' installs: "
            f'pip install "tokenbox-context[ray]" (or use a .jsonl file)'
        ) from exc
    return pyarrow


def read_specs(path: str | os.PathLike[str]) -> list[SpecTask]:
    """The specs of a JSONL file (one JSON spec per line) or a Parquet file.

    A Parquet file holds either a ``spec`` column of JSON text or one spec per
    row in its columns (``sections``, ``budget``, ...).

    Raises:
        SpecError: the file cannot be read, is not UTF-8, or holds no spec.
    """
    name = os.fspath(path)
    if name.lower().endswith(PARQUET_SUFFIXES):
        pa = _pyarrow(name)
        try:
            table = pa.parquet.read_table(name)
        except (OSError, pa.ArrowException) as exc:
            raise SpecError(f"{name}: cannot read as Parquet ({exc})") from None
        rows = table.to_pylist()
        if "spec" in table.column_names:
            texts = [row["spec"] if isinstance(row["spec"], str) else json.dumps(row["spec"]) for row in rows]
        else:
            texts = [json.dumps(row, ensure_ascii=False) for row in rows]
        tasks = [(n, text, name) for n, text in enumerate(texts, start=1)]
    else:
        text = read_text(name)
        tasks = [(n, line, name) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if not tasks:
        raise SpecError(f"{name}: no specs in the file (expected one JSON spec per line, or Parquet rows)")
    return tasks


def record_json(record: Mapping[str, Any]) -> str:
    """A result record as canonical JSON (sorted keys, no spaces, UTF-8 kept): byte-identical on every engine."""
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def write_records(records: Iterable[Mapping[str, Any]], path: str | os.PathLike[str]) -> int:
    """Write records in the order given to ``path`` (``.parquet``: a table; else JSON lines); returns how many."""
    name = os.fspath(path)
    if name.lower().endswith(PARQUET_SUFFIXES):
        pa = _pyarrow(name)
        rows = []
        for record in records:
            row = {key: record.get(key) for key in RECORD_FIELDS}
            for key in ("messages", "statuses"):
                if row[key] is not None:
                    row[key] = record_json({"v": row[key]})[5:-1]
            rows.append(row)
        schema = pa.schema(
            [
                ("line", pa.int64()),
                ("ok", pa.bool_()),
                ("name", pa.string()),
                ("fingerprint", pa.string()),
                ("total_tokens", pa.int64()),
                ("max_tokens", pa.int64()),
                ("statuses", pa.string()),
                ("removed", pa.int64()),
                ("messages", pa.string()),
                ("error", pa.string()),
                ("input", pa.string()),
            ]
        )
        pa.parquet.write_table(pa.Table.from_pylist(rows, schema=schema), name)
        return len(rows)
    written = 0
    with open(name, "w", encoding="utf-8", newline="\n") as fh:
        for record in records:
            fh.write(record_json(record) + "\n")
            written += 1
    return written
