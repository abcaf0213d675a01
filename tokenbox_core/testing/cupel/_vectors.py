"""Reading Cupel vectors (TOML 1.1 times) and building TokenBox selection objects from their tables."""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Mapping
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from tokenbox_core._sections import Item
from tokenbox_core.select import (
    ChronologicalPlacer,
    CompositeScorer,
    CountConstrainedKnapsackSlicer,
    CountQuotaEntry,
    CountQuotaSlicer,
    DecayScorer,
    ExponentialDecay,
    FrequencyScorer,
    GreedySlicer,
    KindScorer,
    KnapsackSlicer,
    MetadataKeyScorer,
    MetadataTrustScorer,
    PriorityScorer,
    QuotaEntry,
    QuotaSlicer,
    RecencyScorer,
    ReflexiveScorer,
    ScaledScorer,
    SelectionPolicy,
    StepDecay,
    TagScorer,
    UShapedPlacer,
    WindowDecay,
)
from tokenbox_core.select._decay import DecayCurve
from tokenbox_core.select._placers import Placer
from tokenbox_core.select._scorers import Scorer
from tokenbox_core.select._slicers import Slicer

__all__ = ["load_vector", "toml11_to_toml10"]


class _UnsupportedError(Exception):
    """The vector asks for something this kit does not know (reported as a failure, never skipped)."""


# ----------------------------------------------------------------------------- TOML

# A time without seconds, outside strings and comments: not part of a longer time, not an offset (+05:30).
_SHORT_TIME = re.compile(r"(?<![\d:+\-.])(\d{2}:\d{2})(?![:\d])")


def toml11_to_toml10(text: str) -> str:
    """Add ``:00`` seconds to TOML 1.1 times written without them, leaving strings and comments alone."""
    out: list[str] = []
    i, start, n = 0, 0, len(text)

    def flush(end: int) -> None:
        out.append(_SHORT_TIME.sub(r"\1:00", text[start:end]))

    while i < n:
        ch = text[i]
        if ch == "#":
            flush(i)
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(text[i:end])
            i = start = end
        elif ch in "\"'":
            flush(i)
            delim = ch * 3 if text.startswith(ch * 3, i) else ch
            j = i + len(delim)
            while j < n:
                if ch == '"' and text[j] == "\\":
                    j += 2
                elif text.startswith(delim, j):
                    if len(delim) == 3:  # up to two quotes may precede the closing delimiter
                        run = 0
                        while j + run < n and text[j + run] == ch:
                            run += 1
                        j += min(run, 5)
                    else:
                        j += 1
                    break
                elif len(delim) == 1 and text[j] == "\n":
                    break  # unterminated: the parser will say so
                else:
                    j += 1
            out.append(text[i:j])
            i = start = j
        else:
            i += 1
    flush(n)
    return "".join(out)


def _toml_loads(text: str) -> dict[str, Any]:
    name = "tomllib" if sys.version_info >= (3, 11) else "tomli"
    try:
        parser: Any = importlib.import_module(name)
    except ModuleNotFoundError as exc:  # pragma: no cover - Python 3.10 without the dev extra
        raise ModuleNotFoundError("the Cupel kit needs 'tomli' on Python 3.10: pip install tomli") from exc
    loaded: dict[str, Any] = parser.loads(toml11_to_toml10(text))
    return loaded


def load_vector(path: str | Path) -> dict[str, Any]:
    """A vector file as a dict (TOML 1.0, or 1.1 times without seconds)."""
    return _toml_loads(Path(path).read_text(encoding="utf-8"))


# ----------------------------------------------------------------------------- building blocks


def _timestamp(value: Any) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day)
    raise _UnsupportedError(f"timestamp {value!r} is not a date-time")


def _item(table: Mapping[str, Any], index: int) -> Item:
    content = str(table.get("content", ""))
    hint = table.get("futureRelevanceHint", table.get("future_relevance_hint"))
    return Item(
        id=f"{index}:{content}",
        content=content,
        kind=table.get("kind"),
        score=None if hint is None else float(hint),
        priority=table.get("priority"),
        pinned=bool(table.get("pinned", False)),
        tokens=int(table.get("tokens", 0)),
        tags=tuple(table.get("tags", ())),
        metadata=dict(table.get("metadata", {})),
        timestamp=_timestamp(table.get("timestamp")),
    )


def _pairs(value: Any, key: str, weight: str = "weight") -> dict[str, float]:
    """``[{kind = "x", weight = 1.0}, ...]`` or ``{x = 1.0}`` as a mapping."""
    if isinstance(value, Mapping):
        return {str(k): v for k, v in value.items()}
    return {str(entry[key]): entry[weight] for entry in value or ()}


def _seconds(value: Any) -> timedelta:
    return timedelta(seconds=float(value))


