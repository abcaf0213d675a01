"""Structured-data compression (chapter §6.12.3): schema-aware filtering, aggregation, sampling.

Each step is deterministic and says what it left out.  :func:`fit_table` chains
them toward a token target: keep the requested columns and rows, render in the
cheapest lossless format, and if still over, keep an evenly spaced sample with
a note of the full size ("showing 40 of 10,000 rows ...").
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tokenbox_core.errors import LensError
from tokenbox_core.structured._render import FORMATS, Format, Rendering, cheapest
from tokenbox_core.tokens import TokenCounter, get_counter

__all__ = ["TableFit", "aggregate", "fit_table", "sample_rows", "select_columns", "select_rows"]

Row = Mapping[str, Any]


def _rows(rows: object) -> list[Row]:
    if not isinstance(rows, Sequence) or isinstance(rows, str) or not all(isinstance(r, Mapping) for r in rows):
        raise LensError("expected a list of records (dicts); wrap a single record in a list")
    return list(rows)


def select_columns(rows: Sequence[Row], columns: Sequence[str]) -> list[dict[str, Any]]:
    """Keep only ``columns`` (in that order); a column no row has is an error naming the known ones."""
    data = _rows(rows)
    known = list(dict.fromkeys(k for r in data for k in r))
    missing = [c for c in columns if c not in known]
    if missing:
        raise LensError(f"unknown columns {missing}; the records have {known}")
    return [{c: r.get(c) for c in columns} for r in data]


def select_rows(rows: Sequence[Row], keep: Callable[[Row], bool]) -> list[Row]:
    """The rows for which ``keep(row)`` is true, in order."""
    return [r for r in _rows(rows) if keep(r)]


def sample_rows(rows: Sequence[Row], n: int) -> list[Row]:
    """``n`` evenly spaced rows, first and last included (deterministic; no random sampling).

    >>> [r["i"] for r in sample_rows([{"i": i} for i in range(10)], 4)]
    [0, 3, 6, 9]
    """
    data = _rows(rows)
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise LensError(f"sample size must be a non-negative integer, got {n!r}")
    if n >= len(data):
        return data
    if n == 0:
        return []
    if n == 1:
        return [data[0]]
    step = (len(data) - 1) / (n - 1)
    return [data[round(i * step)] for i in range(n)]


def _is_number(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def aggregate(rows: Sequence[Row], *, by: str | None = None, top: int = 5) -> dict[str, Any]:
    """Summary statistics instead of raw records (chapter §6.12.3 "Aggregation").

    Numeric columns get count/sum/mean/min/max; other columns their ``top``
    most common values with counts (ties by first appearance).  With ``by``,
    the same per group, groups in order of first appearance.

    >>> aggregate([{"t": 1, "c": "a"}, {"t": 3, "c": "a"}, {"t": 5, "c": "b"}])["columns"]["t"]
    {'count': 3, 'sum': 9, 'mean': 3.0, 'min': 1, 'max': 5}
    """
    data = _rows(rows)
    if by is None:
        return {"rows": len(data), "columns": _summaries(data, top)}
    groups: dict[str, list[Row]] = {}
    for r in data:
        groups.setdefault(str(r.get(by)), []).append(r)
    return {
        "rows": len(data),
        "by": by,
        "groups": {k: {"rows": len(v), "columns": _summaries(v, top, skip=by)} for k, v in groups.items()},
    }


def _summaries(data: list[Row], top: int, skip: str | None = None) -> dict[str, Any]:
    columns = [c for c in dict.fromkeys(k for r in data for k in r) if c != skip]
    out: dict[str, Any] = {}
    for c in columns:
        values = [r.get(c) for r in data if c in r]
        numbers: list[float] = [v for v in values if isinstance(v, int | float) and _is_number(v)]
        if values and len(numbers) == len(values):
            total = sum(numbers)
            out[c] = {
                "count": len(numbers),
                "sum": total,
                "mean": round(total / len(numbers), 6),
                "min": min(numbers),
                "max": max(numbers),
            }
        else:
            counts = Counter(str(v) for v in values)
            order = {v: i for i, v in reversed(list(enumerate(str(v) for v in values)))}
            common = sorted(counts.items(), key=lambda kv: (-kv[1], order[kv[0]]))[:top]
            out[c] = {"count": len(values), "distinct": len(counts), "top": dict(common)}
    return out


@dataclass(frozen=True)
class TableFit:
    """The result of :func:`fit_table`: the text, its cost, and what was left out."""

    text: str
    tokens: int
    format: Format
    rows_kept: int
    rows_total: int
    columns: tuple[str, ...]
    note: str

    @property
    def complete(self) -> bool:
        return self.rows_kept == self.rows_total


def fit_table(
    rows: Sequence[Row],
    target: int,
    counter: TokenCounter | str = "o200k_base",
    *,
    columns: Sequence[str] | None = None,
    where: Callable[[Row], bool] | None = None,
    formats: Sequence[Format] = FORMATS,
    source: str | None = None,
) -> TableFit:
    """Fit records into ``target`` tokens: filter, render cheapest, then sample with a note of the full size.

    The note counts toward ``target``.  Raises :class:`LensError` when not
    even the note and one row fit.

    >>> rows = [{"day": d, "visits": d * 10} for d in range(1, 501)]
    >>> fit = fit_table(rows, 120, "o200k_base", source="analytics.visits")
    >>> fit.tokens <= 120, fit.rows_kept < 500, fit.note.startswith("showing")
    (True, True, True)
    """
    resolved = get_counter(counter)
    data = _rows(rows)
    if where is not None:
        data = select_rows(data, where)
    if columns is not None:
        data = [dict(r) for r in select_columns(data, columns)]
    total = len(data)
    kept_columns = tuple(dict.fromkeys(k for r in data for k in r))

    def attempt(n: int) -> tuple[Rendering, str]:
        part = sample_rows(data, n)
        best = cheapest(part, resolved, formats=formats)
        if n >= total:
            return best, ""
        where_from = f"; full data: {source}" if source else ""
        note = f"showing {n:,} of {total:,} rows (evenly spaced){where_from}"
        return best, note

    def cost(rendering: Rendering, note: str) -> int:
        return resolved.count(rendering.text + ("\n" + note if note else ""))

    n_kept = total
    rendering, note = attempt(total)
    if cost(rendering, note) > target:
        lo, hi = 0, total - 1  # largest n that fits
        while lo < hi:
            mid = (lo + hi + 1) // 2
            r, nt = attempt(mid)
            if cost(r, nt) <= target:
                lo = mid
            else:
                hi = mid - 1
        if lo < 1:
            raise LensError(
                f"not even one of {total:,} rows fits in {target:,} tokens with its note; raise the target, "
                f"keep fewer columns, or use aggregate() instead of raw rows"
            )
        n_kept = lo
        rendering, note = attempt(lo)
    text = rendering.text + ("\n" + note if note else "")
    return TableFit(text, resolved.count(text), rendering.format, n_kept, total, kept_columns, note)
