"""The §6.11.5 metrics, each on a small readable example."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from tokenbox_core import CompilerConfig, ContextCompiler
from tokenbox_core.compiler import DEFINITIONS, Memory

from .conftest import NOW, evidence


def test_every_metric_is_defined_and_in_range(turn: dict[str, Any]) -> None:
    """All eight metrics exist, have a definition, and lie in [0, 1]."""
    metrics = ContextCompiler(4000).compile(**turn).metrics.to_dict()
    assert set(metrics) == set(DEFINITIONS)
    assert all(0.0 <= v <= 1.0 for v in metrics.values())


def test_budget_utilization_and_constraint_density() -> None:
    """Utilisation is total / (window − reserve); constraint density is the policy tier's share of the prefill
    budget, the number CompilerConfig.constraint_density_limit gates."""
    compiled = ContextCompiler(1000, counter="whitespace", config=CompilerConfig(precedence_statement=False)).compile(
        policy="Never guess.", developer="Cite ids.", user="hello there"
    )
    m = compiled.metrics
    assert m.budget_utilization == pytest.approx(compiled.total_tokens / 1000)
    assert m.constraint_density == pytest.approx(4 / 1000)


def test_provenance_coverage_and_staleness() -> None:
    """Every emitted passage is tagged (coverage 1); staleness is the token-weighted 1 − freshness."""
    config = CompilerConfig(clock=NOW)
    compiled = ContextCompiler(3000, config=config).compile(
        policy="P", evidence=[evidence("fresh", "new fact", age_days=0), evidence("old", "old fact", age_days=30)]
    )
    assert compiled.metrics.provenance_coverage == 1.0
    assert 0.0 < compiled.metrics.staleness_index < 0.5  # one item at freshness 1, one at 0.5


def test_duplication_rate_counts_unresolved_duplicates() -> None:
    """With reference compression off, a repeated memory is a duplicate; with it on, it becomes a pointer."""
    text = "The customer prefers e-mail contact and asked us not to call before noon on weekdays."
    data = {"policy": "P", "memory": [Memory("a", text, authority=0.9), Memory("b", text)]}
    off = ContextCompiler(3000, config=CompilerConfig(dedupe=False)).compile(**data)
    on = ContextCompiler(3000).compile(**data)
    assert off.metrics.duplication_rate == 0.5  # of the memories a and b, b duplicates a
    assert on.metrics.duplication_rate == 0.0 and len(on.references) == 1


def test_injection_surface_without_and_with_isolation(turn: dict[str, Any]) -> None:
    """Untrusted tokens count fully without a defence; a defence's isolation strength discounts them."""

    class Isolating:
        def isolation_strength(self, section_id: str, source_type: str) -> float:
            return 0.75 if source_type in ("evidence", "tools") else 0.0

    plain = ContextCompiler(4000).compile(**turn)
    defended = ContextCompiler(4000, config=CompilerConfig(defense=Isolating())).compile(**turn)
    untrusted = sum(plain.layout[s].final_tokens for s in ("tools", "evidence", "memory"))
    assert plain.metrics.injection_vulnerability_surface == pytest.approx(untrusted / plain.total_tokens, rel=0.05)
    assert defended.metrics.injection_vulnerability_surface < plain.metrics.injection_vulnerability_surface


def test_compression_fidelity_falls_with_the_budget(turn: dict[str, Any]) -> None:
    """Fidelity is 1 when everything fits and drops as passages and turns are evicted."""
    roomy = ContextCompiler(4000).compile(**turn).metrics.compression_fidelity
    tight = ContextCompiler(420).compile(**turn).metrics.compression_fidelity
    assert roomy == 1.0 and tight < 1.0


def test_signal_density_excludes_scaffolding() -> None:
    """Labels and provenance tags are scaffolding: signal density is below 1 once evidence is present."""
    compiled = ContextCompiler(3000).compile(policy="P", evidence=[evidence("e", "fact")])
    assert 0.0 < compiled.metrics.signal_density < 0.5


def test_constraint_density_metric_and_limit_agree() -> None:
    """A policy at 56 % of the prefill budget reports 0.56 and fails a 0.15 limit; one under the limit passes."""
    from tokenbox_core import CompilationError

    config = CompilerConfig(precedence_statement=False)
    long_policy = "rule " * 56
    with pytest.raises(CompilationError, match=r"\[constraint_density\]"):
        ContextCompiler(100, counter="whitespace", config=config).compile(policy=long_policy, user="hi")
    loose = replace(config, constraint_density_limit=None)
    m = ContextCompiler(100, counter="whitespace", config=loose).compile(policy=long_policy, user="hi").metrics
    assert m.constraint_density == pytest.approx(0.56)
    ok = ContextCompiler(1000, counter="whitespace", config=config).compile(policy=long_policy, user="hi").metrics
    assert ok.constraint_density == pytest.approx(0.056) and ok.constraint_density <= 0.15
