"""A conformance kit for the Cupel test-vector format (``wollax/cupel``, ``conformance/``).

``run_vector(path)`` runs one TOML vector (scoring, slicing, placing or
pipeline; required or optional) against :mod:`tokenbox_core.select` and
returns a :class:`VectorResult` with ``passed`` and a readable ``detail``.
``run_vectors(directory)`` runs every ``*.toml`` below a directory.

Vectors may use TOML 1.1's times without seconds (``2024-01-01T12:00Z``);
they are read as ``:00`` seconds (Python's TOML parsers implement 1.0).

>>> toml11_to_toml10('at = 2024-01-01T12:00Z  # "12:00" in comments and strings stays')
'at = 2024-01-01T12:00:00Z  # "12:00" in comments and strings stays'
"""

from __future__ import annotations

import importlib
import math
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from tokenbox_core.budget import ContextBudget, EffectiveBudget
from tokenbox_core.errors import SelectionError
from tokenbox_core.sections import Item
from tokenbox_core.select import (
    ChronologicalPlacer,
    CompositeScorer,
    CountConstrainedKnapsackSlicer,
    CountQuotaEntry,
    CountQuotaSlicer,
    DecayCurve,
    DecayScorer,
    ExponentialDecay,
    FrequencyScorer,
    GreedySlicer,
    KindScorer,
    KnapsackSlicer,
    MetadataKeyScorer,
    MetadataTrustScorer,
    Placer,
    PriorityScorer,
    QuotaEntry,
    QuotaSlicer,
    RecencyScorer,
    ReflexiveScorer,
    ScaledScorer,
    ScoredItem,
    Scorer,
    SelectionPolicy,
    Slicer,
    StepDecay,
    TagScorer,
    UShapedPlacer,
    WindowDecay,
)
from tokenbox_core.select.model import time_key

__all__ = [
    "VectorResult",
    "load_vector",
    "reference_frequency",
    "reference_priority",
    "reference_recency",
    "run_vector",
    "run_vectors",
    "toml11_to_toml10",
]


@dataclass(frozen=True)
class VectorResult:
    """The outcome of one vector: ``passed`` and, either way, a ``detail`` a person can read."""

    path: str
    name: str
    stage: str
    passed: bool
    detail: str

    def __str__(self) -> str:
        return f"{'PASS' if self.passed else 'FAIL'} [{self.stage}] {self.name}: {self.detail}"


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


# ----------------------------------------------------------------------------- stages


def _close(actual: float, expected: float, epsilon: float) -> bool:
    return abs(actual - expected) < epsilon or (math.isinf(expected) and actual == expected)


def _run_scoring(doc: Mapping[str, Any], test: Mapping[str, Any], epsilon: float) -> list[str]:
    scorer = _scorer(str(test.get("scorer", "")), doc.get("config", {}))
    items = [_item(t, i) for i, t in enumerate(doc.get("items", ()))]
    scores = scorer.scores(items)
    problems = []
    unused = list(range(len(items)))
    for expected in doc.get("expected", ()):
        match = next((i for i in unused if items[i].content == expected["content"]), None)
        if match is None:
            problems.append(f"no item with content {expected['content']!r}")
            continue
        unused.remove(match)
        want = float(expected["score_approx"])
        if not _close(scores[match], want, epsilon):
            problems.append(f"{expected['content']!r}: score {scores[match]!r}, expected {want!r}")
    return problems


def _scored(doc: Mapping[str, Any], key: str) -> list[ScoredItem]:
    return [
        ScoredItem(_item(t, i), float(t.get("score", 0.0)), int(t.get("tokens", 0)), i)
        for i, t in enumerate(doc.get(key, ()))
    ]


