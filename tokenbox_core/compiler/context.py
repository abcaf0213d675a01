"""The compiler's result: :class:`CompiledContext` (chapter §6.4.1's ``ContextObject``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tokenbox_core.compiler.filter import Exclusion
from tokenbox_core.compiler.metrics import Metrics
from tokenbox_core.compiler.refs import Reference
from tokenbox_core.compiler.trace import CompilationTrace
from tokenbox_core.layout import Layout

__all__ = ["CompiledContext"]


@dataclass(frozen=True)
class CompiledContext:
    """A validated, traced context (chapter §6.4.1's ``ContextObject``).

    Attributes:
        messages: the chat messages to send (``"messages"`` output; also built for text output).
        text: the whole context as one prompt string (headers per the config).
        layout: the Token Box :class:`Layout` of the section bodies.
        trace: the :class:`CompilationTrace` (``trace.to_dict()`` for JSON).
        metrics: the §6.11.5 :class:`Metrics`.
        pages: under ``paginate``, every page (this context is ``pages[0]``); else ``()``.
        retrieval_pending: evidence ids deferred to a later turn (``defer_retrieval``), else ``()``.
        shadow_price: λ of the utility allocator (§6.2.4); ``None`` for the priority allocator.
        total_tokens: the output's exact size, counted the way it is sent.
        allocations: elastic section id → allocated tokens.
        marginal_utilities: elastic section id → marginal utility at its allocation (utility allocator).
        references: the reference pointers that replaced duplicates (§6.7.3).
        excluded: every item left out, with reason and score (also in the trace).
        stable_messages: with ``CompilerConfig(cache_aware=...)``, how many leading
            messages precede the turn part (static + session: what the next turn
            repeats byte for byte unless the history's block cut moves; e.g.
            ``cache_breakpoints(messages, stable_until=stable_messages - 1)``); else ``None``.
        defense: with ``CompilerConfig(defense=DefensePolicy(...))``, the
            :class:`~tokenbox_core.defense.DefenseReport` (trust levels, detections,
            quarantines, boundaries, canary, injection surface); else ``None``.
        recalled / masked / offloaded: compiled by a :class:`~tokenbox_core.ContextSession`, the archived ids
            recalled into the context, shown as a masking placeholder, shown as an offload preview; else ``()``.
        message_sources: compiled by a session, one entry per message: the archived id the message renders
            unchanged, or ``None`` for a message the compile wrote (policy, pointer, placeholder, ...); else ``()``.
    """

    messages: tuple[Mapping[str, Any], ...]
    text: str
    layout: Layout
    trace: CompilationTrace
    metrics: Metrics
    total_tokens: int
    allocations: Mapping[str, int]
    marginal_utilities: Mapping[str, float] = field(default_factory=dict)
    shadow_price: float | None = None
    references: tuple[Reference, ...] = ()
    excluded: tuple[Exclusion, ...] = ()
    retrieval_pending: tuple[str, ...] = ()
    pages: tuple[CompiledContext, ...] = ()
    sections: tuple[str, ...] = ()
    defense: Any = None
    stable_messages: int | None = None
    recalled: tuple[str, ...] = ()
    masked: tuple[str, ...] = ()
    offloaded: tuple[str, ...] = ()
    message_sources: tuple[str | None, ...] = ()

    @property
    def fingerprint(self) -> str:
        """The output hash: equal for byte-identical contexts."""
        return self.trace.output_hash

    def _repr_html_(self) -> str:
        from tokenbox_core.report.html import compiled_html

        return compiled_html(self)

    def to_html(self, path: str | None = None) -> str:
        """The layout's HTML report plus the defence report (trust levels, quarantined spans) when defended."""
        from tokenbox_core.report.html import compiled_html

        return compiled_html(self, standalone=True, path=path)

    def explain(self) -> str:
        """A short human-readable account of the compile: sections, allocations, exclusions, metrics."""
        t = self.trace
        lines = [
            f"compiled {self.total_tokens:,} tokens ({self.metrics.budget_utilization:.0%} of the prefill budget), "
            f"allocator {t.allocator}, overflow policy {t.overflow_policy}"
        ]
        for sid, row in t.section_allocations.items():
            lines.append(f"  {sid:<20} {row['status']:<10} used {row['used']:>7,} / allocated {row['allocated']:>7,}")
        if t.shadow_price is not None:
            lines.append(f"  shadow price λ = {t.shadow_price:.6g}")
        for event in t.overflow_events:
            lines.append(f"  overflow: {event['action']} {event['section']} ({event['detail']})")
        if self.excluded:
            reasons: dict[str, int] = {}
            for e in self.excluded:
                reasons[e.reason] = reasons.get(e.reason, 0) + 1
            lines.append("  excluded: " + ", ".join(f"{n} {r}" for r, n in sorted(reasons.items())))
        session = t.session or {}
        for key in ("omitted", "recalled", "summarized", "masked", "offloaded"):
            ids = session.get(key) or ()
            if ids:
                shown = ", ".join(ids[:12]) + (f", … ({len(ids) - 12} more)" if len(ids) > 12 else "")
                lines.append(f"  session {key}: {len(ids)} ({shown})")
        lines.append("  metrics: " + ", ".join(f"{k}={v:.3f}" for k, v in self.metrics.to_dict().items()))
        return "\n".join(lines)
