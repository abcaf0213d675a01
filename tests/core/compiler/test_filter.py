"""Filter's gates: each discard is reported with its reason and score."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pytest

from tokenbox_core.compiler import CompilerConfig, Memory, TaskState, Tool
from tokenbox_core.compiler._collect import Candidates
from tokenbox_core.compiler._filter import filter_candidates, freshness, reference_time, tool_relevance
from tokenbox_core.compiler._pii import PIIMatch, RegexPIIDetector
from tokenbox_core.compiler._turn_cache import TurnCache

from .conftest import NOW, evidence


def test_evidence_gates_in_order() -> None:
    """Relevance, freshness, authority and PII gates each name their reason and the failing score."""
    config = CompilerConfig(evidence_threshold=0.5, authority_floor=0.5, freshness_floor=0.5, clock=NOW)
    c = Candidates(
        evidence=(
            evidence("ok", "fine", relevance=0.9, authority=0.9),
            evidence("irrelevant", "x", relevance=0.2),
            evidence("stale", "x", age_days=60),
            evidence("weak", "x", authority=0.1),
            evidence("pii", "mail jane@example.com"),
            evidence("ok", "same id again"),
        )
    )
    kept, excluded = filter_candidates(c, config, NOW)
    assert [e.id for e in kept.evidence] == ["ok"]
    rows = [(x.item_id, x.reason) for x in excluded]
    assert rows == [
        ("irrelevant", "relevance"),
        ("stale", "freshness"),
        ("weak", "authority"),
        ("pii", "pii"),
        ("ok", "duplicate_id"),
    ]
    assert excluded[0].score == 0.2
    assert excluded[1].score == freshness(NOW - timedelta(days=60), NOW, config) == 0.25


def test_pii_allowed_when_the_task_authorises_it() -> None:
    """A pii_authorized task keeps evidence with personal data; a None detector disables the gate."""
    c = Candidates(task=TaskState({}, pii_authorized=True), evidence=(evidence("pii", "call +44 20 7946 0958"),))
    assert len(filter_candidates(c, CompilerConfig(), NOW)[0].evidence) == 1
    c2 = Candidates(evidence=(evidence("pii", "call +44 20 7946 0958"),))
    assert len(filter_candidates(c2, CompilerConfig(pii_detector=None), NOW)[0].evidence) == 1
    assert filter_candidates(c2, CompilerConfig(), NOW)[1][0].detail.startswith("found phone")


@dataclass
class _CountingDetector:
    calls: int = 0

    def find(self, text: str) -> list[PIIMatch]:
        self.calls += 1
        return RegexPIIDetector().find(text)


def test_the_pii_scan_of_a_text_seen_before_comes_from_the_compilers_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default detector scans a text once per cache (same exclusions after); its kinds are part of the key;
    a user's detector is asked every time."""
    scans: list[str] = []
    find = RegexPIIDetector.find
    monkeypatch.setattr(RegexPIIDetector, "find", lambda self, text: scans.append(text) or find(self, text))
    c = Candidates(evidence=(evidence("pii", "mail jane@example.com"), evidence("ok", "fine")))
    cache, config = TurnCache(), CompilerConfig()
    first = filter_candidates(c, config, NOW, cache)
    again = Candidates(evidence=(evidence("pii", "mail " + "jane@example.com"), evidence("ok", "fine")))
    assert filter_candidates(again, config, NOW, cache) == first and len(scans) == 2
    only_phones = CompilerConfig(pii_detector=RegexPIIDetector(kinds=("phone",)))
    assert filter_candidates(c, only_phones, NOW, cache)[1] == () and len(scans) == 4
    mine = _CountingDetector()
    for _ in range(2):
        assert filter_candidates(c, CompilerConfig(pii_detector=mine), NOW, cache)[1] == first[1]
    assert mine.calls == 4


def test_tools_filtered_by_relevance_to_the_step() -> None:
    """Without scores, tools are scored by the step's words found in their name and description."""
    tools = (Tool("refund_order", "Issue a refund"), Tool("weather", "Get the weather"), Tool("x", relevance=0.9))
    c = Candidates(task=TaskState({}, current_step="refund the order"), tools=tools)
    kept, excluded = filter_candidates(c, CompilerConfig(tool_threshold=0.5), NOW)
    assert [t.name for t in kept.tools] == ["refund_order", "x"]
    assert [(x.item_id, x.reason, x.score) for x in excluded] == [("tool:weather", "tool_relevance", 0.0)]
    assert tool_relevance(Tool("a"), None) == 1.0


def test_memory_expired_or_irrelevant() -> None:
    """Expired memories and memories below the threshold are discarded; unscored ones pass."""
    c = Candidates(
        memory=(
            Memory("old", "x", expires_at=NOW - timedelta(seconds=1)),
            Memory("low", "x", relevance=0.1),
            Memory("unscored", "x"),
        )
    )
    kept, excluded = filter_candidates(c, CompilerConfig(memory_threshold=0.5), NOW)
    assert [m.id for m in kept.memory] == ["unscored"]
    assert [(x.item_id, x.reason) for x in excluded] == [("old", "expired"), ("low", "memory_relevance")]


def test_reference_time_is_the_clock_or_the_newest_input() -> None:
    """Without a clock the compile's "now" is the newest timestamp among the inputs (never the system clock)."""
    c = Candidates(evidence=(evidence("a", "x", age_days=3), evidence("b", "x", age_days=1)))
    assert reference_time(c, CompilerConfig()) == NOW - timedelta(days=1)
    assert reference_time(c, CompilerConfig(clock=NOW)) == NOW
    assert reference_time(Candidates(), CompilerConfig()) is None
