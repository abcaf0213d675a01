"""Running Cupel vectors stage by stage (scoring, slicing, placing, pipeline) and reporting the outcome."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokenbox_core._budget import ContextBudget, EffectiveBudget
from tokenbox_core.errors import SelectionError
from tokenbox_core.select._model import ScoredItem
from tokenbox_core.testing.cupel._vectors import (
    _item,
    _placer,
    _policy,
    _scorer,
    _slicer,
    _UnsupportedError,
    load_vector,
)

__all__ = ["VectorResult", "run_vector", "run_vectors"]


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