def _curve(spec: Mapping[str, Any]) -> DecayCurve:
    kind = str(spec.get("type", "")).lower()
    if kind == "exponential":
        return ExponentialDecay(_seconds(spec["half_life_secs"]))
    if kind == "window":
        return WindowDecay(_seconds(spec["max_age_secs"]))
    if kind == "step":
        return StepDecay([(_seconds(w["max_age_secs"]), w["score"]) for w in spec.get("windows", ())])
    raise _UnsupportedError(f"unknown decay curve {kind!r}")


def _scorer(kind: str, spec: Mapping[str, Any]) -> Scorer:
    kind = kind.lower().replace("-", "_")
    config = {**spec, **spec.get("config", {})} if isinstance(spec.get("config"), Mapping) else dict(spec)
    if kind == "recency":
        return RecencyScorer()
    if kind == "priority":
        return PriorityScorer()
    if kind == "reflexive":
        return ReflexiveScorer()
    if kind == "frequency":
        return FrequencyScorer()
    if kind == "kind":
        weights = config.get("weights")
        if not weights:
            return KindScorer()
        return KindScorer(_pairs(weights, "kind"))
    if kind == "tag":
        return TagScorer(
            _pairs(config.get("tag_weights", ()), "tag"), case_sensitive=config.get("case_sensitive", True)
        )
    if kind == "composite":
        entries = config.get("scorers", config.get("children"))
        if entries is None:
            raise _UnsupportedError("a composite scorer needs 'scorers' (or 'children')")
        return CompositeScorer([(_scorer(str(e["type"]), e), e.get("weight", 1.0)) for e in entries])
    if kind == "scaled":
        inner = config.get("inner_scorer", config.get("inner"))
        if isinstance(inner, Mapping):
            return ScaledScorer(_scorer(str(inner["type"]), inner))
        if isinstance(inner, str):
            return ScaledScorer(_scorer(inner, config.get("inner_config", {})))
        raise _UnsupportedError("a scaled scorer needs 'inner_scorer'")
    if kind == "decay":
        reference = _timestamp(config.get("reference_time"))
        if reference is None:
            raise _UnsupportedError("a decay scorer needs 'reference_time'")
        return DecayScorer(reference, _curve(config.get("curve", {})), config.get("null_timestamp_score", 0.5))
    if kind == "metadata_trust":
        return MetadataTrustScorer(config.get("default_score", 0.5))
    if kind == "metadata_key":
        return MetadataKeyScorer(config.get("key"), config.get("value"), config.get("boost"))  # type: ignore[arg-type]
    raise _UnsupportedError(f"unknown scorer type {kind!r}")


def _slicer(name: str, config: Mapping[str, Any]) -> Slicer:
    name = name.lower().replace("-", "_")
    bucket = config.get("bucket_size", 100)
    if name == "greedy":
        return GreedySlicer()
    if name == "knapsack":
        return KnapsackSlicer(bucket_size=bucket)
    inner_name = str(config.get("inner_slicer", "greedy"))
    scarcity = str(config.get("scarcity_behavior", "degrade"))
    if name == "quota":
        quotas = [QuotaEntry(q["kind"], q.get("require", 0.0), q.get("cap", 100.0)) for q in config.get("quotas", ())]
        return QuotaSlicer(quotas, _slicer(inner_name, {"bucket_size": bucket}))
    entries = [
        CountQuotaEntry(e["kind"], e.get("require_count", 0), e.get("cap_count")) for e in config.get("entries", ())
    ]
    if name == "count_quota":
        return CountQuotaSlicer(entries, _slicer(inner_name, {"bucket_size": bucket}), scarcity)  # type: ignore[arg-type]
    if name == "count_constrained_knapsack":
        return CountConstrainedKnapsackSlicer(entries, KnapsackSlicer(bucket_size=bucket), scarcity)  # type: ignore[arg-type]
    raise _UnsupportedError(f"unknown slicer {name!r}")


def _placer(name: str) -> Placer:
    key = name.lower().replace("-", "").replace("_", "")
    if key == "chronological":
        return ChronologicalPlacer()
    if key == "ushaped":
        return UShapedPlacer()
    raise _UnsupportedError(f"unknown placer {name!r}")


def _policy(config: Mapping[str, Any]) -> SelectionPolicy:
    entries = config.get("scorers", ())
    if not entries:
        raise _UnsupportedError("a pipeline vector needs [[config.scorers]]")
    scorers = [(_scorer(str(e["type"]), e), e.get("weight", 1.0)) for e in entries]
    scorer = scorers[0][0] if len(scorers) == 1 else CompositeScorer(scorers)
    return SelectionPolicy(
        scorer,
        _slicer(str(config.get("slicer", "greedy")), config),
        _placer(str(config.get("placer", "chronological"))),
        deduplication=bool(config.get("deduplication", True)),
        overflow=str(config.get("overflow_strategy", "throw")).lower(),  # type: ignore[arg-type]
    )