def _run_slicing(doc: Mapping[str, Any], test: Mapping[str, Any]) -> list[str]:
    slicer = _slicer(str(test.get("slicer", "")), doc.get("config", {}))
    budget_table = doc.get("budget", {})
    target = int(budget_table.get("target_tokens", 0))
    budget = EffectiveBudget(max_tokens=int(budget_table.get("max_tokens", target)), target_tokens=target)
    scored = _scored(doc, "scored_items")
    detailed = getattr(slicer, "slice_with_details", None)
    if callable(detailed):
        details = detailed(scored, budget)
        chosen, shortfalls, capped = details.selected, len(details.shortfalls), len(details.cap_excluded)
    else:
        chosen, shortfalls, capped = slicer.slice(scored, budget), 0, 0
    expected = doc.get("expected", {})
    problems = []
    got = sorted(s.item.content for s in chosen)
    want = sorted(expected.get("selected_contents", ()))
    if got != want:
        problems.append(f"selected {got}, expected {want} (compared as sets)")
    if "shortfall_count" in expected and shortfalls != expected["shortfall_count"]:
        problems.append(f"{shortfalls} shortfalls, expected {expected['shortfall_count']}")
    if "cap_excluded_count" in expected and capped != expected["cap_excluded_count"]:
        problems.append(f"{capped} cap exclusions, expected {expected['cap_excluded_count']}")
    return problems


def _run_placing(doc: Mapping[str, Any], test: Mapping[str, Any]) -> list[str]:
    placed = [s.item.content for s in _placer(str(test.get("placer", ""))).place(_scored(doc, "items"))]
    want = list(doc.get("expected", {}).get("ordered_contents", ()))
    return [] if placed == want else [f"order {placed}, expected {want}"]


_DIAG_FIELDS = {
    "tokens": "tokens",
    "item_tokens": "item_tokens",
    "available_tokens": "available_tokens",
    "deduplicated_against": "deduplicated_against",
    "displaced_by": "displaced_by",
}


def _check_entries(kind: str, got: Sequence[Any], want: Sequence[Mapping[str, Any]], epsilon: float) -> list[str]:
    problems = []
    if len(got) != len(want):
        problems.append(f"{len(got)} {kind} items, expected {len(want)}")
    for position, (actual, expected) in enumerate(zip(got, want, strict=False)):
        where = f"{kind}[{position}]"
        for key, value in expected.items():
            if key == "content":
                ok, seen = actual.item.content == value, actual.item.content
            elif key == "score_approx":
                ok, seen = _close(actual.score, float(value), epsilon), actual.score
            elif key in ("inclusion_reason", "exclusion_reason"):
                ok, seen = actual.reason == value, actual.reason
            elif key in _DIAG_FIELDS and kind == "excluded":
                if key in ("deduplicated_against", "displaced_by"):
                    seen = actual.related.content if actual.related is not None else None
                else:
                    seen = actual.details.get(key, actual.tokens if key == "tokens" else None)
                ok = seen == value
            else:
                problems.append(f"{where}: the kit does not know the expectation {key!r}")
                continue
            if not ok:
                problems.append(f"{where}: {key} is {seen!r}, expected {value!r}")
    return problems


def _run_pipeline(doc: Mapping[str, Any], epsilon: float) -> list[str]:
    config = doc.get("config", {})
    policy = _policy(config)
    budget_table = doc.get("budget", {})
    budget = ContextBudget(
        max_tokens=int(budget_table["max_tokens"]),
        target_tokens=budget_table.get("target_tokens"),
        output_reserve=int(budget_table.get("output_reserve", 0)),
    )
    items = [_item(t, i) for i, t in enumerate(doc.get("items", ()))]
    selection = policy.select(items, budget)
    problems = []
    got = [it.content for it in selection.items]
    want = [e["content"] for e in doc.get("expected_output", ())]
    if got != want:
        problems.append(f"output {got}, expected {want}")
    diagnostics = doc.get("expected", {}).get("diagnostics")
    if diagnostics:
        report = selection.report
        summary = diagnostics.get("summary", {})
        for key, actual in (
            ("total_candidates", report.total_candidates),
            ("total_tokens_considered", report.total_tokens_considered),
        ):
            if key in summary and summary[key] != actual:
                problems.append(f"summary {key} is {actual}, expected {summary[key]}")
        if "included" in diagnostics:
            problems += _check_entries("included", report.included, diagnostics["included"], epsilon)
        if "excluded" in diagnostics:
            problems += _check_entries("excluded", report.excluded, diagnostics["excluded"], epsilon)
    return problems


