"""Render a JSON-like value in the cheapest lossless format for its shape (chapter §6.12.1, table of costs).

Formats: ``json_pretty`` (the chapter's 1.0× baseline), ``json_min``, ``csv``, ``markdown`` (a table),
``kv`` (compact ``key: value`` lines).  Tables (CSV, Markdown) apply only to a list of records with the
same keys and scalar values; ``kv`` only to a flat record.  Every rendering is lossless: scalar cells are
written plainly when that cannot be misread, and as JSON otherwise (a string that looks like a number,
``true``/``false``/``null``, or that holds a delimiter), so :func:`parse` gives back the value exactly.
Costs are measured with the section's own counter, never assumed from the table.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tokenbox_core.errors import LensError
from tokenbox_core.tokens import TokenCounter, get_counter

__all__ = ["FORMATS", "Format", "Rendering", "applicable_formats", "cheapest", "parse", "render"]

Format = Literal["json_pretty", "json_min", "csv", "markdown", "kv"]
FORMATS: tuple[Format, ...] = ("json_pretty", "json_min", "csv", "markdown", "kv")

_NUMBERISH = re.compile(r"^\s*-?(\d|\.\d)|^\s*[+-]?(inf|nan)", re.I)
Scalar = str | int | float | bool | None


def _is_scalar(value: object) -> bool:
    if isinstance(value, float) and not math.isfinite(value):
        return False
    return value is None or isinstance(value, str | int | float | bool)


def _records(value: object) -> list[str] | None:
    """The shared keys when ``value`` is a non-empty list of flat records with the same keys."""
    if not isinstance(value, Sequence) or isinstance(value, str) or not value:
        return None
    first = value[0]
    if not isinstance(first, Mapping) or not first:
        return None
    keys = [str(k) for k in first]
    for row in value:
        if not isinstance(row, Mapping) or [str(k) for k in row] != keys:
            return None
        if not all(isinstance(k, str) for k in row) or not all(_is_scalar(v) for v in row.values()):
            return None
    return keys


def _flat_record(value: object) -> bool:
    return (
        isinstance(value, Mapping)
        and bool(value)
        and all(isinstance(k, str) and k and ":" not in k and "\n" not in k and k == k.strip() for k in value)
        and all(_is_scalar(v) for v in value.values())
    )


def applicable_formats(value: object) -> tuple[Format, ...]:
    """The formats that can render ``value`` losslessly, in the order of :data:`FORMATS`."""
    formats: list[Format] = ["json_pretty", "json_min"]
    if _records(value) is not None:
        formats += ["csv", "markdown"]
    if _flat_record(value):
        formats.append("kv")
    return tuple(formats)


def _cell(value: Scalar, specials: str) -> str:
    """A scalar as a cell: plain when unambiguous, JSON otherwise."""
    if isinstance(value, str):
        plain = (
            value
            and value == value.strip()
            and not _NUMBERISH.match(value)
            and value not in ("true", "false", "null")
            and not value.startswith('"')
            and not any(ch in value for ch in specials)
        )
        if plain:
            return value
        quoted = json.dumps(value, ensure_ascii=False)
        return quoted.replace("|", "\\u007c") if "|" in specials else quoted
    return json.dumps(value, ensure_ascii=False)


def _uncell(text: str) -> Scalar:
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if _is_scalar(value) else text


def render(value: Any, fmt: Format) -> str:
    """``value`` in ``fmt``; :class:`LensError` when the format cannot hold the value's shape losslessly.

    >>> rows = [{"city": "Oslo", "temp": 3}, {"city": "Rome", "temp": 18}]
    >>> print(render(rows, "csv"))
    city,temp
    Oslo,3
    Rome,18
    """
    if fmt not in applicable_formats(value):
        if fmt not in FORMATS:
            raise LensError(f"unknown structured format {fmt!r}; use one of {', '.join(FORMATS)}")
        raise LensError(f"format {fmt!r} cannot render this value losslessly; use one of {applicable_formats(value)}")
    if fmt == "json_pretty":
        try:
            return json.dumps(value, indent=2, ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            raise LensError(f"the value is not JSON-like ({exc}); convert it to dicts, lists and scalars") from exc
    if fmt == "json_min":
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    if fmt == "kv":
        return "\n".join(f"{k}: {_cell(v, chr(10))}" for k, v in value.items())
    keys = _records(value) or []
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
        writer.writerow([_cell(k, ',"\n') for k in keys])
        for row in value:
            writer.writerow([_cell(row[k], ',"\n') for k in keys])
        return buf.getvalue().rstrip("\n")
    specials = "|\n\\"
    lines = ["| " + " | ".join(_cell(k, specials) for k in keys) + " |", "|" + "---|" * len(keys)]
    for row in value:
        lines.append("| " + " | ".join(_cell(row[k], specials) for k in keys) + " |")
    return "\n".join(lines)


def parse(text: str, fmt: Format) -> Any:
    """The value a rendering stands for (the inverse of :func:`render`)."""
    if fmt in ("json_pretty", "json_min"):
        return json.loads(text)
    if fmt == "kv":
        out: dict[str, Scalar] = {}
        for line in text.split("\n"):
            key, _, cell = line.partition(": ")
            out[key] = _uncell(cell)
        return out
    if fmt == "csv":
        rows = list(csv.reader(io.StringIO(text)))
        keys = [str(_uncell(k)) for k in rows[0]]
        return [{k: _uncell(c) for k, c in zip(keys, row, strict=True)} for row in rows[1:]]
    if fmt == "markdown":
        lines = text.split("\n")
        split = [[c.strip() for c in line.strip()[1:-1].split(" | ")] for line in lines if not line.startswith("|---")]
        keys = [str(_uncell(k)) for k in split[0]]
        return [{k: _uncell(c) for k, c in zip(keys, row, strict=True)} for row in split[1:]]
    raise LensError(f"unknown structured format {fmt!r}; use one of {', '.join(FORMATS)}")


@dataclass(frozen=True)
class Rendering:
    """The cheapest rendering of a value and what every applicable format cost."""

    format: Format
    text: str
    tokens: int
    costs: Mapping[str, int]

    def ratio(self, fmt: Format = "json_pretty") -> float:
        """This rendering's cost relative to ``fmt`` (the chapter reports costs relative to pretty JSON)."""
        return self.tokens / self.costs[fmt] if self.costs.get(fmt) else 1.0


def cheapest(
    value: Any, counter: TokenCounter | str = "o200k_base", *, formats: Sequence[Format] = FORMATS
) -> Rendering:
    """Render ``value`` in every applicable format, count each with ``counter``, keep the cheapest.

    Ties go to the earlier format in :data:`FORMATS` (JSON first), so the choice is deterministic.

    >>> rows = [{"id": i, "name": f"user{i}", "active": i % 2 == 0} for i in range(20)]
    >>> best = cheapest(rows, "o200k_base")
    >>> best.format, best.tokens < best.costs["json_pretty"]
    ('csv', True)
    """
    resolved = get_counter(counter)
    costs: dict[str, int] = {}
    best: tuple[int, int, Format, str] | None = None
    for order, fmt in enumerate(FORMATS):
        if fmt not in formats or fmt not in applicable_formats(value):
            continue
        text = render(value, fmt)
        tokens = resolved.count(text)
        costs[fmt] = tokens
        if best is None or (tokens, order) < (best[0], best[1]):
            best = (tokens, order, fmt, text)
    if best is None:
        raise LensError(f"none of the formats {list(formats)} can render this value; allow json_min")
    return Rendering(best[2], best[3], best[0], costs)
