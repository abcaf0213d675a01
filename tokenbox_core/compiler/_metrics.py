"""The quality metrics of chapter §6.11.5, computed on every compile.

Each metric is a float; :data:`DEFINITIONS` states exactly how it is
computed.  ``CompilerConfig.min_metrics`` / ``max_metrics`` turn any of them
into a gate that rejects the compilation (Validate).

**Injection vulnerability surface** (§6.9.4) is
``Σ_{s untrusted} tokens(s) · (1 − isolation(s)) / total``.  The isolation
strength of a section, in [0, 1], comes from the defensive-compilation
policy (``CompilerConfig.defense``) through its optional method
``isolation_strength(section_id: str, source_type: str) -> float``; with no
defence configured every untrusted token counts fully.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from tokenbox_core.compiler._assemble import Assembled
from tokenbox_core.compiler._build import SectionPlan
from tokenbox_core.compiler._config import CompilerConfig
from tokenbox_core.compiler._filter import freshness
from tokenbox_core.compiler._inputs import Evidence, Memory, Trust
from tokenbox_core.compiler._render import evidence_tag
from tokenbox_core.tokens import TokenCounter

__all__ = ["DEFINITIONS", "Metrics", "compute_metrics", "isolation_strength"]

DEFINITIONS: Mapping[str, str] = {
    "budget_utilization": "total tokens sent / (window − generation reserve − reserved slots)",
    "signal_density": (
        "tokens of content (policy, task, tool schemas, passages, memories, turns, the user message) / total "
        "tokens; the rest is scaffolding: headers, labels, provenance tags, reference pointers, chat overhead"
    ),
    "provenance_coverage": (
        "emitted evidence items whose full provenance tag is emitted / emitted evidence items (1 if none)"
    ),
    "constraint_density": (
        "tokens of the policy tier (policy + developer instructions) / the prefill budget (§6.6.5); "
        "CompilerConfig.constraint_density_limit gates this same number"
    ),
    "duplication_rate": (
        "emitted items of the elastic sections (passages, memories, turns) that duplicate an earlier emitted one "
        "(reference compression's clusters: normalised shingle Jaccard >= dedupe_threshold) / those items; "
        "pointers are not counted"
    ),
    "staleness_index": (
        "token-weighted mean of 1 − freshness over emitted evidence and memories with a timestamp (0 if none)"
    ),
    "injection_vulnerability_surface": (
        "Σ over untrusted sections of tokens · (1 − isolation strength) / total tokens (§6.9.4)"
    ),
    "compression_fidelity": (
        "score-weighted share of the elastic candidates (after Filter) that reach the context whole or as a "
        "pointer to an emitted canonical instance (a model-free proxy for §6.7.4's fidelity)"
    ),
}


@dataclass(frozen=True)
class Metrics:
    """The §6.11.5 metrics of one compile (definitions in :data:`DEFINITIONS`)."""

    budget_utilization: float
    signal_density: float
    provenance_coverage: float
    constraint_density: float
    duplication_rate: float
    staleness_index: float
    injection_vulnerability_surface: float
    compression_fidelity: float

    def to_dict(self) -> dict[str, float]:
        return {name: round(getattr(self, name), 6) for name in DEFINITIONS}


def isolation_strength(plan: SectionPlan, defense: Any) -> float:
    """The defence's isolation strength for a section, clamped to [0, 1]; 0 without a defence."""
    fn = getattr(defense, "isolation_strength", None)
    if fn is None:
        return 0.0
    value = float(fn(plan.id, plan.source_type))
    return min(1.0, max(0.0, value))


def _ratio(num: float, den: float, empty: float = 0.0) -> float:
    return empty if den <= 0 else num / den


def compute_metrics(
    assembled: Assembled,
    plans: tuple[SectionPlan, ...],
    *,
    total_tokens: int,
    capacity: int,
    counter: TokenCounter,
    config: CompilerConfig,
    now: datetime | None,
    candidate_scores: Mapping[str, Mapping[str, float]],
    pointer_targets: Mapping[tuple[str, str], tuple[str, str]],
    clusters: Sequence[Sequence[tuple[str, str]]] = (),
    defense: Any = None,
) -> Metrics:
    """Compute every metric for an assembled context (see :data:`DEFINITIONS`)."""
    by_id = {p.id: p for p in plans}
    signal = 0
    section_tokens: dict[str, int] = {}
    ev_items = ev_tagged = 0
    stale_num = stale_den = 0.0
    segments = 0
    emitted_ids: set[tuple[str, str]] = set()
    for sid, body in assembled.emitted.items():
        plan = by_id[sid]
        if isinstance(body, str):
            size = counter.count(body)
            section_tokens[sid] = size
            signal += size
            continue
        size = 0
        elastic = plan.elastic
        payloads = plan.payload
        count = counter.count
        for item in body:
            key = (sid, item.id)
            emitted_ids.add(key)
            tokens = count(item.content)
            size += tokens
            payload = payloads.get(item.id)
            is_pointer = key in pointer_targets
            if isinstance(payload, Evidence):
                ev_items += 1
                tag = evidence_tag(payload)
                ev_tagged += item.content.startswith(tag)
                if not is_pointer:
                    signal += max(0, tokens - count(tag))
            elif not is_pointer:
                signal += tokens
            if not is_pointer and elastic:
                segments += 1
            if isinstance(payload, Evidence | Memory):
                stamp = payload.retrieved_at if isinstance(payload, Evidence) else payload.created_at
                if stamp is not None:
                    stale_num += tokens * (1.0 - freshness(stamp, now, config))
                    stale_den += tokens
        section_tokens[sid] = size
    duplicates = 0
    for cluster in clusters:
        present = sum(1 for key in cluster if key in emitted_ids and key not in pointer_targets)
        duplicates += max(0, present - 1)
    policy_tokens = section_tokens.get("policy", 0) + section_tokens.get("developer", 0)
    exposed = 0.0
    for sid, size in section_tokens.items():
        plan = by_id[sid]
        if plan.trust == Trust.UNTRUSTED:
            exposed += size * (1.0 - isolation_strength(plan, config.defense if defense is None else defense))
    mass = kept = 0.0
    for plan in plans:
        if not plan.elastic:
            continue
        pid = plan.id
        scores = candidate_scores.get(pid, {})
        for item in plan.section.items:
            weight = scores.get(item.id, 1.0) if scores else 1.0
            weight = max(weight, 1e-9)
            mass += weight
            key = (pid, item.id)
            target = pointer_targets.get(key)
            if key in emitted_ids and (target is None or target in emitted_ids):
                kept += weight
    return Metrics(
        budget_utilization=_ratio(total_tokens, capacity),
        signal_density=_ratio(min(signal, total_tokens), total_tokens),
        provenance_coverage=_ratio(ev_tagged, ev_items, empty=1.0),
        constraint_density=_ratio(policy_tokens, capacity),  # the definition validate's limit checks
        duplication_rate=_ratio(duplicates, segments),
        staleness_index=_ratio(stale_num, stale_den),
        injection_vulnerability_surface=_ratio(exposed, total_tokens),
        compression_fidelity=_ratio(kept, mass, empty=1.0),
    )
