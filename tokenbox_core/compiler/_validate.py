"""Stage 6, Validate: the chapter's assertions, user checks and metric gates (chapter §6.4.1, §6.11.5).

Every rule is checked and every violation reported (never the first only),
each with its numbers:

- ``window``: total tokens + generation reserve <= window, and total <= the
  effective capacity (reserved slots and safety margin included);
- ``required_sections``: ``CompilerConfig.required_sections`` are emitted;
- ``section_allocation``: no elastic section uses more than its allocation;
- ``duplicate_evidence``: no evidence id is emitted twice, across sections too
  (the provenance tags ``[evidence ID | …`` that begin emitted items are counted; tag-like text inside an
  input is the input's, neutralised by :func:`~tokenbox_core.compiler._render.neutralise_provenance`);
- ``provenance``: every emitted evidence item carries its full provenance tag;
- ``referential_integrity``: every ``[REF: id …]`` pointer comes after the
  emitted canonical item it names;
- ``constraint_density``: the policy tier (policy + developer) uses at most
  ``constraint_density_limit`` of the prefill budget (§6.6.5);
- ``metric:NAME``: a metric is outside its ``min_metrics``/``max_metrics`` gate;
- ``check:NAME``: a user check returned a message (checks see the finished context).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from tokenbox_core.compiler._assemble import Assembled
from tokenbox_core.compiler._build import SectionPlan
from tokenbox_core.compiler._config import CompilerConfig
from tokenbox_core.compiler._inputs import Evidence
from tokenbox_core.compiler._metrics import Metrics
from tokenbox_core.compiler._render import evidence_tag
from tokenbox_core.errors import Violation

__all__ = ["check_invariants", "density_violations", "run_checks", "window_violations"]

_TAG = re.compile(r"\[evidence (\S+) \| source: ")


def window_violations(total_tokens: int, *, window: int, output_reserve: int, capacity: int) -> list[Violation]:
    """``window``: the prefill and the generation reserve within the window, the prefill within the capacity."""
    if total_tokens + output_reserve > window:
        return [
            Violation(
                "window",
                f"{total_tokens:,} prefill tokens + {output_reserve:,} generation reserve = "
                f"{total_tokens + output_reserve:,} > window {window:,}",
            )
        ]
    if total_tokens > capacity:
        return [Violation("window", f"{total_tokens:,} prefill tokens > effective capacity {capacity:,}")]
    return []


def density_violations(policy_tokens: int, prefill_budget: int, config: CompilerConfig) -> list[Violation]:
    """``constraint_density``: the policy tier within its share of the prefill budget (§6.6.5)."""
    limit = config.constraint_density_limit
    if limit is None or policy_tokens <= limit * prefill_budget:
        return []
    return [
        Violation(
            "constraint_density",
            f"the policy tier uses {policy_tokens:,} tokens, over {limit:.0%} of the {prefill_budget:,}-token "
            f"prefill budget ({int(limit * prefill_budget):,}); shorten the policy or raise "
            f"CompilerConfig.constraint_density_limit",
        )
    ]


def check_invariants(
    assembled: Assembled,
    plans: tuple[SectionPlan, ...],
    *,
    config: CompilerConfig,
    total_tokens: int,
    window: int,
    output_reserve: int,
    capacity: int,
    prefill_budget: int,
    used: Mapping[str, int],
    allocations: Mapping[str, int],
    pointer_targets: Mapping[tuple[str, str], tuple[str, str]],
    policy_tokens: int,
    metrics: Metrics,
) -> list[Violation]:
    """Check the built-in invariants (see the module docstring) and return every violation."""
    out = window_violations(total_tokens, window=window, output_reserve=output_reserve, capacity=capacity)
    emitted_sections = set(assembled.emitted)
    for plan in plans:
        if plan.id in assembled.emitted:
            emitted_sections.add(plan.source_type)
            emitted_sections.add(plan.elastic_tier or plan.source_type)
    for name in config.required_sections:
        if name not in emitted_sections:
            out.append(Violation("required_sections", f"required section {name!r} is not in the compiled context"))
    for sid, allocated in allocations.items():
        if used.get(sid, 0) > allocated:
            out.append(
                Violation(
                    "section_allocation",
                    f"section {sid!r} uses {used[sid]:,} tokens, over its allocation {allocated:,}",
                )
            )
    counts: Counter[str] = Counter()  # the tags the compiler wrote: at the start of emitted evidence items
    for body in assembled.emitted.values():
        if not isinstance(body, str):
            counts.update(m.group(1) for item in body if (m := _TAG.match(item.content)))
    for eid, count in sorted(counts.items()):
        if count > 1:
            out.append(Violation("duplicate_evidence", f"evidence id {eid!r} appears {count} times in the context"))
    by_id = {p.id: p for p in plans}
    order: dict[tuple[str, str], int] = {}
    position = 0
    for sid, body in assembled.emitted.items():
        if isinstance(body, str):
            continue
        plan = by_id[sid]
        for item in body:
            position += 1
            order.setdefault((sid, item.id), position)
            payload = plan.payload.get(item.id)
            if sid == "evidence" and not (
                isinstance(payload, Evidence) and item.content.startswith(evidence_tag(payload))
            ):
                out.append(Violation("provenance", f"evidence item {item.id!r} is emitted without its provenance tag"))
            target = pointer_targets.get((sid, item.id))
            if target is not None and order.get(target, position) >= position:
                out.append(
                    Violation(
                        "referential_integrity",
                        f"pointer {item.id!r} in {sid!r} names {target[1]!r} in {target[0]!r}, which is not "
                        f"emitted before it",
                    )
                )
    out += density_violations(policy_tokens, prefill_budget, config)
    values = metrics.to_dict()
    for name, low in sorted(config.min_metrics.items()):
        if values[name] < low:
            out.append(Violation(f"metric:{name}", f"{name} is {values[name]:.4f}, below the gate {low}"))
    for name, high in sorted(config.max_metrics.items()):
        if values[name] > high:
            out.append(Violation(f"metric:{name}", f"{name} is {values[name]:.4f}, above the gate {high}"))
    return out


def _contents(assembled: Assembled) -> Iterable[str]:
    for message in assembled.messages:
        content = message.get("content")
        if isinstance(content, str):
            yield content


def run_checks(compiled: Any, config: CompilerConfig) -> list[Violation]:
    """Run the user checks: each returns ``None``/``""`` (pass), a message, or a list of messages."""
    out: list[Violation] = []
    for check in config.checks:
        name = getattr(check, "__name__", type(check).__name__)
        try:
            result = check(compiled)
        except Exception as exc:
            out.append(Violation(f"check:{name}", f"the check raised {type(exc).__name__}: {exc}"))
            continue
        if not result:
            continue
        messages = [result] if isinstance(result, str) else list(result)
        out += [Violation(f"check:{name}", str(m)) for m in messages]
    return out
