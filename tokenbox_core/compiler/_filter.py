"""Stage 2, Filter: the relevance, freshness, authority and safety gates (chapter §6.4.1, Algorithm 6.1).

Pure: ``filter_candidates(candidates, config, now)`` returns the surviving
candidates and one :class:`Exclusion` per discarded item, with the reason and
the score that failed the gate.  Gates, in order (the first that fails names
the reason):

- evidence: ``duplicate_id`` (an id already collected), ``relevance``
  (< ``evidence_threshold``), ``freshness`` (< ``freshness_floor``),
  ``authority`` (< ``authority_floor``), ``pii`` (the detector found personal
  data and the task does not set ``pii_authorized``);
- tools: ``tool_relevance`` (< ``tool_threshold``); a tool without a
  relevance score is scored by word overlap with the task's ``current_step``
  (1.0 when there is no step to compare with);
- memory: ``duplicate_id``, ``expired`` (``expires_at <= now``),
  ``memory_relevance`` (< ``memory_threshold``; unscored memories pass).

Freshness is ``2 ** (-age / freshness_half_life)`` against the compile's
reference time :func:`reference_time` (never the system clock unless the
config's ``clock`` reads it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from tokenbox_core.compiler._collect import Candidates
from tokenbox_core.compiler._config import CompilerConfig
from tokenbox_core.compiler._inputs import Evidence, Memory, Tool
from tokenbox_core.compiler._pii import PIIMatch, RegexPIIDetector
from tokenbox_core.compiler._turn_cache import TurnCache
from tokenbox_core.errors import CompilerInputError

__all__ = ["Exclusion", "filter_candidates", "freshness", "reference_time", "tool_relevance"]

_WORD = re.compile(r"[a-z0-9]+")
_STOPWORDS = frozenset("a an and are as at be by for from in is it of on or that the this to with".split())


@dataclass(frozen=True)
class Exclusion:
    """One item left out of the context, and why (a row of the trace's ``excluded_items``, §6.4.2)."""

    item_id: str
    section: str
    reason: str
    score: float | None = None
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "item_id": self.item_id,
            "section": self.section,
            "reason": self.reason,
            "score": self.score,
            "detail": self.detail,
        }


def reference_time(candidates: Candidates, config: CompilerConfig) -> datetime | None:
    """The compile's "now": the config's clock, else the newest timestamp among the inputs, else ``None``."""
    clock = config.clock
    if clock is not None:
        moment = clock() if callable(clock) else clock
        if not isinstance(moment, datetime) or moment.tzinfo is None:
            raise CompilerInputError(f"CompilerConfig.clock returned {moment!r}, not a timezone-aware datetime")
        return moment
    stamps = [e.retrieved_at for e in candidates.evidence]
    stamps += [m.created_at for m in candidates.memory if m.created_at is not None]
    return max(stamps) if stamps else None


def freshness(moment: datetime | None, now: datetime | None, config: CompilerConfig) -> float:
    """``2 ** (-age / half_life)`` in [0, 1]; 1.0 without a timestamp or a reference time; future → 1.0."""
    if moment is None or now is None:
        return 1.0
    age = max(0.0, (now - moment).total_seconds())
    return float(2.0 ** (-age / config.freshness_half_life.total_seconds()))


def tool_relevance(tool: Tool, step: str | None) -> float:
    """The tool's own relevance, else the share of the step's words (stopwords aside) in its name and description."""
    if tool.relevance is not None:
        return tool.relevance
    if not step:
        return 1.0
    wanted = set(_WORD.findall(step.lower())) - _STOPWORDS
    if not wanted:
        return 1.0
    have = set(_WORD.findall(f"{tool.name.replace('_', ' ')} {tool.description}".lower()))
    return len(wanted & have) / len(wanted)