def _construct(doc: Mapping[str, Any], test: Mapping[str, Any]) -> object:
    stage = test.get("stage")
    config = doc.get("config", {})
    if stage == "scoring":
        return _scorer(str(test.get("scorer", "")), config)
    if stage == "slicing":
        return _slicer(str(test.get("slicer", "")), config)
    if stage == "placing":
        return _placer(str(test.get("placer", "")))
    return _policy(config)


def run_vector(path: str | Path) -> VectorResult:
    """Run one vector file and say whether tokenbox_core.select conforms to it, and why not."""
    path = Path(path)
    try:
        doc = load_vector(path)
    except Exception as exc:  # a vector that does not parse is a failed vector, with the reason
        return VectorResult(str(path), path.stem, "?", False, f"cannot read the vector: {exc}")
    test = doc.get("test", {})
    name, stage = str(test.get("name", path.stem)), str(test.get("stage", "?"))
    epsilon = float(doc.get("tolerance", {}).get("score_epsilon", 1e-9))

    def result(problems: list[str], ok: str) -> VectorResult:
        return VectorResult(str(path), name, stage, not problems, "; ".join(problems) if problems else ok)

    if test.get("expect_construction_error", False):
        try:
            built = _construct(doc, test)
        except SelectionError as exc:
            return result([], f"rejected at construction as expected: {exc}")
        except _UnsupportedError as exc:
            return result([str(exc)], "")
        return result([f"expected a construction error, but {built!r} was built"], "")
    runners: dict[str, Callable[[], list[str]]] = {
        "scoring": lambda: _run_scoring(doc, test, epsilon),
        "slicing": lambda: _run_slicing(doc, test),
        "placing": lambda: _run_placing(doc, test),
        "pipeline": lambda: _run_pipeline(doc, epsilon),
    }
    if stage not in runners:
        return result([f"unknown stage {stage!r}"], "")
    try:
        problems = runners[stage]()
    except _UnsupportedError as exc:
        problems = [f"unsupported vector: {exc}"]
    except Exception as exc:  # report, never crash: the detail says what raised
        problems = [f"raised {type(exc).__name__}: {exc}"]
    return result(problems, "all expectations met")


def run_vectors(directory: str | Path) -> list[VectorResult]:
    """Run every ``*.toml`` vector below ``directory``, in path order."""
    return [run_vector(p) for p in sorted(Path(directory).rglob("*.toml"))]


# ----------------------------------------------------------------------------- the spec's O(N²) loops


def reference_recency(items: Sequence[Item]) -> list[float]:
    """The spec's RECENCY-SCORE loop, transcribed literally (O(N²)): an oracle for the fast scorer.

    Timestamps are compared through the same exact key the scorer uses, computed once per item.
    """
    keys = [None if item.timestamp is None else time_key(item.timestamp) for item in items]
    out = []
    for mine in keys:
        if mine is None:
            out.append(0.0)
            continue
        count = rank = 0
        for theirs in keys:
            if theirs is None:
                continue
            count += 1
            if theirs < mine:
                rank += 1
        out.append(1.0 if count <= 1 else rank / (count - 1))
    return out


def reference_priority(items: Sequence[Item]) -> list[float]:
    """The spec's PRIORITY-SCORE loop, transcribed literally (O(N²))."""
    out = []
    for item in items:
        if item.priority is None:
            out.append(0.0)
            continue
        count = rank = 0
        for other in items:
            if other.priority is None:
                continue
            count += 1
            if other.priority < item.priority:
                rank += 1
        out.append(1.0 if count <= 1 else rank / (count - 1))
    return out


def reference_frequency(items: Sequence[Item]) -> list[float]:
    """The spec's FREQUENCY-SCORE loop, transcribed literally (O(N²))."""
    out = []
    for item in items:
        if not item.tags or len(items) <= 1:
            out.append(0.0)
            continue
        matching = 0
        for other in items:
            if other is item or not other.tags:
                continue
            if any(a.lower() == b.lower() for a in item.tags for b in other.tags):
                matching += 1
        out.append(matching / (len(items) - 1))
    return out
