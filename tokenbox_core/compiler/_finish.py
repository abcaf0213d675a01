"""The finish of a compile: what Filter → Assemble laid out (:class:`Laid`) becomes a :class:`CompiledContext` with
its trace, metrics and checks — the part of a compile :meth:`ContextCompiler.measure` skips."""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tokenbox_core._budget import ContextBudget
from tokenbox_core.compiler._assemble import Assembled
from tokenbox_core.compiler._collect import Candidates
from tokenbox_core.compiler._compress import Compressed, section_summary
from tokenbox_core.compiler._config import CompilerConfig
from tokenbox_core.compiler._context import CompiledContext
from tokenbox_core.compiler._filter import Exclusion
from tokenbox_core.compiler._metrics import compute_metrics
from tokenbox_core.compiler._rank import Ranked
from tokenbox_core.compiler._refs import Reference
from tokenbox_core.compiler._trace import CompilationTrace, output_hash
from tokenbox_core.compiler._validate import check_invariants, run_checks
from tokenbox_core.errors import CompilationError
from tokenbox_core.tokens import TokenCounter, canonical_json

__all__ = ["Laid", "finish", "policy_tokens"]


@dataclass(frozen=True)
class Laid:
    """What Filter → Assemble produced for one compile: what the trace, the metrics and the checks are built from."""

    filtered: Candidates
    ranked: Ranked
    compressed: Compressed
    assembled: Assembled
    total: int
    refs: tuple[Reference, ...]
    clusters: tuple[tuple[tuple[str, str], ...], ...]
    excluded: tuple[Exclusion, ...]
    now: datetime | None
    digest: str  # the input hash ("" when not traced and no defence needs it)
    stages: dict[str, float]
    defense: Any


def finish(
    candidates: Candidates,
    laid: Laid,
    started: float,
    *,
    budget: ContextBudget,
    counter: TokenCounter,
    config: CompilerConfig,
) -> CompiledContext:
    """The compile of a laid-out context: its trace, metrics and checks (a violated rule raises
    :class:`CompilationError` with the trace)."""
    ranked, compressed, assembled, total, refs = laid.ranked, laid.compressed, laid.assembled, laid.total, laid.refs
    clusters, excluded, now, digest, defense = laid.clusters, laid.excluded, laid.now, laid.digest, laid.defense
    layout = compressed.layout
    effective = budget.effective()
    pointer_targets = {(r.section, r.item_id): (r.canonical_section, r.canonical_id) for r in refs}
    lost = tuple(Exclusion(r.id, r.section, f"compress:{r.reason}", r.score) for r in layout.removed)
    all_excluded = excluded + compressed.excluded + lost + assembled.excluded
    metrics = compute_metrics(
        assembled,
        compressed.plans,
        total_tokens=total,
        capacity=effective.max_tokens,
        counter=counter,
        config=config,
        now=now,
        candidate_scores=ranked.scores,
        pointer_targets=pointer_targets,
        clusters=clusters,
        defense=defense,
    )
    summary = section_summary(compressed)
    ratios = {sid: (row["used"] / row["demand"] if row["demand"] else 1.0) for sid, row in summary.items()}
    trace = CompilationTrace(
        trace_id=str(uuid.uuid4()),
        timestamp=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        config_version=config.version,
        input_hash=digest,
        output_hash=_with_tools(output_hash(assembled.messages, assembled.text, config.output), assembled.tools),
        total_tokens=total,
        section_allocations=summary,
        excluded_items=all_excluded,
        compression_ratios=ratios,
        latency_ms=(time.perf_counter() - started) * 1000.0,
        policy_version=candidates.policy.version if candidates.policy is not None else None,
        allocator=config.allocator,
        overflow_policy=config.overflow_policy,
        overflow_events=tuple(e.to_dict() for e in compressed.events),
        shadow_price=compressed.shadow_price,
        marginal_utilities=compressed.marginal_utilities,
        references=tuple(r.to_dict() for r in refs),
        retrieval_pending=compressed.retrieval_pending,
        page=1,
        pages=1,
        stage_latency_ms=dict(laid.stages),
    )
    compiled = CompiledContext(
        messages=assembled.messages,
        text=assembled.text,
        layout=layout,
        trace=trace,
        metrics=metrics,
        total_tokens=total,
        allocations=compressed.allocations,
        marginal_utilities=compressed.marginal_utilities,
        shadow_price=compressed.shadow_price,
        references=refs,
        excluded=all_excluded,
        retrieval_pending=compressed.retrieval_pending,
        sections=tuple(assembled.emitted),
        stable_messages=assembled.turn_start,
        tools=assembled.tools,
    )
    policy = policy_tokens(compressed)
    violations = check_invariants(
        assembled,
        compressed.plans,
        config=config,
        total_tokens=total,
        window=budget.max_tokens,
        output_reserve=budget.output_reserve,
        capacity=effective.max_tokens,
        prefill_budget=effective.max_tokens,
        used={row: summary[row]["used"] for row in summary},
        allocations=compressed.allocations,
        pointer_targets=pointer_targets,
        policy_tokens=policy,
        metrics=metrics,
    )
    violations += run_checks(compiled, config)
    if violations:
        raise CompilationError(violations, trace.to_dict())
    return compiled


def policy_tokens(compressed: Compressed) -> int:
    """The policy tier's laid-out tokens (policy and developer), what ``constraint_density`` limits."""
    layout = compressed.layout
    return sum(layout[s].final_tokens for s in ("policy", "developer") if any(p.id == s for p in compressed.plans))


def _with_tools(digest: str, tools: tuple[Mapping[str, Any], ...]) -> str:
    """The output hash covering the tool schemas sent beside the messages (``tools_as="schemas"``)."""
    if not tools:
        return digest
    return hashlib.sha256(f"{digest}:{canonical_json(list(tools))}".encode("utf-8", "surrogatepass")).hexdigest()