def _evidence_gate(
    e: Evidence, config: CompilerConfig, now: datetime | None, pii_ok: bool, cache: TurnCache | None
) -> Exclusion | None:
    if e.relevance < config.evidence_threshold:
        return Exclusion(
            e.id, "evidence", "relevance", e.relevance, f"below evidence_threshold {config.evidence_threshold}"
        )
    fresh = freshness(e.retrieved_at, now, config)
    if fresh < config.freshness_floor:
        return Exclusion(e.id, "evidence", "freshness", fresh, f"below freshness_floor {config.freshness_floor}")
    if e.authority < config.authority_floor:
        return Exclusion(e.id, "evidence", "authority", e.authority, f"below authority_floor {config.authority_floor}")
    detector = config.pii_detector
    if pii_ok or detector is None:
        return None
    if cache is not None and type(detector) is RegexPIIDetector:  # ours: its findings depend on text and kinds only
        text = e.text
        found: tuple[PIIMatch, ...] = cache.get(
            "pii", text, detector.kinds, lambda: tuple(detector.find(text)), _pii_bytes
        )
        return _pii_gate(e, found)
    return _pii_gate(e, detector.find(e.text))


def _pii_bytes(found: tuple[PIIMatch, ...]) -> int:
    return 56 + 120 * len(found)  # the tuple, and each finding (a frozen dataclass with its kind and offsets)


def _pii_gate(e: Evidence, found: Sequence[Any]) -> Exclusion | None:
    if not found:
        return None
    kinds = sorted({m.kind for m in found})
    return Exclusion(e.id, "evidence", "pii", None, f"found {', '.join(kinds)}; the task is not pii_authorized")


def _memory_gate(m: Memory, config: CompilerConfig, now: datetime | None) -> Exclusion | None:
    if m.expires_at is not None and now is not None and m.expires_at <= now:
        return Exclusion(m.id, "memory", "expired", None, f"expired at {m.expires_at.isoformat()}")
    if m.relevance is not None and m.relevance < config.memory_threshold:
        return Exclusion(
            m.id, "memory", "memory_relevance", m.relevance, f"below memory_threshold {config.memory_threshold}"
        )
    return None


def filter_candidates(
    candidates: Candidates, config: CompilerConfig, now: datetime | None, cache: TurnCache | None = None
) -> tuple[Candidates, tuple[Exclusion, ...]]:
    """Apply every gate; return the survivors (order preserved) and the exclusions (in input order).

    ``cache`` (the compiler's) keeps the default PII detector's findings for texts seen again next turn.
    """
    excluded: list[Exclusion] = []
    pii_ok = candidates.task is not None and candidates.task.pii_authorized
    evidence: list[Evidence] = []
    seen: set[str] = set()
    for e in candidates.evidence:
        if e.id in seen:
            excluded.append(Exclusion(e.id, "evidence", "duplicate_id", e.relevance, "an earlier evidence has this id"))
            continue
        seen.add(e.id)
        gate = _evidence_gate(e, config, now, pii_ok, cache)
        if gate is None:
            evidence.append(e)
        else:
            excluded.append(gate)
    step = candidates.task.current_step if candidates.task is not None else None
    tools: list[Tool] = []
    names: set[str] = set()
    for t in candidates.tools:
        if t.name in names:
            excluded.append(Exclusion(t.id, "tools", "duplicate_id", t.relevance, "an earlier tool has this name"))
            continue
        names.add(t.name)
        score = tool_relevance(t, step)
        if score < config.tool_threshold:
            detail = f"below tool_threshold {config.tool_threshold} for step {step!r}"
            excluded.append(Exclusion(t.id, "tools", "tool_relevance", score, detail))
        else:
            tools.append(t)
    memory: list[Memory] = []
    mem_ids: set[str] = set()
    for m in candidates.memory:
        if m.id in mem_ids:
            excluded.append(Exclusion(m.id, "memory", "duplicate_id", m.relevance, "an earlier memory has this id"))
            continue
        mem_ids.add(m.id)
        gate = _memory_gate(m, config, now)
        if gate is None:
            memory.append(m)
        else:
            excluded.append(gate)
    kept = replace(candidates, evidence=tuple(evidence), tools=tuple(tools), memory=tuple(memory))
    return kept, tuple(excluded)
